/* control-plane/decide.c — what the control plane decides for a shard, applied to the
 * store: copies recorded from inventories, generation 1 once a new shard's
 * copies exist, and the replication-factor-1 failover (DESIGN.md §4.1, §4.6).
 * The rules themselves are the pure functions of felix/placement.h; this file
 * gathers their facts and commits their verdicts. Invariants: a decision is
 * committed before the caller replies; NoCaughtUpReplica changes only the
 * shard's state, detail and history, never a generation, pin or slot. */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abandon.h"
#include "felix/logfmt.h"
#include "state_internal.h"
#include "felix/fileutil.h"

static int slot_of(const cp_shard_row *sh, const char *broker) {
  for (int i = 0; i < sh->nslots; i++)
    if (!strcmp(sh->slots[i].broker, broker)) return i;
  return -1;
}

/* The slot names e's copy, unmeasured (floor 0); a stranger is eligible only
 * once an active leader measures it (§4.4). */
static void name_copy(cp_slot_row *s, const cp_inv_entry *e, const cp_broker_row *b, bool stranger) {
  snprintf(s->copy_id, sizeof s->copy_id, "%s", e->copy_id);
  snprintf(s->storage_id, sizeof s->storage_id, "%s", b->storage_id);
  s->confirmed = 0;
  s->floor = 0;
  s->stranger = stranger;
}

/* The slot forgets its copy (§3.2: its directory is gone): the broker is
 * asked for a new one, a stranger (§4.4). */
static void forget_copy(cp_slot_row *s) {
  s->copy_id[0] = '\0';
  s->stranger = true;
  s->confirmed = 0;
  s->floor = 0;
}

/* Records what one inventory entry tells about its slot; true if sh changed. */
static bool note_copy(cp_state *cp, const cp_broker_row *b, const cp_inv_entry *e, cp_shard_row *sh, bool at_start,
                      felix_err *err) {
  bool changed = false;
  int64_t g = e->ballot_generation > e->last_generation ? e->ballot_generation : e->last_generation;
  if (g > sh->seen_generation) {
    sh->seen_generation = g; /* the next generation must go above it (§4.6) */
    changed = true;
  }
  int i = slot_of(sh, b->id);
  if (i < 0 || !felix_hex_valid(e->copy_id, 32)) return changed;
  cp_slot_row *s = &sh->slots[i];
  if (e->gone) {
    /* §3.2: a copy whose directory was deleted is gone for good; the slot
     * forgets it, so the broker makes a new copy — a stranger (§4.4). */
    if (strcmp(s->copy_id, e->copy_id) != 0) return changed;
    cp_event_add(cp, "copy_gone", sh, b->id, sh->generation, err,
                 "copy %s of %s/%d on %s is gone (its directory was deleted): the slot forgets it and a new copy "
                 "is made, a stranger until an active leader measures it", e->copy_id, sh->stream, sh->shard, b->id);
    forget_copy(s);
    return true;
  }
  /* A shard the store held at generation 0 when it started records its
   * copies only once every slot has answered (cp_evaluate_shard): until then
   * an empty copy could be a wiped one whose promises are gone (§4.8). */
  if (sh->generation == 0 && cp_shard_waiting(cp, sh)) return changed;
  /* Nothing was ever issued: an empty copy that promised nothing is measured
   * at (0, 0). Once any copy promised a generation, a new copy is a stranger. */
  bool fresh_shard = sh->generation == 0 && sh->seen_generation == 0 && e->log_end == 0 && e->ballot_generation == 0;
  if (at_start && !strcmp(s->copy_id, e->copy_id) && !s->stranger && e->log_end < s->floor) {
    /* §4.5: the copy's own inventory under unchanged ids shows less than it
     * was once measured holding: a rolled-back snapshot or a lost write. */
    s->stranger = true;
    cp_event_add(cp, "stranger", sh, b->id, sh->generation, err,
                 "copy %s of %s/%d on %s holds %" PRId64 " below its floor %" PRId64
                 " under unchanged ids (a rolled-back snapshot, a lost write or a hand-restored directory): a stranger from now on",
                 e->copy_id, sh->stream, sh->shard, b->id, e->log_end, s->floor);
    return true;
  }
  if (!strcmp(s->copy_id, e->copy_id)) return changed;
  if (s->copy_id[0] && !fresh_shard) {
    /* Review 5, item 8: another copy id under the storage id the slot knows
     * (a shard directory copied in by hand, or made anew): not the copy that
     * was measured. The slot takes it as a stranger, so an active leader
     * measures it, instead of naming a copy no broker holds any more. */
    cp_event_add(cp, "copy_replaced", sh, b->id, sh->generation, err,
                 "copy %s of %s/%d on %s replaces copy %s under the same storage id %s (a directory copied or made "
                 "anew by hand): a stranger until an active leader measures it",
                 e->copy_id, sh->stream, sh->shard, b->id, s->copy_id, b->storage_id);
    name_copy(s, e, b, true);
    return true;
  }
  /* Empty slot, or a generation-0 copy made anew before anything was issued. */
  name_copy(s, e, b, !fresh_shard);
  if (fresh_shard)
    cp_event_add(cp, "copy_created", sh, b->id, sh->generation, err,
                 "copy %s of %s/%d created on %s (measured at (0, 0), floor 0)", e->copy_id, sh->stream, sh->shard,
                 b->id);
  else
    cp_event_add(cp, "copy_created", sh, b->id, sh->generation, err,
                 "copy %s of %s/%d on %s joins as a stranger (holds %" PRId64
                 "): not eligible until an active leader's report measures it",
                 e->copy_id, sh->stream, sh->shard, b->id, e->log_end);
  return true;
}

