/* test_placement.c — the pure decisions of felix/placement.h and the lease
 * clock of felix/lease.h: new-shard placement, first leader, the RF=1
 * failover eligibility rules, report judging, the paused-clock rule. */
#include "testutil.h"

#include "felix/lease.h"
#include "felix/placement.h"

/* ---- placement of new shards ---- */

static void place_picks_distinct_alive_brokers(void **s) {
  (void)s;
  felix_place_broker b[] = {{"b1", true, 0, 0}, {"b2", false, 0, 0}, {"b3", true, 0, 0}, {"b4", true, 0, 0}};
  size_t out[3];
  assert_int_equal(felix_place_shard(b, 4, 3, out, NULL), FELIX_OK);
  for (int i = 0; i < 3; i++) {
    assert_true(b[out[i]].alive);
    for (int j = 0; j < i; j++) assert_int_not_equal(out[i], out[j]);
  }
  assert_int_equal(b[1].load, 0); /* the dead one got nothing */
}

static void place_spreads_by_load_then_id(void **s) {
  (void)s;
  felix_place_broker b[] = {{"b3", true, 2, 0}, {"b1", true, 1, 0}, {"b2", true, 1, 0}};
  size_t out[1];
  assert_int_equal(felix_place_shard(b, 3, 1, out, NULL), FELIX_OK);
  assert_string_equal(b[out[0]].id, "b1"); /* least loaded, tie broken by id */
  /* Placing more shards one after another evens the load out. */
  for (int k = 0; k < 5; k++) assert_int_equal(felix_place_shard(b, 3, 1, out, NULL), FELIX_OK);
  assert_int_equal(b[0].load + b[1].load + b[2].load, 10);
  for (int i = 0; i < 3; i++) assert_true(b[i].load >= 3 && b[i].load <= 4);
}

static void place_refuses_when_too_few_alive(void **s) {
  (void)s;
  felix_place_broker b[] = {{"b1", true, 0, 0}, {"b2", true, 0, 0}, {"b3", false, 0, 0}};
  size_t out[3];
  felix_err err;
  assert_int_equal(felix_place_shard(b, 3, 3, out, &err), FELIX_E_REFUSED);
  assert_string_equal(err.msg, "need 3 live brokers for 3 replicas, 2 are alive (b1, b2)");
  assert_int_equal(b[0].load, 0);
  felix_place_broker none[] = {{"b1", false, 0, 0}};
  assert_int_equal(felix_place_shard(none, 1, 1, out, &err), FELIX_E_REFUSED);
  assert_string_equal(err.msg, "need 1 live broker for 1 replica, 0 are alive");
}

static void first_leader_has_fewest_leaderships(void **s) {
  (void)s;
  felix_place_broker b[] = {{"b1", true, 0, 3}, {"b2", true, 0, 1}, {"b3", true, 0, 1}};
  size_t c[] = {0, 2, 1};
  assert_int_equal(felix_pick_first_leader(b, c, 3), 1); /* b2: 1 leadership, id before b3 */
}

/* ---- RF=1 failover eligibility ---- */

static felix_copy_view good_copy(void) {
  return (felix_copy_view){.broker = "b1", .alive = true, .slot_copy_id = "c1", .has_inventory = true,
                           .inv_copy_id = "c1", .log_end = 12, .last_generation = 3, .point_generation = 3};
}

static int decide(felix_copy_view v, felix_failover_verdict *out) {
  return felix_decide_failover(&v, 1, 12, 3, out);
}

static void failover_eligible_copy_is_chosen(void **s) {
  (void)s;
  felix_failover_verdict v;
  assert_int_equal(decide(good_copy(), &v), 0);
  assert_string_equal(v.reason[0], "");
  felix_copy_view longer = good_copy();
  longer.log_end = 20; /* holds more than the max hwm, same generation */
  assert_int_equal(decide(longer, &v), 0);
  assert_int_equal(felix_next_generation(4, 7), 8);
  assert_int_equal(felix_next_generation(4, 0), 5);
}

static void failover_excludes_lapsed_lease(void **s) {
  (void)s;
  felix_failover_verdict v;
  felix_copy_view c = good_copy();
  c.alive = false;
  assert_int_equal(decide(c, &v), -1);
  assert_string_equal(v.reason[0], "lease lapsed");
  assert_string_equal(v.detail, "b1: lease lapsed");
}

