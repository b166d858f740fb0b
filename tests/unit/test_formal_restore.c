/* test_formal_restore.c — the model's Finding 6 (docs/formal/README.md,
 * configuration rollback-wiped-copy): the four twins of a restored
 * control-plane database, each replayed against the real engine (cp_*, on a
 * temp SQLite store restored from a copy of itself, under a new instance) or
 * the replica's pure promise rule (felix_promise_judge), asserting the code
 * refuses where the twin did not. A, B, C are b1, b2, b3 (brokers 0, 1, 2 of
 * the model); the backup is taken when generation 1 is Active on A. */
#include "cp_fixture3.h"

#include <cjson/cJSON.h>

#include "control-plane/abandon.h"
#include "control-plane/api.h"
#include "felix/replication.h"

/* Three brokers, "orders" (one shard, R = 3) with generation 1 Active on A
 * at HWM 1 and every copy measured at 1 — then the backup is taken. Later
 * (not in the backup) generation 2 went to B and C promised it; the restore
 * brings the backup back under instance INST2 and every broker's lease
 * renewed, but no inventory yet. */
static void restored(fx *f) {
  assert_int_equal(active_orders(f, 1), 0);
  cp_shard_row sh = shard0(f);
  for (int i = 0; i < 3; i++) assert_false(sh.slots[i].stranger);
  cp_state_close(&f->cp);
  copy_file(f->db, f->backup);
  fx_open(f, INST1); /* generation 2 on B happened here, and the store is lost */
  cp_state_close(&f->cp);
  copy_file(f->backup, f->db);
  fx_open(f, INST2);
}

/* B's disk is replaced: a new storage id and a new, empty copy, no ballot. */
static void b_wiped_registers(fx *f) {
  cp_inv_entry e = inv(f, NEWCOPY, 0, 0, "");
  assert_int_equal(do_register(f, 1, NEWSID, &e, 1), 200);
  assert_true(shard0(f).slots[1].stranger);
}

/* B's disk replaced while the shard is at generation 0 in the store. */
static void b_wiped_registers_at_generation_zero(fx *f) {
  cp_inv_entry e = inv(f, NEWCOPY, 0, 0, INST2);
  assert_int_equal(do_register(f, 1, NEWSID, &e, 1), 200);
}

/* Runs the lease clock through the start-up grace (no failover of a shard
 * the store held before it is over), every broker heartbeating each second. */
static void end_grace(fx *f) {
  for (uint64_t t = 0; !f->cp.grace_over && t < 60000; t += CP_TICK_MS) {
    f->t += CP_TICK_MS;
    cp_state_tick(&f->cp, f->t);
    if (t % 1000 == 0)
      for (int i = 0; i < 3; i++) {
        cp_outcome o;
        cp_heartbeat(&f->cp, ids[i], f->inc[i], NULL, 0, &o);
      }
  }
  assert_true(f->cp.grace_over);
}

/* Runs the lease clock for n leases. */
static void run_lease(fx *f, int n) {
  for (int k = 0; k < n * 50; k++) {
    f->t += CP_TICK_MS;
    cp_state_tick(&f->cp, f->t);
  }
}

/* twin-wait-counts-new-copy: after the rollback A's inventory and the wiped
 * B's end the wait, so C's promise of generation 2 is never seen. Real:
 * cp_shard_waiting counts only a copy the store names (not a stranger, not a
 * new copy) whose inventory was built for this instance; C's inventory then
 * ends the wait and shows generation 2, so the next generation is 3. Fails
 * if the wait counted any copy. */
static void twin_wait_counts_new_copy(void **state) {
  fx *f = *state;
  restored(f);
  cp_inv_entry a = inv(f, copies[0], 1, 1, INST2);
  heartbeat(f, 0, &a);
  b_wiped_registers(f);
  cp_inv_entry b = inv(f, NEWCOPY, 0, 0, INST2);
  heartbeat(f, 1, &b); /* built for this instance, but a new copy: no promise */
  cp_shard_row sh = shard0(f);
  assert_true(cp_shard_waiting(&f->cp, &sh));
  assert_int_equal(sh.generation, 1);
  cp_inv_entry c_old = inv(f, copies[2], 1, 2, INST1); /* C's inventory of before it heard INST2 */
  heartbeat(f, 2, &c_old);
  sh = shard0(f);
  assert_true(cp_shard_waiting(&f->cp, &sh));
  assert_int_equal(sh.seen_generation, 2); /* seen all the same */
  cp_inv_entry c = inv(f, copies[2], 1, 2, INST2);
  heartbeat(f, 2, &c);
  sh = shard0(f);
  assert_false(cp_shard_waiting(&f->cp, &sh));
  assert_int_equal(sh.generation, 1); /* the grace: a leader's per-shard lease may still run */
  end_grace(f);
  sh = shard0(f);
  assert_int_equal(sh.generation, 3); /* failed over above everything seen */
  assert_string_equal(sh.state, "Fencing");
}

