/* test_replication.c — the pure rules of felix/replication.h: rank and
 * "matches", the divergence point, the HWM by the Raft rule, the
 * acknowledgement policies, trusting a measurement, the fence count. */
#include "testutil.h"

#include "felix/lease.h"
#include "felix/replication.h"

static felix_generations gens(felix_generation *items, size_t n) {
  return (felix_generations){.items = items, .count = n};
}

/* ---- rank, generation_at, matches ---- */

static void rank_orders_by_generation_then_log_end(void **s) {
  (void)s;
  assert_true(felix_rank_cmp((felix_rank){2, 1}, (felix_rank){1, 100}) > 0); /* a longer old tail loses */
  assert_true(felix_rank_cmp((felix_rank){2, 5}, (felix_rank){2, 6}) < 0);
  assert_int_equal(felix_rank_cmp((felix_rank){3, 4}, (felix_rank){3, 4}), 0);
}

static void generation_at_uses_last_line_at_or_below(void **s) {
  (void)s;
  felix_generation it[] = {{1, 0}, {2, 5}, {4, 5}, {5, 9}};
  felix_generations g = gens(it, 4);
  assert_int_equal(felix_generation_at(&g, 0), 1);
  assert_int_equal(felix_generation_at(&g, 4), 1);
  assert_int_equal(felix_generation_at(&g, 5), 4); /* generation 2 wrote nothing */
  assert_int_equal(felix_generation_at(&g, 100), 5);
  felix_generations none = gens(NULL, 0);
  assert_int_equal(felix_generation_at(&none, 0), 0);
}

static void matches_needs_count_and_generation_at_the_point(void **s) {
  (void)s;
  felix_generation it[] = {{1, 0}, {3, 4}};
  felix_generations g = gens(it, 2);
  assert_true(felix_copy_matches(&g, 0, 0, 9));
  assert_true(felix_copy_matches(&g, 6, 4, 1));
  assert_false(felix_copy_matches(&g, 6, 5, 1)); /* record 4 is of generation 3 */
  assert_true(felix_copy_matches(&g, 6, 5, 3));
  assert_false(felix_copy_matches(&g, 4, 5, 3)); /* holds too few */
}

/* ---- divergence ---- */

static void divergence_keeps_a_prefix_of_the_leader(void **s) {
  (void)s;
  felix_generation l[] = {{1, 0}, {3, 5}};
  felix_generation f[] = {{1, 0}, {2, 5}};
  felix_generations L = gens(l, 2), F = gens(f, 2);
  /* The follower's generation-2 tail at 5.. was never the leader's. */
  assert_int_equal(felix_divergence_point(&L, 9, &F, 8), 5);
  /* Same history, the follower behind: nothing to cut. */
  felix_generations F2 = gens(l, 2);
  assert_int_equal(felix_divergence_point(&L, 9, &F2, 7), 7);
  /* Same history, the follower ahead (an old leader's longer tail of the
   * same generation the leader also has): cut at the leader's end. */
  assert_int_equal(felix_divergence_point(&L, 6, &F2, 9), 6);
}

static void divergence_inside_a_generation_line(void **s) {
  (void)s;
  /* The leader started generation 4 at 3; the follower holds generation 1
   * records up to 6: records 3..5 were never committed. */
  felix_generation l[] = {{1, 0}, {4, 3}};
  felix_generation f[] = {{1, 0}};
  felix_generations L = gens(l, 2), F = gens(f, 1);
  assert_int_equal(felix_divergence_point(&L, 10, &F, 6), 3);
  /* A follower that shares nothing. */
  felix_generation f2[] = {{2, 0}};
  felix_generations F2 = gens(f2, 1);
  assert_int_equal(felix_divergence_point(&L, 10, &F2, 6), 0);
  assert_int_equal(felix_divergence_point(&L, 0, &F2, 6), 0);
}

/* ---- HWM (rule 3) ---- */

