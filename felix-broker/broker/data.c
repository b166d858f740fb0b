/* broker/data.c — publish, fetch and metadata on the loop thread.
 *
 * Binding pending work to the entry (DESIGN.md §3.2): an on_commit publish
 * waits for its sync on the thread pool bound to (shard, generation, append
 * sequence); when it completes it counts only if the shard is still led at
 * that generation, else the producer is told nothing was acknowledged. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "drain.h"
#include "felix/logfmt.h"
#include "felix/replication.h"

struct fetch_wait {
  conn *c;
  uint32_t corr;
  felix_fetch_req req;
  uv_timer_t timer;
  shard *s;
  broker *b;
  struct fetch_wait *next;
};

const leader_entry *broker_leader_of(const broker *b, const char *stream, uint32_t index) {
  for (size_t i = 0; i < b->nleaders; i++)
    if (b->leaders[i].shard == index && !strcmp(b->leaders[i].stream, stream)) return &b->leaders[i];
  return NULL;
}

/* ---- publish ---- */

static void publish_reply(conn *c, uint32_t corr, uint16_t status, const char *msg, const char *leader, uint64_t first,
                          uint32_t count) {
  felix_publish_reply r = {.status = status, .first_offset = first, .count = count};
  snprintf(r.message, sizeof r.message, "%s", msg ? msg : "");
  snprintf(r.leader_address, sizeof r.leader_address, "%s", leader ? leader : "");
  felix_buf out = {0};
  felix_wire_publish_reply_encode(&out, corr, &r);
  conn_reply(c, &out);
}

/* Why this broker cannot take work for the shard now, or 0 if it can. */
static uint16_t not_serving(broker *b, shard *s, const char *stream, uint32_t index, char *msg, size_t cap,
                            const char **leader) {
  const leader_entry *le = broker_leader_of(b, stream, index);
  *leader = le && strcmp(le->leader, b->cfg.id) ? le->address : "";
  if (!s && !le) return snprintf(msg, cap, "no shard %s/%u", stream, index), FELIX_WS_UNKNOWN_SHARD;
  if (!s || !s->leading) return snprintf(msg, cap, "this broker (%s) does not lead %s/%u", b->cfg.id, stream, index), FELIX_WS_NOT_LEADER;
  if (b->draining) return snprintf(msg, cap, "broker %s is draining", b->cfg.id), FELIX_WS_UNAVAILABLE;
  return 0;
}

typedef struct held_work {
  uv_work_t work;
  broker *b;
  shard *s;
  conn *c;
  uint32_t corr;
  uint64_t generation;
  int policy;
  felix_appended a;
  felix_status st;
  felix_err err;
} held_work;

static void held_wait(uv_work_t *w) {
  held_work *h = w->data;
  h->st = felix_log_wait_held(h->s->log, &h->a, &h->err);
}

static void held_done(uv_work_t *w, int status) {
  held_work *h = w->data;
  broker *h_b = h->b;
  shard *s = h->s;
  (void)status;
  s->pending_held--;
  bool same_term = s->leading && s->ballot.generation == h->generation;
  if (h->st == FELIX_OK && same_term) {
    /* The leader holds the batch (rule 2); it is acknowledged once the
     * stream's policy is met (rule 3), bound to this generation. */
    peer_add_pending_ack(h->b, s, h->c, h->corr, h->policy, &h->a);
  } else {
    char msg[800];
    snprintf(msg, sizeof msg, "not acknowledged: %s", h->st ? h->err.msg : "leadership changed while the batch was syncing");
    publish_reply(h->c, h->corr, h->st == FELIX_E_SYNC ? FELIX_WS_STORAGE_ERROR : FELIX_WS_UNAVAILABLE, msg, "", 0, 0);
    if (h->st == FELIX_E_GONE) shard_refuse(h->b, s, h->err.msg);
    else if (h->st == FELIX_E_SYNC) broker_fail_closed(h->b, h->err.msg);
  }
  free(h);
  broker_drain_continue(h_b);
}

