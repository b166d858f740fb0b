/* control-plane/adopt.c — `felixctl stream adopt` (DESIGN.md §4.8): bring back a stream
 * that a restored control-plane database does not know, under its own uuid,
 * from what the live brokers' inventories say of its copies (each copy's
 * `stream` file: name, uuid, shard count, R, ack policy).
 *
 * Invariants: nothing is trusted that the control plane did not measure —
 * every copy joins as a stranger, so the shard waits at NoCaughtUpReplica for
 * the operator's `placement abandon` (which picks the live copy of highest
 * rank), unless the shard was never used (all R copies listed, empty, no
 * promise: measured at (0, 0)). Only inventories built for this instance
 * count, and a majority of R copies per shard must be listed, so every
 * generation a fence completed is seen and the next one goes above it. A
 * slot whose copy no live broker lists goes to another live broker, which
 * makes a new empty copy. The stream is committed whole before the reply. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adopt.h"
#include "state_internal.h"
#include "felix/fileutil.h"

typedef struct adopt_copy {
  const cp_live *broker;
  const cp_inv_entry *e;
} adopt_copy;

/* The copies of `name` the live brokers list whose uuid the store does not
 * know (optionally only `uuid`); 0 with out filled when there are none or
 * they name several uuids. */
static size_t gather(cp_state *cp, const char *name, const char *uuid, adopt_copy **out, cp_outcome *o) {
  size_t n = 0, cap = 16;
  adopt_copy *c = malloc(cap * sizeof *c);
  const char *first = NULL, *second = NULL;
  for (size_t i = 0; c && i < cp->nlive; i++) {
    if (!cp_broker_alive(cp, cp->live[i].id)) continue;
    for (size_t k = 0; k < cp->live[i].ninv; k++) {
      const cp_inv_entry *e = &cp->live[i].inv[k];
      /* only inventories built for this instance: an older one may miss a
       * promise made since (§4.8) */
      if (e->gone || e->refused || strcmp(e->stream, name) || (uuid && strcmp(e->stream_uuid, uuid)) ||
          strcmp(e->cp_instance, cp->instance_id))
        continue;
      if (!first) first = e->stream_uuid;
      else if (strcmp(first, e->stream_uuid) && !second) second = e->stream_uuid;
      if (n == cap) {
        adopt_copy *g = realloc(c, (cap *= 2) * sizeof *c);
        if (!g) break;
        c = g;
      }
      c[n++] = (adopt_copy){&cp->live[i], e};
    }
  }
  *out = c;
  if (!c) return cp_outcome_fail(o, 500, NULL, "out of memory"), 0;
  if (n == 0)
    return cp_outcome_fail(o, 404, "start the brokers that hold its copies; felixctl broker list shows who is alive",
                           "no live broker lists a copy of stream %s%s%s", name, uuid ? " with uuid " : "",
                           uuid ? uuid : ""), 0;
  if (second)
    return cp_outcome_fail(o, 409, "name the one to adopt with --uuid",
                           "the copies of stream %s belong to more than one stream (uuids %s and %s)", name, first,
                           second), 0;
  return n;
}

/* The stream's shard count, R and ack policy, which every copy that says
 * them must agree on. */
static bool shape(const adopt_copy *c, size_t n, const char *name, cp_stream_row *s, cp_outcome *o) {
  for (size_t i = 0; i < n; i++) {
    const cp_inv_entry *e = c[i].e;
    if (e->replicas == 0) continue; /* a copy made before stream files: it says nothing */
    if (s->replicas == 0) {
      s->shards = e->shards;
      s->replicas = e->replicas;
      snprintf(s->acks, sizeof s->acks, "%s", e->acks);
    } else if (s->shards != e->shards || s->replicas != e->replicas || strcmp(s->acks, e->acks)) {
      cp_outcome_fail(o, 422, "inspect the copies' stream files (felix-inspect summary)",
                      "the copies of stream %s disagree: %d shards, R=%d, acks %s on one; %d shards, R=%d, acks %s on "
                      "%s", name, s->shards, s->replicas, s->acks, e->shards, e->replicas, e->acks, c[i].broker->id);
      return false;
    }
  }
  if (s->replicas == 0)
    cp_outcome_fail(o, 422, "upgrade the brokers; the stream must be created again",
                    "no copy of stream %s says its shard count and replication factor (no stream file)", name);
  else if (s->replicas % 2 == 0 || s->replicas > FELIX_MAX_REPLICAS || s->shards < 1)
    cp_outcome_fail(o, 422, NULL, "the copies of stream %s say R=%d and %d shards, which no stream can have", name,
                    s->replicas, s->shards);
  return o->status == 201;
}