/* Inside the caller's transaction. */
static felix_status apply_inventory_txn(cp_state *cp, const cp_broker_row *b, const cp_inv_entry *inv, size_t ninv,
                                        bool at_start, felix_err *err) {
  for (size_t k = 0; k < ninv; k++) {
    cp_shard_row sh;
    bool found;
    if (inv[k].refused) continue; /* it says nothing of what the copy holds or promised */
    if (cp_store_shard_get(cp->store, inv[k].stream_uuid, inv[k].shard, &sh, &found, err)) return err->status;
    if (found && note_copy(cp, b, &inv[k], &sh, at_start, err) && cp_store_shard_put(cp->store, &sh, err))
      return err->status;
  }
  return FELIX_OK;
}

bool cp_apply_inventory(cp_state *cp, const cp_broker_row *b, const cp_inv_entry *inv, size_t ninv, bool at_start) {
  felix_err err;
  if (ninv == 0) return true;
  if (cp_store_begin(cp->store, &err) || apply_inventory_txn(cp, b, inv, ninv, at_start, &err)) goto fail;
  if (cp_store_commit(cp->store, &err) == FELIX_OK) return true;
fail:
  cp_store_rollback(cp->store);
  felix_log_event("error", "cannot record inventory", "broker", b->id, "error", err.msg, NULL);
  return false;
}

/* Slot i of sh names a copy its broker's registration did not list. */
static felix_status forget_missing(cp_state *cp, cp_shard_row *sh, int i, felix_err *err) {
  cp_slot_row *s = &sh->slots[i];
  felix_status st = cp_event_add(cp, "copy_gone", sh, s->broker, sh->generation, err,
                                 "copy %s of %s/%d on %s is missing from its registration's inventory (its directory "
                                 "was deleted while the broker was down): the slot forgets it and a new copy is made, "
                                 "a stranger until an active leader measures it",
                                 s->copy_id, sh->stream, sh->shard, s->broker);
  forget_copy(s);
  return st ? st : cp_store_shard_put(cp->store, sh, err);
}

/* §3.2 for a broker that was down: a copy its registration does not list
 * (not even as refused or gone) has no directory any more. Left named, the
 * slot would keep its old measurement (once, `caught_up` and eligible) and
 * its broker would never be asked to make a new copy. */
