/* test_cp_leader_lease.c — review round 5, item 6: a failover whose trigger
 * does not prove the pinned leader dead (no quorum) must not overlap the
 * per-shard lease that leader still holds for `leader` acknowledgements.
 * The C scenario of the overlap: A leads generation 1, Active, and renews
 * its lease with every heartbeat (the reply confirms the pin at Active); A
 * is cut off from B and C but not from the control plane and reports no
 * quorum for more than a lease. Once, generation 2 went to B at once while
 * A's lease — counted from its last heartbeat — ran up to a lease longer,
 * and A kept acknowledging acks=leader publishes next to B. */
#include "cp_fixture3.h"
#include "felix/placement.h"

#include <fcntl.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <unistd.h>

/* Every broker but the dead ones heartbeats; the lease clock moves by one tick. */
static void tick_alive(fx *f, const bool alive[3]) {
  f->t += CP_TICK_MS;
  cp_state_tick(&f->cp, f->t);
  for (int i = 0; i < 3; i++)
    if (alive[i]) heartbeat(f, i, NULL);
}

/* Every broker heartbeats. */
static void tick_all(fx *f) { tick_alive(f, (const bool[3]){true, true, true}); }

static bool renews_lease(fx *f, int i) {
  cJSON *a = assignment_for(f, INST1, i);
  const cJSON *r = cJSON_GetObjectItem(a, "renew_lease");
  assert_true(cJSON_IsBool(r));
  bool yes = cJSON_IsTrue(r) && !strcmp(cJSON_GetObjectItem(a, "state")->valuestring, "Active");
  cJSON_Delete(a);
  return yes;
}

static void no_quorum_failover_waits_for_the_leaders_lease(void **state) {
  fx *f = *state;
  int a = active_orders(f, 5);
  assert_true(renews_lease(f, a)); /* A's heartbeats renew its per-shard lease */
  /* A is cut off from its followers, not from the control plane. */
  char why[200];
  assert_int_equal(report_nq(f, a, 2, 1, 5, copies, 5001, why), 1);
  uint64_t decided = f->t;
  /* From now on no reply renews A's lease, and the shard stays at
   * generation 1 until the last lease granted to A has passed. */
  assert_int_equal(shard0(f).generation, 1);
  assert_false(renews_lease(f, a));
  while (f->t - decided < 5000 - CP_TICK_MS) {
    tick_all(f);
    if (shard0(f).generation != 1)
      fail_msg("generation %" PRId64 " issued %" PRIu64 " ms after the no-quorum report, while A's lease may run",
               shard0(f).generation, f->t - decided);
    assert_false(renews_lease(f, a));
  }
  for (int k = 0; k < 3; k++) tick_all(f);
  cp_shard_row sh = shard0(f);
  assert_int_equal(sh.generation, 2);
  assert_string_not_equal(sh.leader, ids[a]); /* passed over */
}

/* sql on the store from a second connection (as another process could). */
static void store_exec(fx *f, const char *sql) {
  sqlite3 *db;
  assert_int_equal(sqlite3_open(f->db, &db), SQLITE_OK);
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) fail_msg("%s: %s", sql, msg);
  sqlite3_close(db);
}

/* A store that refuses every write of a shard's row (a full disk, say). */
static const char REFUSE[] = "CREATE TRIGGER refuse BEFORE INSERT ON shards BEGIN SELECT RAISE(ABORT, 'refused by the test'); END";

/* A report the store fails to take leaves nothing in memory: its no-quorum
 * age was set before the shard's row was written, stayed when the write
 * failed, and failed A over a lease later on a report never accepted. */
