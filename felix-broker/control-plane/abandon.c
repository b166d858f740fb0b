/* control-plane/abandon.c — `felixctl placement abandon` (DESIGN.md §4.9): re-place a
 * stuck shard on the live copy with the fewest committed records at risk,
 * at a new generation, only when the operator confirms exactly what a dry
 * run showed. Invariants: nothing durable changes in a dry run or a refusal;
 * never during the start-up wait for inventories; the new generation still
 * needs a majority of promises (the broker's fence), adopts the chosen copy
 * only, and lowers the maximum HWM to what that copy keeps — said in the
 * history. */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abandon.h"
#include "felix/logfmt.h"
#include "state_internal.h"
#include "felix/fileutil.h"

static int64_t leaves_at(const cp_inv_entry *e, int64_t max_hwm_generation) {
  for (int i = 0; i < e->ngens; i++)
    if (e->gens[i][0] > max_hwm_generation) return e->gens[i][1];
  return -1;
}

/* Gathers the live copies and the verdict; false (with out) when none is live. */
static bool judge(cp_state *cp, const cp_shard_row *sh, felix_abandon_copy *c, const cp_inv_entry **inv,
                  felix_abandon_verdict *v) {
  for (int i = 0; i < sh->nslots; i++) {
    const cp_inv_entry *e = cp_inventory_find(cp, sh->slots[i].broker, sh->stream_uuid, sh->shard);
    inv[i] = e;
    c[i] = (felix_abandon_copy){.broker = sh->slots[i].broker, .copy_id = e ? e->copy_id : "",
                                .live = e && !e->gone && cp_broker_alive(cp, sh->slots[i].broker), .leaves_at = -1};
    if (!e) continue;
    const cp_slot_row *s = &sh->slots[i];
    c[i].log_end = e->log_end;
    c[i].last_generation = e->last_generation;
    c[i].leaves_at = leaves_at(e, sh->max_hwm_generation);
    int64_t end = c[i].leaves_at >= 0 && c[i].leaves_at < e->log_end ? c[i].leaves_at : e->log_end;
    if (end > sh->max_hwm) end = sh->max_hwm;
    c[i].generation_before = end > 0 ? cp_inv_generation_at(e, end - 1) : 0;
    c[i].proven = !strcmp(s->copy_id, e->copy_id) && !s->stranger ? s->floor : 0;
  }
  /* The digest also covers what would make an old dry run wrong: the max
   * HWM, and the pinned leader process and whether it is alive. */
  char ctx[400];
  snprintf(ctx, sizeof ctx, "%" PRId64 ":%" PRId64 ":%s:%s:%s:%d", sh->max_hwm, sh->max_hwm_generation, sh->leader,
           sh->leader_copy_id, sh->leader_incarnation, sh->leader[0] ? cp_broker_alive(cp, sh->leader) : 0);
  return felix_choose_abandon(c, (size_t)sh->nslots, sh->max_hwm, sh->max_hwm_generation, ctx, v) >= 0;
}

static void fill_result(const cp_shard_row *sh, const felix_abandon_copy *c, const felix_abandon_verdict *v,
                        cp_abandon_result *r) {
  memset(r, 0, sizeof *r);
  r->generation = sh->generation;
  r->max_hwm = sh->max_hwm;
  r->chosen = v->chosen;
  r->at_risk = v->at_risk;
  snprintf(r->digest, sizeof r->digest, "%s", v->digest);
  r->ncopies = sh->nslots;
  for (int i = 0; i < sh->nslots; i++) {
    cp_abandon_copy *x = &r->copies[i];
    snprintf(x->broker, sizeof x->broker, "%s", c[i].broker);
    snprintf(x->copy_id, sizeof x->copy_id, "%s", c[i].copy_id);
    x->live = c[i].live;
    x->log_end = c[i].log_end;
    x->last_generation = c[i].last_generation;
    x->kept = v->kept[i];
  }
}

