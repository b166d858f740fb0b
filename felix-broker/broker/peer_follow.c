/* broker/peer_follow.c — the replica's side of replication (DESIGN.md §3.4,
 * §4.3): HELLO (handshake and promise), APPEND (records from the leader),
 * READ (a leader-elect fetching what its fence adopted from this copy).
 *
 * Invariants: a promise is on disk before it is answered and ends every
 * older role; appends are taken only over a connection whose HELLO bound it
 * to the ballot's leader process and generation, and only while the ballot
 * still names them; a divergent suffix is cut durably before `generations`
 * is rewritten; a generations line is durable before any record of it; an
 * on_commit confirmation is bound to (generation, append sequence). */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "drain.h"
#include "peer.h"
#include "felix/logfmt.h"
#include "felix/replication.h"
#include "felix/wire_peer.h"

static bool ballot_names(const felix_ballot *bl, uint64_t g, const char *leader, const char *copy, const char *inc) {
  return bl->has_leader && bl->generation == g && !strcmp(bl->leader, leader) && !strcmp(bl->leader_copy_id, copy) &&
         !strcmp(bl->leader_incarnation, inc);
}

static bool binding_current(const shard *s, const peer_binding *pb) {
  return pb->bound && ballot_names(&s->ballot, pb->generation, pb->leader, pb->leader_copy_id, pb->leader_incarnation);
}

void peer_fill_gens(const shard *s, uint64_t from, uint64_t below, felix_generation *out, uint32_t *n) {
  size_t lo = s->gens.count, hi = 0;
  for (size_t i = 0; i < s->gens.count; i++)
    if (s->gens.items[i].start_offset >= from && s->gens.items[i].start_offset < below) {
      if (lo == s->gens.count) lo = i;
      hi = i + 1;
    }
  *n = 0;
  if (lo == s->gens.count) return;
  if (hi - lo > FELIX_PEER_MAX_GENS) lo = hi - FELIX_PEER_MAX_GENS; /* the newest: an older gap only cuts deeper */
  for (size_t i = lo; i < hi; i++) out[(*n)++] = s->gens.items[i];
  if (lo > 0 && from == 0)
    felix_log_event("warn", "more generations than a peer frame carries: the peer will copy this shard again from the start",
                    "shard", s->dir_name, NULL);
}

static void hello_reply(conn *c, uint32_t corr, felix_peer_hello_reply *r) {
  felix_buf out = {0};
  felix_peer_hello_reply_encode(&out, corr, r);
  conn_reply(c, &out);
}

/* Takes the promise of h (§3.4): only for a higher generation, or again from
 * the same process for the same one, and only for a fence of the control
 * plane instance this copy last heard from (§4.8). Returns 0, or a refusal
 * in r. */
static int take_promise(broker *b, shard *s, const felix_peer_hello *h, felix_peer_hello_reply *r) {
  felix_promise_ask ask = {.generation = h->generation, .leader = h->leader, .leader_copy_id = h->leader_copy_id,
                           .leader_incarnation = h->leader_incarnation, .cp_instance = h->cp_instance};
  felix_promise_verdict v = felix_promise_judge(&s->ballot, &ask, b->cp_instance);
  if (v == FELIX_PROMISE_HELD) return 0;
  if (v == FELIX_PROMISE_OLD_CP) {
    r->status = FELIX_PS_REFUSED;
    snprintf(r->message, sizeof r->message,
             "%s/%u on %s refuses a fence carrying an assignment of control-plane instance %.40s: it last heard "
             "from instance %.40s (the fence goes on once both hear from the same one)",
             s->stream, s->index, b->cfg.id, h->cp_instance, b->cp_instance[0] ? b->cp_instance : "(none yet)");
    return -1;
  }
  if (v == FELIX_PROMISE_LOWER) {
    r->status = FELIX_PS_REFUSED;
    snprintf(r->message, sizeof r->message, "%s/%u on %s promised generation %" PRIu64 " to %s", s->stream, s->index,
             b->cfg.id, s->ballot.generation, s->ballot.has_leader ? s->ballot.leader : "nobody yet");
    return -1;
  }
  shard_stop_leading(b, s, "promised a newer generation to a peer");
  felix_ballot was = s->ballot;
  assert(h->generation > s->ballot.generation); /* FELIX_PROMISE_TAKE: a promise only goes up */
  s->ballot.generation = h->generation;
  s->ballot.has_leader = true;
  snprintf(s->ballot.leader, sizeof s->ballot.leader, "%s", h->leader);
  snprintf(s->ballot.leader_copy_id, sizeof s->ballot.leader_copy_id, "%s", h->leader_copy_id);
  snprintf(s->ballot.leader_incarnation, sizeof s->ballot.leader_incarnation, "%s", h->leader_incarnation);
  if (shard_write_ballot(b, s)) {
    s->ballot = was; /* memory as on disk; the copy is refused */
    r->status = FELIX_PS_STORAGE;
    snprintf(r->message, sizeof r->message, "cannot write the ballot of %s/%u", s->stream, s->index);
    return -1;
  }
  broker_publish_inventory(b);
  return 0;
}

