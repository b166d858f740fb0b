/* broker/peer_lead.c — the leader's side of replication (DESIGN.md §4.2,
 * §4.3, §4.7): one link per other replica, the promotion fence, shipping,
 * the HWM by the Raft rule and the producers' pending acknowledgements.
 *
 * Invariants: a link re-measures its follower on every new connection
 * (HELLO), records the copy id it measured, and copies a copy id it does not
 * trust (a stranger, or one that changed) from the log start; confirmations
 * of another generation never move a cursor; the fence counts only answers
 * whose copy id is the one the assignment names, at or above its floor
 * (felix_fence_count), and a leader-elect adopts the highest-ranked counted
 * copy before it writes its generation; acknowledgements are bound to
 * (generation, append sequence) and fail when the role ends. */
#include <assert.h>
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "drain.h"
#include "peer.h"
#include "felix/logfmt.h"
#include "felix/jsonnum.h"
#include "felix/lease.h"
#include "felix/replication.h"

enum { LINK_WAIT, LINK_CONNECTING, LINK_HELLO, LINK_READY };
#define LINK_RETRY_MS 200
#define LINK_MAX_INFLIGHT 8
#define SHIP_MAX_RECORDS 256
#define SHIP_MAX_BYTES (1u << 20)

struct peer_link {
  uv_tcp_t tcp;
  uv_connect_t creq;
  uv_timer_t timer;
  broker *b;
  shard *s;
  char broker_id[128], address[128];
  int state;
  bool tcp_open, dead;
  int handles; /* open libuv handles: the link is freed when the last closes */
  uint8_t *buf;
  size_t len, cap;
  uint32_t corr;
  /* what the live connection measured (§4.3) */
  char copy_id[FELIX_COPY_ID_HEX + 1], incarnation[128];
  char known_copy_id[FELIX_COPY_ID_HEX + 1]; /* the copy this leadership has measured */
  uint64_t h0, held, next_send, truncate_to;
  uint64_t epoch; /* the shard's log_epoch the measurement was taken against */
  int inflight;
  uint64_t answered_ms; /* loop time of the follower's last answer (for the no-quorum line) */
  /* the fence answer */
  bool answered;
  felix_rank rank;
  felix_generations gens; /* the answer's generations (for adopting this copy) */
  peer_link *next;
};

struct pending_ack {
  conn *c;
  uint32_t corr;
  uint64_t generation;
  int policy;
  felix_appended a;
  pending_ack *next;
};

static void link_connect(peer_link *l);
static void link_reset(peer_link *l, const char *why);
static void fence_evaluate(broker *b, shard *s);
static void adopted_synced(broker *b, shard *s, uint64_t generation, felix_status st, const char *why);

/* ---- sending ---- */

typedef struct link_write {
  uv_write_t req;
  felix_buf frame;
} link_write;

static void on_link_written(uv_write_t *req, int status) {
  link_write *w = (link_write *)req;
  (void)status; /* a failed write shows up as a read error and a reset */
  felix_buf_free(&w->frame);
  free(w);
}

static void link_send(peer_link *l, felix_buf *frame) {
  link_write *w = frame->oom ? NULL : calloc(1, sizeof *w);
  if (!w) {
    felix_buf_free(frame);
    link_reset(l, "out of memory");
    return;
  }
  w->frame = *frame;
  *frame = (felix_buf){0};
  uv_buf_t ub = uv_buf_init((char *)w->frame.data, (unsigned)w->frame.len);
  if (uv_write(&w->req, (uv_stream_t *)&l->tcp, &ub, 1, on_link_written) != 0) {
    felix_buf_free(&w->frame);
    free(w);
    link_reset(l, "write failed");
  }
}

