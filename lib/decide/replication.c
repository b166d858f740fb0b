/* decide/replication.c — the pure replication rules of replication.h.
 * Invariants: felix_hwm_compute never lowers the HWM it is given and never
 * raises it over a record the leader does not hold (a broker sets a new
 * leader's or a truncated follower's HWM lower itself); a fence never counts an answer whose copy id is not the one
 * the assignment names; a measurement is trusted only from an Active leader
 * and only for the copy it was taken of. */
#include "felix/replication.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int felix_rank_cmp(felix_rank a, felix_rank b) {
  if (a.generation != b.generation) return a.generation < b.generation ? -1 : 1;
  if (a.log_end != b.log_end) return a.log_end < b.log_end ? -1 : 1;
  return 0;
}

uint64_t felix_generation_at(const felix_generations *g, uint64_t offset) {
  for (size_t i = g->count; i > 0; i--)
    if (g->items[i - 1].start_offset <= offset) return g->items[i - 1].generation;
  return 0;
}

bool felix_copy_matches(const felix_generations *g, uint64_t held, uint64_t n, uint64_t generation) {
  if (n == 0) return true;
  return held >= n && felix_generation_at(g, n - 1) == generation;
}

static void add_breaks(uint64_t *xs, size_t *nx, const felix_generations *g, uint64_t limit) {
  for (size_t i = 0; i < g->count; i++)
    if (g->items[i].start_offset < limit) xs[(*nx)++] = g->items[i].start_offset;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

uint64_t felix_divergence_point(const felix_generations *leader, uint64_t leader_end, const felix_generations *follower,
                                uint64_t follower_end) {
  uint64_t limit = leader_end < follower_end ? leader_end : follower_end;
  if (limit == 0) return 0;
  uint64_t *xs = malloc((leader->count + follower->count + 1) * sizeof *xs);
  if (!xs) return 0; /* cutting everything is always safe: the leader copies it again */
  size_t nx = 0;
  xs[nx++] = 0;
  add_breaks(xs, &nx, leader, limit);
  add_breaks(xs, &nx, follower, limit);
  qsort(xs, nx, sizeof *xs, cmp_u64);
  /* Both lists are constant between consecutive break points, so comparing
   * at each break point compares every offset below limit. */
  uint64_t point = limit;
  for (size_t i = 0; i < nx; i++)
    if (felix_generation_at(leader, xs[i]) != felix_generation_at(follower, xs[i])) {
      point = xs[i];
      break;
    }
  free(xs);
  assert(point <= limit); /* never keeps an offset one of the two logs lacks */
  return point;
}

/* How many copies, the leader included, hold at least v. */
static int holders(const felix_hwm_input *in, uint64_t v) {
  int n = in->leader_held >= v;
  for (size_t i = 0; i < in->nfollowers; i++) n += in->followers[i].counted && in->followers[i].held >= v;
  return n;
}

uint64_t felix_hwm_compute(const felix_hwm_input *in) {
  if (!in->leader_counts || in->replicas < 1) return in->hwm;
  int majority = in->replicas / 2 + 1;
  uint64_t best = in->hwm;
  /* The answer is one of the held ends (capped at the leader's: it must hold it). */
  for (size_t i = 0; i <= in->nfollowers; i++) {
    uint64_t v = i == in->nfollowers ? in->leader_held : in->followers[i].held;
    if (i < in->nfollowers && !in->followers[i].counted) continue;
    if (v > in->leader_held) v = in->leader_held;
    if (v <= in->generation_start || v <= best) continue; /* record v-1 must be of this generation */
    if (holders(in, v) >= majority) best = v;
  }
  /* Never lowered; a raise is held by the leader, by a majority, and is past
   * the generation start (rules 2, 3). in->hwm itself may exceed leader_held. */
  assert(best >= in->hwm);
  assert(best == in->hwm ||
         (best <= in->leader_held && best > in->generation_start && holders(in, best) >= majority));
  return best;
}

int felix_ack_policy_parse(const char *s) {
  if (!s) return 0;
  if (!strcmp(s, "quorum")) return FELIX_ACK_QUORUM;
  if (!strcmp(s, "leader")) return FELIX_ACK_LEADER;
  if (!strcmp(s, "all")) return FELIX_ACK_ALL;
  return 0;
}

const char *felix_ack_policy_name(int policy) {
  switch (policy) {
  case FELIX_ACK_QUORUM: return "quorum";
  case FELIX_ACK_LEADER: return "leader";
  case FELIX_ACK_ALL: return "all";
  default: return "unknown";
  }
}

static bool committed(const felix_ack_input *in) {
  return in->hwm >= in->end && in->confirmed >= in->end;
}

static bool ack_ready(const felix_ack_input *in) {
  if (!in->leader_counts || in->leader_held < in->end) return false; /* rule 2 */
  switch (in->policy) {
  case FELIX_ACK_LEADER: /* within the lease; or, once it lapsed, when committed */
    return in->lease_valid || committed(in);
  case FELIX_ACK_ALL: {
    if (!committed(in)) return false;
    int n = 1;
    for (size_t i = 0; i < in->nfollowers; i++)
      n += in->followers[i].counted && in->followers[i].trusted && in->followers[i].held >= in->end;
    return n >= in->trusted_replicas;
  }
  case FELIX_ACK_QUORUM:
    return committed(in);
  default:
    return false;
  }
}

bool felix_ack_ready(const felix_ack_input *in) {
  bool ready = ack_ready(in);
  assert(!ready || (in->leader_counts && in->leader_held >= in->end)); /* rule 2 */
  /* only `leader`, within its lease, acknowledges what is not committed */
  assert(!ready || in->hwm >= in->end || (in->policy == FELIX_ACK_LEADER && in->lease_valid));
  return ready;
}

void felix_judge_measurement(const felix_slot_trust *slot, const felix_follower_measure *m, bool active,
                             int64_t report_hwm, felix_measure_verdict *out) {
  memset(out, 0, sizeof *out);
  out->stranger = slot->stranger;
  out->confirmed = slot->confirmed;
  out->floor = slot->floor;
  if (!active || !m->connected || !slot->copy_id || !slot->copy_id[0] || !m->copy_id ||
      strcmp(m->copy_id, slot->copy_id) != 0)
    return; /* rule 5, rule 4: nothing here vouches for this slot's copy */
  if (slot->stranger) {
    if (m->held < m->h0) return;
    out->stranger = false;
    snprintf(out->why, sizeof out->why,
             "stranger copy %.32s trusted: measured holding %" PRId64 " >= h0 %" PRId64 " (the leader's log end when it first saw it)",
             slot->copy_id, m->held, m->h0);
  } else if (m->held < slot->floor) {
    out->stranger = true;
    out->changed = true;
    snprintf(out->why, sizeof out->why,
             "copy %.32s measured holding %" PRId64 " below its floor %" PRId64
             " under unchanged ids (a lost write, a rolled-back or hand-restored directory): a stranger from now on",
             slot->copy_id, m->held, slot->floor);
    return;
  }
  out->confirmed = m->held;
  if (m->held >= report_hwm) {
    out->caught_up = true;
    if (report_hwm > out->floor) out->floor = report_hwm;
  }
  assert(out->floor >= slot->floor); /* a floor is never lowered */
  out->changed = out->stranger != slot->stranger || out->confirmed != slot->confirmed || out->floor != slot->floor;
}

static void fence_judge_slot(const felix_fence_slot *s, char *why, size_t cap) {
  why[0] = '\0';
  if (!s->named_copy_id || !s->named_copy_id[0])
    snprintf(why, cap, "not counted: the assignment names no trusted copy (never measured, or a stranger)");
  else if (!s->answered)
    snprintf(why, cap, "no promise yet");
  else if (!s->answer_copy_id || strcmp(s->answer_copy_id, s->named_copy_id) != 0)
    snprintf(why, cap, "not counted: answered as copy %.32s, the assignment names %.32s",
             s->answer_copy_id ? s->answer_copy_id : "(none)", s->named_copy_id);
  else if (s->rank.log_end < s->floor)
    snprintf(why, cap, "not counted: holds %" PRId64 " below its floor %" PRId64, s->rank.log_end, s->floor);
}

static bool better_source(const felix_fence_slot *a, const felix_fence_slot *b) {
  int c = felix_rank_cmp(a->rank, b->rank);
  return c > 0 || (c == 0 && a->self && !b->self);
}

void felix_fence_count(const felix_fence_slot *slots, size_t n, int64_t max_hwm, felix_fence_verdict *out) {
  memset(out, 0, sizeof *out);
  out->adopt = -1;
  out->majority = (int)(n / 2 + 1);
  int64_t longest = 0;
  size_t used = 0;
  for (size_t i = 0; i < n && i < FELIX_MAX_REPLICAS; i++) {
    fence_judge_slot(&slots[i], out->why[i], sizeof out->why[i]);
    if (slots[i].answered && slots[i].rank.log_end > longest) longest = slots[i].rank.log_end;
    if (!out->why[i][0]) {
      /* counted: it answered over the named copy id and reaches its floor */
      assert(slots[i].answered && slots[i].named_copy_id && slots[i].answer_copy_id &&
             strcmp(slots[i].answer_copy_id, slots[i].named_copy_id) == 0 && slots[i].rank.log_end >= slots[i].floor);
      out->counted++;
      if (out->adopt < 0 || better_source(&slots[i], &slots[out->adopt])) out->adopt = (int)i;
      continue;
    }
    int w = snprintf(out->detail + used, sizeof out->detail - used, "%s%s: %s", used ? "; " : "",
                     slots[i].broker ? slots[i].broker : "?", out->why[i]);
    if (w > 0 && (size_t)w < sizeof out->detail - used) used += (size_t)w;
  }
  out->complete = out->counted >= out->majority;
  if (!out->complete) {
    out->adopt = -1;
    out->at_risk = max_hwm > longest ? max_hwm - longest : 0;
  }
  assert(out->complete ? out->adopt >= 0 && out->adopt < (int)n : out->adopt == -1);
  assert(out->at_risk >= 0);
}

static felix_promise_verdict promise_judge(const felix_ballot *ballot, const felix_promise_ask *ask,
                                           const char *my_cp_instance) {
  if (ask->cp_instance && ask->cp_instance[0] && strcmp(ask->cp_instance, my_cp_instance ? my_cp_instance : ""))
    return FELIX_PROMISE_OLD_CP;
  if (ballot->has_leader && ballot->generation == ask->generation && !strcmp(ballot->leader, ask->leader) &&
      !strcmp(ballot->leader_copy_id, ask->leader_copy_id) && !strcmp(ballot->leader_incarnation, ask->leader_incarnation))
    return FELIX_PROMISE_HELD;
  return ask->generation > ballot->generation ? FELIX_PROMISE_TAKE : FELIX_PROMISE_LOWER;
}

felix_promise_verdict felix_promise_judge(const felix_ballot *ballot, const felix_promise_ask *ask,
                                          const char *my_cp_instance) {
  felix_promise_verdict v = promise_judge(ballot, ask, my_cp_instance);
  /* A promised generation never goes down: only a higher one is taken, and a
   * promise is "held" only at the very generation the ballot records. */
  assert(v != FELIX_PROMISE_TAKE || ask->generation > ballot->generation);
  assert(v != FELIX_PROMISE_HELD || (ballot->has_leader && ask->generation == ballot->generation));
  return v;
}

bool felix_may_fence(uint64_t generation, uint64_t led_generation) {
  return led_generation == 0 || generation > led_generation;
}