void cp_forget_missing_copies(cp_state *cp, const cp_broker_row *b) {
  cp_shard_row *rows = NULL;
  size_t n = 0;
  felix_err err;
  if (cp_store_begin(cp->store, &err) || cp_store_shards_list(cp->store, NULL, &rows, &n, &err)) goto fail;
  for (size_t k = 0; k < n; k++)
    for (int i = 0; i < rows[k].nslots; i++)
      if (!strcmp(rows[k].slots[i].broker, b->id) && rows[k].slots[i].copy_id[0] &&
          !cp_inventory_lists(cp, b->id, rows[k].stream_uuid, rows[k].shard) && forget_missing(cp, &rows[k], i, &err))
        goto fail;
  free(rows);
  if (cp_store_commit(cp->store, &err) == FELIX_OK) return;
  rows = NULL;
fail:
  free(rows);
  cp_store_rollback(cp->store);
  felix_log_event("error", "cannot record missing copies", "broker", b->id, "error", err.msg, NULL);
}

/* Pins generation G+1 on slot i's copy and current incarnation, and
 * commits; false when the store refused it. */
static bool issue_generation(cp_state *cp, cp_shard_row *sh, int i, const char *why) {
  cp_broker_row b;
  bool found;
  felix_err err;
  if (cp_store_broker_get(cp->store, sh->slots[i].broker, &b, &found, &err)) return cp->decision_refused = true, false;
  if (!found) return false;
  cp_shard_row next = *sh;
  next.generation = felix_next_generation(sh->generation, sh->seen_generation);
  if (next.generation == 0) { /* a retry changes nothing: no decision_refused */
    char name[CP_ID_MAX + 16];
    snprintf(name, sizeof name, "%s/%d", sh->stream, sh->shard);
    felix_log_event("error", "no generation is left for this shard: its copies reached 2^53 - 1, the largest a JSON number "
                    "carries exactly; nothing can lead it", "shard", name, NULL);
    return false;
  }
  assert(next.generation > sh->generation && next.generation > sh->seen_generation); /* numbers only grow */
  snprintf(next.leader, sizeof next.leader, "%s", b.id);
  snprintf(next.leader_copy_id, sizeof next.leader_copy_id, "%s", sh->slots[i].copy_id);
  snprintf(next.leader_incarnation, sizeof next.leader_incarnation, "%s", b.incarnation);
  snprintf(next.state, sizeof next.state, "Fencing");
  next.detail[0] = '\0';
  if (cp_store_begin(cp->store, &err) || cp_store_shard_put(cp->store, &next, &err) ||
      cp_store_pin_insert(cp->store, &next, (int64_t)(felix_now_micros() / 1000000u), &err) ||
      cp_event_add(cp, "generation", &next, b.id, next.generation, &err,
                   "generation %" PRId64 " issued to %s (copy %s, incarnation %s): %s", next.generation, b.id,
                   next.leader_copy_id, next.leader_incarnation, why) ||
      cp_store_commit(cp->store, &err)) {
    cp_store_rollback(cp->store);
    felix_log_event("error", "cannot issue generation", "stream", sh->stream, "error", err.msg, NULL);
    cp->decision_refused = true;
    return false;
  }
  *sh = next;
  cp_fence_watch_start(cp, sh);
  return true;
}

static int leaderships_of(cp_state *cp, const char *broker) {
  felix_err err;
  int count = 0;
  cp_store_leaderships(cp->store, broker, &count, &err); /* 0 on a store error: placement still works */
  return count;
}

/* Generation 0: once every replica's empty copy is recorded, generation 1
 * goes to the live replica with the fewest leaderships (§4.1). */
static void issue_first(cp_state *cp, cp_shard_row *sh) {
  felix_place_broker pb[FELIX_MAX_REPLICAS];
  size_t cands[FELIX_MAX_REPLICAS], nc = 0;
  for (int i = 0; i < sh->nslots; i++) {
    if (!sh->slots[i].copy_id[0] || sh->slots[i].stranger) return;
    pb[i] = (felix_place_broker){.id = sh->slots[i].broker, .alive = cp_broker_may_lead(cp, sh->slots[i].broker)};
    if (!pb[i].alive) continue;
    pb[i].leaderships = leaderships_of(cp, pb[i].id);
    cands[nc++] = (size_t)i;
  }
  if (nc == 0) return;
  size_t i = felix_pick_first_leader(pb, cands, nc);
  (void)issue_generation(cp, sh, (int)i, "every replica's empty copy exists"); /* refused: the next tick tries again */
}