static void send_hello(peer_link *l) {
  shard *s = l->s;
  broker *b = l->b;
  felix_peer_hello h = {.shard = s->index, .generation = s->ballot.generation};
  snprintf(h.leader, sizeof h.leader, "%s", b->cfg.id);
  snprintf(h.leader_storage_id, sizeof h.leader_storage_id, "%s", b->sid.hex);
  snprintf(h.leader_incarnation, sizeof h.leader_incarnation, "%s", b->incarnation);
  snprintf(h.leader_copy_id, sizeof h.leader_copy_id, "%s", s->ballot.copy_id);
  snprintf(h.stream, sizeof h.stream, "%s", s->stream);
  snprintf(h.stream_uuid, sizeof h.stream_uuid, "%s", s->ballot.stream_uuid);
  if (s->fencing) snprintf(h.cp_instance, sizeof h.cp_instance, "%s", s->fence_cp_instance);
  felix_buf out = {0};
  felix_peer_hello_encode(&out, ++l->corr, &h);
  l->state = LINK_HELLO;
  link_send(l, &out);
}

/* Ships what the leader wrote past the follower's cursor, pipelined. */
static void link_pump(peer_link *l) {
  shard *s = l->s;
  if (l->state == LINK_READY && l->epoch != s->log_epoch)
    return link_reset(l, "the leader's log changed under this measurement");
  while (l->state == LINK_READY && s->leading && l->inflight < LINK_MAX_INFLIGHT) {
    felix_log_stats st;
    felix_log_get_stats(s->log, &st);
    if (l->next_send >= st.end_offset && l->truncate_to == FELIX_PEER_NO_TRUNCATE) return;
    felix_record_batch batch = {0};
    felix_err err;
    if (l->next_send < st.end_offset &&
        felix_log_read(s->log, l->next_send, SHIP_MAX_RECORDS, SHIP_MAX_BYTES, &batch, &err)) {
      felix_log_event("error", "cannot read records to ship", "shard", s->dir_name, "reason", err.msg, NULL);
      return link_reset(l, "read failed");
    }
    felix_wire_record *recs = calloc(batch.count + 1, sizeof *recs);
    for (size_t i = 0; recs && i < batch.count; i++)
      recs[i] = (felix_wire_record){0, batch.records[i].timestamp_micros, batch.records[i].payload, batch.records[i].len};
    felix_peer_append a = {.shard = s->index, .generation = s->ballot.generation, .truncate_to = l->truncate_to,
                           .leader_hwm = s->hwm, .first_offset = l->next_send, .count = recs ? (uint32_t)batch.count : 0,
                           .records = recs};
    snprintf(a.stream, sizeof a.stream, "%s", s->stream);
    peer_fill_gens(s, l->next_send, l->next_send + a.count, a.gens, &a.ngens);
    felix_buf out = {0};
    felix_peer_append_encode(&out, ++l->corr, &a);
    free(recs);
    felix_record_batch_free(&batch);
    l->truncate_to = FELIX_PEER_NO_TRUNCATE;
    l->next_send += a.count;
    l->inflight++;
    link_send(l, &out);
  }
}

/* ---- the HWM and acknowledgements ---- */

static const char *member_named_copy(const shard *s, const char *id) {
  for (int i = 0; i < s->nmembers; i++)
    if (!strcmp(s->members[i].broker, id)) return s->members[i].named_copy_id;
  return "";
}

static int gather_holds(const shard *s, felix_follower_hold *f) {
  int n = 0;
  for (peer_link *l = s->links; l && n < BROKER_MAX_MEMBERS; l = l->next)
    f[n++] = (felix_follower_hold){.counted = l->state == LINK_READY && l->epoch == s->log_epoch,
                                   .trusted = !strcmp(l->copy_id, member_named_copy(s, l->broker_id)), .held = l->held};
  return n;
}

static int trusted_replicas(const shard *s) {
  int n = 0;
  for (int i = 0; i < s->nmembers; i++) n += s->members[i].named_copy_id[0] != '\0';
  return n > 0 ? n : 1;
}

static void ack_reply(conn *c, uint32_t corr, uint16_t status, const char *msg, const felix_appended *a) {
  felix_publish_reply r = {.status = status};
  snprintf(r.message, sizeof r.message, "%s", msg);
  if (status == FELIX_WS_OK) r.first_offset = a->first_offset, r.count = (uint32_t)(a->last_offset - a->first_offset + 1);
  felix_buf out = {0};
  felix_wire_publish_reply_encode(&out, corr, &r);
  conn_reply(c, &out);
}