static void handle_publish(broker *b, conn *c, uint32_t corr, const uint8_t *body, size_t len) {
  felix_publish_req req;
  felix_err err;
  if (felix_wire_publish_req_decode(body, len, &req, &err)) return publish_reply(c, corr, FELIX_WS_INVALID_REQUEST, err.msg, "", 0, 0);
  shard *s = broker_find_shard(b, req.stream, req.shard);
  char msg[512];
  const char *leader;
  uint16_t why = not_serving(b, s, req.stream, req.shard, msg, sizeof msg, &leader);
  for (uint32_t i = 0; !why && i < req.count; i++)
    if (req.records[i].len == 0) why = FELIX_WS_INVALID_REQUEST, snprintf(msg, sizeof msg, "record %u of the batch is empty: empty records are reserved for generation-start markers", i);
  if (!why && req.count == 0) why = FELIX_WS_INVALID_REQUEST, snprintf(msg, sizeof msg, "empty batch");
  int policy = !why && req.acks != FELIX_ACKS_DEFAULT ? req.acks : s && s->ack_policy ? s->ack_policy : FELIX_ACK_QUORUM;
  if (why) {
    felix_publish_req_free(&req);
    return publish_reply(c, corr, why, msg, leader, 0, 0);
  }
  felix_record_in *recs = calloc(req.count, sizeof *recs);
  for (uint32_t i = 0; recs && i < req.count; i++)
    recs[i] = (felix_record_in){req.records[i].payload, req.records[i].len, req.records[i].timestamp_micros};
  felix_appended a;
  felix_status st = recs ? felix_log_append_batch(s->log, recs, req.count, &a, &err) : FELIX_E_IO;
  free(recs);
  felix_publish_req_free(&req);
  if (st) {
    b->append_errors++;
    publish_reply(c, corr, st == FELIX_E_INVAL ? FELIX_WS_TOO_LARGE : FELIX_WS_STORAGE_ERROR, err.msg, "", 0, 0);
    if (st == FELIX_E_GONE) shard_refuse(b, s, err.msg);
    else if (st == FELIX_E_SYNC || st == FELIX_E_IO) broker_fail_closed(b, err.msg);
    return;
  }
  b->appends_total += req.count;
  /* Ship at once, while our own copy syncs (on_commit): the followers' holds
   * and ours proceed together; the HWM still waits for ours (rule 2). */
  peer_pump(b, s);
  held_work *h = calloc(1, sizeof *h);
  *h = (held_work){.b = b, .s = s, .c = c, .corr = corr, .generation = s->ballot.generation, .policy = policy, .a = a};
  h->work.data = h;
  s->pending_held++;
  if (felix_fsync_mode_relaxed(felix_log_mode(s->log))) { /* held once written: answer now */
    held_wait(&h->work);
    held_done(&h->work, 0);
    return;
  }
  uv_queue_work(b->loop, &h->work, held_wait, held_done);
}

/* ---- fetch ---- */

/* A leader answers reads once its generation's start record is committed.
 * Before, its HWM is the control plane's maximum (rule 3), which may be below
 * what its predecessor showed: a consumer would see the HWM step back. Once
 * it is committed, the HWM is above everything the fence adopted, and so
 * above every HWM any earlier leader showed. */
static bool start_committed(const shard *s) { return s->hwm > s->generation_start; }

/* An error reply shows the log start and the HWM only from a leader whose
 * start record is committed: any other HWM (a follower's, a new leader's
 * starting one) may be below one a consumer was shown (review of issue 14). */
static void fetch_reply_status(conn *c, uint32_t corr, uint16_t status, const char *msg, const char *leader, const shard *s) {
  felix_fetch_reply r = {.status = status};
  snprintf(r.message, sizeof r.message, "%s", msg);
  snprintf(r.leader_address, sizeof r.leader_address, "%s", leader ? leader : "");
  if (s && s->log && s->leading && start_committed(s)) {
    felix_log_stats st;
    felix_log_get_stats(s->log, &st);
    r.log_start = st.start_offset;
    r.hwm = s->hwm;
  }
  felix_buf out = {0};
  size_t count_at, start = felix_wire_fetch_reply_begin(&out, corr, &r, &count_at);
  felix_wire_fetch_reply_end(&out, start, count_at, 0);
  conn_reply(c, &out);
}