/* §4.6: the leader reported no quorum for longer than a lease (a leader whose
 * own disk hangs counts itself out); it is passed over for two leases. It is
 * alive and may still hold a per-shard lease for `leader` acknowledgements
 * (review 5, item 6): its renewal stops now, and the shard moves once the
 * last lease it was granted — at most one lease from now — has passed. */
static bool no_quorum_too_long(cp_state *cp, const cp_shard_row *sh, char *why, size_t cap) {
  cp_shard_mem *w = cp_shard_mem_get(cp, sh->stream_uuid, sh->shard, false);
  if (!w || sh->nslots < 2) return false;
  if (w->unrenewed_generation == sh->generation) {
    if (cp->clock.now_ms < w->unrenewed_until_ms) return false;
    w->unrenewed_generation = 0; /* fires once */
    snprintf(w->passed_over, sizeof w->passed_over, "%s", sh->leader);
    w->passed_until_ms = cp->clock.now_ms + 2 * cp->lease_ms;
    snprintf(why, cap, "%s", w->unrenewed_why);
    return true;
  }
  if (w->no_quorum_generation != sh->generation || w->no_quorum_ms <= (int64_t)cp->lease_ms) return false;
  w->unrenewed_generation = sh->generation;
  w->unrenewed_until_ms = cp->clock.now_ms + cp->lease_ms;
  snprintf(w->unrenewed_why, sizeof w->unrenewed_why,
           "leader %s lost: no quorum for %" PRId64 " ms (more than a lease); moved once its leader-ack lease had passed",
           sh->leader, w->no_quorum_ms);
  w->no_quorum_ms = 0; /* fires once per report of it */
  felix_log_event("warn", "the leader has no quorum: its leader-ack lease is no longer renewed; the shard moves once it has passed",
         "stream", sh->stream, "leader", sh->leader, NULL);
  return false;
}

/* Why the pinned leader of the current generation can no longer lead, or NULL. */
static const char *leader_lost(cp_state *cp, const cp_shard_row *sh, char *why, size_t cap) {
  cp_broker_row b;
  bool found;
  felix_err err;
  if (cp_store_broker_get(cp->store, sh->leader, &b, &found, &err)) {
    cp->decision_refused = true; /* not read is not "alive": look again at the next tick (helper-30) */
    return NULL;
  }
  if (!found) return NULL;
  bool replaced = strcmp(b.incarnation, sh->leader_incarnation) != 0;
  if (!cp_broker_alive(cp, b.id)) {
    snprintf(why, cap, "leader %s lost: lease lapsed", b.id);
  } else if (replaced && cp_predecessor_may_hold_lease(cp, b.id, sh->leader_incarnation)) {
    /* Review 5, item 6: the pinned process may be alive elsewhere and
     * acknowledge acks=leader publishes until its lease passes, whatever the
     * process that replaced it does (drains, say). */
    return NULL;
  } else if (no_quorum_too_long(cp, sh, why, cap)) {
    /* why is filled */
  } else if (cp_broker_draining(cp, b.id)) {
    if (sh->nslots < 2) return NULL; /* one replica: nobody to hand it to */
    snprintf(why, cap, "leader %s drains: handing the shard off", b.id);
  } else if (replaced) {
    snprintf(why, cap, "leader %s lost: registered again as incarnation %s", b.id, b.incarnation);
  } else if (cp_copy_refused(cp, b.id, sh->stream_uuid, sh->shard, sh->leader_copy_id)) {
    snprintf(why, cap, "leader %s lost: it refused its copy (a failed write or sync of the copy's files)", b.id);
  } else {
    int i = slot_of(sh, b.id);
    if (i < 0 || !strcmp(sh->slots[i].copy_id, sh->leader_copy_id)) return NULL;
    snprintf(why, cap, "leader %s lost: its copy id changed", b.id);
  }
  return why;
}