void peer_check_acks(broker *b, shard *s) {
  felix_follower_hold f[BROKER_MAX_MEMBERS];
  int nf = gather_holds(s, f);
  felix_log_stats st;
  felix_log_get_stats(s->log, &st);
  for (pending_ack **p = &s->acks; *p;) {
    pending_ack *x = *p;
    felix_ack_input in = {.policy = s->replicas <= 1 ? FELIX_ACK_QUORUM : x->policy, .end = x->a.last_offset + 1,
                          .hwm = s->hwm, .confirmed = s->confirmed_end,
                          .leader_counts = s->leading && s->ballot.generation == x->generation,
                          .leader_held = st.held_end, .lease_valid = s->lease_until_ms > felix_boottime_ms(),
                          .trusted_replicas = trusted_replicas(s), .followers = f, .nfollowers = (size_t)nf};
    if (!felix_ack_ready(&in)) {
      p = &x->next;
      continue;
    }
    /* The binding: acknowledged only by the leader of the generation that
     * wrote it (felix_ack_ready checks held and committed). */
    assert(s->leading && x->generation == s->ballot.generation);
    *p = x->next;
    ack_reply(x->c, x->corr, FELIX_WS_OK, "", &x->a);
    free(x);
  }
  (void)b;
}

static void recompute_hwm(broker *b, shard *s) {
  if (!s->leading) return;
  felix_follower_hold f[BROKER_MAX_MEMBERS];
  int nf = gather_holds(s, f);
  felix_log_stats st;
  felix_log_get_stats(s->log, &st);
  /* One Raft-rule pass from what a majority has held in this generation
   * (confirmed_end, never above the HWM): the HWM is the larger of that and
   * where it started (review 5, item 3: acknowledgements need both). */
  assert(s->confirmed_end <= s->hwm);
  felix_hwm_input in = {.replicas = s->replicas > 0 ? s->replicas : 1, .leader_counts = true, .leader_held = st.held_end,
                        .generation_start = s->generation_start, .hwm = s->confirmed_end, .followers = f,
                        .nfollowers = (size_t)nf};
  s->confirmed_end = felix_hwm_compute(&in);
  uint64_t h = s->confirmed_end > s->hwm ? s->confirmed_end : s->hwm;
  /* §4.2 "no quorum": written records a majority has not held since then
   * (progress restarts the clock); reported so the control plane can move a
   * leader whose own disk hangs. */
  if (h >= st.end_offset) s->stalled_since_ms = 0;
  else if (!s->stalled_since_ms || h > s->hwm) s->stalled_since_ms = uv_now(b->loop);
  if (h > s->hwm) shard_set_hwm(b, s, h);
  peer_check_acks(b, s);
}

/* One line per stall that outlasts PEER_STALL_LOG_MS, naming what each
 * follower held and when it last answered: the control plane moves a leader
 * whose stall outlasts its lease, and whoever reads the log then must be able
 * to tell a hung leader disk from slow or cut-off followers. */
void peer_log_stall(broker *b, shard *s) {
  uint64_t now = uv_now(b->loop);
  if (!s->leading || !s->stalled_since_ms || s->stall_logged_since == s->stalled_since_ms ||
      now - s->stalled_since_ms < PEER_STALL_LOG_MS)
    return;
  s->stall_logged_since = s->stalled_since_ms;
  felix_log_stats st;
  felix_log_get_stats(s->log, &st);
  char followers[768] = "", age[32], hwm[32], end[32], held[32];
  size_t n = 0;
  for (peer_link *l = s->links; l && n < sizeof followers; l = l->next)
    n += (size_t)snprintf(followers + n, sizeof followers - n, "%s%s:%s,held=%" PRIu64 ",inflight=%d,answered_ms_ago=%" PRIu64,
                          n ? " " : "", l->broker_id, l->state == LINK_READY ? "ready" : "connecting", l->held, l->inflight,
                          l->answered_ms ? now - l->answered_ms : 0);
  snprintf(age, sizeof age, "%" PRIu64, now - s->stalled_since_ms);
  snprintf(hwm, sizeof hwm, "%" PRIu64, s->hwm);
  snprintf(end, sizeof end, "%" PRIu64, st.end_offset);
  snprintf(held, sizeof held, "%" PRIu64, st.held_end);
  felix_log_event("warn", "no quorum: written records wait for a majority", "shard", s->dir_name, "for_ms", age, "hwm", hwm,
                  "end", end, "leader_held", held, "followers", followers, NULL);
}