static void a_report_the_store_refused_leaves_no_no_quorum_age(void **state) {
  fx *f = *state;
  int a = active_orders(f, 5);
  store_exec(f, REFUSE);
  cp_report_shard r = {.stream = "orders", .shard = 0, .generation = 1, .copy_id = copies[a], .log_end = 5,
                       .last_generation = 1, .hwm = 5, .no_quorum_ms = 5001, .log_bytes = 777};
  cp_report_rejection rej[1];
  size_t nrej = 0;
  cp_outcome o;
  assert_int_equal(cp_report(&f->cp, ids[a], f->inc[a], 2, &r, 1, rej, &nrej, &o), 0);
  assert_int_not_equal(o.status, 200);
  store_exec(f, "DROP TRIGGER refuse");
  cp_shard_row sh = shard0(f);
  assert_int_not_equal(cp_shard_log_bytes(&f->cp, &sh), 777); /* the refused report's size is not in memory */
  for (int k = 0; k < 3 * 5000 / CP_TICK_MS; k++) {
    tick_all(f);
    if (shard0(f).generation != 1)
      fail_msg("generation %" PRId64 " issued on a no-quorum report the store refused", shard0(f).generation);
  }
  assert_true(renews_lease(f, a));
}

/* The triggers that fire once (a fence timeout, a no-quorum leader whose
 * lease passed) re-arm when the store refuses the failover: once, the shard
 * stayed at Fencing for ever (found by the review of 38fb7c3). */
static void a_fence_timeout_the_store_refused_fires_again(void **state) {
  fx *f = *state;
  created_orders(f);
  for (int i = 0; i < 3; i++) {
    cp_inv_entry e = inv(f, copies[i], 0, 0, INST1);
    heartbeat(f, i, &e); /* generation 1 is issued; its leader never reports: the fence never completes */
  }
  assert_string_equal(shard0(f).state, "Fencing");
  store_exec(f, REFUSE);
  for (int k = 0; k < 5000 / CP_TICK_MS + 5; k++) tick_all(f); /* the timeout fires; its failover is refused */
  assert_int_equal(shard0(f).generation, 1);
  store_exec(f, "DROP TRIGGER refuse");
  for (int k = 0; k < 3; k++) tick_all(f);
  if (shard0(f).generation == 1) fail_msg("the fence timeout did not fire again once the store took writes");
}

static void a_no_quorum_failover_the_store_refused_fires_again(void **state) {
  fx *f = *state;
  int a = active_orders(f, 5);
  char why[200];
  assert_int_equal(report_nq(f, a, 2, 1, 5, copies, 5001, why), 1);
  store_exec(f, REFUSE);
  for (int k = 0; k < 5000 / CP_TICK_MS + 5; k++) tick_all(f); /* A's lease passes; the failover is refused */
  assert_int_equal(shard0(f).generation, 1);
  store_exec(f, "DROP TRIGGER refuse");
  for (int k = 0; k < 3; k++) tick_all(f); /* no new report: the trigger that fired must fire again */
  if (shard0(f).generation == 1) fail_msg("the no-quorum failover did not fire again once the store took writes");
  assert_string_not_equal(shard0(f).leader, ids[a]);
}

/* A leads, Active; its lease lapses (every other broker heartbeats) while
 * the store refuses the shard's writes, so the failover is refused. */
static int lapse_refused(fx *f, bool alive[3]) {
  int a = active_orders(f, 5);
  for (int i = 0; i < 3; i++) alive[i] = i != a;
  store_exec(f, REFUSE);
  for (int k = 0; k < 5000 / CP_TICK_MS + 5; k++) tick_alive(f, alive);
  assert_int_equal(shard0(f).generation, 1);
  return a;
}

/* A trigger seen once (a lease lapse, noticed at the tick it lapses) whose
 * failover the store refused: the next tick evaluates again, in a quiet
 * cluster too; once, the shard stayed pinned to the dead leader (helper-29). */
static void a_lease_lapse_failover_the_store_refused_is_tried_again(void **state) {
  fx *f = *state;
  bool alive[3];
  int a = lapse_refused(f, alive);
  store_exec(f, "DROP TRIGGER refuse");
  for (int k = 0; k < 3; k++) tick_alive(f, alive);
  if (shard0(f).generation == 1) fail_msg("still pinned to the dead leader %s once the store took writes", ids[a]);
}

