/* control-plane/state.c — opening the engine, leases on the paused clock, in-memory
 * inventories, and the ticker's work (control-plane/state.h). Invariant: after a start
 * every known broker holds one fresh lease (renewed at clock time 0), and no
 * failover decision is made for a shard until a majority of its replicas
 * sent an inventory or one lease has passed on the clock. */
#include "state_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "felix/logfmt.h"
#include "felix/fileutil.h"

cp_live *cp_live_get(cp_state *cp, const char *id, bool create) {
  for (size_t i = 0; i < cp->nlive; i++)
    if (!strcmp(cp->live[i].id, id)) return &cp->live[i];
  if (!create) return NULL;
  if (cp->nlive == cp->caplive) {
    size_t ncap = cp->caplive ? cp->caplive * 2 : 16;
    cp_live *p = realloc(cp->live, ncap * sizeof *p);
    if (!p) return NULL;
    cp->live = p;
    cp->caplive = ncap;
  }
  cp_live *l = &cp->live[cp->nlive++];
  memset(l, 0, sizeof *l);
  snprintf(l->id, sizeof l->id, "%s", id);
  l->renewed_ms = cp->clock.now_ms;
  l->was_alive = true;
  return l;
}

/* The order of inventories and of the shard-memory index: (uuid, shard).
 * Inventories are kept sorted in it and looked up by bsearch: every shard's
 * evaluation looks up each of its slots, so a linear scan was O(shards²) per
 * pass (review 5, item 1: perf). */
static int shard_key_cmp(const char *uuid, int shard, const char *other_uuid, int other_shard) {
  int c = strcmp(uuid, other_uuid);
  return c ? c : (shard > other_shard) - (shard < other_shard);
}

static int inv_cmp(const void *a, const void *b) {
  const cp_inv_entry *x = a, *y = b;
  return shard_key_cmp(x->stream_uuid, x->shard, y->stream_uuid, y->shard);
}

void cp_live_set_inventory(cp_live *l, const cp_inv_entry *inv, size_t ninv) {
  free(l->inv);
  l->inv = NULL;
  l->ninv = 0;
  if (ninv == 0) return;
  l->inv = malloc(ninv * sizeof *inv);
  if (!l->inv) return;
  memcpy(l->inv, inv, ninv * sizeof *inv);
  l->ninv = ninv;
  qsort(l->inv, ninv, sizeof *l->inv, inv_cmp);
}

void cp_live_renew(cp_state *cp, cp_live *l) {
  l->renewed_ms = cp->clock.now_ms;
  l->was_alive = true;
}

static felix_status snapshot_shards(cp_state *cp, felix_err *err);
static felix_status start_grace(cp_state *cp, felix_err *err);

static void log_pending_events(void *ctx, bool committed);

felix_status cp_state_open(cp_state *cp, const char *db_path, const char *instance_id, uint64_t lease_ms,
                           uint64_t real_now_ms, felix_err *err) {
  memset(cp, 0, sizeof *cp);
  pthread_mutex_init(&cp->mu, NULL);
  cp->open = true;
  cp->lease_ms = lease_ms;
  cp->heartbeat_ms = lease_ms / 5 < CP_HEARTBEAT_MS ? (lease_ms / 5 ? lease_ms / 5 : 1) : CP_HEARTBEAT_MS;
  cp->started_at = (int64_t)(felix_now_micros() / 1000000u);
  /* A pause longer than two ticks counts as two ticks: see lease.h. */
  felix_lease_clock_init(&cp->clock, real_now_ms, 2 * CP_TICK_MS);
  if (instance_id) {
    snprintf(cp->instance_id, sizeof cp->instance_id, "%s", instance_id);
  } else {
    unsigned char raw[16];
    if (felix_random_bytes(raw, sizeof raw, err)) {
      cp_state_close(cp);
      return err->status;
    }
    felix_hex_encode(raw, sizeof raw, cp->instance_id);
  }
  if (cp_store_open(db_path, &cp->store, err)) {
    cp_state_close(cp);
    return err->status;
  }
  cp_store_on_txn_end(cp->store, log_pending_events, cp);
  cp_broker_row *bs = NULL;
  size_t n = 0;
  if (cp_store_brokers_list(cp->store, &bs, &n, err)) {
    cp_state_close(cp);
    return err->status;
  }
  for (size_t i = 0; i < n; i++) cp_live_get(cp, bs[i].id, true); /* one fresh lease each */
  free(bs);
  if (snapshot_shards(cp, err) || start_grace(cp, err)) {
    cp_state_close(cp);
    return err->status;
  }
  return FELIX_OK;
}