/* Answers with committed records from req->offset (markers skipped). */
static void fetch_answer(broker *b, conn *c, uint32_t corr, shard *s, const felix_fetch_req *req) {
  (void)b;
  if (!start_committed(s)) {
    char msg[160];
    snprintf(msg, sizeof msg, "generation %" PRIu64 " has not committed its start record (offset %" PRIu64 ") yet",
             s->ballot.generation, s->generation_start);
    fetch_reply_status(c, corr, FELIX_WS_UNAVAILABLE, msg, "", s); /* no HWM shown: it may be below an earlier one */
    return;
  }
  felix_log_stats st;
  felix_log_get_stats(s->log, &st);
  uint64_t avail = s->hwm > req->offset ? s->hwm - req->offset : 0;
  size_t max_records = req->max_records && req->max_records < avail ? req->max_records : (size_t)avail;
  felix_record_batch batch = {0};
  felix_err err;
  if (max_records && felix_log_read(s->log, req->offset, max_records, req->max_bytes ? req->max_bytes : 1u << 20, &batch, &err)) {
    fetch_reply_status(c, corr, FELIX_WS_STORAGE_ERROR, err.msg, "", s);
    return;
  }
  felix_fetch_reply r = {.status = FELIX_WS_OK, .log_start = st.start_offset, .hwm = s->hwm,
                         .next_offset = batch.count ? batch.records[batch.count - 1].offset + 1 : req->offset};
  felix_buf out = {0};
  size_t count_at, start = felix_wire_fetch_reply_begin(&out, corr, &r, &count_at);
  uint32_t n = 0;
  for (size_t i = 0; i < batch.count; i++) {
    if (batch.records[i].len == 0) continue; /* a generation-start marker: its offset is consumed */
    felix_wire_fetch_reply_record(&out, batch.records[i].offset, batch.records[i].timestamp_micros, batch.records[i].payload,
                                  batch.records[i].len);
    n++;
  }
  felix_wire_fetch_reply_end(&out, start, count_at, n);
  felix_record_batch_free(&batch);
  conn_reply(c, &out);
}

static void on_wait_closed(uv_handle_t *h) { free(h->data); }

static void unpark(fetch_wait *w) {
  for (fetch_wait **p = &w->s->waiters; *p; p = &(*p)->next)
    if (*p == w) {
      *p = w->next;
      break;
    }
  uv_timer_stop(&w->timer);
  uv_close((uv_handle_t *)&w->timer, on_wait_closed);
}

static void on_wait_timeout(uv_timer_t *t) {
  fetch_wait *w = t->data;
  conn *c = w->c;
  uint32_t corr = w->corr;
  shard *s = w->s;
  felix_fetch_req req = w->req;
  broker *b = w->b;
  unpark(w);
  fetch_answer(b, c, corr, s, &req);
}

void broker_wake_fetches(broker *b, shard *s) {
  while (s->waiters) {
    fetch_wait *w = s->waiters;
    conn *c = w->c;
    uint32_t corr = w->corr;
    felix_fetch_req req = w->req;
    unpark(w);
    fetch_answer(b, c, corr, s, &req);
  }
}

void broker_fail_fetches(broker *b, shard *s) {
  (void)b;
  while (s->waiters) {
    fetch_wait *w = s->waiters;
    conn *c = w->c;
    uint32_t corr = w->corr;
    unpark(w);
    fetch_reply_status(c, corr, FELIX_WS_NOT_LEADER, "leadership changed", "", s);
  }
}