/* The tick that retries a refused failover finds the shards unreadable (a
 * busy database, an I/O error): nothing was evaluated, so the next tick
 * tries again; the flag was once cleared before the listing (helper-30). */
static void a_retry_whose_shard_listing_failed_is_tried_again(void **state) {
  fx *f = *state;
  bool alive[3];
  int a = lapse_refused(f, alive);
  store_exec(f, "ALTER TABLE shards RENAME TO shards_hidden");
  tick_alive(f, alive); /* the retry: the listing fails */
  store_exec(f, "ALTER TABLE shards_hidden RENAME TO shards");
  store_exec(f, "DROP TRIGGER refuse");
  for (int k = 0; k < 3; k++) tick_alive(f, alive);
  if (shard0(f).generation == 1) fail_msg("still pinned to the dead leader %s once the store answered", ids[a]);
}

/* A clock on which every line is a window after the last: none is held back
 * as a repeat of a line an earlier test logged. */
static uint64_t far_apart_ms(void) {
  static uint64_t t;
  return t += 2 * FELIX_LOG_REPEAT_MS;
}

/* stderr into dir/name until stderr_back (the control plane's log lines, at
 * info, none held back as a repeat). */
static int stderr_to(const char *dir, const char *name) {
  felix_log_set_level(FELIX_LOG_INFO);
  felix_log_test_clock(far_apart_ms);
  char *p = tu_path(dir, name);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  free(p);
  assert_true(fd >= 0);
  int saved = dup(2);
  dup2(fd, 2);
  close(fd);
  return saved;
}

static void stderr_back(int saved) {
  dup2(saved, 2);
  close(saved);
  felix_log_test_clock(NULL);
  felix_log_set_level(FELIX_LOG_WARN); /* the fixture's */
}


/* A decision the store refused logs no event: the line "generation 2
 * issued" came before the write, so each tick's retry of a refused failover
 * told of a generation that never was (helper-29); it is logged once the
 * write commits, once. */
static void a_refused_decision_logs_no_event(void **state) {
  fx *f = *state;
  int a = active_orders(f, 5);
  bool alive[3] = {true, true, true};
  alive[a] = false;
  char *d = tu_mkdtemp();
  store_exec(f, "CREATE TRIGGER refuse_event BEFORE INSERT ON events WHEN NEW.kind = 'generation' "
                "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END");
  int saved = stderr_to(d, "refused.log");
  for (int k = 0; k < 5000 / CP_TICK_MS + 5; k++) tick_alive(f, alive); /* A's lease lapses; each retry is refused */
  stderr_back(saved);
  assert_int_equal(shard0(f).generation, 1);
  assert_int_equal(tu_count_in(d, "refused.log", "generation 2 issued"), 0);
  assert_true(tu_count_in(d, "refused.log", "cannot issue generation") > 0); /* the refusal itself is told */
  store_exec(f, "DROP TRIGGER refuse_event");
  saved = stderr_to(d, "taken.log");
  for (int k = 0; k < 3; k++) tick_alive(f, alive);
  stderr_back(saved);
  assert_int_equal(shard0(f).generation, 2);
  assert_int_equal(tu_count_in(d, "taken.log", "generation 2 issued"), 1);
  tu_rmdir(d);
}

/* A follower reports generation 2^53 - 1 (the largest a JSON number carries
 * exactly): a higher generation was seen, but none is left to issue. The
 * control plane says so and goes on; it aborted once at the next failover
 * (helper-31), and before that issued 2^53, which no broker could read. */
