/* control-plane/registry.c — what brokers tell the control plane: registration,
 * heartbeats with inventories, and leaders' reports (docs/control-plane-api.md,
 * DESIGN.md §4.1, §4.5). Invariants: an incarnation's counter only grows and
 * is committed before the reply; a report changes a shard only when it comes
 * from the pinned leader of its current generation, in sequence order; the
 * max HWM is never lowered. */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "felix/logfmt.h"
#include "felix/replication.h"
#include "state_internal.h"
#include "felix/fileutil.h"

static int64_t now_s(void) {
  return (int64_t)(felix_now_micros() / 1000000u);
}

/* Another broker alive under the same storage id, into *who. */
static felix_status live_duplicate(cp_state *cp, const cp_register_req *r, char who[CP_ID_MAX], felix_err *err) {
  cp_broker_row *bs = NULL;
  size_t n = 0;
  who[0] = '\0';
  if (cp_store_brokers_list(cp->store, &bs, &n, err)) return err->status;
  for (size_t i = 0; i < n && !who[0]; i++)
    if (strcmp(bs[i].id, r->broker_id) && !strcmp(bs[i].storage_id, r->storage_id) && cp_broker_alive(cp, bs[i].id))
      snprintf(who, CP_ID_MAX, "%s", bs[i].id);
  free(bs);
  return FELIX_OK;
}

/* The broker's slots forget their copy ids: its copies are new (§4.4). */
static felix_status forget_copies(cp_state *cp, const cp_broker_row *b, const char *old_storage, felix_err *err) {
  cp_shard_row *rows = NULL;
  size_t n = 0;
  int touched = 0;
  felix_status st = cp_store_shards_list(cp->store, NULL, &rows, &n, err);
  if (st) goto out;
  for (size_t k = 0; k < n; k++) {
    cp_shard_row *sh = &rows[k];
    for (int i = 0; i < sh->nslots; i++) {
      cp_slot_row *s = &sh->slots[i];
      if (strcmp(s->broker, b->id)) continue;
      char old_copy[CP_HEX_MAX];
      snprintf(old_copy, sizeof old_copy, "%s", s->copy_id[0] ? s->copy_id : "none");
      s->copy_id[0] = '\0';
      s->stranger = true;
      touched++;
      if ((st = cp_store_shard_put(cp->store, sh, err)) != FELIX_OK ||
          (st = cp_event_add(cp, "new_storage_id", sh, b->id, sh->generation, err,
                       "%s registered under new storage id %s (was %s): its copy of %s/%d is a new copy; the slot "
                       "forgets copy %s",
                       b->id, b->storage_id, old_storage, sh->stream, sh->shard, old_copy)) != FELIX_OK)
        goto out;
    }
  }
  if (touched == 0)
    st = cp_event_add(cp, "new_storage_id", NULL, b->id, -1, err, "%s registered under new storage id %s (was %s)", b->id,
                 b->storage_id, old_storage);
out:
  free(rows);
  return st; /* err is filled only on failure: never read its status otherwise */
}

/* *new_storage: another storage id than the registered one; *same_dir: a
 * first registration, or the same directory (its id, or one rotated from it)
 * on the same boot, whose lock the old process held. */