/* Review 5, item 5: a copy its broker refused (a failed identity write) is
 * out even when a trusted measurement says it is caught up. */
static void failover_excludes_refused_copy(void **s) {
  (void)s;
  felix_failover_verdict v;
  felix_copy_view c = good_copy();
  c.measured = true;
  c.confirmed = 12;
  c.has_inventory = false; /* cp_inventory_find skips a refused entry */
  assert_int_equal(decide(c, &v), 0);
  c.refused = true;
  assert_int_equal(decide(c, &v), -1);
  assert_non_null(strstr(v.reason[0], "refused this copy"));
}

static void failover_excludes_changed_copy_id(void **s) {
  (void)s;
  felix_failover_verdict v;
  felix_copy_view c = good_copy();
  c.slot_copy_id = ""; /* the slot forgot it: storage id rotated */
  assert_int_equal(decide(c, &v), -1);
  assert_string_equal(v.reason[0], "a stranger: copy id changed (storage id rotated or directory made anew), not measured by an active leader since");
  c = good_copy();
  c.stranger = true;
  assert_int_equal(decide(c, &v), -1);
  assert_string_equal(v.reason[0], "a stranger: copy id changed (storage id rotated or directory made anew), not measured by an active leader since");
  c = good_copy();
  c.inv_copy_id = "c2";
  assert_int_equal(decide(c, &v), -1);
  assert_non_null(strstr(v.reason[0], "copy id changed"));
}

static void failover_excludes_short_copy(void **s) {
  (void)s;
  felix_failover_verdict v;
  felix_copy_view c = good_copy();
  c.log_end = 10;
  assert_int_equal(decide(c, &v), -1);
  assert_string_equal(v.reason[0], "holds 10 < max hwm 12");
}

static void failover_excludes_other_generation(void **s) {
  (void)s;
  felix_failover_verdict v;
  felix_copy_view c = good_copy();
  c.point_generation = 2; /* holds 12 records, but not the history the leader reported */
  assert_int_equal(decide(c, &v), -1);
  assert_non_null(strstr(v.reason[0], "record 11 at generation 2, not 3"));
  /* its last record is of a newer generation (a restarted leader fenced again and
   * died before reporting), yet record 11 is the acknowledged one: it matches */
  c = good_copy();
  c.log_end = 13;
  c.last_generation = 4;
  assert_int_equal(decide(c, &v), 0);
  c = good_copy();
  c.has_inventory = false;
  assert_int_equal(decide(c, &v), -1);
  assert_non_null(strstr(v.reason[0], "no inventory"));
  /* At max hwm 0 every copy matches: it holds the zero records acknowledged. */
  c = good_copy();
  c.log_end = 1;
  c.last_generation = 1;
  c.point_generation = 0;
  assert_int_equal(felix_decide_failover(&c, 1, 0, 0, &v), 0);
}

static void failover_picks_highest_rank(void **s) {
  (void)s;
  felix_copy_view c[3] = {good_copy(), good_copy(), good_copy()};
  c[0].broker = "b1";
  c[1].broker = "b2";
  c[1].log_end = 14;
  c[2].broker = "b3";
  c[2].alive = false;
  felix_failover_verdict v;
  assert_int_equal(felix_decide_failover(c, 3, 12, 3, &v), 1);
  assert_string_equal(v.detail, "b3: lease lapsed");
}

/* ---- report judging ---- */

static const felix_pin pin5 = {.generation = 5, .broker = "b1", .copy_id = "c1", .incarnation = "i.7"};

static felix_shard_report rep(int64_t hwm) {
  return (felix_shard_report){.broker = "b1", .copy_id = "c1", .incarnation = "i.7", .generation = 5, .hwm = hwm,
                              .generation_start = 12, .last_generation = 5, .log_end = 20};
}

static void report_hwm_generation_is_the_point_to_match(void **s) {
  (void)s;
  felix_report_verdict v;
  felix_shard_report r = rep(13);
  felix_judge_report(&pin5, 12, 4, &r, &v);
  assert_int_equal(v.max_hwm_generation, 5); /* no hwm_generation sent: the last record's */
  r.has_hwm_generation = true;
  r.hwm_generation = 4; /* the leader's record 12 is still of generation 4 */
  felix_judge_report(&pin5, 12, 4, &r, &v);
  assert_true(v.accepted);
  assert_int_equal(v.max_hwm_generation, 4);
}