void peer_add_pending_ack(broker *b, shard *s, conn *c, uint32_t corr, int policy, const felix_appended *a) {
  pending_ack *x = calloc(1, sizeof *x);
  if (!x) return ack_reply(c, corr, FELIX_WS_UNAVAILABLE, "not acknowledged: out of memory", a);
  assert(s->leading && a->first_offset <= a->last_offset); /* held_done checked the generation */
  *x = (pending_ack){.c = c, .corr = corr, .generation = s->ballot.generation, .policy = policy, .a = *a};
  pending_ack **p = &s->acks;
  while (*p) p = &(*p)->next;
  *p = x;
  peer_pump(b, s);
}

void peer_fail_pending_acks(broker *b, shard *s, const char *why) {
  (void)b;
  while (s->acks) {
    pending_ack *x = s->acks;
    s->acks = x->next;
    char msg[600];
    snprintf(msg, sizeof msg, "not acknowledged: %s (the records may still be committed by the next leader)", why);
    ack_reply(x->c, x->corr, FELIX_WS_UNAVAILABLE, msg, &x->a);
    free(x);
  }
}

void peer_pump(broker *b, shard *s) {
  for (peer_link *l = s->links; l; l = l->next) link_pump(l);
  recompute_hwm(b, s);
}

/* ---- replies ---- */

/* A replica names a generation above ours: this role is over (§4.6). */
static void deposed(peer_link *l, uint64_t generation, const char *msg) {
  char g[32];
  snprintf(g, sizeof g, "%" PRIu64, generation);
  felix_log_event("warn", "a replica promised a newer generation", "shard", l->s->dir_name, "replica", l->broker_id,
                  "generation", g, "message", msg, NULL);
  shard_stop_leading(l->b, l->s, "a replica promised a newer generation");
}

static void measure(peer_link *l, const felix_peer_hello_reply *r) {
  shard *s = l->s;
  felix_log_stats st;
  felix_log_get_stats(s->log, &st);
  felix_generations fg = {.items = (felix_generation *)r->gens, .count = r->ngens};
  bool trusted = !strcmp(r->copy_id, member_named_copy(s, l->broker_id));
  if (strcmp(l->known_copy_id, r->copy_id) != 0) {
    snprintf(l->known_copy_id, sizeof l->known_copy_id, "%s", r->copy_id);
    l->h0 = st.end_offset; /* Finding 1: everything this leader may have acknowledged */
    l->held = 0;
  }
  if (!trusted) {
    /* A copy this leader does not trust: forget it, copy from the log start. */
    l->next_send = st.start_offset;
    l->truncate_to = r->log_end > st.start_offset || r->log_start != st.start_offset ? st.start_offset : FELIX_PEER_NO_TRUNCATE;
    l->held = 0;
  } else {
    uint64_t p = felix_divergence_point(&s->gens, st.end_offset, &fg, r->log_end);
    l->next_send = p;
    l->truncate_to = p < r->log_end ? p : FELIX_PEER_NO_TRUNCATE;
    l->held = r->held_end < p ? r->held_end : p;
  }
  snprintf(l->copy_id, sizeof l->copy_id, "%s", r->copy_id);
  snprintf(l->incarnation, sizeof l->incarnation, "%s", r->incarnation);
  uint64_t last_gen = r->held_end ? felix_generation_at(&fg, r->held_end - 1) : 0;
  l->rank = (felix_rank){(int64_t)last_gen, (int64_t)r->held_end};
  felix_generations_free(&l->gens);
  l->gens.items = calloc(r->ngens + 1, sizeof *l->gens.items);
  if (l->gens.items) memcpy(l->gens.items, r->gens, r->ngens * sizeof *r->gens), l->gens.count = r->ngens;
  l->answered = true;
  l->answered_ms = uv_now(l->b->loop);
  l->epoch = s->log_epoch;
  l->state = LINK_READY;
  char from[32], h0[32];
  snprintf(from, sizeof from, "%" PRIu64, l->next_send);
  snprintf(h0, sizeof h0, "%" PRIu64, l->h0);
  felix_log_event("info", trusted ? "measured a replica" : "measured an untrusted copy: copying it from the log start", "shard",
                  s->dir_name, "replica", l->broker_id, "copy_id", l->copy_id, "ship_from", from, "h0", h0, NULL);
}