static felix_status register_txn(cp_state *cp, const cp_register_req *r, cp_broker_row *b, bool *new_storage,
                                 bool *same_dir, char old_incarnation[CP_INC_MAX], cp_outcome *out, felix_err *err) {
  bool found;
  char who[CP_ID_MAX];
  if (cp_store_broker_get(cp->store, r->broker_id, b, &found, err) || live_duplicate(cp, r, who, err))
    return err->status;
  if (who[0]) {
    cp_outcome_fail(out, 409, "stop the other broker, or give this one its own data directory",
                    "storage id %s is registered by live broker %s", r->storage_id, who);
    return FELIX_OK;
  }
  char old_storage[CP_HEX_MAX], old_boot[sizeof b->boot_id];
  snprintf(old_storage, sizeof old_storage, "%s", found ? b->storage_id : "");
  snprintf(old_boot, sizeof old_boot, "%s", found ? b->boot_id : "");
  snprintf(old_incarnation, CP_INC_MAX, "%s", found ? b->incarnation : "");
  if (!found) memset(b, 0, sizeof *b);
  snprintf(b->id, sizeof b->id, "%s", r->broker_id);
  snprintf(b->storage_id, sizeof b->storage_id, "%s", r->storage_id);
  b->counter++; /* committed below, before the reply: monotonic across restarts */
  snprintf(b->incarnation, sizeof b->incarnation, "%s.%" PRId64, cp->instance_id, b->counter);
  snprintf(b->address, sizeof b->address, "%s", r->address);
  snprintf(b->http_address, sizeof b->http_address, "%s", r->http_address ? r->http_address : "");
  snprintf(b->fsync_mode, sizeof b->fsync_mode, "%s", r->fsync_mode);
  snprintf(b->boot_id, sizeof b->boot_id, "%s", r->boot_id ? r->boot_id : "");
  b->registered_at = now_s();
  b->rotated = r->rotated;
  b->have_seq = false; /* a new incarnation starts its own sequence */
  if (cp_store_broker_put(cp->store, b, err)) return err->status;
  *new_storage = found && strcmp(old_storage, r->storage_id) != 0;
  if (*new_storage && forget_copies(cp, b, old_storage, err)) return err->status;
  /* The directory lock proves the old process gone only on one machine and
   * boot: a clone of the directory elsewhere (a disk or VM snapshot) keeps
   * or rotates the same id on another boot (found by the review). */
  bool same_id = !*new_storage || (r->previous_storage_id && !strcmp(r->previous_storage_id, old_storage));
  *same_dir = !found || (same_id && r->boot_id && !strcmp(r->boot_id, old_boot)); /* !found: nothing replaced */
  return cp_event_add(cp, "registered", NULL, b->id, -1, err,
                      "%s registered as incarnation %s (storage id %s, rotated %s, address %s)", b->id,
                      b->incarnation, b->storage_id, b->rotated ? "true" : "false", b->address);
}

void cp_register(cp_state *cp, const cp_register_req *r, char incarnation[CP_INC_MAX], cp_outcome *out) {
  felix_err err;
  cp_broker_row b;
  bool new_storage = false, same_dir = false;
  char old_incarnation[CP_INC_MAX] = "";
  cp_outcome_ok(out, 200);
  incarnation[0] = '\0';
  if (cp_store_begin(cp->store, &err) || register_txn(cp, r, &b, &new_storage, &same_dir, old_incarnation, out, &err) ||
      out->status != 200 ||
      cp_store_commit(cp->store, &err)) {
    cp_store_rollback(cp->store);
    if (out->status == 200) cp_outcome_store_error(out, &err);
    return;
  }
  snprintf(incarnation, CP_INC_MAX, "%s", b.incarnation);
  cp_live *l = cp_live_get(cp, b.id, true);
  if (l) l->draining = false; /* a new process */
  if (!l) return;
  /* Another data directory, or the same one on another boot (perhaps another
   * machine): the process it replaces may be alive, cut off, and hold
   * per-shard leases its last heartbeat renewed. Its shards move once those
   * have passed (leader_lost). Each replaced process is noted once, with its
   * last renewal: two live processes registering in turn under one id do not
   * extend each other's wait for ever (found by the review). */
  if (!same_dir && felix_lease_alive(l->renewed_ms, cp->clock.now_ms, cp->lease_ms)) {
    /* An operator must hear of it: two live processes under one --id
     * register in turn, each taking the other's shards away. */
    felix_log_event("warn", "a broker registered from another directory or boot while its previous process was alive: "
           "its shards move once that process's lease has passed; if both run, stop one (two processes with one --id)",
           "broker", b.id, "storage_id", r->storage_id, NULL);
    cp_note_predecessor(l, old_incarnation, l->renewed_ms);
  }
  cp_live_renew(cp, l);
  cp_live_set_inventory(l, r->inv, r->ninv);
  l->inv_unapplied = !cp_apply_inventory(cp, &b, r->inv, r->ninv, true);
  l->inv_unapplied_at_start = true;
  /* A directory the broker could not read (EMFILE, EIO on its ballot) is not
   * in the inventory either: nothing is "missing" until all were read (found
   * by the review: an intact R=1 copy was forgotten and its shard stuck). A
   * new storage id forgot them all already. */
  if (r->has_inventory && r->unread_copies == 0 && !new_storage) cp_forget_missing_copies(cp, &b);
  cp_reevaluate_all(cp); /* a pinned leader that registered again is lost (§4.6) */
}