static bool expectations_hold(const cp_shard_row *sh, const cp_abandon_req *q, const felix_abandon_copy *chosen,
                              const felix_abandon_verdict *v, cp_outcome *out) {
  char want[200];
  snprintf(want, sizeof want, "%s:%s", chosen->broker, chosen->copy_id);
  const char *hint = "run felixctl placement abandon --dry-run again and confirm what it shows";
  if (q->expect_generation != sh->generation)
    return cp_outcome_fail(out, 409, hint, "refused: the shard is at generation %" PRId64 ", not %" PRId64, sh->generation,
                           q->expect_generation), false;
  if (!q->expect_copy || strcmp(q->expect_copy, want) != 0)
    return cp_outcome_fail(out, 409, hint, "refused: the copy to keep is now %s, not %s", want,
                           q->expect_copy ? q->expect_copy : "(none given)"), false;
  if (!q->expect_digest || strcmp(q->expect_digest, v->digest) != 0)
    return cp_outcome_fail(out, 409, hint, "refused: the live copies or the leader changed (digest %s, not %s)",
                           v->digest, q->expect_digest ? q->expect_digest : "(none given)"), false;
  return true;
}

/* The new generation: pinned on the chosen copy, every live copy named as it
 * is now (it joins the count of promises), floors cut to what the chosen
 * copy keeps, the maximum HWM lowered to it. */
static void issue(cp_state *cp, cp_shard_row *sh, int k, const cp_inv_entry *const *inv, const felix_abandon_verdict *v,
                  cp_outcome *out) {
  cp_broker_row b;
  bool found;
  felix_err err;
  if (cp_store_broker_get(cp->store, sh->slots[k].broker, &b, &found, &err) || !found)
    return cp_outcome_fail(out, 500, "see the control plane's log", "broker %s is not registered", sh->slots[k].broker);
  cp_shard_row next = *sh;
  int64_t kept = v->kept[k];
  next.generation = felix_next_generation(sh->generation, sh->seen_generation);
  if (next.generation == 0)
    return cp_outcome_fail(out, 422, "nothing: no broker can read a generation above it",
                           "refused: %s/%d has no generation left above %" PRId64 " (2^53 - 1, the largest a JSON number "
                           "carries exactly)", sh->stream, sh->shard, FELIX_GENERATION_MAX);
  assert(next.generation > sh->generation && next.generation > sh->seen_generation);
  /* The abandon keeps what the chosen copy holds of the old maximum, no more. */
  assert(kept >= 0 && kept <= sh->max_hwm && kept <= inv[k]->log_end);
  next.abandon_generation = next.generation;
  snprintf(next.leader, sizeof next.leader, "%s", b.id);
  snprintf(next.leader_copy_id, sizeof next.leader_copy_id, "%s", inv[k]->copy_id);
  snprintf(next.leader_incarnation, sizeof next.leader_incarnation, "%s", b.incarnation);
  snprintf(next.state, sizeof next.state, "Fencing");
  next.detail[0] = '\0';
  next.max_hwm = kept;
  next.max_hwm_generation = kept > 0 ? cp_inv_generation_at(inv[k], kept - 1) : 0;
  if (next.hwm > kept) next.hwm = kept;
  for (int i = 0; i < next.nslots; i++) {
    cp_slot_row *s = &next.slots[i];
    if (inv[i] && !inv[i]->gone && cp_broker_alive(cp, s->broker)) {
      /* Named so that its promise counts; trusted again only once the new
       * Active leader measures it (rule 5): nothing here vouches for it. */
      snprintf(s->copy_id, sizeof s->copy_id, "%s", inv[i]->copy_id);
      s->stranger = false;
      s->confirmed = i == k ? kept : 0;
    } else {
      /* A copy that was not live may hold a history the abandon did not see
       * (found by the adversarial review: after a too-low --above-generation
       * a returning copy's own "generation 2" matched by number and won a
       * later failover, mixing two histories). It returns as a stranger:
       * copied again from the new leader, never counted or chosen first. */
      s->stranger = true;
      s->confirmed = 0;
    }
    if (s->floor > v->kept[i]) s->floor = v->kept[i];
  }
  if (cp_store_begin(cp->store, &err) || cp_store_shard_put(cp->store, &next, &err) ||
      cp_store_pin_insert(cp->store, &next, (int64_t)(felix_now_micros() / 1000000u), &err) ||
      cp_event_add(cp, "abandoned", &next, b.id, next.generation, &err,
                   "placement abandon: generation %" PRId64 " issued to %s (copy %s), keeping %" PRId64
                   " committed records; %" PRId64 " committed records are at risk; the maximum HWM is lowered from %" PRId64
                   " to %" PRId64,
                   next.generation, b.id, next.leader_copy_id, kept, v->at_risk, sh->max_hwm, kept) ||
      cp_store_commit(cp->store, &err)) {
    cp_store_rollback(cp->store);
    return cp_outcome_store_error(out, &err);
  }
  *sh = next;
  cp_fence_watch_start(cp, sh);
  /* The operator decided in place of the inventories it waited for (and gave
   * the generation floor): the wait is over, the new pin is handed out. */
  cp_shard_mem *m = cp_shard_mem_get(cp, sh->stream_uuid, sh->shard, false);
  if (m) m->inventories_in = true;
}