static void hwm_needs_a_majority_with_the_leader(void **s) {
  (void)s;
  felix_follower_hold f[] = {{true, true, 7}, {true, true, 3}};
  felix_hwm_input in = {.replicas = 3, .leader_counts = true, .leader_held = 9, .generation_start = 0,
                        .followers = f, .nfollowers = 2};
  assert_int_equal(felix_hwm_compute(&in), 7);
  /* The leader must hold what it counts (rule 2). */
  in.leader_held = 5;
  assert_int_equal(felix_hwm_compute(&in), 5);
  /* Two followers without the leader are not a majority for it. */
  in.leader_counts = false;
  in.hwm = 2;
  assert_int_equal(felix_hwm_compute(&in), 2);
}

static void hwm_only_by_records_of_its_own_generation(void **s) {
  (void)s;
  /* The generation-start record is at 6: records below it are older
   * generations' and are committed only once a record of this one is. */
  felix_follower_hold f[] = {{true, true, 6}, {true, true, 0}};
  felix_hwm_input in = {.replicas = 3, .leader_counts = true, .leader_held = 7, .generation_start = 6,
                        .followers = f, .nfollowers = 2};
  assert_int_equal(felix_hwm_compute(&in), 0);
  f[0].held = 7;
  assert_int_equal(felix_hwm_compute(&in), 7);
}

static void hwm_ignores_uncounted_followers_and_never_lowers(void **s) {
  (void)s;
  felix_follower_hold f[] = {{false, true, 9}, {true, false, 2}};
  felix_hwm_input in = {.replicas = 3, .leader_counts = true, .leader_held = 9, .generation_start = 0, .hwm = 4,
                        .followers = f, .nfollowers = 2};
  assert_int_equal(felix_hwm_compute(&in), 4);
  in.replicas = 1;
  in.nfollowers = 0;
  assert_int_equal(felix_hwm_compute(&in), 9);
  felix_hwm_input five = {.replicas = 5, .leader_counts = true, .leader_held = 10, .generation_start = 0,
                          .followers = (felix_follower_hold[]){{true, true, 8}, {true, true, 6}, {true, true, 1}, {false, true, 10}},
                          .nfollowers = 4};
  assert_int_equal(felix_hwm_compute(&five), 6);
}

/* ---- acknowledgement policies ---- */

static void ack_policies(void **s) {
  (void)s;
  felix_follower_hold f[] = {{true, true, 10}, {true, true, 4}};
  felix_ack_input in = {.policy = FELIX_ACK_QUORUM, .end = 10, .hwm = 10, .confirmed = 10, .leader_counts = true,
                        .leader_held = 10, .trusted_replicas = 3, .followers = f, .nfollowers = 2};
  assert_true(felix_ack_ready(&in));
  in.hwm = 9;
  assert_false(felix_ack_ready(&in));
  in.hwm = 10;
  in.policy = FELIX_ACK_ALL;
  assert_false(felix_ack_ready(&in)); /* the second follower holds only 4 */
  f[1].held = 10;
  assert_true(felix_ack_ready(&in));
  f[1].trusted = false; /* a stranger holding it does not stand in for a trusted copy */
  assert_false(felix_ack_ready(&in));
  in.trusted_replicas = 2;
  f[1].held = 0; /* a stranger's slot is not waited for */
  assert_true(felix_ack_ready(&in));
  in.policy = FELIX_ACK_LEADER;
  in.hwm = 0;
  assert_false(felix_ack_ready(&in)); /* no lease confirmed by a heartbeat */
  in.lease_valid = true;
  assert_true(felix_ack_ready(&in));
  in.leader_held = 9;
  assert_false(felix_ack_ready(&in));
  in.leader_held = 10;
  in.lease_valid = false;
  in.hwm = 10;
  assert_true(felix_ack_ready(&in)); /* the lease lapsed, but it is committed */
  in.leader_counts = false; /* promised a newer generation */
  assert_false(felix_ack_ready(&in));
  assert_int_equal(felix_ack_policy_parse("all"), FELIX_ACK_ALL);
  assert_int_equal(felix_ack_policy_parse("most"), 0);
  assert_string_equal(felix_ack_policy_name(FELIX_ACK_LEADER), "leader");
}

/* Review 5, item 3: an HWM the leader did not earn in this generation (one
 * it learned as a follower, before an abandon replaced those records)
 * acknowledges nothing that a majority has not held in this generation. */