static void a_shard_whose_generations_are_spent_is_told_so_and_nothing_aborts(void **state) {
  fx *f = *state;
  int a = active_orders(f, 5);
  int o = (a + 1) % 3;
  char why[200];
  char *d = tu_mkdtemp();
  int saved = stderr_to(d, "spent.log");
  report(f, o, 1, FELIX_GENERATION_MAX, 5, copies, why);
  bool alive[3] = {true, true, true};
  for (int k = 0; k < 5000 / CP_TICK_MS + 5; k++) tick_alive(f, alive);
  stderr_back(saved);
  assert_int_equal(shard0(f).seen_generation, FELIX_GENERATION_MAX);
  assert_int_equal(shard0(f).generation, 1);
  assert_true(tu_count_in(d, "spent.log", "no generation is left for this shard") > 0);
  assert_int_equal(felix_next_generation(FELIX_GENERATION_MAX - 1, 0), FELIX_GENERATION_MAX);
  assert_int_equal(felix_next_generation(1, FELIX_GENERATION_MAX), 0);
  tu_rmdir(d);
}

/* An inventory the store refused is applied again at the next heartbeat:
 * the broker sends one only when it changes, and the gone copy it names
 * stayed a caught-up slot. */
static void an_inventory_the_store_refused_is_applied_at_the_next_heartbeat(void **state) {
  fx *f = *state;
  int a = active_orders(f, 5);
  int k = (a + 1) % 3;
  cp_inv_entry e = inv(f, copies[k], 5, 1, INST1);
  e.gone = true;
  store_exec(f, REFUSE);
  heartbeat(f, k, &e);
  store_exec(f, "DROP TRIGGER refuse");
  assert_string_equal(shard0(f).slots[k].copy_id, copies[k]); /* refused: nothing recorded yet */
  tick_all(f); /* heartbeats without an inventory */
  if (!strcmp(shard0(f).slots[k].copy_id, copies[k]))
    fail_msg("the slot still names the gone copy %s after the next heartbeat", copies[k]);
}

/* A registration that shows lost writes (its copy below its floor) commits,
 * but the store refuses its inventory's apply; the broker's next heartbeat
 * carries a new inventory (it does at once: the reply names the instance).
 * The check the registration owed is made on that one, or the copy would
 * stay trusted as caught up (helper-30). */
static void a_registration_inventory_refused_keeps_its_check_for_the_next(void **state) {
  fx *f = *state;
  int a = active_orders(f, 5);
  int k = (a + 1) % 3;
  assert_int_equal(shard0(f).slots[k].floor, 5);
  cp_inv_entry e = inv(f, copies[k], 3, 1, INST1); /* a rolled-back snapshot: 3 of the 5 it was measured at */
  store_exec(f, REFUSE);
  assert_int_equal(do_register(f, k, sids[k], &e, 1), 200);
  store_exec(f, "DROP TRIGGER refuse");
  assert_false(shard0(f).slots[k].stranger); /* refused: nothing recorded yet */
  heartbeat(f, k, &e);
  if (!shard0(f).slots[k].stranger) fail_msg("copy %s below its floor is still trusted", copies[k]);
}

/* A trigger that proves the old process gone (a new incarnation) moves the
 * shard at once: its lease died with it. */
static void a_new_incarnation_moves_at_once(void **state) {
  fx *f = *state;
  int a = active_orders(f, 5);
  cp_inv_entry e = inv(f, copies[a], 5, 1, INST1);
  assert_int_equal(do_register(f, a, sids[a], &e, 1), 200);
  assert_int_equal(shard0(f).generation, 2);
}

/* Review 5, item 6's extension: a process registering under the same broker
 * id and another storage id runs on another data directory, perhaps another
 * machine: it proves nothing about the old process, which may be cut off
 * from the control plane and still serving acks=leader on the lease its last
 * heartbeat renewed. Once, generation 2 was issued at that registration. */
