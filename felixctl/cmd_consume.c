/* cmd_consume.c — `felixctl consume STREAM --shard N [--from OFFSET]
 * [--count N] [--follow]`: print a shard's committed records.
 *
 * Table mode writes each payload's bytes exactly as stored followed by '\n',
 * so `produce` then `consume` round-trips text line for line. -o json writes
 * one object per line: offset, timestamp (RFC 3339, microseconds), payload_b64.
 *
 * Without --follow the end is the HWM the first fetch reports: records
 * committed after the call started are not waited for, so the command
 * always ends. With --follow it long-polls (1 s at a time) until --count
 * records were printed or SIGINT, which ends it with exit 0 after the
 * records already received are printed. Output is flushed after every
 * fetch so a pipe sees records as they come. */
#include <inttypes.h>
#include <signal.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "felix/client.h"
#include "felix/survey.h"
#include "felix/wire.h"
#include "felix/lease.h" /* felix_monotonic_ms */
#include "felix/jsonnum.h"
#include "felixctl.h"

#define FETCH_RECORDS 1000
#define FETCH_BYTES (1u << 20)
#define FOLLOW_WAIT_MS 1000

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
}

/* No SA_RESTART: a blocked read of the long poll returns early. */
static void catch_sigint(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
}

static bool print_record(const ctl_opts *o, const felix_wire_record *r, char **b64, size_t *b64cap) {
  if (!CTL_DOCUMENT(o)) {
    fwrite(r->payload, 1, r->len, stdout);
    putchar('\n');
    return true;
  }
  size_t need = 4 * (((size_t)r->len + 2) / 3) + 1;
  if (need > *b64cap) {
    char *nb = realloc(*b64, need);
    if (!nb) return false; /* consume_loop reports it */
    *b64 = nb;
    *b64cap = need;
  }
  felix_base64_encode(r->payload, r->len, *b64);
  char ts[FELIX_RFC3339_US_LEN];
  felix_format_rfc3339_us(ts, (int64_t)r->timestamp_micros);
  printf("{\"offset\":%" PRIu64 ",\"timestamp\":\"%s\",\"payload_b64\":\"%s\"}\n", r->offset, ts, *b64);
  return true;
}

typedef struct consumer {
  const ctl_opts *o;
  felix_fetch_req req;
  uint64_t remaining; /* records still to print */
  bool have_end;
  uint64_t end; /* without --follow: the HWM at the first fetch */
  char *b64;
  size_t b64cap;
} consumer;

/* Prints the records of one reply; false when consumption is complete.
 * *oom is set when a record could not be encoded. */
static bool print_reply(consumer *c, const felix_fetch_reply *rep, bool *oom) {
  for (uint32_t i = 0; i < rep->count && c->remaining > 0; i++) {
    if (c->have_end && rep->records[i].offset >= c->end) return false;
    if (!print_record(c->o, &rep->records[i], &c->b64, &c->b64cap)) return !(*oom = true);
    c->remaining--;
  }
  return c->remaining > 0;
}

/* A fetch reads only, so one that failed because the leader is gone or not
 * serving yet (a failover, a new leader whose start record is not committed)
 * is tried again, at the leader the control plane names then, until --wait
 * has passed since the first failure in a row. Returns 0 to go on, or the
 * exit code of the failure (printed). */
static int after_failed_fetch(consumer *c, felix_session **s, char *address, size_t cap, const felix_err *err,
                              uint64_t *failing_since) {
  uint64_t now = felix_monotonic_ms();
  bool transient = err->status == FELIX_E_UNAVAILABLE || err->status == FELIX_E_UNREACHABLE;
  if (!*failing_since) *failing_since = now;
  if (!transient || now - *failing_since >= c->o->wait_ms)
    return ctl_data_error(err, "fetch", c->req.stream, c->req.shard, address);
  struct timespec pause = {.tv_sec = 0, .tv_nsec = 200 * 1000000L};
  nanosleep(&pause, NULL);
  int rc = ctl_shard_leader(c->o, c->req.stream, c->req.shard, address, cap);
  if (rc) return rc;
  felix_session_free(*s);
  *s = felix_session_new(address, c->o->timeout_ms);
  return *s ? 0 : ctl_error(FELIX_EXIT_FAILURE, NULL, "cannot start a session with %s", address);
}

