/* decide/placement.c — pure placement, failover and report decisions (placement.h).
 * Invariants: a shard's replicas are distinct alive brokers; a failover never
 * picks a copy the rules exclude; a max HWM is never lowered. */
#include "felix/placement.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* a before b: fewer load, then smaller id. */
static bool lighter(const felix_place_broker *a, const felix_place_broker *b) {
  if (a->load != b->load) return a->load < b->load;
  return strcmp(a->id, b->id) < 0;
}

static void list_alive(const felix_place_broker *b, size_t n, char *out, size_t cap) {
  size_t used = 0;
  out[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    if (!b[i].alive) continue;
    int w = snprintf(out + used, cap - used, "%s%s", used ? ", " : "", b[i].id);
    if (w < 0 || (size_t)w >= cap - used) break;
    used += (size_t)w;
  }
}

felix_status felix_place_shard(felix_place_broker *b, size_t n, int r, size_t *out, felix_err *err) {
  size_t alive = 0;
  for (size_t i = 0; i < n; i++) alive += b[i].alive;
  if (r < 1 || (size_t)r > alive) {
    char names[512];
    list_alive(b, n, names, sizeof names);
    return felix_fail(err, FELIX_E_REFUSED, "need %d live broker%s for %d replica%s, %zu %s alive%s%s%s",
                      r, r == 1 ? "" : "s", r, r == 1 ? "" : "s", alive, alive == 1 ? "is" : "are",
                      alive ? " (" : "", names, alive ? ")" : "");
  }
  for (int k = 0; k < r; k++) {
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
      bool taken = false;
      for (int j = 0; j < k; j++) taken |= out[j] == i;
      if (!b[i].alive || taken) continue;
      if (best == SIZE_MAX || lighter(&b[i], &b[best])) best = i;
    }
    assert(best != SIZE_MAX && b[best].alive); /* r <= alive leaves a free live broker */
    out[k] = best;
  }
  for (int k = 0; k < r; k++) b[out[k]].load++;
  return FELIX_OK;
}

size_t felix_pick_first_leader(const felix_place_broker *b, const size_t *cands, size_t ncands) {
  assert(ncands > 0);
  size_t best = cands[0];
  for (size_t k = 1; k < ncands; k++) {
    const felix_place_broker *c = &b[cands[k]], *cur = &b[best];
    if (c->leaderships < cur->leaderships ||
        (c->leaderships == cur->leaderships && strcmp(c->id, cur->id) < 0))
      best = cands[k];
  }
  return best;
}

/* Fills why with the reason the copy is excluded, or "" when eligible. */
static void judge_copy(const felix_copy_view *c, int64_t max_hwm, int64_t hwm_gen, char *why, size_t cap) {
  why[0] = '\0';
  if (!c->alive) {
    snprintf(why, cap, "lease lapsed");
  } else if (c->draining) {
    snprintf(why, cap, "its broker is draining");
  } else if (c->refused) {
    snprintf(why, cap, "its broker refused this copy (a failed write or sync of its files) until it is reopened");
  } else if (c->passed_over) {
    snprintf(why, cap, "passed over for a while: its fence did not complete within a lease");
  } else if (!c->slot_copy_id || !c->slot_copy_id[0] || c->stranger) {
    snprintf(why, cap, "a stranger: copy id changed (storage id rotated or directory made anew), not measured by an active leader since");
  } else if (c->has_inventory && strcmp(c->inv_copy_id, c->slot_copy_id) != 0) {
    snprintf(why, cap, "copy id changed: %.32s is not the recorded %.32s", c->inv_copy_id, c->slot_copy_id);
  } else if (c->measured && c->confirmed >= max_hwm) {
    return; /* caught up: an Active leader measured this very copy at the max HWM */
  } else if (!c->has_inventory) {
    snprintf(why, cap, "not caught up (measured %" PRId64 " < max hwm %" PRId64 ") and no inventory lists this shard",
             c->confirmed, max_hwm);
  } else if (c->log_end < max_hwm) {
    snprintf(why, cap, "holds %" PRId64 " < max hwm %" PRId64, c->log_end, max_hwm);
  } else if (max_hwm > 0 && c->point_generation != hwm_gen) {
    /* The copy holds enough records, but its history is not the one the
     * leader acknowledged: its record max_hwm - 1 is of another generation. */
    snprintf(why, cap, "record %" PRId64 " at generation %" PRId64 ", not %" PRId64 " as the leader reported",
             max_hwm - 1, c->point_generation, hwm_gen);
  }
}

static int64_t rank_end(const felix_copy_view *c) {
  return c->has_inventory ? c->log_end : c->confirmed;
}

static bool outranks(const felix_copy_view *a, const felix_copy_view *b) {
  if (a->last_generation != b->last_generation) return a->last_generation > b->last_generation;
  return rank_end(a) > rank_end(b);
}