/* The grace lasts the longest lease this database ever ran with, which it
 * then remembers (a start with a shorter --lease-ms still waits out the
 * per-shard leases granted under a longer one). */
static felix_status start_grace(cp_state *cp, felix_err *err) {
  int64_t longest = 0;
  bool found;
  if (cp_store_setting_get(cp->store, "max_lease_ms", &longest, &found, err)) return err->status;
  if (!found || longest < (int64_t)cp->lease_ms) longest = (int64_t)cp->lease_ms;
  cp->grace_ms = (uint64_t)longest;
  if (cp_store_begin(cp->store, err) || cp_store_setting_put(cp->store, "max_lease_ms", longest, err) ||
      cp_store_commit(cp->store, err)) {
    cp_store_rollback(cp->store);
    return err->status;
  }
  return FELIX_OK;
}

void cp_state_close(cp_state *cp) {
  if (!cp->open) return;
  cp->open = false;
  for (size_t i = 0; i < cp->nlive; i++) free(cp->live[i].inv);
  free(cp->live);
  cp->live = NULL;
  cp->nlive = cp->caplive = 0;
  free(cp->watches);
  cp->watches = NULL;
  free(cp->watch_order);
  cp->watch_order = NULL;
  cp->nwatch = cp->capwatch = 0;
  cp_store_close(cp->store);
  cp->store = NULL;
  free(cp->pending_events);
  cp->pending_events = NULL;
  cp->npending = cp->cap_pending = 0;
  pthread_mutex_destroy(&cp->mu);
}

bool cp_broker_alive(cp_state *cp, const char *id) {
  cp_live *l = cp_live_get(cp, id, false);
  return l && felix_lease_alive(l->renewed_ms, cp->clock.now_ms, cp->lease_ms);
}

bool cp_broker_draining(cp_state *cp, const char *id) {
  cp_live *l = cp_live_get(cp, id, false);
  return l && l->draining;
}

bool cp_broker_may_lead(cp_state *cp, const char *id) {
  return cp_broker_alive(cp, id) && !cp_broker_draining(cp, id);
}

void cp_note_draining(cp_state *cp, const char *broker) {
  cp_live *l = cp_live_get(cp, broker, false);
  if (!l || l->draining) return;
  l->draining = true;
  cp_reevaluate_all(cp);
}

uint64_t cp_broker_lease_age(cp_state *cp, const char *id) {
  cp_live *l = cp_live_get(cp, id, false);
  return l ? felix_lease_age(l->renewed_ms, cp->clock.now_ms) : cp->clock.now_ms;
}

static const cp_inv_entry *inventory_entry(cp_state *cp, const char *broker, const char *stream_uuid, int shard) {
  cp_live *l = cp_live_get(cp, broker, false);
  if (!l || l->ninv == 0) return NULL;
  cp_inv_entry key;
  snprintf(key.stream_uuid, sizeof key.stream_uuid, "%s", stream_uuid);
  key.shard = shard;
  return bsearch(&key, l->inv, l->ninv, sizeof *l->inv, inv_cmp);
}

bool cp_inventory_lists(cp_state *cp, const char *broker, const char *stream_uuid, int shard) {
  return inventory_entry(cp, broker, stream_uuid, shard) != NULL;
}

const cp_inv_entry *cp_inventory_find(cp_state *cp, const char *broker, const char *stream_uuid, int shard) {
  const cp_inv_entry *e = inventory_entry(cp, broker, stream_uuid, shard);
  return e && !e->refused ? e : NULL;
}