int64_t cp_abandon_estimate(cp_state *cp, const cp_shard_row *sh) {
  felix_abandon_copy c[FELIX_MAX_REPLICAS];
  const cp_inv_entry *inv[FELIX_MAX_REPLICAS];
  felix_abandon_verdict v;
  return judge(cp, sh, c, inv, &v) ? v.at_risk : -1;
}

void cp_abandon(cp_state *cp, const cp_abandon_req *q, cp_abandon_result *r, cp_outcome *out) {
  cp_outcome_ok(out, 200);
  cp_stream_row stream;
  cp_shard_row sh;
  bool found = false;
  felix_err err;
  if (cp_store_stream_by_name(cp->store, q->stream, &stream, &found, &err) == FELIX_OK && found)
    cp_store_shard_get(cp->store, stream.uuid, q->shard, &sh, &found, &err);
  if (!found) return cp_outcome_fail(out, 404, "felixctl shard list shows the shards", "shard %s/%d does not exist", q->stream, q->shard);
  /* An Active shard the control plane cannot trust (§4.8: waiting for
   * inventories, or a higher generation seen) may be stuck: it is the
   * operator's once the start-up lease has passed. */
  if (!strcmp(sh.state, "Active") && !cp_shard_unsure(cp, &sh))
    return cp_outcome_fail(out, 409, "placement abandon is for a shard stuck at NoCaughtUpReplica or Fencing",
                           "refused: %s/%d is Active at generation %" PRId64, q->stream, q->shard, sh.generation);
  if (!cp->grace_over && cp_shard_held_at_start(cp, &sh))
    return cp_outcome_fail(out, 409, "retry once a lease has passed since the control plane started (felixctl cluster status)",
                           "refused: the control plane started recently and is still waiting for inventories");
  char waiting_for[FELIX_MAX_REPLICAS][CP_ID_MAX];
  int nwait = cp_shard_waiting_for(cp, &sh, waiting_for);
  felix_abandon_copy c[FELIX_MAX_REPLICAS];
  const cp_inv_entry *inv[FELIX_MAX_REPLICAS];
  felix_abandon_verdict v;
  if (!judge(cp, &sh, c, inv, &v))
    return cp_outcome_fail(out, 409, "start a broker on the copy's directory (or a new broker under the same id on an empty one)",
                           "refused: no live copy of %s/%d", q->stream, q->shard);
  fill_result(&sh, c, &v, r);
  r->waiting = nwait > 0;
  r->nwaiting_for = nwait;
  memcpy(r->waiting_for, waiting_for, sizeof waiting_for);
  if (q->dry_run) return;
  if (nwait > 0 && q->above_generation <= 0)
    /* §4.8: the copies it waits for may have promised generations it does not
     * know; a number it issued again would be two histories under one. */
    return cp_outcome_fail(out, 409,
                           "bring those brokers back, or give --above-generation N with N at least the highest "
                           "generation any of their copies may hold (felix-inspect ballot on their directories, or the "
                           "history of the lost database)",
                           "refused: %s/%d still waits for inventories from %d of its replicas (%s%s%s%s%s): they may "
                           "hold a generation above the %" PRId64 " it knows",
                           q->stream, q->shard, nwait, waiting_for[0], nwait > 1 ? ", " : "", nwait > 1 ? waiting_for[1] : "",
                           nwait > 2 ? ", " : "", nwait > 2 ? "..." : "",
                           sh.seen_generation > sh.generation ? sh.seen_generation : sh.generation);
  if (!expectations_hold(&sh, q, &c[v.chosen], &v, out)) return;
  if (q->above_generation > sh.seen_generation) sh.seen_generation = q->above_generation;
  issue(cp, &sh, v.chosen, inv, &v, out);
  if (out->status == 200) {
    r->generation = sh.generation;
    cp_reevaluate_all(cp);
  }
}