static int consume_loop(consumer *c, felix_session **s, char *address, size_t cap) {
  const ctl_opts *o = c->o;
  uint64_t failing_since = 0;
  for (;;) {
    if (interrupted) return FELIX_EXIT_OK;
    felix_fetch_reply rep;
    memset(&rep, 0, sizeof rep);
    felix_err err = {0};
    c->req.max_records = c->remaining < FETCH_RECORDS ? (uint32_t)c->remaining : FETCH_RECORDS;
    if (felix_session_fetch(*s, &c->req, &rep, &err) != FELIX_OK) {
      felix_fetch_reply_free(&rep);
      if (interrupted) return FELIX_EXIT_OK;
      int rc = after_failed_fetch(c, s, address, cap, &err, &failing_since);
      if (rc) return rc;
      continue;
    }
    failing_since = 0;
    if (!o->follow && !c->have_end) {
      c->have_end = true;
      c->end = rep.hwm;
    }
    bool oom = false, more = print_reply(c, &rep, &oom);
    uint64_t prev = c->req.offset, next = rep.next_offset;
    uint32_t got = rep.count;
    felix_fetch_reply_free(&rep);
    if (fflush(stdout) != 0 || ferror(stdout)) return ctl_error(FELIX_EXIT_FAILURE, NULL, "cannot write to stdout");
    if (oom) return ctl_error(FELIX_EXIT_FAILURE, NULL, "out of memory encoding a record of %s/%u", c->req.stream,
                              c->req.shard);
    if (!more) return FELIX_EXIT_OK;
    if (next < prev)
      return ctl_error(FELIX_EXIT_FAILURE, NULL, "the broker at %s answered a fetch at offset %" PRIu64
                       " with next offset %" PRIu64, address, prev, next);
    c->req.offset = next;
    if (c->have_end && next >= c->end) return FELIX_EXIT_OK;
    /* Below the HWM a fetch always makes progress; one that does not would
     * spin forever, so it is an error rather than a retry. */
    if (!o->follow && got == 0 && next == prev)
      return ctl_error(FELIX_EXIT_FAILURE, NULL, "the broker at %s returned nothing at offset %" PRIu64
                       " below its HWM %" PRIu64, address, prev, c->end);
  }
}

static int consume(const ctl_opts *o) {
  consumer c = {.o = o, .remaining = (o->given & CTL_F_COUNT) ? o->count : UINT64_MAX};
  if (strlen(o->args[0]) >= sizeof c.req.stream)
    return ctl_error(FELIX_EXIT_USAGE, "stream names are at most 64 characters", "stream name is too long");
  strcpy(c.req.stream, o->args[0]);
  c.req.shard = o->shard;
  c.req.offset = o->from;
  c.req.max_bytes = FETCH_BYTES;
  c.req.wait_ms = o->follow ? FOLLOW_WAIT_MS : 0;
  char address[128];
  int rc = ctl_shard_leader(o, c.req.stream, c.req.shard, address, sizeof address);
  if (rc) return rc;
  /* The client library adds wait_ms to the timeout of a fetch itself. */
  felix_session *s = felix_session_new(address, o->timeout_ms);
  if (!s) return ctl_error(FELIX_EXIT_FAILURE, NULL, "cannot start a session with %s", address);
  if (o->follow) catch_sigint();
  rc = consume_loop(&c, &s, address, sizeof address);
  if (s) felix_session_free(s);
  free(c.b64);
  return rc;
}

const ctl_command ctl_cmd_consume = {
    .group = "consume",
    .nargs = 1,
    .flags = CTL_F_SHARD | CTL_F_FROM | CTL_F_COUNT | CTL_F_FOLLOW | CTL_F_WAIT,
    .required = CTL_F_SHARD,
    .usage = "consume STREAM --shard N [--from OFFSET] [--count N] [--follow] [--wait D]",
    .summary = "print a shard's records, one per line",
    .help = "\n"
            "Options:\n"
            "  --shard N       the shard to read (required)\n"
            "  --from OFFSET   first offset to read (default 0)\n"
            "  --count N       stop after N records\n"
            "  --follow        keep waiting for new records until --count or Ctrl-C\n"
            "  --wait D        wait up to D for the shard to have a leader (default 10s;\n"
            "                  10, 10s, 500ms, 2m; 0 fails at once)\n"
            "\n"
            "Prints each record's payload exactly as stored followed by a newline.\n"
            "With -o json, prints one object per line instead:\n"
            "  {\"offset\", \"timestamp\", \"payload_b64\"} (timestamp: RFC 3339, microseconds)\n"
            "Offsets of generation-start markers are skipped, so offsets may have gaps.\n"
            "\n"
            "Without --follow, felixctl stops at the shard's HWM as it was when the\n"
            "command started (or after --count records). With --follow it waits for\n"
            "new records (long polls of 1 s) until --count records were printed or\n"
            "SIGINT, and then exits 0.\n"
            "\n"
            "The shard's leader is found through the control plane (so --token-file\n"
            "is needed). A fetch only reads, so one that fails because the leader is\n"
            "gone or not serving yet (a failover) is tried again at the new leader for\n"
            "up to --wait; then an unreachable broker exits 5, a shard still without a leader\n"
            "after --wait 1 (at NoCaughtUpReplica at once, saying so: no copy can serve it),\n"
            "an OFFSET outside the shard's log 2.\n",
    .run = consume,
};