/* Fills b with the broker when incarnation is its current one, else a 409. */
static bool current_incarnation(cp_state *cp, const char *broker, const char *incarnation, cp_broker_row *b,
                                cp_outcome *out) {
  bool found;
  felix_err err;
  if (cp_store_broker_get(cp->store, broker, b, &found, &err)) {
    cp_outcome_store_error(out, &err);
    return false;
  }
  if (found && !strcmp(b->incarnation, incarnation)) {
    cp_outcome_ok(out, 200);
    return true;
  }
  if (found)
    cp_outcome_fail(out, 409, "register again", "incarnation %s is not the current one of broker %s", incarnation,
                    broker);
  else
    cp_outcome_fail(out, 409, "register again", "broker %s is not registered", broker);
  out->reregister = true;
  return false;
}

void cp_check_incarnation(cp_state *cp, const char *broker, const char *incarnation, cp_outcome *out) {
  cp_broker_row b;
  current_incarnation(cp, broker, incarnation, &b, out);
}

void cp_heartbeat(cp_state *cp, const char *broker, const char *incarnation, const cp_inv_entry *inv, size_t ninv,
                  cp_outcome *out) {
  cp_broker_row b;
  if (!current_incarnation(cp, broker, incarnation, &b, out)) return;
  cp_live *l = cp_live_get(cp, broker, true);
  if (!l) return;
  bool was_dead = !felix_lease_alive(l->renewed_ms, cp->clock.now_ms, cp->lease_ms);
  cp_live_renew(cp, l);
  bool applied = false;
  if (inv) {
    /* A registration's inventory the store refused still owes its check
     * (a copy below its floor is a stranger, §4.5): a newer inventory
     * replaces it, and is checked in its place (helper-30). */
    bool at_start = l->inv_unapplied && l->inv_unapplied_at_start;
    cp_live_set_inventory(l, inv, ninv);
    l->inv_unapplied = !cp_apply_inventory(cp, &b, inv, ninv, at_start);
    l->inv_unapplied_at_start = at_start;
    applied = true;
  } else if (l->inv_unapplied) { /* the store refused it before: again, as it came */
    l->inv_unapplied = !cp_apply_inventory(cp, &b, l->inv, l->ninv, l->inv_unapplied_at_start);
    applied = !l->inv_unapplied;
  }
  if (applied || was_dead) cp_reevaluate_all(cp);
}

/* An Active leader's measurements of its followers (§4.5, rule 5): each
 * counts only for the copy its slot names; strangers are trusted at h0;
 * a copy measured below its floor becomes a stranger. */
static felix_status measure_followers(cp_state *cp, cp_shard_row *sh, const cp_report_shard *r, felix_err *err) {
  for (size_t k = 0; k < r->nfollowers; k++) {
    const cp_report_follower *f = &r->followers[k];
    for (int i = 0; i < sh->nslots; i++) {
      cp_slot_row *s = &sh->slots[i];
      if (strcmp(s->broker, f->broker) != 0) continue;
      felix_slot_trust t = {.copy_id = s->copy_id, .stranger = s->stranger, .confirmed = s->confirmed, .floor = s->floor};
      felix_follower_measure m = {.copy_id = f->copy_id, .connected = f->connected, .held = f->held, .h0 = f->h0};
      felix_measure_verdict v;
      felix_judge_measurement(&t, &m, true, r->hwm, &v);
      if (!v.changed) continue;
      s->stranger = v.stranger;
      s->confirmed = v.confirmed;
      s->floor = v.floor;
      if (v.why[0] && cp_event_add(cp, v.stranger ? "stranger" : "trusted", sh, s->broker, sh->generation, err, "%s/%d on %s: %s",
                                   sh->stream, sh->shard, s->broker, v.why))
        return err->status;
    }
  }
  return FELIX_OK;
}