static void report_only_from_pinned_leader(void **s) {
  (void)s;
  felix_report_verdict v;
  felix_shard_report r = rep(13);
  felix_judge_report(&pin5, 12, 4, &r, &v);
  assert_true(v.accepted);
  const char *fields[] = {"broker", "copy", "incarnation", "generation"};
  for (int k = 0; k < 4; k++) {
    r = rep(13);
    if (k == 0) r.broker = "b2";
    if (k == 1) r.copy_id = "c9";
    if (k == 2) r.incarnation = "i.6";
    if (k == 3) r.generation = 4;
    felix_judge_report(&pin5, 12, 4, &r, &v);
    if (v.accepted) fail_msg("a report with another %s was accepted", fields[k]);
    assert_string_equal(v.reason, "not the pinned leader of generation 5");
  }
  felix_pin none = {0};
  r = rep(13);
  felix_judge_report(&none, 0, 0, &r, &v);
  assert_false(v.accepted);
}

static void report_active_only_past_generation_start(void **s) {
  (void)s;
  felix_report_verdict v;
  felix_shard_report r = rep(12);
  felix_judge_report(&pin5, 12, 4, &r, &v);
  assert_true(v.accepted);
  assert_false(v.active); /* hwm at the generation-start record, not past it */
  r = rep(13);
  felix_judge_report(&pin5, 12, 4, &r, &v);
  assert_true(v.active);
  assert_int_equal(v.max_hwm, 13);
  assert_int_equal(v.max_hwm_generation, 5);
}

static void report_never_lowers_max_hwm(void **s) {
  (void)s;
  felix_report_verdict v;
  felix_shard_report r = rep(10);
  felix_judge_report(&pin5, 12, 4, &r, &v);
  assert_false(v.accepted);
  assert_int_equal(v.max_hwm, 12);
  assert_int_equal(v.max_hwm_generation, 4);
  assert_non_null(strstr(v.reason, "below the shard's max hwm 12"));
}

/* Review 5, item 3: a leader whose HWM is beyond its own log (one it learned
 * as a follower before an abandon put other records at those offsets) must
 * not raise the maximum HWM: nothing is committed that the leader lacks. */
static void report_hwm_beyond_own_log_is_refused(void **s) {
  (void)s;
  felix_report_verdict v;
  felix_shard_report r = rep(100);
  r.log_end = 14;
  felix_judge_report(&pin5, 12, 4, &r, &v);
  assert_false(v.accepted);
  assert_int_equal(v.max_hwm, 12);
  assert_non_null(strstr(v.reason, "beyond the leader's own log end 14"));
  r.hwm = 14; /* at its log end: fine */
  felix_judge_report(&pin5, 12, 4, &r, &v);
  assert_true(v.accepted);
  assert_int_equal(v.max_hwm, 14);
}

static void report_seq_must_grow(void **s) {
  (void)s;
  assert_true(felix_report_seq_fresh(false, 0, 0));
  assert_true(felix_report_seq_fresh(true, 41, 42));
  assert_false(felix_report_seq_fresh(true, 42, 42));
  assert_false(felix_report_seq_fresh(true, 42, 7));
}

/* ---- the lease clock ---- */

static void lease_expires_after_lease_ms_of_running(void **s) {
  (void)s;
  felix_lease_clock c;
  felix_lease_clock_init(&c, 1000, 200);
  uint64_t renewed = c.now_ms;
  for (uint64_t t = 1100; t <= 5900; t += 100) felix_lease_clock_advance(&c, t);
  assert_int_equal(c.now_ms, 4900);
  assert_true(felix_lease_alive(renewed, c.now_ms, 5000));
  felix_lease_clock_advance(&c, 6000);
  assert_false(felix_lease_alive(renewed, c.now_ms, 5000)); /* exactly lease_ms old */
  assert_int_equal(felix_lease_age(renewed, c.now_ms), 5000);
}