static void handle_hello(broker *b, conn *c, uint32_t corr, const uint8_t *body, size_t len) {
  felix_peer_hello h;
  felix_err err;
  felix_peer_hello_reply r = {0};
  snprintf(r.broker, sizeof r.broker, "%s", b->cfg.id);
  snprintf(r.storage_id, sizeof r.storage_id, "%s", b->sid.hex);
  snprintf(r.incarnation, sizeof r.incarnation, "%s", b->incarnation);
  if (felix_peer_hello_decode(body, len, &h, &err)) {
    r.status = FELIX_PS_REFUSED;
    snprintf(r.message, sizeof r.message, "%.500s", err.msg);
    return hello_reply(c, corr, &r);
  }
  shard *s = broker_find_shard_uuid(b, h.stream_uuid, h.shard);
  if (!s || s->refused || !s->log) {
    r.status = FELIX_PS_UNKNOWN_SHARD;
    snprintf(r.message, sizeof r.message, "%s has no copy of %s/%u", b->cfg.id, h.stream, h.shard);
    return hello_reply(c, corr, &r);
  }
  if (!b->serving || b->peer_refusing) {
    r.status = FELIX_PS_REFUSED;
    snprintf(r.message, sizeof r.message, "%s is %s", b->cfg.id, b->peer_refusing ? "draining" : "starting");
  } else if (take_promise(b, s, &h, &r) == 0) {
    peer_binding *pb = conn_peer(c);
    *pb = (peer_binding){.bound = true, .shard = h.shard, .generation = h.generation};
    snprintf(pb->stream_uuid, sizeof pb->stream_uuid, "%s", h.stream_uuid);
    snprintf(pb->leader, sizeof pb->leader, "%s", h.leader);
    snprintf(pb->leader_copy_id, sizeof pb->leader_copy_id, "%s", h.leader_copy_id);
    snprintf(pb->leader_incarnation, sizeof pb->leader_incarnation, "%s", h.leader_incarnation);
  }
  /* Read only now: after the promise nothing older can still land. */
  felix_log_stats st;
  felix_log_get_stats(s->log, &st);
  snprintf(r.copy_id, sizeof r.copy_id, "%s", s->ballot.copy_id);
  r.generation = s->ballot.generation;
  r.log_start = st.start_offset;
  r.log_end = st.end_offset;
  r.held_end = st.held_end;
  peer_fill_gens(s, 0, st.end_offset, r.gens, &r.ngens);
  hello_reply(c, corr, &r);
}