static bool mark_no_caught_up(cp_state *cp, cp_shard_row *sh, const char *lost, const char *detail) {
  if (!strcmp(sh->state, "NoCaughtUpReplica") && !strcmp(sh->detail, detail)) return true; /* already said */
  felix_err err;
  cp_shard_row next = *sh;
  snprintf(next.state, sizeof next.state, "NoCaughtUpReplica");
  snprintf(next.detail, sizeof next.detail, "%s", detail);
  if (cp_store_begin(cp->store, &err) || cp_store_shard_put(cp->store, &next, &err) ||
      cp_event_add(cp, "no_caught_up_replica", &next, next.leader, next.generation, &err,
                   "%s/%d has no caught-up replica (%s); excluded: %s", next.stream, next.shard, lost, detail) ||
      cp_store_commit(cp->store, &err)) {
    cp_store_rollback(cp->store);
    felix_log_event("error", "cannot record shard state", "stream", sh->stream, "error", err.msg, NULL);
    cp->decision_refused = true;
    return false;
  }
  *sh = next;
  return true;
}

/* The decision, recorded: false when the store refused it. */
static bool failover(cp_state *cp, cp_shard_row *sh, const char *lost) {
  felix_copy_view views[FELIX_MAX_REPLICAS];
  for (int i = 0; i < sh->nslots; i++) {
    const cp_slot_row *s = &sh->slots[i];
    const cp_inv_entry *e = cp_inventory_find(cp, s->broker, sh->stream_uuid, sh->shard);
    views[i] = (felix_copy_view){.broker = s->broker, .alive = cp_broker_alive(cp, s->broker),
                                 .draining = cp_broker_draining(cp, s->broker),
                                 .passed_over = cp_passed_over(cp, sh, s->broker),
                                 .refused = cp_copy_refused(cp, s->broker, sh->stream_uuid, sh->shard, s->copy_id),
                                 .slot_copy_id = s->copy_id, .stranger = s->stranger, .has_inventory = e != NULL,
                                 .inv_copy_id = e ? e->copy_id : "", .log_end = e ? e->log_end : 0,
                                 .last_generation = e ? e->last_generation : 0,
                                 .measured = s->copy_id[0] && !s->stranger, .confirmed = s->confirmed,
                                 .point_generation = e && e->log_end >= sh->max_hwm && sh->max_hwm > 0
                                                         ? cp_inv_generation_at(e, sh->max_hwm - 1) : 0};
  }
  felix_failover_verdict v;
  int chosen = felix_decide_failover(views, (size_t)sh->nslots, sh->max_hwm, sh->max_hwm_generation, &v);
  if (chosen >= 0) return issue_generation(cp, sh, chosen, lost);
  /* §4.7: say what waiting protects, and what abandoning would cost. */
  char detail[1200];
  int64_t risk = cp_abandon_estimate(cp, sh);
  if (risk < 0) snprintf(detail, sizeof detail, "%.1000s; no copy is live", v.detail);
  else
    snprintf(detail, sizeof detail,
             "%.1000s; an estimated %" PRId64 " committed records are at risk unless an excluded copy returns "
             "(felixctl placement abandon --dry-run)", v.detail, risk);
  return mark_no_caught_up(cp, sh, lost, detail);
}

/* §4.6: a fence that has not completed within a lease is a trigger; that
 * leader-elect is passed over for two leases. Watched on the lease clock, so
 * a paused control plane never fires it. */
static const char *fence_timed_out(cp_state *cp, const cp_shard_row *sh, char *why, size_t cap) {
  if (strcmp(sh->state, "Fencing") != 0) {
    /* The fence is over (Active never returns to Fencing): its watch is done,
     * so it no longer makes every tick re-evaluate every shard. */
    cp_shard_mem *done = cp_shard_mem_get(cp, sh->stream_uuid, sh->shard, false);
    if (done && done->generation == sh->generation) done->fired = true;
    return NULL;
  }
  cp_shard_mem *w = cp_shard_mem_get(cp, sh->stream_uuid, sh->shard, true);
  if (!w) return NULL;
  if (w->generation != sh->generation) { /* first seen Fencing since a start */
    cp_fence_watch_start(cp, sh);
    return NULL;
  }
  if (w->fired || cp->clock.now_ms - w->since_ms <= cp->lease_ms) return NULL;
  w->fired = true;
  snprintf(w->passed_over, sizeof w->passed_over, "%s", sh->leader);
  w->passed_until_ms = cp->clock.now_ms + 2 * cp->lease_ms;
  snprintf(why, cap, "the fence of generation %" PRId64 " on %s did not complete within a lease: %s is passed over for a while",
           sh->generation, sh->leader, sh->leader);
  return why;
}