bool cp_copy_refused(cp_state *cp, const char *broker, const char *stream_uuid, int shard, const char *copy_id) {
  const cp_inv_entry *e = inventory_entry(cp, broker, stream_uuid, shard);
  return e && e->refused && !strcmp(e->copy_id, copy_id);
}

/* Slot i's inventory entry for sh, if it was built for this instance. */
static const cp_inv_entry *current_entry(cp_state *cp, const cp_shard_row *sh, int i) {
  const cp_inv_entry *e = cp_inventory_find(cp, sh->slots[i].broker, sh->stream_uuid, sh->shard);
  return e && !e->gone && !strcmp(e->cp_instance, cp->instance_id) ? e : NULL;
}

/* Slot i has answered the wait: an inventory of this instance, under the
 * copy id stored at the start (any copy for a generation-0 shard). */
static bool slot_answered(cp_state *cp, const cp_shard_row *sh, const cp_shard_mem *m, int i) {
  const cp_inv_entry *e = current_entry(cp, sh, i);
  return e && (sh->generation == 0 || (m->named[i][0] && !strcmp(e->copy_id, m->named[i])));
}

int cp_shard_waiting_for(cp_state *cp, const cp_shard_row *sh, char out[][CP_ID_MAX]) {
  if (!cp_shard_waiting(cp, sh)) return 0;
  const cp_shard_mem *m = cp_shard_mem_get(cp, sh->stream_uuid, sh->shard, false);
  int n = 0;
  for (int i = 0; i < sh->nslots; i++)
    if (!slot_answered(cp, sh, m, i)) snprintf(out[n++], CP_ID_MAX, "%s", sh->slots[i].broker);
  return n;
}

bool cp_shard_waiting(cp_state *cp, const cp_shard_row *sh) {
  cp_shard_mem *m = cp_shard_mem_get(cp, sh->stream_uuid, sh->shard, false);
  if (!m || !m->at_start || m->inventories_in) return false; /* made in this instance, or over */
  int counted = 0;
  for (int i = 0; i < sh->nslots; i++) counted += slot_answered(cp, sh, m, i);
  if (counted < (sh->generation == 0 ? sh->nslots : sh->nslots / 2 + 1)) return true;
  m->inventories_in = true; /* once over, over until the next start */
  return false;
}

/* Every shard the store holds now waits for inventories (cp_shard_waiting). */
static felix_status snapshot_shards(cp_state *cp, felix_err *err) {
  cp_shard_row *rows = NULL;
  size_t n = 0;
  if (cp_store_shards_list(cp->store, NULL, &rows, &n, err)) return err->status;
  for (size_t k = 0; k < n; k++) {
    cp_shard_mem *m = cp_shard_mem_get(cp, rows[k].stream_uuid, rows[k].shard, true);
    if (!m) {
      free(rows);
      return felix_fail(err, FELIX_E_IO, "out of memory");
    }
    m->at_start = true;
    for (int i = 0; i < rows[k].nslots; i++) snprintf(m->named[i], sizeof m->named[i], "%s", rows[k].slots[i].copy_id);
  }
  free(rows);
  return FELIX_OK;
}

bool cp_shard_held_at_start(cp_state *cp, const cp_shard_row *sh) {
  const cp_shard_mem *m = cp_shard_mem_get(cp, sh->stream_uuid, sh->shard, false);
  return m && m->at_start;
}

bool cp_shard_unsure(cp_state *cp, const cp_shard_row *sh) {
  return sh->generation > 0 && (sh->seen_generation > sh->generation || cp_shard_waiting(cp, sh));
}

bool cp_waiting_for_inventories(cp_state *cp) {
  if (cp->grace_over) return false;
  cp_shard_row *rows = NULL;
  size_t n = 0;
  felix_err err;
  bool waiting = false;
  if (cp_store_shards_list(cp->store, NULL, &rows, &n, &err) == FELIX_OK)
    for (size_t i = 0; i < n && !waiting; i++) waiting = rows[i].generation > 0 && cp_shard_waiting(cp, &rows[i]);
  free(rows);
  return waiting;
}

bool cp_predecessor_may_hold_lease(cp_state *cp, const char *id, const char *incarnation) {
  cp_live *l = cp_live_get(cp, id, false);
  for (int i = 0; l && i < l->npredecessors; i++)
    if (!strcmp(l->predecessors[i].incarnation, incarnation)) return true;
  return false;
}