static void handle_fetch(broker *b, conn *c, uint32_t corr, const uint8_t *body, size_t len) {
  felix_fetch_req req;
  felix_err err;
  if (felix_wire_fetch_req_decode(body, len, &req, &err)) return fetch_reply_status(c, corr, FELIX_WS_INVALID_REQUEST, err.msg, "", NULL);
  shard *s = broker_find_shard(b, req.stream, req.shard);
  char msg[512];
  const char *leader;
  uint16_t why = not_serving(b, s, req.stream, req.shard, msg, sizeof msg, &leader);
  if (why == FELIX_WS_UNAVAILABLE) why = 0; /* a draining leader still serves reads */
  if (why) return fetch_reply_status(c, corr, why, msg, leader, s);
  felix_log_stats st;
  felix_log_get_stats(s->log, &st);
  /* An offset between the HWM and the log end waits: a new leader's HWM may
   * start below what its predecessor showed (it starts from the control
   * plane's maximum HWM) until its generation-start record commits; the
   * fetch is answered only then (start_committed). */
  if (req.offset < st.start_offset || req.offset > st.end_offset) {
    snprintf(msg, sizeof msg, "offset %" PRIu64 " is outside [%" PRIu64 ", %" PRIu64 "] (log start, log end)", req.offset,
             st.start_offset, st.end_offset);
    return fetch_reply_status(c, corr, FELIX_WS_OFFSET_OUT_OF_RANGE, msg, "", s);
  }
  /* Before the start record commits (ms after a fence, once a follower holds
   * it) a fetch waits for it up to its wait_ms, then gets UNAVAILABLE; one
   * with wait_ms 0 gets UNAVAILABLE at once. */
  bool ready = start_committed(s);
  if (b->draining || req.wait_ms == 0 || (ready && req.offset < s->hwm)) return fetch_answer(b, c, corr, s, &req);
  uint32_t wait_ms = req.wait_ms > 30000 ? 30000 : req.wait_ms;
  fetch_wait *w = calloc(1, sizeof *w);
  *w = (fetch_wait){.c = c, .corr = corr, .req = req, .s = s, .b = b, .next = s->waiters};
  s->waiters = w;
  uv_timer_init(b->loop, &w->timer);
  w->timer.data = w;
  uv_timer_start(&w->timer, on_wait_timeout, wait_ms, 0);
}

/* ---- metadata ---- */

static void handle_metadata(broker *b, conn *c, uint32_t corr, const uint8_t *body, size_t len) {
  char stream[128];
  felix_err err;
  felix_metadata_reply r = {0};
  if (felix_wire_metadata_req_decode(body, len, stream, &err)) {
    r.status = FELIX_WS_INVALID_REQUEST;
    snprintf(r.message, sizeof r.message, "%.500s", err.msg);
  } else {
    r.entries = calloc(b->nleaders ? b->nleaders : 1, sizeof *r.entries);
    for (size_t i = 0; r.entries && i < b->nleaders; i++) {
      const leader_entry *le = &b->leaders[i];
      if (stream[0] && strcmp(stream, le->stream)) continue;
      felix_metadata_entry *e = &r.entries[r.count++];
      snprintf(e->stream, sizeof e->stream, "%s", le->stream);
      e->shard = le->shard;
      e->generation = le->generation;
      snprintf(e->state, sizeof e->state, "%s", le->state);
      snprintf(e->leader, sizeof e->leader, "%s", le->leader);
      snprintf(e->address, sizeof e->address, "%s", le->address);
    }
  }
  felix_buf out = {0};
  felix_wire_metadata_reply_encode(&out, corr, &r);
  free(r.entries);
  conn_reply(c, &out);
}

void broker_handle_frame(broker *b, conn *c, uint16_t type, uint32_t corr, const uint8_t *body, size_t len) {
  if (type >= 0x0010 && type <= 0x001f) peer_handle_frame(b, c, type, corr, body, len);
  else if (type == FELIX_WIRE_PUBLISH) handle_publish(b, c, corr, body, len);
  else if (type == FELIX_WIRE_FETCH) handle_fetch(b, c, corr, body, len);
  else handle_metadata(b, c, corr, body, len);
}