static bool in_slots(const cp_shard_row *sh, const char *broker) {
  for (int i = 0; i < sh->nslots; i++)
    if (!strcmp(sh->slots[i].broker, broker)) return true;
  return false;
}

/* A shard never used: all R copies listed, every one empty and without a
 * promise. Only then may empty copies be trusted at (0, 0): an empty copy
 * that promised, or one beside a missing copy, may be a replaced disk. */
static bool never_used(const adopt_copy *c, size_t n, int k, int replicas) {
  int listed = 0;
  for (size_t i = 0; i < n; i++) {
    if (c[i].e->shard != k) continue;
    if (c[i].e->log_end > 0 || c[i].e->ballot_generation > 0 || c[i].e->last_generation > 0) return false;
    listed++;
  }
  return listed == replicas;
}

/* Slots of shard k: every listed copy (a stranger unless the shard was never
 * used), then live brokers without one for the rest. A majority of R copies
 * must be listed: every generation a fence completed was promised by a
 * majority, so the copies listed then show the highest one, and every
 * committed record is on one of them. */
static bool fill_shard(cp_state *cp, const cp_stream_row *s, int k, const adopt_copy *c, size_t n, cp_shard_row *sh,
                       cp_outcome *o) {
  memset(sh, 0, sizeof *sh);
  snprintf(sh->stream_uuid, sizeof sh->stream_uuid, "%s", s->uuid);
  snprintf(sh->stream, sizeof sh->stream, "%s", s->name);
  sh->shard = k;
  bool fresh = never_used(c, n, k, s->replicas);
  for (size_t i = 0; i < n; i++) {
    const cp_inv_entry *e = c[i].e;
    if (e->shard != k || in_slots(sh, c[i].broker->id)) continue;
    if (sh->nslots == s->replicas)
      return cp_outcome_fail(o, 422, "remove the extra copy, then adopt again",
                             "shard %d of stream %s has more copies than its %d replicas", k, s->name, s->replicas),
             false;
    cp_slot_row *x = &sh->slots[sh->nslots++];
    snprintf(x->broker, sizeof x->broker, "%s", c[i].broker->id);
    snprintf(x->copy_id, sizeof x->copy_id, "%s", e->copy_id);
    x->stranger = !fresh; /* nothing it holds was measured */
    int64_t g = e->ballot_generation > e->last_generation ? e->ballot_generation : e->last_generation;
    if (g > sh->seen_generation) sh->seen_generation = g;
  }
  if (sh->nslots < s->replicas / 2 + 1)
    return cp_outcome_fail(o, 422, "start the brokers that hold its other copies, then adopt again",
                           "shard %d of stream %s: live brokers list %d of its %d copies, fewer than a majority: the "
                           "missing ones may hold a higher generation and records no listed copy has",
                           k, s->name, sh->nslots, s->replicas),
           false;
  for (size_t i = 0; i < cp->nlive && sh->nslots < s->replicas; i++)
    if (cp_broker_may_lead(cp, cp->live[i].id) && !in_slots(sh, cp->live[i].id))
      snprintf(sh->slots[sh->nslots++].broker, CP_ID_MAX, "%s", cp->live[i].id);
  if (sh->nslots < s->replicas)
    return cp_outcome_fail(o, 422, "start more brokers, then adopt again",
                           "shard %d of stream %s: copies on %d brokers and no other live broker for the rest of its %d "
                           "replicas", k, s->name, sh->nslots, s->replicas),
           false;
  snprintf(sh->state, sizeof sh->state, "%s", fresh ? "Fencing" : "NoCaughtUpReplica");
  snprintf(sh->detail, sizeof sh->detail, "%s",
           fresh ? "adopted: waiting for the replicas' empty copies"
                 : "adopted: the control plane measured none of its copies (records at risk are unknown to it); "
                   "felixctl placement abandon --dry-run shows the copy of highest rank it would keep");
  return true;
}