void cp_note_predecessor(cp_live *l, const char *incarnation, uint64_t renewed_ms) {
  for (int i = 0; i < l->npredecessors; i++)
    if (!strcmp(l->predecessors[i].incarnation, incarnation)) return; /* taken once: its renewals ended then */
  if (l->npredecessors == CP_MAX_PREDECESSORS) { /* the oldest renewal passes first */
    memmove(&l->predecessors[0], &l->predecessors[1], (CP_MAX_PREDECESSORS - 1) * sizeof l->predecessors[0]);
    l->npredecessors--;
  }
  struct cp_predecessor *p = &l->predecessors[l->npredecessors++];
  snprintf(p->incarnation, sizeof p->incarnation, "%s", incarnation);
  p->renewed_ms = renewed_ms;
}

/* Forgets replaced processes whose leases have passed; true if any went. */
static bool expire_predecessors(cp_state *cp, cp_live *l) {
  int kept = 0;
  for (int i = 0; i < l->npredecessors; i++)
    if (felix_lease_alive(l->predecessors[i].renewed_ms, cp->clock.now_ms, cp->lease_ms))
      l->predecessors[kept++] = l->predecessors[i];
  bool gone = kept != l->npredecessors;
  l->npredecessors = kept;
  return gone;
}

static bool notice_lapses(cp_state *cp) {
  bool changed = false;
  for (size_t i = 0; i < cp->nlive; i++) {
    cp_live *l = &cp->live[i];
    if (expire_predecessors(cp, l)) changed = true; /* their shards may move now (leader_lost) */
    bool alive = felix_lease_alive(l->renewed_ms, cp->clock.now_ms, cp->lease_ms);
    if (l->was_alive && !alive) {
      felix_err err;
      char id[CP_ID_MAX];
      snprintf(id, sizeof id, "%s", l->id); /* l may move if events create entries */
      if (cp_store_begin(cp->store, &err) == FELIX_OK &&
          cp_event_add(cp, "lease_lapsed", NULL, id, -1, &err, "lease of %s lapsed (no heartbeat for %llu ms)", id,
                       (unsigned long long)cp->lease_ms) == FELIX_OK)
        cp_store_commit(cp->store, &err);
      else
        cp_store_rollback(cp->store);
      l = &cp->live[i];
      changed = true;
    }
    l->was_alive = alive;
  }
  return changed;
}

void cp_state_tick(cp_state *cp, uint64_t real_now_ms) {
  felix_lease_clock_advance(&cp->clock, real_now_ms);
  bool changed = notice_lapses(cp);
  if (!cp->grace_over && cp->clock.now_ms >= cp->grace_ms) {
    cp->grace_over = true;
    felix_log_event("info", "a lease has passed since the start: a shard still waiting for inventories may be abandoned", NULL);
    changed = true;
  }
  if (cp->decision_refused) cp->decision_refused = false, changed = true;
  if (changed || cp_fence_watch_due(cp)) cp_reevaluate_all(cp);
}