static void on_hello_reply(peer_link *l, const uint8_t *body, size_t len) {
  felix_peer_hello_reply r;
  felix_err err;
  if (felix_peer_hello_reply_decode(body, len, &r, &err)) return link_reset(l, err.msg);
  if (r.status != FELIX_PS_OK) {
    if (r.status == FELIX_PS_REFUSED && r.generation > l->s->ballot.generation) return deposed(l, r.generation, r.message);
    return link_reset(l, r.message);
  }
  measure(l, &r);
  broker_publish_report(l->b);
  if (l->s->fencing) fence_evaluate(l->b, l->s);
  else peer_pump(l->b, l->s);
}

static void on_append_reply(peer_link *l, const uint8_t *body, size_t len) {
  felix_peer_append_reply r;
  felix_err err;
  if (felix_peer_append_reply_decode(body, len, &r, &err)) return link_reset(l, err.msg);
  l->inflight--;
  l->answered_ms = uv_now(l->b->loop);
  shard *s = l->s;
  if (r.status == FELIX_PS_REFUSED && r.generation > s->ballot.generation) return deposed(l, r.generation, r.message);
  if (r.status != FELIX_PS_OK) return link_reset(l, r.message);
  if (r.generation != s->ballot.generation) return; /* another generation's confirmation never counts */
  uint64_t held = r.held_end < l->next_send ? r.held_end : l->next_send;
  if (held > l->held) {
    l->held = held;
    broker_publish_report(l->b);
  }
  peer_pump(l->b, s);
}

/* ---- the fence (§4.7) ---- */

static void finish_fence(broker *b, shard *s) {
  if (s->members_generation != s->ballot.generation) {
    /* An adoption ended after a newer assignment arrived: its maximum HWM is
     * not this generation's; the newer assignment ends this fence. */
    s->adopting = NULL;
    return;
  }
  s->fencing = false;
  s->adopting = NULL;
  uint64_t g = s->ballot.generation;
  shard_become_leader(b, s, g);
}

static void send_read(peer_link *l) {
  felix_log_stats st;
  felix_log_get_stats(l->s->log, &st);
  felix_peer_read q = {.shard = l->s->index, .generation = l->s->ballot.generation, .from = st.end_offset,
                       .max_records = SHIP_MAX_RECORDS};
  snprintf(q.stream, sizeof q.stream, "%s", l->s->stream);
  felix_buf out = {0};
  felix_peer_read_encode(&out, ++l->corr, &q);
  link_send(l, &out);
}

/* A storage error while adopting fails the broker closed, as on any other
 * path (review 5, item 4); anything else refuses this copy only. */
static void refuse_adoption(broker *b, shard *s, const char *why) {
  felix_log_stats st;
  felix_log_get_stats(s->log, &st);
  if (st.sync_error && !st.dir_gone) broker_fail_closed(b, why);
  shard_refuse(b, s, why);
}

/* Adopting another copy: cut our divergent suffix, then fetch what it holds. */
static void adopt_from(broker *b, shard *s, peer_link *src) {
  felix_log_stats st;
  felix_log_get_stats(s->log, &st);
  uint64_t p = felix_divergence_point(&src->gens, (uint64_t)src->rank.log_end, &s->gens, st.end_offset);
  char at[32];
  snprintf(at, sizeof at, "%" PRIu64, (uint64_t)src->rank.log_end);
  if (p < st.end_offset && shard_cut_below_kept(s, p)) return; /* the fence waits, and times out */
  felix_log_event("info", "fence adopts a higher-ranked copy", "shard", s->dir_name, "source", src->broker_id, "copy_id",
                  src->copy_id, "log_end", at, NULL);
  if (peer_truncate(b, s, p)) return refuse_adoption(b, s, "cannot truncate to adopt the fence's copy");
  s->log_epoch++;
  s->adopting = src; /* one source per fence: answers arriving meanwhile do not switch it */
  send_read(src);
}