/* twin-report-while-waiting: the restored database makes A — deposed in
 * reality — the Active pinned leader again; its report (h0 0) clears the
 * wiped B, whose empty copy then counts in A's next fence. Real: judge_one
 * refuses every report of a shard the control plane is unsure of (waiting,
 * or a higher generation seen): B stays a stranger. Fails without it: A's
 * report would be accepted and measure B's new copy at h0. */
static void twin_report_while_waiting(void **state) {
  fx *f = *state;
  restored(f);
  b_wiped_registers(f);
  cp_inv_entry a = inv(f, copies[0], 1, 1, INST2);
  heartbeat(f, 0, &a);
  char why[200];
  const char *now_copies[3] = {copies[0], NEWCOPY, copies[2]};
  assert_int_equal(report(f, 0, 2, 1, 1, now_copies, why), 0);
  assert_non_null(strstr(why, "waits for inventories"));
  assert_true(shard0(f).slots[1].stranger);
  /* C's inventory shows generation 2: the wait is over but a higher
   * generation is known, so the report is still refused until the failover. */
  cp_inv_entry c = inv(f, copies[2], 1, 2, INST2);
  cp_outcome o;
  cp_heartbeat(&f->cp, "b3", f->inc[2], &c, 1, &o);
  assert_int_equal(report(f, 0, 3, 1, 1, now_copies, why), 0);
  assert_non_null(strstr(why, "a copy promised a generation above"));
  end_grace(f);
  assert_int_equal(shard0(f).generation, 3);
  assert_int_equal(report(f, 0, 4, 1, 1, now_copies, why), 0);
  assert_true(shard0(f).slots[1].stranger);
}

/* twin-ballot-while-waiting: the wiped B registers while the restored
 * control plane waits; the reply hands it the restored generation 1 and pin
 * A, and A — deposed, never told — acknowledges X with A + B. Real: while
 * the control plane is unsure of the shard, an assignment carries no leader
 * (no ballot). Fails if assignment() ignored cp_shard_unsure. */
static void twin_ballot_while_waiting(void **state) {
  fx *f = *state;
  restored(f);
  b_wiped_registers(f);
  cJSON *a = assignment_for(f, INST2, 1);
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(a, "leader")));
  cJSON_Delete(a);
  /* A's and C's inventories for this instance end the wait (C shows nothing
   * above 1 here): the shard is sure again and its ballot is handed out. */
  cp_inv_entry x = inv(f, copies[0], 1, 1, INST2), z = inv(f, copies[2], 1, 1, INST2);
  heartbeat(f, 0, &x);
  heartbeat(f, 2, &z);
  cp_shard_row sh = shard0(f);
  assert_false(cp_shard_unsure(&f->cp, &sh));
  a = assignment_for(f, INST2, 1);
  assert_true(cJSON_IsObject(cJSON_GetObjectItem(a, "leader")));
  cJSON_Delete(a);
}

/* twin-promise-any-instance: B is fencing generation 2 when the database is
 * rolled back; A and C send their inventories (generation 1) and the wait
 * ends; only then C promises B's generation 2, which no inventory can show.
 * Real: felix_promise_judge refuses a fence whose assignment another
 * control-plane instance made, once the copy has heard from a new one (its
 * inventory says so); the same request from the instance it reports to is
 * taken, and a serving leader's re-connect (no instance) is not affected.
 * Fails without the instance check: the promise would be taken. */
static void twin_promise_any_instance(void **state) {
  (void)state;
  felix_ballot c = {.generation = 1, .has_leader = true};
  snprintf(c.leader, sizeof c.leader, "b1");
  snprintf(c.leader_copy_id, sizeof c.leader_copy_id, "%s", copies[0]);
  snprintf(c.leader_incarnation, sizeof c.leader_incarnation, INST1 ".1");
  felix_promise_ask fence = {.generation = 2, .leader = "b2", .leader_copy_id = copies[1],
                             .leader_incarnation = INST1 ".1", .cp_instance = INST1};
  assert_int_equal(felix_promise_judge(&c, &fence, INST2), FELIX_PROMISE_OLD_CP);
  assert_int_equal(felix_promise_judge(&c, &fence, INST1), FELIX_PROMISE_TAKE); /* not yet heard of INST2 */
  fence.cp_instance = INST2;
  assert_int_equal(felix_promise_judge(&c, &fence, INST2), FELIX_PROMISE_TAKE);
  felix_promise_ask serving = {.generation = 1, .leader = "b1", .leader_copy_id = copies[0],
                               .leader_incarnation = INST1 ".1", .cp_instance = ""};
  assert_int_equal(felix_promise_judge(&c, &serving, INST2), FELIX_PROMISE_HELD);
  felix_promise_ask lower = {.generation = 1, .leader = "b3", .leader_copy_id = copies[2],
                             .leader_incarnation = INST2 ".1", .cp_instance = INST2};
  assert_int_equal(felix_promise_judge(&c, &lower, INST2), FELIX_PROMISE_LOWER);
}

