/* cmd_produce.c — `felixctl produce STREAM [--shard N] [--acks POLICY]`:
 * publish stdin, one record per line.
 *
 * A record is the bytes of a line without its '\n' (any other byte, NUL and
 * '\r' included, is kept); a last line without '\n' is a record too. stdin
 * may be endless (`tail -f | felixctl produce`), so lines are sent in
 * batches of at most 500 records or 1 MiB, and a batch also goes out as soon
 * as no further complete line is waiting to be read: a slow writer's lines
 * are published as they come instead of waiting for a batch to fill.
 *
 * An empty line is an error, not a skipped record: empty payloads are
 * reserved for generation-start markers. Everything before it is sent and
 * acknowledged, then felixctl stops with exit 2 naming the line. Any failure
 * reports how many records were acknowledged before it.
 *
 * Without --shard, a one-shard stream gets everything on shard 0; otherwise
 * batches go round-robin over the shards starting at 0, so the order of
 * lines is kept only within each shard. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "felix/client.h"
#include "felix/wire.h"
#include "felixctl.h"

#define BATCH_RECORDS 500
#define BATCH_BYTES (1u << 20)
#define MAX_RECORD (64u << 20) /* the broker refuses larger records (TOO_LARGE) */
#define READ_CHUNK (64u << 10)

/* A line reader on a file descriptor: own buffering, so it knows when the
 * next line would block. */
typedef struct line_reader {
  int fd;
  char *buf;
  size_t start, scanned, end, cap;
  bool eof;
} line_reader;

enum { LINE_OK = 1, LINE_EOF = 0, LINE_IO = -1, LINE_TOO_LONG = -2 };

static int line_next(line_reader *r, const char **line, size_t *len) {
  for (;;) {
    char *nl = r->end > r->scanned ? memchr(r->buf + r->scanned, '\n', r->end - r->scanned) : NULL;
    if (nl) {
      *line = r->buf + r->start;
      *len = (size_t)(nl - *line);
      r->start = r->scanned = (size_t)(nl - r->buf) + 1;
      return *len > MAX_RECORD ? LINE_TOO_LONG : LINE_OK;
    }
    r->scanned = r->end;
    if (r->end - r->start > MAX_RECORD) return LINE_TOO_LONG;
    if (r->eof) {
      if (r->start == r->end) return LINE_EOF;
      *line = r->buf + r->start;
      *len = r->end - r->start;
      r->start = r->scanned = r->end;
      return *len > MAX_RECORD ? LINE_TOO_LONG : LINE_OK;
    }
    if (r->start > 0) { /* keep only the partial line */
      memmove(r->buf, r->buf + r->start, r->end - r->start);
      r->end -= r->start;
      r->scanned -= r->start;
      r->start = 0;
    }
    if (r->cap - r->end < READ_CHUNK) {
      size_t cap = r->cap ? r->cap * 2 : 4 * READ_CHUNK;
      char *b = realloc(r->buf, cap);
      if (!b) return errno = ENOMEM, LINE_IO;
      r->buf = b;
      r->cap = cap;
    }
    ssize_t n = read(r->fd, r->buf + r->end, r->cap - r->end);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return LINE_IO;
    if (n == 0) r->eof = true;
    r->end += (size_t)n;
  }
}

/* True when another line can be had without blocking. */
static bool line_ready(const line_reader *r) {
  if (r->eof || (r->end > r->scanned && memchr(r->buf + r->scanned, '\n', r->end - r->scanned))) return true;
  struct pollfd p = {.fd = r->fd, .events = POLLIN};
  return poll(&p, 1, 0) != 0;
}

/* The pending batch: payload bytes back to back, and where each ends. */
typedef struct batch {
  char *bytes;
  size_t len, cap;
  size_t ends[BATCH_RECORDS];
  size_t n;
  felix_record_in recs[BATCH_RECORDS];
} batch;

static bool batch_add(batch *b, const char *p, size_t len) {
  if (b->len + len > b->cap) {
    size_t cap = b->cap ? b->cap : BATCH_BYTES;
    while (cap < b->len + len) cap *= 2;
    char *nb = realloc(b->bytes, cap);
    if (!nb) return false;
    b->bytes = nb;
    b->cap = cap;
  }
  memcpy(b->bytes + b->len, p, len);
  b->len += len;
  b->ends[b->n++] = b->len;
  return true;
}