static void lease_clock_stands_still_while_paused(void **s) {
  (void)s;
  felix_lease_clock c;
  felix_lease_clock_init(&c, 0, 200);
  felix_lease_clock_advance(&c, 100);
  /* A 60 s SIGSTOP (or a commit that blocked that long): one capped step. */
  felix_lease_clock_advance(&c, 60100);
  assert_int_equal(c.now_ms, 300);
  assert_true(felix_lease_alive(0, c.now_ms, 5000));
  /* A real clock going backwards adds nothing. */
  felix_lease_clock_advance(&c, 50000);
  assert_int_equal(c.now_ms, 300);
}

/* ---- placement abandon (§4.9) ---- */

static void abandon_keeps_most_of_the_committed_history(void **s) {
  (void)s;
  /* max HWM 32 at generation 2. b1 holds (1, 41): an old leader's longer
   * tail of generation 1, proven only to 11; b2 holds (2, 20) on the
   * history; b3 is a fresh stranger. */
  felix_abandon_copy c[] = {
      {.broker = "b1", .copy_id = "c1", .live = true, .log_end = 41, .last_generation = 1, .leaves_at = -1,
       .generation_before = 1, .proven = 11},
      {.broker = "b2", .copy_id = "c2", .live = true, .log_end = 20, .last_generation = 2, .leaves_at = -1,
       .generation_before = 2, .proven = 0},
      {.broker = "b3", .copy_id = "c3", .live = true, .log_end = 0, .leaves_at = -1},
  };
  felix_abandon_verdict v;
  assert_int_equal(felix_choose_abandon(c, 3, 32, 2, "ctx", &v), 1);
  assert_int_equal(v.kept[0], 11);
  assert_int_equal(v.kept[1], 20);
  assert_int_equal(v.at_risk, 12);
  /* A copy that went on in a newer generation keeps only up to where it left. */
  c[1].log_end = 40, c[1].last_generation = 3, c[1].leaves_at = 25;
  assert_int_equal(felix_choose_abandon(c, 3, 32, 2, "ctx", &v), 1);
  assert_int_equal(v.kept[1], 25);
  assert_int_equal(v.at_risk, 7);
  /* Down copies are never chosen; the digest moves with the context. */
  char d1[17];
  snprintf(d1, sizeof d1, "%s", v.digest);
  c[1].live = false;
  assert_int_equal(felix_choose_abandon(c, 3, 32, 2, "ctx", &v), 0);
  assert_string_not_equal(v.digest, d1);
  c[1].live = true;
  felix_choose_abandon(c, 3, 32, 2, "other", &v);
  assert_string_not_equal(v.digest, d1);
  felix_choose_abandon(c, 3, 32, 2, "ctx", &v);
  assert_string_equal(v.digest, d1);
  felix_abandon_copy none[] = {{.broker = "b1", .live = false}};
  assert_int_equal(felix_choose_abandon(none, 1, 5, 1, "", &v), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(place_picks_distinct_alive_brokers),
      cmocka_unit_test(place_spreads_by_load_then_id),
      cmocka_unit_test(place_refuses_when_too_few_alive),
      cmocka_unit_test(first_leader_has_fewest_leaderships),
      cmocka_unit_test(failover_eligible_copy_is_chosen),
      cmocka_unit_test(failover_excludes_lapsed_lease),
      cmocka_unit_test(failover_excludes_refused_copy),
      cmocka_unit_test(failover_excludes_changed_copy_id),
      cmocka_unit_test(failover_excludes_short_copy),
      cmocka_unit_test(failover_excludes_other_generation),
      cmocka_unit_test(failover_picks_highest_rank),
      cmocka_unit_test(report_hwm_generation_is_the_point_to_match),
      cmocka_unit_test(report_only_from_pinned_leader),
      cmocka_unit_test(report_active_only_past_generation_start),
      cmocka_unit_test(report_never_lowers_max_hwm),
      cmocka_unit_test(report_hwm_beyond_own_log_is_refused),
      cmocka_unit_test(report_seq_must_grow),
      cmocka_unit_test(abandon_keeps_most_of_the_committed_history),
      cmocka_unit_test(lease_expires_after_lease_ms_of_running),
      cmocka_unit_test(lease_clock_stands_still_while_paused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