int felix_decide_failover(const felix_copy_view *copies, size_t n, int64_t max_hwm,
                          int64_t hwm_generation, felix_failover_verdict *out) {
  memset(out, 0, sizeof *out);
  out->chosen = -1;
  size_t used = 0;
  for (size_t i = 0; i < n && i < FELIX_MAX_REPLICAS; i++) {
    judge_copy(&copies[i], max_hwm, hwm_generation, out->reason[i], sizeof out->reason[i]);
    if (!out->reason[i][0]) {
      if (out->chosen < 0 || outranks(&copies[i], &copies[out->chosen])) out->chosen = (int)i;
      continue;
    }
    int w = snprintf(out->detail + used, sizeof out->detail - used, "%s%s: %s", used ? "; " : "",
                     copies[i].broker, out->reason[i]);
    if (w > 0 && (size_t)w < sizeof out->detail - used) used += (size_t)w;
  }
  /* The chosen copy is one the rules admit: alive, and it holds max_hwm by
   * a trusted measurement or by its own inventory. */
  assert(out->chosen < 0 ||
         (!out->reason[out->chosen][0] && copies[out->chosen].alive && !copies[out->chosen].draining &&
          ((copies[out->chosen].measured && copies[out->chosen].confirmed >= max_hwm) ||
           (copies[out->chosen].has_inventory && copies[out->chosen].log_end >= max_hwm))));
  return out->chosen;
}

static int64_t abandon_kept(const felix_abandon_copy *c, int64_t max_hwm, int64_t max_hwm_generation) {
  int64_t k = c->log_end < max_hwm ? c->log_end : max_hwm;
  if (c->leaves_at >= 0 && c->leaves_at < k) k = c->leaves_at;
  if (k > 0 && c->generation_before != max_hwm_generation) k = c->proven < k ? c->proven : k;
  k = k < 0 ? 0 : k;
  assert(k <= (max_hwm > 0 ? max_hwm : 0)); /* keeps no more committed records than there are */
  return k;
}

static void digest_add(uint64_t *h, const char *s) {
  for (; *s; s++) *h = (*h ^ (uint8_t)*s) * 1099511628211ull; /* FNV-1a */
  *h = (*h ^ ';') * 1099511628211ull;
}

int felix_choose_abandon(const felix_abandon_copy *c, size_t n, int64_t max_hwm, int64_t max_hwm_generation,
                         const char *context, felix_abandon_verdict *out) {
  memset(out, 0, sizeof *out);
  out->chosen = -1;
  uint64_t h = 1469598103934665603ull;
  digest_add(&h, context ? context : "");
  for (size_t i = 0; i < n && i < FELIX_MAX_REPLICAS; i++) {
    if (!c[i].live) continue;
    out->kept[i] = abandon_kept(&c[i], max_hwm, max_hwm_generation);
    char rank[64];
    snprintf(rank, sizeof rank, "%" PRId64 ":%" PRId64, c[i].last_generation, c[i].log_end);
    digest_add(&h, c[i].broker);
    digest_add(&h, c[i].copy_id);
    digest_add(&h, rank);
    if (out->chosen < 0) {
      out->chosen = (int)i;
      continue;
    }
    const felix_abandon_copy *b = &c[out->chosen];
    int64_t kb = out->kept[out->chosen];
    bool better = out->kept[i] != kb ? out->kept[i] > kb
                  : c[i].last_generation != b->last_generation ? c[i].last_generation > b->last_generation
                  : c[i].log_end != b->log_end ? c[i].log_end > b->log_end
                  : strcmp(c[i].broker, b->broker) < 0;
    if (better) out->chosen = (int)i;
  }
  snprintf(out->digest, sizeof out->digest, "%016" PRIx64, h);
  if (out->chosen >= 0) {
    int64_t r = max_hwm - out->kept[out->chosen];
    out->at_risk = r > 0 ? r : 0;
  }
  assert(out->at_risk >= 0);
  return out->chosen;
}

int64_t felix_next_generation(int64_t stored, int64_t seen) {
  int64_t top = stored > seen ? stored : seen;
  if (top >= FELIX_GENERATION_MAX) return 0;
  assert(top + 1 > stored && top + 1 > seen);
  return top + 1;
}

static bool same(const char *a, const char *b) {
  return a && b && strcmp(a, b) == 0;
}

void felix_judge_report(const felix_pin *pin, int64_t max_hwm, int64_t max_hwm_generation,
                        const felix_shard_report *r, felix_report_verdict *out) {
  memset(out, 0, sizeof *out);
  out->max_hwm = max_hwm;
  out->max_hwm_generation = max_hwm_generation;
  if (!pin->broker || pin->generation < 1) {
    snprintf(out->reason, sizeof out->reason, "no generation is issued yet");
    return;
  }
  if (r->generation != pin->generation || !same(r->broker, pin->broker) ||
      !same(r->copy_id, pin->copy_id) || !same(r->incarnation, pin->incarnation)) {
    snprintf(out->reason, sizeof out->reason, "not the pinned leader of generation %" PRId64, pin->generation);
    return;
  }
  if (r->hwm > r->log_end) {
    snprintf(out->reason, sizeof out->reason,
             "hwm %" PRId64 " is beyond the leader's own log end %" PRId64 ": nothing is committed that the leader does not hold",
             r->hwm, r->log_end);
    return;
  }
  if (r->hwm < max_hwm) {
    snprintf(out->reason, sizeof out->reason,
             "hwm %" PRId64 " is below the shard's max hwm %" PRId64 "; nothing changed", r->hwm, max_hwm);
    return;
  }
  out->accepted = true;
  out->active = r->hwm > r->generation_start;
  out->max_hwm = r->hwm;
  /* The point (hwm, generation of record hwm - 1) a copy must match (§3.4);
   * an older leader that does not send hwm_generation gives its last record's. */
  out->max_hwm_generation = r->has_hwm_generation ? r->hwm_generation : r->last_generation;
  assert(out->max_hwm >= max_hwm); /* a max HWM is never lowered */
}

bool felix_report_seq_fresh(bool have_last, int64_t last_seq, int64_t seq) {
  return !have_last || seq > last_seq;
}