static void on_read_reply(peer_link *l, const uint8_t *body, size_t len) {
  felix_peer_read_reply r;
  felix_err err;
  shard *s = l->s;
  if (felix_peer_read_reply_decode(body, len, &r, &err)) return link_reset(l, err.msg);
  felix_log_stats st;
  felix_log_get_stats(s->log, &st);
  const char *why = NULL;
  if (!s->fencing || s->adopting != l) why = "a read reply from a copy this fence does not adopt";
  else if (r.status != FELIX_PS_OK) why = r.message;
  else if (strcmp(r.copy_id, l->copy_id) != 0) why = "the adopted copy changed its copy id"; /* the fence starts over */
  else if (r.body.first_offset != st.end_offset) why = "the adopted records do not start at the log end";
  if (why) {
    link_reset(l, why);
    felix_peer_append_free(&r.body);
    return;
  }
  felix_appended a;
  if (peer_merge_gens(l->b, s, r.body.first_offset, r.body.gens, r.body.ngens) ||
      peer_append_records(s, r.body.first_offset, r.body.records, r.body.count, &a, &err)) {
    felix_peer_append_free(&r.body);
    return refuse_adoption(l->b, s, "cannot append the adopted copy's records");
  }
  uint32_t got = r.body.count;
  felix_peer_append_free(&r.body);
  felix_log_get_stats(s->log, &st);
  if (st.end_offset < (uint64_t)l->rank.log_end) {
    if (got > 0) return send_read(l);
    return link_reset(l, "the adopted copy holds less than it answered"); /* the fence starts over */
  }
  /* Held under our own mode before we lead on it (synced, under on_commit,
   * off the loop: adopted_synced ends the fence). */
  shard_sync_then(l->b, s, adopted_synced);
}

/* The adopted records are held. Unless the fence ended or started over
 * meanwhile (a newer generation; the adopted copy's link reset, which
 * clears s->adopting), the fence ends. */
static void adopted_synced(broker *b, shard *s, uint64_t generation, felix_status st, const char *why) {
  if (st) {
    if (s->log && !s->refused) refuse_adoption(b, s, why);
    return;
  }
  if (!s->fencing || !s->adopting || s->ballot.generation != generation) return;
  /* Our log changed under every measurement: measure every follower again
   * before anything is shipped (the new generation's pump would use them). */
  s->log_epoch++;
  s->adopting = NULL;
  for (peer_link *x = s->links; x; x = x->next) link_reset(x, "re-measure after adopting a copy");
  finish_fence(b, s);
}

static void fence_evaluate(broker *b, shard *s) {
  if (!s->fencing || s->adopting) return; /* an adoption in flight finishes or starts over first */
  /* Review 5, item 7: the members (copy ids, floors, maximum HWM) of a newer
   * assignment are not this fence's: it waits to be ended by that assignment. */
  if (s->members_generation != s->ballot.generation) return;
  felix_fence_slot slots[BROKER_MAX_MEMBERS];
  peer_link *by_slot[BROKER_MAX_MEMBERS] = {0};
  felix_log_stats st;
  felix_log_get_stats(s->log, &st);
  int n = 0;
  for (int i = 0; i < s->nmembers && n < BROKER_MAX_MEMBERS; i++, n++) {
    member *m = &s->members[i];
    slots[n] = (felix_fence_slot){.broker = m->broker, .named_copy_id = m->named_copy_id, .floor = m->floor};
    if (!strcmp(m->broker, b->cfg.id)) {
      slots[n].answered = true;
      slots[n].self = true;
      slots[n].answer_copy_id = s->ballot.copy_id;
      slots[n].rank = (felix_rank){(int64_t)shard_last_generation(s, st.held_end), (int64_t)st.held_end};
      continue;
    }
    for (peer_link *l = s->links; l; l = l->next)
      if (!strcmp(l->broker_id, m->broker)) by_slot[n] = l;
    if (by_slot[n] && by_slot[n]->answered) {
      slots[n].answered = true;
      slots[n].answer_copy_id = by_slot[n]->copy_id;
      slots[n].rank = by_slot[n]->rank;
    }
  }
  felix_fence_verdict v;
  felix_fence_count(slots, (size_t)n, s->cp_max_hwm, &v);
  if (!v.complete) return;
  if (slots[v.adopt].self) return finish_fence(b, s);
  if (s->abandon_fence) {
    /* §4.9: the operator chose this copy; one that promised outranks it. */
    felix_log_event("warn", "placement abandon: a copy that promised outranks the chosen one; run the dry run again",
                    "shard", s->dir_name, "outranking", slots[v.adopt].broker, NULL);
    return;
  }
  adopt_from(b, s, by_slot[v.adopt]);
}