static void a_new_storage_id_waits_for_the_old_processes_lease(void **state) {
  fx *f = *state;
  int a = active_orders(f, 5);
  uint64_t last_renewal = f->t; /* A's heartbeats stop: it is cut off */
  const char *elsewhere = "0123456789abcdef0123456789abcdef";
  assert_int_equal(do_register(f, a, elsewhere, NULL, 0), 200);
  while (f->t - last_renewal < 5000 - CP_TICK_MS) {
    tick_all(f); /* the new process heartbeats too: only the old lease holds the shard */
    if (shard0(f).generation != 1)
      fail_msg("generation %" PRId64 " issued %" PRIu64 " ms after A's last renewal, while its lease may run",
               shard0(f).generation, f->t - last_renewal);
  }
  for (int k = 0; k < 3; k++) tick_all(f);
  cp_shard_row sh = shard0(f);
  assert_int_equal(sh.generation, 2);
  assert_string_not_equal(sh.leader, ids[a]); /* the new process's copy is a stranger */
}

static int register_as(fx *f, int i, const char *sid, const char *boot, const char *prev) {
  cp_register_req r = {.broker_id = ids[i], .storage_id = sid, .boot_id = boot, .fsync_mode = "periodic",
                       .address = "127.0.0.1:7101", .http_address = "", .previous_storage_id = prev};
  cp_outcome o;
  cp_register(&f->cp, &r, f->inc[i], &o);
  return o.status;
}

/* Ticks until just before a lease has passed since `since`, failing if the
 * shard moves meanwhile; then it must move within three ticks. */
static void moves_once_the_lease_has_passed(fx *f, uint64_t since, const char *what) {
  while (f->t - since < 5000 - CP_TICK_MS) {
    tick_all(f);
    if (shard0(f).generation != 1)
      fail_msg("%s: generation %" PRId64 " issued %" PRIu64 " ms after the old process's last renewal", what,
               shard0(f).generation, f->t - since);
  }
  for (int k = 0; k < 3; k++) tick_all(f);
  assert_int_equal(shard0(f).generation, 2);
}

/* Found by the review: the process that replaced the pinned one drains (the
 * operator sees the old machine is alive after all); the hand-off must still
 * wait for the old process's lease. Once, it moved the shard at once. */
static void a_drain_of_the_replacing_process_still_waits(void **state) {
  fx *f = *state;
  int a = active_orders(f, 5);
  uint64_t last_renewal = f->t;
  assert_int_equal(do_register(f, a, "0123456789abcdef0123456789abcdef", NULL, 0), 200);
  cp_note_draining(&f->cp, ids[a]);
  moves_once_the_lease_has_passed(f, last_renewal, "a drain of the new process");
}

/* Found by the review: a clone of the directory on another machine (a disk
 * or VM snapshot) registers from another boot, keeping the id or rotating
 * from it: the directory's lock proves nothing there. Once, it moved at once. */
static void the_same_directory_on_another_boot_waits(void **state) {
  fx *f = *state;
  int a = active_orders(f, 5);
  uint64_t last_renewal = f->t;
  assert_int_equal(register_as(f, a, "0123456789abcdef0123456789abcdef", "other-boot", sids[a]), 200);
  moves_once_the_lease_has_passed(f, last_renewal, "a rotation from the registered id on another boot");
}

/* The same directory and boot (a restart, or a rotation after a failed sync
 * on this boot) proves the old process gone: the shard moves at once. */
static void a_rotation_on_the_same_boot_moves_at_once(void **state) {
  fx *f = *state;
  int a = active_orders(f, 5);
  assert_int_equal(register_as(f, a, "0123456789abcdef0123456789abcdef", "boot", sids[a]), 200);
  assert_int_equal(shard0(f).generation, 2);
}

/* Found by the review: two live processes under one id, both reaching the
 * control plane, register in turn (each one's heartbeat gets 409). The wait
 * is taken once; once, every registration renewed it and the shard, pinned
 * to an incarnation neither process owns, never moved. */