/* Cuts the divergent suffix durably, then rewrites generations (§3.4). */
int peer_truncate(broker *b, shard *s, uint64_t to) {
  felix_log_stats st;
  felix_log_get_stats(s->log, &st);
  if (to >= st.end_offset) return 0;
  felix_err err;
  if (to < st.start_offset || felix_log_truncate(s->log, to, &err)) {
    felix_log_event("error", "cannot truncate a divergent suffix", "shard", s->dir_name, "reason",
                    to < st.start_offset ? "below the log start" : err.msg, NULL);
    if (to >= st.start_offset && err.status == FELIX_E_GONE) shard_refuse(b, s, err.msg); /* this copy alone */
    return -1;
  }
  s->log_epoch++;
  /* Item 3 of review 5: an HWM learned from an older leader says nothing of
   * the records now at those offsets. */
  if (s->hwm > to) s->hwm = to;
  char at[32];
  snprintf(at, sizeof at, "%" PRIu64, to);
  felix_log_event("info", "truncated a divergent suffix", "shard", s->dir_name, "offset", at, NULL);
  /* On a failed write memory keeps the trimmed lines: they match the cut
   * log, and the lines the file still has beyond its end are dropped when
   * the copy is reopened (trim_generations). The copy is refused meanwhile. */
  if (felix_generations_trim_to(&s->gens, to) && shard_write_generations(b, s)) return -1;
  return 0;
}

/* Adds the leader's lines starting at or after first (durably, before any of
 * their records is written). */
int peer_merge_gens(broker *b, shard *s, uint64_t first, const felix_generation *g, uint32_t n) {
  size_t had = s->gens.count;
  for (uint32_t i = 0; i < n; i++) {
    if (g[i].start_offset < first) continue;
    bool have = false;
    for (size_t k = 0; k < s->gens.count; k++) have |= s->gens.items[k].generation == g[i].generation;
    if (have) continue;
    felix_generation *ni = NULL;
    if ((s->gens.count && s->gens.items[s->gens.count - 1].generation > g[i].generation) || /* out of order */
        !(ni = realloc(s->gens.items, (s->gens.count + 1) * sizeof *ni))) {
      s->gens.count = had; /* none of this shipment's lines is taken */
      return -1;
    }
    s->gens.items = ni;
    s->gens.items[s->gens.count++] = g[i];
  }
  /* A line that is not on disk is not in memory either: otherwise the next
   * shipment would find it and write records of a generation the file does
   * not name (review 5, item 5). */
  if (s->gens.count > had && shard_write_generations(b, s)) {
    s->gens.count = had;
    return -1;
  }
  return 0;
}

/* Appends records at first (which must be the log end). */
felix_status peer_append_records(shard *s, uint64_t first, const felix_wire_record *recs, uint32_t n,
                                 felix_appended *a, felix_err *err) {
  if (n == 0) return FELIX_OK;
  felix_log_stats ls;
  felix_log_get_stats(s->log, &ls);
  if (ls.end_offset != first) /* checked before writing: records never land at another offset */
    return felix_fail(err, FELIX_E_INVAL, "records start at %" PRIu64 ", the log ends at %" PRIu64, first, ls.end_offset);
  felix_record_in *in = calloc(n, sizeof *in);
  if (!in) return felix_fail(err, FELIX_E_IO, "out of memory for %u records", n);
  for (uint32_t i = 0; i < n; i++) in[i] = (felix_record_in){recs[i].payload, recs[i].len, recs[i].timestamp_micros};
  felix_status st = felix_log_append_batch(s->log, in, n, a, err);
  free(in);
  if (st == FELIX_OK && a->first_offset != first)
    return felix_fail(err, FELIX_E_INVAL, "records landed at %" PRIu64 ", not %" PRIu64, a->first_offset, first);
  return st;
}

static void append_reply(conn *c, uint32_t corr, const shard *s, uint16_t status, const char *msg) {
  felix_peer_append_reply r = {.status = status};
  snprintf(r.message, sizeof r.message, "%.500s", msg);
  if (s && s->log) {
    felix_log_stats st;
    felix_log_get_stats(s->log, &st);
    r.generation = s->ballot.generation;
    r.held_end = st.held_end;
    r.log_end = st.end_offset;
  }
  felix_buf out = {0};
  felix_peer_append_reply_encode(&out, corr, &r);
  conn_reply(c, &out);
}

typedef struct confirm_work {
  uv_work_t work;
  broker *b;
  shard *s;
  conn *c;
  uint32_t corr;
  peer_binding binding;
  felix_appended a;
  felix_status st;
  felix_err err;
} confirm_work;

static void confirm_wait(uv_work_t *w) {
  confirm_work *x = w->data;
  x->st = felix_log_wait_held(x->s->log, &x->a, &x->err);
}