/* What an accepted report leaves in memory (the no-quorum age and the log
 * size): kept aside until its transaction commits, so a report the store
 * failed to take leaves nothing behind that decisions could act on. */
typedef struct report_mem {
  char stream_uuid[40];
  int shard;
  int64_t generation; /* -1: nothing to apply */
} report_mem;

/* Applies one accepted shard report; the caller's transaction commits it. */
static felix_status apply_report(cp_state *cp, cp_shard_row *sh, const cp_broker_row *b, const cp_report_shard *r,
                                 const felix_report_verdict *v, report_mem *mem, felix_err *err) {
  bool was_active = !strcmp(sh->state, "Active");
  snprintf(sh->state, sizeof sh->state, "%s", v->active ? "Active" : "Fencing");
  sh->detail[0] = '\0';
  /* The maximum HWM is the highest an accepted report of the pinned leader
   * stated, whose HWM is what a majority held: never a number nobody reported. */
  assert(v->max_hwm >= sh->max_hwm && (v->max_hwm == sh->max_hwm || v->max_hwm == r->hwm));
  sh->hwm = r->hwm;
  sh->max_hwm = v->max_hwm;
  sh->max_hwm_generation = v->max_hwm_generation;
  int i = -1;
  for (int k = 0; k < sh->nslots; k++)
    if (!strcmp(sh->slots[k].broker, b->id)) i = k;
  if (v->active && i >= 0) {
    /* Only an Active leader measures (rule 5); it measures its own copy. */
    cp_slot_row *s = &sh->slots[i];
    s->confirmed = r->log_end < r->hwm ? r->log_end : r->hwm;
    if (s->confirmed > s->floor) s->floor = s->confirmed;
    snprintf(s->storage_id, sizeof s->storage_id, "%s", b->storage_id);
    s->stranger = false;
  }
  if (v->active && measure_followers(cp, sh, r, err)) return err->status;
  if (cp_store_shard_put(cp->store, sh, err)) return err->status;
  snprintf(mem->stream_uuid, sizeof mem->stream_uuid, "%s", sh->stream_uuid);
  mem->shard = sh->shard;
  mem->generation = sh->generation;
  if (v->active && !was_active)
    return cp_event_add(cp, "active", sh, b->id, sh->generation, err,
                        "generation %" PRId64 " of %s/%d is active on %s (hwm %" PRId64 ")", sh->generation,
                        sh->stream, sh->shard, b->id, r->hwm);
  return FELIX_OK;
}

static void reject(cp_report_rejection *rej, size_t *n, const cp_report_shard *r, const char *reason) {
  cp_report_rejection *x = &rej[(*n)++];
  snprintf(x->stream, sizeof x->stream, "%s", r->stream);
  x->shard = r->shard;
  snprintf(x->reason, sizeof x->reason, "%s", reason);
}