/* ---- connections ---- */

static void link_free_if_done(peer_link *l) {
  if (--l->handles > 0) return;
  felix_generations_free(&l->gens);
  free(l->buf);
  free(l);
}

static void on_link_timer_closed(uv_handle_t *h) { link_free_if_done(h->data); }

static void on_retry(uv_timer_t *t) { link_connect(t->data); }

static void on_link_tcp_closed(uv_handle_t *h) {
  peer_link *l = h->data;
  l->tcp_open = false;
  if (!l->dead) uv_timer_start(&l->timer, on_retry, LINK_RETRY_MS, 0);
  link_free_if_done(l);
}

static void link_reset(peer_link *l, const char *why) {
  if (l->dead || !l->tcp_open || uv_is_closing((uv_handle_t *)&l->tcp)) return;
  felix_log_event(l->state == LINK_CONNECTING ? "debug" : "info", "peer link reset", "shard", l->s->dir_name, "replica",
                  l->broker_id, "reason", why, NULL);
  l->state = LINK_WAIT;
  l->inflight = 0;
  l->len = 0;
  /* A promise stays given, so a fence keeps counting the answer; but the
   * copy it adopts must answer again over a live connection. */
  if (!l->s->fencing || l->s->adopting == l) l->answered = false;
  if (l->s->adopting == l) l->s->adopting = NULL;
  uv_close((uv_handle_t *)&l->tcp, on_link_tcp_closed);
  broker_publish_report(l->b);
}

static void on_link_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *out) {
  peer_link *l = h->data;
  if (l->cap - l->len < suggested) {
    size_t nc = l->cap ? l->cap : 65536;
    while (nc - l->len < suggested) nc *= 2;
    uint8_t *nb = realloc(l->buf, nc);
    if (!nb) return (void)(*out = uv_buf_init(NULL, 0));
    l->buf = nb;
    l->cap = nc;
  }
  *out = uv_buf_init((char *)l->buf + l->len, (unsigned)(l->cap - l->len));
}

static void on_link_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *ub) {
  peer_link *l = st->data;
  (void)ub;
  if (nread < 0) return link_reset(l, uv_strerror((int)nread));
  l->len += (size_t)nread;
  for (;;) {
    uint32_t flen, corr;
    uint16_t type;
    bool bad;
    if (l->dead || l->state == LINK_WAIT || !felix_frame_peek(l->buf, l->len, &flen, &type, &corr, &bad)) return;
    if (bad) return link_reset(l, "bad frame");
    size_t total = 4 + (size_t)flen;
    if (l->len < total) return;
    const uint8_t *body = l->buf + FELIX_WIRE_HEADER;
    size_t blen = total - FELIX_WIRE_HEADER;
    uint8_t *copy = malloc(blen + 1);
    if (!copy) return link_reset(l, "out of memory");
    memcpy(copy, body, blen);
    memmove(l->buf, l->buf + total, l->len - total);
    l->len -= total;
    if (type == (FELIX_WIRE_PEER_HELLO | FELIX_WIRE_REPLY) && l->state == LINK_HELLO) on_hello_reply(l, copy, blen);
    else if (type == (FELIX_WIRE_PEER_APPEND | FELIX_WIRE_REPLY) && l->state == LINK_READY) on_append_reply(l, copy, blen);
    else if (type == (FELIX_WIRE_PEER_READ | FELIX_WIRE_REPLY) && l->state == LINK_READY) on_read_reply(l, copy, blen);
    else link_reset(l, "unexpected frame");
    free(copy);
  }
}

static void on_link_connected(uv_connect_t *req, int status) {
  peer_link *l = req->data;
  if (l->dead) return;
  if (status < 0) return link_reset(l, uv_strerror(status));
  uv_tcp_nodelay(&l->tcp, 1);
  uv_read_start((uv_stream_t *)&l->tcp, on_link_alloc, on_link_read);
  send_hello(l);
}