static void confirm_done(uv_work_t *w, int status) {
  confirm_work *x = w->data;
  (void)status;
  x->s->pending_held--;
  if (x->st == FELIX_E_SYNC) broker_fail_closed(x->b, x->err.msg);
  else if (x->st == FELIX_E_GONE) shard_refuse(x->b, x->s, x->err.msg);
  /* Bound to (generation, append sequence): a promise given meanwhile, or a
   * truncation of this batch, means the confirmation must not count. */
  if (x->st == FELIX_OK && binding_current(x->s, &x->binding)) append_reply(x->c, x->corr, x->s, FELIX_PS_OK, "");
  else append_reply(x->c, x->corr, x->s, FELIX_PS_REFUSED, x->st ? x->err.msg : "the ballot changed while syncing");
  broker *b = x->b;
  free(x);
  broker_drain_continue(b);
}

static uint16_t check_append(broker *b, conn *c, shard *s, const felix_peer_append *a, char *msg, size_t cap) {
  peer_binding *pb = conn_peer(c);
  if (!s || s->refused || !s->log) return snprintf(msg, cap, "no copy of %s/%u", a->stream, a->shard), FELIX_PS_UNKNOWN_SHARD;
  if (!pb->bound || strcmp(pb->stream_uuid, s->ballot.stream_uuid) || pb->shard != s->index)
    return snprintf(msg, cap, "no accepted hello for %s/%u on this connection", a->stream, a->shard), FELIX_PS_NOT_HANDSHAKEN;
  if (!binding_current(s, pb) || a->generation != pb->generation || s->leading || s->fencing)
    return snprintf(msg, cap, "%s/%u promised generation %" PRIu64 " to another leader", s->stream, s->index,
                    s->ballot.generation), FELIX_PS_REFUSED;
  if (b->peer_refusing) return snprintf(msg, cap, "%s is draining", b->cfg.id), FELIX_PS_REFUSED;
  return 0;
}

static void handle_append(broker *b, conn *c, uint32_t corr, const uint8_t *body, size_t len) {
  felix_peer_append a;
  felix_err err;
  char msg[512];
  if (felix_peer_append_decode(body, len, &a, &err)) return append_reply(c, corr, NULL, FELIX_PS_REFUSED, err.msg);
  shard *s = broker_find_shard(b, a.stream, a.shard);
  uint16_t why = check_append(b, c, s, &a, msg, sizeof msg);
  if (!why && a.truncate_to != FELIX_PEER_NO_TRUNCATE && shard_cut_below_kept(s, a.truncate_to))
    why = FELIX_PS_REFUSED, snprintf(msg, sizeof msg, "a cut below what placement abandon kept on this copy");
  if (!why && a.truncate_to != FELIX_PEER_NO_TRUNCATE && peer_truncate(b, s, a.truncate_to))
    why = FELIX_PS_STORAGE, snprintf(msg, sizeof msg, "cannot truncate");
  felix_log_stats st = {0};
  if (!why) felix_log_get_stats(s->log, &st);
  if (!why && a.count && a.first_offset != st.end_offset)
    why = FELIX_PS_OUT_OF_ORDER, snprintf(msg, sizeof msg, "records start at %" PRIu64 ", the log ends at %" PRIu64,
                                          a.first_offset, st.end_offset);
  if (!why && peer_merge_gens(b, s, a.first_offset, a.gens, a.ngens))
    why = FELIX_PS_STORAGE, snprintf(msg, sizeof msg, "cannot write generations");
  felix_appended ap = {0};
  felix_status ast = why ? FELIX_OK : peer_append_records(s, a.first_offset, a.records, a.count, &ap, &err);
  felix_peer_append_free(&a);
  if (ast) {
    if (ast == FELIX_E_SYNC || ast == FELIX_E_IO) broker_fail_closed(b, err.msg);
    if (ast == FELIX_E_GONE) shard_refuse(b, s, err.msg);
    return append_reply(c, corr, s, FELIX_PS_STORAGE, err.msg);
  }
  if (why) return append_reply(c, corr, s, why, msg);
  uint64_t leader_hwm = a.leader_hwm;
  felix_log_get_stats(s->log, &st);
  if (leader_hwm > s->hwm) s->hwm = leader_hwm < st.held_end ? leader_hwm : st.held_end;
  b->inventory_stale = true;
  if (a.count == 0 || felix_fsync_mode_relaxed(felix_log_mode(s->log))) return append_reply(c, corr, s, FELIX_PS_OK, "");
  confirm_work *x = calloc(1, sizeof *x);
  if (!x) return append_reply(c, corr, s, FELIX_PS_STORAGE, "out of memory");
  *x = (confirm_work){.b = b, .s = s, .c = c, .corr = corr, .binding = *conn_peer(c), .a = ap};
  x->work.data = x;
  s->pending_held++;
  uv_queue_work(b->loop, &x->work, confirm_wait, confirm_done);
}