/* Where (uuid, shard) is or would go in watch_order. */
static size_t mem_position(const cp_state *cp, const char *uuid, int shard, bool *found) {
  size_t lo = 0, hi = cp->nwatch;
  *found = false;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const cp_shard_mem *w = &cp->watches[cp->watch_order[mid]];
    int c = shard_key_cmp(uuid, shard, w->stream_uuid, w->shard);
    if (c == 0) {
      *found = true;
      return mid;
    }
    if (c < 0) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/* Every shard's evaluation asks for its memory: a sorted index keeps that
 * O(log shards) instead of a scan (review 5, item 1: perf). */
cp_shard_mem *cp_shard_mem_get(cp_state *cp, const char *stream_uuid, int shard, bool create) {
  bool found;
  size_t at = mem_position(cp, stream_uuid, shard, &found);
  if (found) return &cp->watches[cp->watch_order[at]];
  if (!create) return NULL;
  if (cp->nwatch == cp->capwatch) {
    size_t nc = cp->capwatch ? cp->capwatch * 2 : 16;
    cp_shard_mem *nw = realloc(cp->watches, nc * sizeof *nw);
    if (!nw) return NULL;
    cp->watches = nw;
    size_t *no = realloc(cp->watch_order, nc * sizeof *no);
    if (!no) return NULL;
    cp->watch_order = no;
    cp->capwatch = nc;
  }
  memmove(&cp->watch_order[at + 1], &cp->watch_order[at], (cp->nwatch - at) * sizeof *cp->watch_order);
  cp->watch_order[at] = cp->nwatch;
  cp_shard_mem *w = &cp->watches[cp->nwatch++];
  memset(w, 0, sizeof *w);
  snprintf(w->stream_uuid, sizeof w->stream_uuid, "%s", stream_uuid);
  w->shard = shard;
  return w;
}

void cp_shard_mem_forget(cp_state *cp, const char *stream_uuid) {
  size_t k = 0;
  for (size_t i = 0; i < cp->nwatch; i++)
    if (strcmp(cp->watches[i].stream_uuid, stream_uuid)) cp->watches[k++] = cp->watches[i];
  cp->nwatch = 0;
  for (size_t i = 0; i < k; i++) { /* the index again, in key order */
    bool found;
    size_t at = mem_position(cp, cp->watches[i].stream_uuid, cp->watches[i].shard, &found);
    memmove(&cp->watch_order[at + 1], &cp->watch_order[at], (cp->nwatch - at) * sizeof *cp->watch_order);
    cp->watch_order[at] = i;
    cp->nwatch++;
  }
}

void cp_fence_watch_start(cp_state *cp, const cp_shard_row *sh) {
  cp_shard_mem *w = cp_shard_mem_get(cp, sh->stream_uuid, sh->shard, true);
  if (!w) return;
  w->generation = sh->generation;
  w->since_ms = cp->clock.now_ms;
  w->fired = false;
  w->unrenewed_generation = 0; /* a lease stop was for the generation before */
}

bool cp_fence_watch_due(cp_state *cp) {
  for (size_t i = 0; i < cp->nwatch; i++) {
    const cp_shard_mem *w = &cp->watches[i];
    if (w->generation > 0 && !w->fired && cp->clock.now_ms - w->since_ms > cp->lease_ms) return true;
    /* cleared when it fires and at every new generation (cp_fence_watch_start) */
    if (w->unrenewed_generation > 0 && cp->clock.now_ms >= w->unrenewed_until_ms) return true;
  }
  return false;
}

bool cp_leader_lease_renewed(cp_state *cp, const cp_shard_row *sh) {
  const cp_shard_mem *w = cp_shard_mem_get(cp, sh->stream_uuid, sh->shard, false);
  return !(w && w->unrenewed_generation == sh->generation);
}

int64_t cp_shard_log_bytes(cp_state *cp, const cp_shard_row *sh) {
  const cp_shard_mem *w = sh->generation > 0 ? cp_shard_mem_get(cp, sh->stream_uuid, sh->shard, false) : NULL;
  return w && w->no_quorum_generation == sh->generation ? w->log_bytes : -1;
}

bool cp_passed_over(cp_state *cp, const cp_shard_row *sh, const char *broker) {
  const cp_shard_mem *w = cp_shard_mem_get(cp, sh->stream_uuid, sh->shard, false);
  return w && !strcmp(w->passed_over, broker) && cp->clock.now_ms < w->passed_until_ms;
}

void cp_evaluate_named(cp_state *cp, const char *stream, int shard) {
  cp_stream_row st;
  cp_shard_row sh;
  bool found = false;
  felix_err err;
  if (cp_store_stream_by_name(cp->store, stream, &st, &found, &err) == FELIX_OK && found &&
      cp_store_shard_get(cp->store, st.uuid, shard, &sh, &found, &err) == FELIX_OK && found)
    cp_evaluate_shard(cp, &sh);
}

void cp_reevaluate_all(cp_state *cp) {
  cp_shard_row *rows = NULL;
  size_t n = 0;
  felix_err err;
  if (cp_store_shards_list(cp->store, NULL, &rows, &n, &err) != FELIX_OK) {
    felix_log_event("error", "cannot list shards", "error", err.msg, NULL);
    free(rows);
    cp->decision_refused = true; /* nothing was evaluated: the next tick tries all again (helper-30) */
    return;
  }
  for (size_t i = 0; i < n; i++) cp_evaluate_shard(cp, &rows[i]);
  free(rows);
}

/* The event as a log line, its fields as keys (shard=STREAM/N, broker=,
 * generation=) for a log pipeline to select on. A lapsed lease takes a
 * broker's shards away: an operator must see it (warn). */
static void log_event(const cp_event *e) {
  char shard[CP_ID_MAX + 16] = "", gen[24] = "";
  if (e->shard >= 0) snprintf(shard, sizeof shard, "%s/%d", e->stream, e->shard);
  if (e->generation >= 0) snprintf(gen, sizeof gen, "%lld", (long long)e->generation);
  const char *k[3] = {NULL, NULL, NULL}, *v[3] = {NULL, NULL, NULL};
  int n = 0;
  if (shard[0]) k[n] = "shard", v[n++] = shard;
  if (e->broker[0]) k[n] = "broker", v[n++] = e->broker;
  if (gen[0]) k[n] = "generation", v[n++] = gen;
  /* the first NULL key ends the pairs: the fields an event lacks are left out */
  felix_log_event(strcmp(e->kind, "lease_lapsed") ? "info" : "warn", e->message, "event", e->kind, k[0], v[0], k[1], v[1],
                  k[2], v[2], NULL);
}

/* Keeps the event for the transaction's end; false when out of memory (the
 * caller logs it at once: a line that may not have happened over none). */
static bool pend_event(cp_state *cp, const cp_event *e) {
  if (cp->npending == cp->cap_pending) {
    size_t nc = cp->cap_pending ? cp->cap_pending * 2 : 8;
    cp_event *np = realloc(cp->pending_events, nc * sizeof *np);
    if (!np) return false;
    cp->pending_events = np, cp->cap_pending = nc;
  }
  cp->pending_events[cp->npending++] = *e;
  return true;
}

static void log_pending_events(void *ctx, bool committed) {
  cp_state *cp = ctx;
  for (size_t i = 0; committed && i < cp->npending; i++) log_event(&cp->pending_events[i]);
  cp->npending = 0;
}

felix_status cp_event_add(cp_state *cp, const char *kind, const cp_shard_row *sh, const char *broker,
                          int64_t generation, felix_err *err, const char *fmt, ...) {
  cp_event e;
  memset(&e, 0, sizeof e);
  e.ts = (int64_t)(felix_now_micros() / 1000000u);
  snprintf(e.kind, sizeof e.kind, "%s", kind);
  e.shard = -1;
  if (sh) {
    snprintf(e.stream, sizeof e.stream, "%s", sh->stream);
    snprintf(e.stream_uuid, sizeof e.stream_uuid, "%s", sh->stream_uuid);
    e.shard = sh->shard;
  }
  e.generation = generation;
  snprintf(e.broker, sizeof e.broker, "%s", broker ? broker : "");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e.message, sizeof e.message, fmt, ap);
  va_end(ap);
  felix_status st = cp_store_event_add(cp->store, &e, err);
  if (st == FELIX_OK && !(cp_store_in_txn(cp->store) && pend_event(cp, &e))) log_event(&e);
  return st;
}

void cp_outcome_ok(cp_outcome *o, int status) {
  memset(o, 0, sizeof *o);
  o->status = status;
}

void cp_outcome_fail(cp_outcome *o, int status, const char *hint, const char *fmt, ...) {
  memset(o, 0, sizeof *o);
  o->status = status;
  snprintf(o->hint, sizeof o->hint, "%s", hint ? hint : "");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(o->error, sizeof o->error, fmt, ap);
  va_end(ap);
}

void cp_outcome_store_error(cp_outcome *o, const felix_err *err) {
  felix_log_event("error", "database error", "error", err->msg, NULL);
  cp_outcome_fail(o, 500, "see the control plane's log", "database error: %s", err->msg);
}