/* §4.8: a copy promised a generation above the stored one (a restored
 * database): fail over above everything seen before trusting anything. */
static const char *higher_generation_seen(const cp_shard_row *sh, char *why, size_t cap) {
  if (sh->seen_generation <= sh->generation) return NULL;
  snprintf(why, cap,
           "a copy promised generation %" PRId64 " above the stored %" PRId64
           " (a restored control-plane database?): a new generation above it",
           sh->seen_generation, sh->generation);
  return why;
}

/* The copies the live inventories list for sh's empty slots (note_copy),
 * committed; for a generation-0 shard whose wait just ended. */
static void record_live_copies(cp_state *cp, cp_shard_row *sh) {
  felix_err err;
  bool changed = false;
  if (cp_store_begin(cp->store, &err)) {
    cp->decision_refused = true;
    return;
  }
  for (int i = 0; i < sh->nslots; i++) {
    const cp_inv_entry *e = cp_inventory_find(cp, sh->slots[i].broker, sh->stream_uuid, sh->shard);
    cp_broker_row b;
    bool found;
    if (!e || sh->slots[i].copy_id[0] || cp_store_broker_get(cp->store, sh->slots[i].broker, &b, &found, &err) || !found)
      continue;
    changed |= note_copy(cp, &b, e, sh, false, &err);
  }
  if (!changed) {
    cp_store_rollback(cp->store);
  } else if (cp_store_shard_put(cp->store, sh, &err) || cp_store_commit(cp->store, &err)) {
    cp_store_rollback(cp->store);
    cp->decision_refused = true; /* what the live copies told is kept in memory: record it at the next tick */
  }
}

/* The triggers that fire once (a fence timeout, a no-quorum leader's lease
 * passed): consumed when they fire, so a failover the store then refuses
 * (a full disk, a busy database) must re-arm them, or the shard would wait
 * for ever at Fencing (found by the review of 38fb7c3). */
typedef struct one_shots {
  bool fired;
  int64_t unrenewed_generation;
  uint64_t unrenewed_until_ms;
} one_shots;

static one_shots one_shots_of(cp_state *cp, const cp_shard_row *sh) {
  cp_shard_mem *w = cp_shard_mem_get(cp, sh->stream_uuid, sh->shard, false);
  return w ? (one_shots){w->fired, w->unrenewed_generation, w->unrenewed_until_ms} : (one_shots){0};
}

static void rearm(cp_state *cp, const cp_shard_row *sh, const one_shots *before) {
  cp_shard_mem *w = cp_shard_mem_get(cp, sh->stream_uuid, sh->shard, false);
  if (!w) return;
  w->fired = before->fired;
  w->unrenewed_generation = before->unrenewed_generation;
  w->unrenewed_until_ms = before->unrenewed_until_ms;
}

void cp_evaluate_shard(cp_state *cp, cp_shard_row *sh) {
  /* §4.8: no decision before inventories. Asked on every evaluation (every
   * inventory triggers one), so the wait ends as soon as they are in. */
  if (cp_shard_waiting(cp, sh)) return;
  char why[300];
  /* §4.2: until the start-up grace is over a leader may still hold a
   * per-shard lease an earlier instance granted (found by the adversarial
   * review): no failover of a shard the store held, whatever the trigger. */
  bool in_grace = !cp->grace_over && cp_shard_held_at_start(cp, sh);
  if (sh->generation == 0) {
    record_live_copies(cp, sh);
    /* A copy promised a generation the store never issued (a restored
     * database): not a new shard — a failover above it, counted copies only. */
    if (higher_generation_seen(sh, why, sizeof why)) {
      if (!in_grace) (void)failover(cp, sh, why); /* refused: the next tick tries again */
      return;
    }
    issue_first(cp, sh);
    return;
  }
  if (in_grace) return;
  one_shots before = one_shots_of(cp, sh);
  const char *lost = higher_generation_seen(sh, why, sizeof why); /* said first: it explains the rest */
  if (!lost) lost = leader_lost(cp, sh, why, sizeof why);
  if (!lost) lost = fence_timed_out(cp, sh, why, sizeof why);
  if (lost && !failover(cp, sh, lost)) rearm(cp, sh, &before);
}
