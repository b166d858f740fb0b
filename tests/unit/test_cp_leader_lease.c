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

#include <inttypes.h>

/* Every broker heartbeats; the lease clock moves by one tick. */
static void tick_all(fx *f) {
  f->t += CP_TICK_MS;
  cp_state_tick(&f->cp, f->t);
  for (int i = 0; i < 3; i++) heartbeat(f, i, NULL);
}

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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(no_quorum_failover_waits_for_the_leaders_lease, setup, teardown),
      cmocka_unit_test_setup_teardown(a_new_incarnation_moves_at_once, setup, teardown),
      cmocka_unit_test_setup_teardown(a_new_storage_id_waits_for_the_old_processes_lease, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