static void two_live_processes_registering_in_turn_do_not_block_for_ever(void **state) {
  fx *f = *state;
  int a = active_orders(f, 5);
  const char *other = "0123456789abcdef0123456789abcdef";
  for (int k = 0; k < 2 * 5000 / CP_TICK_MS && shard0(f).generation == 1; k++) {
    assert_int_equal(do_register(f, a, (k & 1) ? sids[a] : other, NULL, 0), 200);
    tick_all(f);
  }
  assert_int_equal(shard0(f).generation, 2);
}

/* Found by the second review: each replaced process has its own lease. P1 of
 * every broker is alive when P2 of each registers from another directory (a
 * wait begins for P1); "orders" (acks=leader) is then led by P2 of some id,
 * Active, renewing its lease; 4 s later P3 of that id registers from a third
 * directory. The shard must wait for P2's lease, not for P1's (which ends a
 * second later): once, generation 2 came 1 s after P2's last renewal. */
static void a_second_replacement_waits_for_the_process_it_replaces(void **state) {
  fx *f = *state;
  static const char *const other[3] = {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa2",
                                       "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa3"};
  for (int i = 0; i < 3; i++) assert_int_equal(do_register(f, i, sids[i], NULL, 0), 200);
  tick_all(f);
  uint64_t t0 = f->t;
  for (int i = 0; i < 3; i++) assert_int_equal(do_register(f, i, other[i], NULL, 0), 200);
  create_orders(f, "leader");
  int a = lead_orders(f, 5);
  while (f->t - t0 < 4000) tick_all(f); /* P2 renews its lease each tick */
  assert_true(renews_lease(f, a));
  uint64_t last_renewal = f->t;
  assert_int_equal(do_register(f, a, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", NULL, 0), 200); /* P3 */
  moves_once_the_lease_has_passed(f, last_renewal, "a second replacement");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(no_quorum_failover_waits_for_the_leaders_lease, setup, teardown),
      cmocka_unit_test_setup_teardown(a_report_the_store_refused_leaves_no_no_quorum_age, setup, teardown),
      cmocka_unit_test_setup_teardown(a_fence_timeout_the_store_refused_fires_again, setup, teardown),
      cmocka_unit_test_setup_teardown(a_no_quorum_failover_the_store_refused_fires_again, setup, teardown),
      cmocka_unit_test_setup_teardown(an_inventory_the_store_refused_is_applied_at_the_next_heartbeat, setup, teardown),
      cmocka_unit_test_setup_teardown(a_registration_inventory_refused_keeps_its_check_for_the_next, setup, teardown),
      cmocka_unit_test_setup_teardown(a_lease_lapse_failover_the_store_refused_is_tried_again, setup, teardown),
      cmocka_unit_test_setup_teardown(a_retry_whose_shard_listing_failed_is_tried_again, setup, teardown),
      cmocka_unit_test_setup_teardown(a_refused_decision_logs_no_event, setup, teardown),
      cmocka_unit_test_setup_teardown(a_shard_whose_generations_are_spent_is_told_so_and_nothing_aborts, setup, teardown),
      cmocka_unit_test_setup_teardown(a_new_incarnation_moves_at_once, setup, teardown),
      cmocka_unit_test_setup_teardown(a_new_storage_id_waits_for_the_old_processes_lease, setup, teardown),
      cmocka_unit_test_setup_teardown(a_drain_of_the_replacing_process_still_waits, setup, teardown),
      cmocka_unit_test_setup_teardown(the_same_directory_on_another_boot_waits, setup, teardown),
      cmocka_unit_test_setup_teardown(a_rotation_on_the_same_boot_moves_at_once, setup, teardown),
      cmocka_unit_test_setup_teardown(two_live_processes_registering_in_turn_do_not_block_for_ever, setup, teardown),
      cmocka_unit_test_setup_teardown(a_second_replacement_waits_for_the_process_it_replaces, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