static void ack_needs_a_majority_whatever_the_hwm(void **s) {
  (void)s;
  felix_follower_hold f[] = {{true, true, 9}, {false, true, 0}};
  for (int policy = FELIX_ACK_QUORUM; policy <= FELIX_ACK_ALL; policy++) {
    felix_ack_input in = {.policy = policy, .end = 9, .hwm = 100, .confirmed = 8, .leader_counts = true,
                          .leader_held = 9, .trusted_replicas = 1, .followers = f, .nfollowers = 2};
    if (felix_ack_ready(&in)) fail_msg("policy %s acknowledged what no majority confirmed", felix_ack_policy_name(policy));
    in.confirmed = 9; /* a majority held it once in this generation: committed, even if that follower is gone now */
    f[0].counted = false;
    assert_true(felix_ack_ready(&in));
    f[0].counted = true;
  }
}

/* §4.2: the per-shard lease counts from the heartbeat's send time, minus a
 * margin, so it ends before the control plane (which renewed the broker's
 * lease on receipt, later) can declare the broker lost. */
static void shard_lease_ends_before_the_control_plane_lease(void **s) {
  (void)s;
  assert_int_equal(felix_shard_lease_margin(5000), 1000);
  assert_int_equal(felix_shard_lease_margin(1000), 300);
  assert_int_equal(felix_shard_lease_until(10000, 5000), 14000);
  assert_true(felix_shard_lease_until(10000, 5000) < 10000 + 5000);
  assert_int_equal(felix_shard_lease_until(10000, 300), 0); /* no shorter than its margin */
  uint64_t a = felix_boottime_ms(), m = felix_monotonic_ms();
  assert_true(a > 0 && m > 0);
}

/* ---- measurements (§4.5, rule 5) ---- */

static void measurement_only_from_active_leader_of_same_copy(void **s) {
  (void)s;
  felix_slot_trust slot = {.copy_id = "aa", .confirmed = 3, .floor = 3};
  felix_follower_measure m = {.copy_id = "aa", .connected = true, .held = 8};
  felix_measure_verdict v;
  felix_judge_measurement(&slot, &m, false, 8, &v);
  assert_false(v.changed);
  m.copy_id = "bb";
  felix_judge_measurement(&slot, &m, true, 8, &v);
  assert_false(v.changed);
  m.copy_id = "aa";
  m.connected = false;
  felix_judge_measurement(&slot, &m, true, 8, &v);
  assert_false(v.changed);
  m.connected = true;
  felix_judge_measurement(&slot, &m, true, 8, &v);
  assert_true(v.changed && v.caught_up);
  assert_int_equal(v.confirmed, 8);
  assert_int_equal(v.floor, 8);
  felix_judge_measurement(&slot, &m, true, 9, &v); /* behind the HWM: measured, not caught up */
  assert_false(v.caught_up);
  assert_int_equal(v.floor, 3);
}

static void stranger_trusted_at_h0(void **s) {
  (void)s;
  felix_slot_trust slot = {.copy_id = "aa", .stranger = true};
  felix_follower_measure m = {.copy_id = "aa", .connected = true, .held = 4, .h0 = 5};
  felix_measure_verdict v;
  felix_judge_measurement(&slot, &m, true, 4, &v);
  assert_true(v.stranger); /* at the HWM but below h0: acknowledged records may be missing */
  m.held = 5;
  felix_judge_measurement(&slot, &m, true, 7, &v);
  assert_false(v.stranger);
  assert_false(v.caught_up);
  assert_non_null(strstr(v.why, "h0 5"));
}

static void below_floor_becomes_stranger(void **s) {
  (void)s;
  felix_slot_trust slot = {.copy_id = "aa", .confirmed = 9, .floor = 9};
  felix_follower_measure m = {.copy_id = "aa", .connected = true, .held = 6};
  felix_measure_verdict v;
  felix_judge_measurement(&slot, &m, true, 9, &v);
  assert_true(v.stranger && v.changed);
  assert_non_null(strstr(v.why, "below its floor 9"));
}

/* ---- the fence (§4.7) ---- */