/* The wait itself: a majority of the slots, each under the copy id the store
 * named at the start and with an inventory built for this instance; a
 * stranger the store knew counts (its ballot holds every promise it made),
 * a new copy does not; once over it stays over; not bounded in time. */
static void wait_counts_store_named_copies(void **state) {
  fx *f = *state;
  restored(f);
  cp_shard_row sh = shard0(f);
  assert_true(cp_shard_waiting(&f->cp, &sh));
  heartbeat(f, 0, NULL); /* no inventory */
  assert_true(cp_shard_waiting(&f->cp, &sh));
  cp_inv_entry a = inv(f, copies[0], 1, 1, INST1); /* built before b1 heard from this instance */
  heartbeat(f, 0, &a);
  assert_true(cp_shard_waiting(&f->cp, &sh));
  a = inv(f, copies[0], 1, 1, INST2);
  heartbeat(f, 0, &a);
  assert_true(cp_shard_waiting(&f->cp, &sh)); /* 1 of 3 */
  char who[3][CP_ID_MAX];
  assert_int_equal(cp_shard_waiting_for(&f->cp, &sh, who), 2);
  assert_string_equal(who[0], "b2");
  cp_inv_entry b = inv(f, NEWCOPY, 0, 0, INST2); /* not the copy the store names */
  heartbeat(f, 1, &b);
  assert_true(cp_shard_waiting(&f->cp, &sh));
  cp_inv_entry c = inv(f, copies[2], 1, 1, INST2);
  heartbeat(f, 2, &c);
  sh = shard0(f);
  assert_false(cp_shard_waiting(&f->cp, &sh)); /* 2 of 3 */
  c = inv(f, NEWCOPY, 0, 0, INST2);
  heartbeat(f, 2, &c);
  assert_false(cp_shard_waiting(&f->cp, &sh)); /* over until the next start */
  /* A plain restart with C a stranger in the store: C's inventory counts. */
  sh.slots[2].stranger = true;
  felix_err err;
  assert_int_equal(cp_store_shard_put(f->cp.store, &sh, &err), FELIX_OK);
  cp_state_close(&f->cp);
  fx_open(f, "cccccccccccccccccccccccccccccccc");
  sh = shard0(f);
  assert_true(cp_shard_waiting(&f->cp, &sh));
  run_lease(f, 3);
  assert_true(cp_shard_waiting(&f->cp, &sh)); /* not bounded in time */
  a = inv(f, copies[0], 1, 1, "cccccccccccccccccccccccccccccccc");
  c = inv(f, copies[2], 1, 1, "cccccccccccccccccccccccccccccccc");
  do_register(f, 0, sids[0], &a, 1);
  do_register(f, 2, sids[2], &c, 1);
  sh = shard0(f);
  assert_false(cp_shard_waiting(&f->cp, &sh));
}

/* A shard the store held at generation 0 (its copies not all listed when the
 * backup was taken) waits for every slot, and a copy made during the wait is
 * not trusted as a new shard's: here B's disk was replaced after it took part
 * in generations 1 and 2. Found by the adversarial review: with generation-0
 * shards exempt from the wait, the wiped B's empty copy was measured at
 * (0, 0) and generation 2 issued again to A, whose fence counted A and B — a
 * second leader of generation 2, and W2 (acknowledged by B and C) lost. */
static void restored_generation_zero_waits_for_every_slot(void **state) {
  fx *f = *state;
  created_orders(f);
  cp_inv_entry e0 = inv(f, copies[0], 0, 0, INST1), e2 = inv(f, copies[2], 0, 0, INST1);
  heartbeat(f, 0, &e0);
  heartbeat(f, 2, &e2); /* B is down: generation 0, two copies listed */
  assert_int_equal(shard0(f).generation, 0);
  cp_state_close(&f->cp);
  copy_file(f->db, f->backup); /* the backup; then generations 1 (A) and 2 (B with C) happened */
  copy_file(f->backup, f->db);
  fx_open(f, INST2);
  cp_inv_entry a = inv(f, copies[0], 5, 1, INST2);
  heartbeat(f, 0, &a);
  b_wiped_registers_at_generation_zero(f);
  cp_shard_row sh = shard0(f);
  assert_true(cp_shard_waiting(&f->cp, &sh)); /* C has not answered */
  assert_int_equal(sh.generation, 0);
  assert_string_equal(sh.slots[1].copy_id, ""); /* nothing recorded while it waits */
  cp_inv_entry c = inv(f, copies[2], 7, 2, INST2);
  heartbeat(f, 2, &c);
  sh = shard0(f);
  assert_false(cp_shard_waiting(&f->cp, &sh));
  assert_int_equal(sh.seen_generation, 2);
  assert_int_equal(sh.generation, 0); /* not a new shard: no generation 1, and no failover in the grace */
  end_grace(f);
  sh = shard0(f);
  assert_int_equal(sh.generation, 3); /* a failover above everything seen, not a new shard's generation */
  assert_true(sh.slots[1].stranger);  /* B's new copy cannot be counted */
  assert_string_not_equal(sh.leader, "b2");
}