static bool uuid_known(cp_state *cp, const char *uuid, felix_err *err, bool *deleted) {
  cp_stream_row *rows = NULL;
  char(*del)[40] = NULL;
  size_t n = 0, nd = 0;
  bool known = false;
  *deleted = false;
  if (cp_store_streams_list(cp->store, &rows, &n, err) == FELIX_OK)
    for (size_t i = 0; i < n; i++) known |= !strcmp(rows[i].uuid, uuid);
  if (cp_store_deleted_uuids(cp->store, &del, &nd, err) == FELIX_OK)
    for (size_t i = 0; i < nd; i++) *deleted |= !strcmp(del[i], uuid);
  free(rows);
  free(del);
  return known || *deleted;
}

static felix_status adopt_txn(cp_state *cp, cp_stream_row *s, const adopt_copy *c, size_t n, cp_outcome *o,
                              felix_err *err) {
  if (cp_store_stream_insert(cp->store, s, err)) return err->status;
  for (int k = 0; k < s->shards; k++) {
    cp_shard_row sh;
    if (!fill_shard(cp, s, k, c, n, &sh, o)) return FELIX_OK;
    if (cp_store_shard_put(cp->store, &sh, err) ||
        cp_event_add(cp, "adopted", &sh, sh.slots[0].broker, 0, err,
                     "%s/%d adopted from its copies (stream uuid %s; above generation %" PRId64 "): %s", sh.stream,
                     sh.shard, s->uuid, sh.seen_generation, sh.detail))
      return err->status;
  }
  return FELIX_OK;
}

void cp_stream_adopt(cp_state *cp, const char *name, const char *uuid, cp_stream_row *adopted, cp_outcome *out) {
  felix_err err = {0};
  memset(adopted, 0, sizeof *adopted);
  cp_outcome_ok(out, 201);
  cp_stream_row existing;
  bool found = false, deleted;
  if (cp_store_stream_by_name(cp->store, name, &existing, &found, &err)) return cp_outcome_store_error(out, &err);
  if (found)
    return cp_outcome_fail(out, 409, "stream adopt is for a stream the control plane does not know",
                           "stream %s exists (uuid %s)", name, existing.uuid);
  adopt_copy *c = NULL;
  size_t n = gather(cp, name, uuid, &c, out);
  if (n == 0) return free(c);
  snprintf(adopted->name, sizeof adopted->name, "%s", name);
  snprintf(adopted->uuid, sizeof adopted->uuid, "%s", c[0].e->stream_uuid);
  adopted->created_at = (int64_t)(felix_now_micros() / 1000000u);
  if (uuid_known(cp, adopted->uuid, &err, &deleted))
    cp_outcome_fail(out, 409, deleted ? "its brokers remove those copies" : NULL, "stream uuid %s is %s", adopted->uuid,
                    deleted ? "of a deleted stream" : "already known under another name");
  else if (shape(c, n, name, adopted, out) &&
           (cp_store_begin(cp->store, &err) || adopt_txn(cp, adopted, c, n, out, &err) || out->status != 201 ||
            cp_store_commit(cp->store, &err))) {
    cp_store_rollback(cp->store);
    if (out->status == 201) cp_outcome_store_error(out, &err);
  }
  free(c);
  if (out->status == 201) cp_reevaluate_all(cp);
}