static void fence_counts_only_named_copies_at_their_floor(void **s) {
  (void)s;
  felix_fence_slot sl[] = {
      {.broker = "b1", .named_copy_id = "c1", .floor = 5, .answered = true, .answer_copy_id = "c1", .rank = {1, 6}, .self = true},
      {.broker = "b2", .named_copy_id = "c2", .floor = 5, .answered = true, .answer_copy_id = "n2", .rank = {1, 9}},
      {.broker = "b3", .named_copy_id = "c3", .floor = 5, .answered = true, .answer_copy_id = "c3", .rank = {1, 4}},
  };
  felix_fence_verdict v;
  felix_fence_count(sl, 3, 6, &v);
  assert_false(v.complete);
  assert_int_equal(v.counted, 1);
  assert_int_equal(v.adopt, -1);
  assert_int_equal(v.at_risk, 0); /* incomplete, but b2 (uncounted) still holds 9: abandon would pick it */
  assert_non_null(strstr(v.why[1], "answered as copy n2"));
  assert_non_null(strstr(v.why[2], "below its floor 5"));
  sl[2].rank.log_end = 5;
  felix_fence_count(sl, 3, 6, &v);
  assert_true(v.complete);
  assert_int_equal(v.adopt, 0);
}

static void fence_adopts_highest_rank_not_longest(void **s) {
  (void)s;
  felix_fence_slot sl[] = {
      {.broker = "b1", .named_copy_id = "c1", .answered = true, .answer_copy_id = "c1", .rank = {2, 6}, .self = true},
      {.broker = "b2", .named_copy_id = "c2", .answered = true, .answer_copy_id = "c2", .rank = {1, 20}},
      {.broker = "b3", .named_copy_id = "c3", .answered = true, .answer_copy_id = "c3", .rank = {3, 7}},
  };
  felix_fence_verdict v;
  felix_fence_count(sl, 3, 6, &v);
  assert_true(v.complete);
  assert_int_equal(v.adopt, 2);
  sl[2].rank = (felix_rank){2, 6}; /* a tie: the leader-elect's own copy, nothing to fetch */
  felix_fence_count(sl, 3, 6, &v);
  assert_int_equal(v.adopt, 0);
}

static void fence_stranger_leader_elect_never_counts_itself(void **s) {
  (void)s;
  /* The whole rack lost power: every copy rotated, the assignment names none. */
  felix_fence_slot sl[] = {
      {.broker = "b1", .named_copy_id = NULL, .answered = true, .answer_copy_id = "n1", .rank = {1, 4}, .self = true},
      {.broker = "b2", .named_copy_id = "", .answered = true, .answer_copy_id = "n2", .rank = {1, 2}},
      {.broker = "b3", .named_copy_id = "c3", .answered = false},
  };
  felix_fence_verdict v;
  felix_fence_count(sl, 3, 7, &v);
  assert_false(v.complete);
  assert_int_equal(v.counted, 0);
  assert_int_equal(v.at_risk, 3); /* max hwm 7, the longest answer holds 4 */
  assert_non_null(strstr(v.detail, "b1: not counted: the assignment names no trusted copy"));
  assert_non_null(strstr(v.detail, "b3: no promise yet"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(rank_orders_by_generation_then_log_end),
      cmocka_unit_test(generation_at_uses_last_line_at_or_below),
      cmocka_unit_test(matches_needs_count_and_generation_at_the_point),
      cmocka_unit_test(divergence_keeps_a_prefix_of_the_leader),
      cmocka_unit_test(divergence_inside_a_generation_line),
      cmocka_unit_test(hwm_needs_a_majority_with_the_leader),
      cmocka_unit_test(hwm_only_by_records_of_its_own_generation),
      cmocka_unit_test(hwm_ignores_uncounted_followers_and_never_lowers),
      cmocka_unit_test(ack_policies),
      cmocka_unit_test(ack_needs_a_majority_whatever_the_hwm),
      cmocka_unit_test(shard_lease_ends_before_the_control_plane_lease),
      cmocka_unit_test(measurement_only_from_active_leader_of_same_copy),
      cmocka_unit_test(stranger_trusted_at_h0),
      cmocka_unit_test(below_floor_becomes_stranger),
      cmocka_unit_test(fence_counts_only_named_copies_at_their_floor),
      cmocka_unit_test(fence_adopts_highest_rank_not_longest),
      cmocka_unit_test(fence_stranger_leader_elect_never_counts_itself),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