static void link_connect(peer_link *l) {
  struct sockaddr_storage ss;
  if (l->dead) return;
  uv_tcp_init(l->b->loop, &l->tcp);
  l->tcp.data = l;
  l->tcp_open = true;
  l->handles++;
  l->state = LINK_CONNECTING;
  l->creq.data = l;
  if (broker_parse_addr(l->address, &ss) != 0 ||
      uv_tcp_connect(&l->creq, &l->tcp, (struct sockaddr *)&ss, on_link_connected) != 0)
    link_reset(l, "cannot connect");
}

static void link_open(broker *b, shard *s, const member *m) {
  peer_link *l = calloc(1, sizeof *l);
  if (!l) return;
  l->b = b;
  l->s = s;
  snprintf(l->broker_id, sizeof l->broker_id, "%s", m->broker);
  snprintf(l->address, sizeof l->address, "%s", m->address);
  l->truncate_to = FELIX_PEER_NO_TRUNCATE;
  uv_timer_init(b->loop, &l->timer);
  l->timer.data = l;
  l->handles = 1;
  l->next = s->links;
  s->links = l;
  link_connect(l);
}

void peer_links_stop(broker *b, shard *s) {
  (void)b;
  s->adopting = NULL;
  while (s->links) {
    peer_link *l = s->links;
    s->links = l->next;
    l->dead = true;
    uv_timer_stop(&l->timer);
    uv_close((uv_handle_t *)&l->timer, on_link_timer_closed);
    /* A tcp handle already closing (a reset) frees through its own callback. */
    if (l->tcp_open && !uv_is_closing((uv_handle_t *)&l->tcp)) uv_close((uv_handle_t *)&l->tcp, on_link_tcp_closed);
  }
}

void peer_members_changed(broker *b, shard *s) {
  if (!s->leading && !s->fencing) return;
  for (int i = 0; i < s->nmembers; i++) {
    if (!strcmp(s->members[i].broker, b->cfg.id) || !s->members[i].address[0]) continue;
    bool have = false;
    for (peer_link *l = s->links; l; l = l->next) have |= !strcmp(l->broker_id, s->members[i].broker);
    if (!have) link_open(b, s, &s->members[i]);
  }
  if (s->fencing) fence_evaluate(b, s);
}

void peer_start_fence(broker *b, shard *s) {
  if (!felix_may_fence(s->ballot.generation, s->led_generation)) {
    /* It waits for the next generation (felix_may_fence). */
    felix_log_event("warn", "not fencing a generation this process already led", "shard", s->dir_name, NULL);
    return;
  }
  peer_links_stop(b, s);
  s->fencing = true;
  snprintf(s->fence_cp_instance, sizeof s->fence_cp_instance, "%s", b->cp_instance);
  char g[32];
  snprintf(g, sizeof g, "%" PRIu64, s->ballot.generation);
  felix_log_event("info", "fencing", "shard", s->dir_name, "generation", g, NULL);
  peer_members_changed(b, s);
  fence_evaluate(b, s); /* one replica: its own promise is the whole majority */
}

int peer_followers(const shard *s, peer_follower *out, int max) {
  int n = 0;
  for (peer_link *l = s->links; l && n < max; l = l->next)
    out[n++] = (peer_follower){.broker = l->broker_id, .connected = l->state == LINK_READY, .held = l->held};
  return n;
}

cJSON *peer_followers_json(const shard *s) {
  cJSON *arr = cJSON_CreateArray();
  for (peer_link *l = s->links; l; l = l->next) {
    cJSON *f = cJSON_CreateObject();
    cJSON_AddStringToObject(f, "broker", l->broker_id);
    bool live = l->state == LINK_READY;
    cJSON_AddBoolToObject(f, "connected", live);
    if (live) {
      cJSON_AddStringToObject(f, "copy_id", l->copy_id);
      felix_json_add_u64(f, "held", l->held);
      felix_json_add_u64(f, "h0", l->h0);
    }
    cJSON_AddItemToArray(arr, f);
  }
  return arr;
}