/* What this run sent to one shard. */
typedef struct shard_tally {
  felix_session *session;
  char address[128];
  uint64_t count, first, last;
} shard_tally;

typedef struct producer {
  const ctl_opts *o;
  const char *stream;
  uint8_t acks;
  uint32_t nshards; /* shards we send to: 1 with --shard */
  uint32_t base;    /* the shard number of tally[0] */
  uint32_t next;    /* index of the next batch's shard */
  shard_tally *tally;
  batch b;
} producer;

static int ensure_session(producer *p, shard_tally *t, uint32_t shard) {
  if (t->session) return 0;
  int rc = ctl_shard_leader(p->o, p->stream, shard, t->address, sizeof t->address);
  if (rc) return rc;
  t->session = felix_session_new(t->address, p->o->timeout_ms);
  if (!t->session) return ctl_error(FELIX_EXIT_FAILURE, NULL, "cannot start a session with %s", t->address);
  return 0;
}

static int send_batch(producer *p) {
  batch *b = &p->b;
  if (b->n == 0) return 0;
  uint32_t idx = p->next, shard = p->base + idx;
  shard_tally *t = &p->tally[idx];
  int rc = ensure_session(p, t, shard);
  if (rc) return rc;
  for (size_t i = 0; i < b->n; i++) {
    size_t start = i ? b->ends[i - 1] : 0;
    b->recs[i] = (felix_record_in){.payload = b->bytes + start, .len = (uint32_t)(b->ends[i] - start)};
  }
  felix_err err = {0};
  uint64_t first = 0;
  if (felix_session_publish(t->session, p->stream, shard, p->acks, b->recs, b->n, &first, &err) != FELIX_OK)
    return ctl_data_error(&err, "publish", p->stream, shard, t->address);
  if (t->count == 0) t->first = first;
  t->last = first + b->n - 1;
  t->count += b->n;
  b->n = b->len = 0;
  p->next = (p->next + 1) % p->nshards;
  return 0;
}

/* The summary: stderr in table mode, one JSON object per shard written to
 * (at least one) on stdout with -o json. Printed on failure too, so the
 * caller knows what was acknowledged. */
static void summarise_shard(const producer *p, uint32_t shard, const shard_tally *t) {
  if (p->o->format == CTL_JSON) {
    printf("{\"stream\":");
    ctl_json_string(stdout, p->stream);
    if (t->count)
      printf(",\"shard\":%u,\"count\":%" PRIu64 ",\"first_offset\":%" PRIu64 ",\"last_offset\":%" PRIu64 "}\n",
             shard, t->count, t->first, t->last);
    else printf(",\"shard\":%u,\"count\":0,\"first_offset\":null,\"last_offset\":null}\n", shard);
  } else if (t->count) {
    fprintf(stderr, "produced %" PRIu64 " record%s to %s/%u (offsets %" PRIu64 "..%" PRIu64 ")\n", t->count,
            t->count == 1 ? "" : "s", p->stream, shard, t->first, t->last);
  } else {
    fprintf(stderr, "produced 0 records to %s/%u\n", p->stream, shard);
  }
}

static void summarise(const producer *p) {
  bool any = false;
  for (uint32_t i = 0; i < p->nshards; i++) {
    if (!p->tally[i].count) continue;
    summarise_shard(p, p->base + i, &p->tally[i]);
    any = true;
  }
  if (!any) summarise_shard(p, p->base, &p->tally[0]);
  fflush(stdout);
}

/* Reads and sends until end of input; returns 0 or the exit code of the
 * failure (already printed). */
static int produce_lines(producer *p, line_reader *in) {
  uint64_t lineno = 0;
  for (;;) {
    const char *line;
    size_t len;
    int r = line_next(in, &line, &len);
    if (r == LINE_EOF) return send_batch(p);
    if (r == LINE_IO) {
      int e = errno, rc = send_batch(p);
      return rc ? rc : ctl_error(FELIX_EXIT_FAILURE, NULL, "cannot read stdin: %s", strerror(e));
    }
    lineno++;
    if (r == LINE_TOO_LONG || len == 0) {
      int rc = send_batch(p);
      if (rc) return rc;
      if (r == LINE_OK)
        return ctl_error(FELIX_EXIT_USAGE, "empty records are reserved for generation-start markers; nothing after "
                         "this line was sent", "line %" PRIu64 " is empty", lineno);
      return ctl_error(FELIX_EXIT_USAGE, "nothing from this line on was sent",
                       "line %" PRIu64 " is longer than the 64 MiB a record may hold", lineno);
    }
    if (p->b.n > 0 && p->b.len + len > BATCH_BYTES) {
      int rc = send_batch(p);
      if (rc) return rc;
    }
    if (!batch_add(&p->b, line, len)) return ctl_error(FELIX_EXIT_FAILURE, NULL, "out of memory");
    if (p->b.n == BATCH_RECORDS || p->b.len >= BATCH_BYTES || !line_ready(in)) {
      int rc = send_batch(p);
      if (rc) return rc;
    }
  }
}