/* Found by the adversarial review: abandoning a shard that still waits
 * numbered the new generation from what it had seen, so with C (which
 * promised generation 2 to B) down it issued generation 2 again on A — two
 * histories under one generation. Now acting needs --above-generation while
 * it waits, and the new generation goes above it. */
static void abandon_while_waiting_needs_a_generation_floor(void **state) {
  fx *f = *state;
  restored(f);
  cp_inv_entry a = inv(f, copies[0], 1, 1, INST2);
  heartbeat(f, 0, &a);
  b_wiped_registers(f);
  cp_inv_entry b = inv(f, NEWCOPY, 0, 0, INST2);
  heartbeat(f, 1, &b);
  run_lease(f, 2); /* C never answers; the first lease is over */
  heartbeat(f, 0, &a);
  heartbeat(f, 1, &b);
  cp_abandon_req q = {.stream = "orders", .shard = 0, .dry_run = true};
  cp_abandon_result r;
  cp_outcome o;
  cp_abandon(&f->cp, &q, &r, &o);
  assert_int_equal(o.status, 200);
  assert_true(r.waiting);
  assert_int_equal(r.nwaiting_for, 2);
  char copy[200];
  snprintf(copy, sizeof copy, "%s:%s", r.copies[r.chosen].broker, r.copies[r.chosen].copy_id);
  cp_abandon_req act = {.stream = "orders", .shard = 0, .expect_generation = r.generation, .expect_copy = copy,
                        .expect_digest = r.digest};
  cp_abandon(&f->cp, &act, &r, &o);
  assert_int_equal(o.status, 409);
  assert_non_null(strstr(o.error, "still waits for inventories from 2 of its replicas"));
  assert_int_equal(shard0(f).generation, 1);
  act.above_generation = 2;
  cp_abandon(&f->cp, &act, &r, &o);
  assert_int_equal(o.status, 200);
  cp_shard_row sh = shard0(f);
  assert_int_equal(sh.generation, 3);
  assert_false(cp_shard_unsure(&f->cp, &sh)); /* the operator's decision ends the wait: the pin is handed out */
  /* C was not live: whatever it holds returns as a stranger, copied anew
   * (the review found a returning copy winning by a reused number). */
  assert_true(sh.slots[2].stranger);
  assert_int_equal(sh.slots[2].confirmed, 0);
}

/* Found by the adversarial review of leader acks: a start with a shorter
 * --lease-ms failed a shard over while a per-shard lease granted under the
 * longer one still ran. The grace is the longest lease the store ran with. */
static void grace_is_the_longest_lease_ever_used(void **state) {
  fx *f = *state;
  felix_err err;
  cp_state_close(&f->cp);
  assert_int_equal(cp_state_open(&f->cp, f->db, INST2, 30000, f->t, &err), FELIX_OK);
  assert_int_equal(f->cp.grace_ms, 30000);
  cp_state_close(&f->cp);
  assert_int_equal(cp_state_open(&f->cp, f->db, "cccccccccccccccccccccccccccccccc", 5000, f->t, &err), FELIX_OK);
  assert_int_equal(f->cp.lease_ms, 5000);
  assert_int_equal(f->cp.grace_ms, 30000);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(twin_wait_counts_new_copy, setup, teardown),
      cmocka_unit_test_setup_teardown(twin_report_while_waiting, setup, teardown),
      cmocka_unit_test_setup_teardown(twin_ballot_while_waiting, setup, teardown),
      cmocka_unit_test(twin_promise_any_instance),
      cmocka_unit_test_setup_teardown(wait_counts_store_named_copies, setup, teardown),
      cmocka_unit_test_setup_teardown(restored_generation_zero_waits_for_every_slot, setup, teardown),
      cmocka_unit_test_setup_teardown(abandon_while_waiting_needs_a_generation_floor, setup, teardown),
      cmocka_unit_test_setup_teardown(grace_is_the_longest_lease_ever_used, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