/* Judges one shard report inside the caller's transaction; true if accepted. */
static bool judge_one(cp_state *cp, const cp_broker_row *b, const cp_report_shard *r, cp_report_rejection *rej,
                      size_t *nrej, report_mem *mem, felix_err *err) {
  cp_stream_row stream;
  cp_shard_row sh;
  bool found = false;
  if (cp_store_stream_by_name(cp->store, r->stream, &stream, &found, err) == FELIX_OK && found)
    cp_store_shard_get(cp->store, stream.uuid, r->shard, &sh, &found, err);
  if (!found) {
    reject(rej, nrej, r, "unknown stream or shard");
    return false;
  }
  if (r->stream_uuid && r->stream_uuid[0] && strcmp(r->stream_uuid, sh.stream_uuid)) {
    /* A report of a deleted stream's copy, sent before its broker applied the
     * deletion: it says nothing of the stream created again under the name. */
    reject(rej, nrej, r, "a report of another stream of that name (a deleted one)");
    return false;
  }
  /* A generation above any we know raises the counter (§4.6), accepted or not. */
  bool seen_raised = r->generation > sh.seen_generation && r->generation > sh.generation;
  if (seen_raised) sh.seen_generation = r->generation;
  if (cp_shard_unsure(cp, &sh)) {
    /* §4.8, the model's Finding 6: a restored database may pin a deposed
     * leader as the Active one; its report must not measure or clear a copy. */
    reject(rej, nrej, r,
           sh.seen_generation > sh.generation
               ? "a copy promised a generation above the one the control plane stores: no report is accepted until it fails over above it"
               : "the control plane waits for inventories after its start: no report is accepted until a majority of the copies it names have sent one");
    if (seen_raised) cp_store_shard_put(cp->store, &sh, err);
    return false;
  }
  felix_pin pin = {.generation = sh.generation, .broker = sh.leader[0] ? sh.leader : NULL,
                   .copy_id = sh.leader_copy_id, .incarnation = sh.leader_incarnation};
  felix_shard_report fr = {.broker = b->id, .copy_id = r->copy_id, .incarnation = b->incarnation,
                           .generation = r->generation, .hwm = r->hwm, .generation_start = r->generation_start, .log_end = r->log_end,
                           .last_generation = r->last_generation, .has_hwm_generation = r->has_hwm_generation, .hwm_generation = r->hwm_generation};
  felix_report_verdict v;
  felix_judge_report(&pin, sh.max_hwm, sh.max_hwm_generation, &fr, &v);
  if (!v.accepted) {
    reject(rej, nrej, r, v.reason);
    if (seen_raised) cp_store_shard_put(cp->store, &sh, err);
    return false;
  }
  return apply_report(cp, &sh, b, r, &v, mem, err) == FELIX_OK;
}

static void apply_report_mem(cp_state *cp, const report_mem *mem, const cp_report_shard *r) {
  if (mem->generation < 0) return;
  cp_shard_mem *w = cp_shard_mem_get(cp, mem->stream_uuid, mem->shard, true);
  if (w) w->no_quorum_generation = mem->generation, w->no_quorum_ms = r->no_quorum_ms, w->log_bytes = r->log_bytes;
}

int cp_report(cp_state *cp, const char *broker, const char *incarnation, int64_t seq, const cp_report_shard *shards,
              size_t nshards, cp_report_rejection *rejected, size_t *nrejected, cp_outcome *out) {
  cp_broker_row b;
  *nrejected = 0;
  if (!current_incarnation(cp, broker, incarnation, &b, out)) return 0;
  if (!felix_report_seq_fresh(b.have_seq, b.report_seq, seq)) {
    char why[200];
    snprintf(why, sizeof why, "seq %" PRId64 " is not above the last accepted %" PRId64, seq, b.report_seq);
    for (size_t i = 0; i < nshards; i++) reject(rejected, nrejected, &shards[i], why);
    return 0;
  }
  felix_err err = {0};
  int accepted = 0;
  report_mem *mem = calloc(nshards ? nshards : 1, sizeof *mem);
  if (!mem) return cp_outcome_fail(out, 500, NULL, "out of memory judging a report of %zu shards", nshards), 0;
  if (cp_store_begin(cp->store, &err)) goto fail;
  for (size_t i = 0; i < nshards; i++) {
    mem[i].generation = -1;
    accepted += judge_one(cp, &b, &shards[i], rejected, nrejected, &mem[i], &err);
    if (err.status) goto fail;
  }
  b.have_seq = true;
  b.report_seq = seq;
  if (cp_store_broker_put(cp->store, &b, &err) || cp_store_commit(cp->store, &err)) goto fail;
  for (size_t i = 0; i < nshards; i++) apply_report_mem(cp, &mem[i], &shards[i]);
  free(mem);
  /* A report bears on the shards it names alone (their state, measurements
   * and no-quorum age): those are evaluated, not every shard (review 5,
   * item 1: at 1,024 shards a full pass per report saturated a core). */
  for (size_t i = 0; i < nshards; i++) cp_evaluate_named(cp, shards[i].stream, shards[i].shard);
  return accepted;
fail:
  free(mem);
  cp_store_rollback(cp->store);
  cp_outcome_store_error(out, &err);
  return 0;
}