static int produce(const ctl_opts *o) {
  producer p = {.o = o, .stream = o->args[0], .nshards = 1};
  if (strlen(p.stream) >= sizeof ((felix_fetch_req *)0)->stream)
    return ctl_error(FELIX_EXIT_USAGE, "stream names are at most 64 characters", "stream name is too long");
  if (o->acks) p.acks = (uint8_t)ctl_acks_value(o->acks);
  int rc = 0;
  if (o->given & CTL_F_SHARD) p.base = o->shard;
  else if ((rc = ctl_stream_shard_count(o, p.stream, &p.nshards))) return rc;
  p.tally = calloc(p.nshards, sizeof *p.tally);
  if (!p.tally) return ctl_error(FELIX_EXIT_FAILURE, NULL, "out of memory");
  /* Look the first leader up before reading: a wrong shard or a leaderless
   * one fails at once instead of after the user typed a line. */
  rc = ensure_session(&p, &p.tally[0], p.base);
  line_reader in = {.fd = STDIN_FILENO};
  if (rc == 0) {
    rc = produce_lines(&p, &in);
    summarise(&p);
  }
  for (uint32_t i = 0; i < p.nshards; i++)
    if (p.tally[i].session) felix_session_free(p.tally[i].session);
  free(p.tally);
  free(p.b.bytes);
  free(in.buf);
  return rc;
}

const ctl_command ctl_cmd_produce = {
    .group = "produce",
    .nargs = 1,
    .flags = CTL_F_SHARD | CTL_F_ACKS | CTL_F_WAIT,
    .usage = "produce STREAM [--shard N] [--acks quorum|leader|all] [--wait D]",
    .summary = "publish stdin, one record per line",
    .help = "\n"
            "Options:\n"
            "  --shard N       publish to shard N only\n"
            "  --acks POLICY   quorum, leader or all (default: the stream's policy)\n"
            "  --wait D        wait up to D for the shard to have a leader (default 10s;\n"
            "                  10, 10s, 500ms, 2m; 0 fails at once): a stream just\n"
            "                  created is Fencing until its first leader starts\n"
            "\n"
            "Each line of stdin, without its newline, is one record; every other byte\n"
            "(NUL and \\r included) is kept. A last line without a newline is a record\n"
            "too. Lines are sent in batches of up to 500 records or 1 MiB, and a batch\n"
            "leaves as soon as no further line is waiting, so a slow writer's lines\n"
            "are published as they arrive. A record may hold up to 64 MiB.\n"
            "\n"
            "Without --shard, a stream with one shard gets every record on shard 0;\n"
            "otherwise batches go round-robin over the shards, starting at shard 0,\n"
            "and the order of lines is kept within each shard only.\n"
            "\n"
            "An empty line stops felixctl with exit 2: empty records are reserved.\n"
            "The lines before it are sent first. On any failure the records already\n"
            "acknowledged stay acknowledged and the summary counts them.\n"
            "\n"
            "The shard's leader is found through the control plane (so --token-file\n"
            "is needed); an unreachable broker exits 5, a shard still without a leader\n"
            "after --wait 1 (at NoCaughtUpReplica at once, saying so: no copy can serve it).\n"
            "\n"
            "Prints on stderr, per shard written to:\n"
            "  produced N records to STREAM/SHARD (offsets FIRST..LAST)\n"
            "With -o json, prints instead on stdout one line per shard written to:\n"
            "  {\"stream\", \"shard\", \"count\", \"first_offset\", \"last_offset\"}\n"
            "(offsets are null when count is 0). FIRST..LAST span this run's records;\n"
            "other producers' records may lie between them.\n",
    .run = produce,
};