static void read_reply(conn *c, uint32_t corr, felix_peer_read_reply *r) {
  felix_buf out = {0};
  felix_peer_read_reply_encode(&out, corr, r);
  conn_reply(c, &out);
}

/* A leader-elect fetching from the copy its fence adopted: only what this
 * copy holds, only to the process it promised the fence's generation to. */
static void handle_read(broker *b, conn *c, uint32_t corr, const uint8_t *body, size_t len) {
  felix_peer_read q;
  felix_err err;
  felix_peer_read_reply r = {0};
  if (felix_peer_read_decode(body, len, &q, &err)) {
    r.status = FELIX_PS_REFUSED;
    snprintf(r.message, sizeof r.message, "%.500s", err.msg);
    return read_reply(c, corr, &r);
  }
  shard *s = broker_find_shard(b, q.stream, q.shard);
  peer_binding *pb = conn_peer(c);
  if (!s || !s->log || s->refused) r.status = FELIX_PS_UNKNOWN_SHARD;
  else if (!binding_current(s, pb) || pb->generation != q.generation) r.status = FELIX_PS_REFUSED;
  if (r.status) {
    snprintf(r.message, sizeof r.message, "%s will not serve %s/%u to this connection", b->cfg.id, q.stream, q.shard);
    return read_reply(c, corr, &r);
  }
  felix_log_stats st;
  felix_log_get_stats(s->log, &st);
  snprintf(r.copy_id, sizeof r.copy_id, "%s", s->ballot.copy_id);
  r.held_end = st.held_end;
  r.body.generation = s->ballot.generation;
  r.body.first_offset = q.from;
  r.body.truncate_to = FELIX_PEER_NO_TRUNCATE;
  snprintf(r.body.stream, sizeof r.body.stream, "%s", s->stream);
  r.body.shard = s->index;
  felix_record_batch batch = {0};
  size_t max = q.max_records ? q.max_records : 256;
  if (q.from < st.held_end && max > st.held_end - q.from) max = st.held_end - q.from;
  if (q.from < st.start_offset || q.from > st.held_end ||
      (q.from < st.held_end && felix_log_read(s->log, q.from, max, 1u << 20, &batch, &err))) {
    r.status = FELIX_PS_STORAGE;
    snprintf(r.message, sizeof r.message, "cannot read %s/%u from %" PRIu64, s->stream, s->index, q.from);
    return read_reply(c, corr, &r);
  }
  felix_wire_record *recs = calloc(batch.count + 1, sizeof *recs);
  for (size_t i = 0; recs && i < batch.count; i++)
    recs[i] = (felix_wire_record){batch.records[i].offset, batch.records[i].timestamp_micros, batch.records[i].payload,
                                  batch.records[i].len};
  r.body.count = recs ? (uint32_t)batch.count : 0;
  r.body.records = recs;
  peer_fill_gens(s, q.from, q.from + r.body.count, r.body.gens, &r.body.ngens);
  read_reply(c, corr, &r);
  free(recs);
  felix_record_batch_free(&batch);
}

void peer_handle_frame(broker *b, conn *c, uint16_t type, uint32_t corr, const uint8_t *body, size_t len) {
  if (type == FELIX_WIRE_PEER_HELLO) handle_hello(b, c, corr, body, len);
  else if (type == FELIX_WIRE_PEER_APPEND) handle_append(b, c, corr, body, len);
  else handle_read(b, c, corr, body, len);
}
