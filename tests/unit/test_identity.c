/* test_identity.c — one test per row of the identity table (DESIGN.md §3.3). */
#include "testutil.h"

#include "felix/identity.h"

static int sync_calls;
static int sync_result;

static int fake_sync(void *ctx) {
  (void)ctx;
  sync_calls++;
  return sync_result;
}

static felix_identity_verdict decide(felix_identity_facts f, int sync_rc) {
  felix_identity_verdict v;
  sync_calls = 0;
  sync_result = sync_rc;
  felix_identity_decide(&f, fake_sync, NULL, &v);
  assert_true(strlen(v.reason) > 10);
  return v;
}

static felix_identity_facts crashed(felix_fsync_mode mode, const char *last_boot, bool token) {
  return (felix_identity_facts){.last_run = FELIX_LAST_RUN_CRASHED, .last_mode = mode,
                                .last_boot_known = last_boot != NULL, .last_boot_id = last_boot,
                                .current_boot_id = "boot-B", .boot_token_present = token};
}

static void row_created_now_keeps(void **s) {
  (void)s;
  felix_identity_facts f = crashed(FELIX_FSYNC_PERIODIC, "boot-A", false);
  f.storage_id_created = true;
  felix_identity_verdict v = decide(f, 0);
  assert_false(v.rotate);
  assert_int_equal(sync_calls, 0);
}

static void row_no_run_state_rotates(void **s) {
  (void)s;
  felix_identity_facts f = {.last_run = FELIX_LAST_RUN_UNRECORDED, .current_boot_id = "boot-B"};
  felix_identity_verdict v = decide(f, 0);
  assert_true(v.rotate);
  assert_non_null(strstr(v.reason, "run-state"));
}

static void row_stopped_cleanly_keeps(void **s) {
  (void)s;
  felix_identity_facts f = crashed(FELIX_FSYNC_NONE, "boot-A", false);
  f.last_run = FELIX_LAST_RUN_STOPPED;
  assert_false(decide(f, 0).rotate);
  assert_int_equal(sync_calls, 0);
}

/* A restored directory: the restore synced every file and wrote a new storage
 * id, so a start keeps it without a sync, whatever boot it is. */
static void row_restored_keeps(void **s) {
  (void)s;
  felix_identity_facts f = {.last_run = FELIX_LAST_RUN_RESTORED, .current_boot_id = "boot-B"};
  felix_identity_verdict v = decide(f, 0);
  assert_false(v.rotate);
  assert_false(v.needs_sync);
  assert_non_null(strstr(v.reason, "restored"));
  assert_int_equal(sync_calls, 0);
}

static void row_same_boot_token_and_sync_keeps(void **s) {
  (void)s;
  for (int m = FELIX_FSYNC_NONE; m <= FELIX_FSYNC_ON_COMMIT; m++) {
    felix_identity_verdict v = decide(crashed((felix_fsync_mode)m, "boot-B", true), 0);
    assert_false(v.rotate);
    assert_true(v.synced);
    assert_int_equal(sync_calls, 1);
  }
}

static void row_same_boot_sync_fails_rotates(void **s) {
  (void)s;
  felix_identity_verdict v = decide(crashed(FELIX_FSYNC_PERIODIC, "boot-B", true), EIO);
  assert_true(v.rotate);
  assert_int_equal(sync_calls, 1);
  assert_non_null(strstr(v.reason, "sync failed"));
}

static void row_same_boot_without_token_rotates(void **s) {
  (void)s;
  for (int m = FELIX_FSYNC_NONE; m <= FELIX_FSYNC_ON_COMMIT; m++) {
    felix_identity_verdict v = decide(crashed((felix_fsync_mode)m, "boot-B", false), 0);
    assert_true(v.rotate);
    assert_int_equal(sync_calls, 0);
    assert_non_null(strstr(v.reason, "token"));
  }
}

static void row_on_commit_other_boot_keeps(void **s) {
  (void)s;
  felix_identity_verdict v = decide(crashed(FELIX_FSYNC_ON_COMMIT, "boot-A", false), 0);
  assert_false(v.rotate);
  assert_int_equal(sync_calls, 0);
}

static void row_relaxed_boot_absent_rotates(void **s) {
  (void)s;
  assert_true(decide(crashed(FELIX_FSYNC_PERIODIC, NULL, true), 0).rotate);
  assert_true(decide(crashed(FELIX_FSYNC_NONE, NULL, true), 0).rotate);
  assert_int_equal(sync_calls, 0);
}

static void row_relaxed_other_boot_rotates(void **s) {
  (void)s;
  felix_identity_verdict v = decide(crashed(FELIX_FSYNC_PERIODIC, "boot-A", true), 0);
  assert_true(v.rotate);
  assert_non_null(strstr(v.reason, "another boot"));
  assert_true(decide(crashed(FELIX_FSYNC_NONE, "boot-A", true), 0).rotate);
}

/* Not a row of the table: on_commit with no recorded boot id may be this boot,
 * so it is treated like the same-boot row (token and sync). */
static void on_commit_boot_absent_asks_the_token(void **s) {
  (void)s;
  assert_false(decide(crashed(FELIX_FSYNC_ON_COMMIT, NULL, true), 0).rotate);
  assert_int_equal(sync_calls, 1);
  assert_true(decide(crashed(FELIX_FSYNC_ON_COMMIT, NULL, false), 0).rotate);
}

static void offline_verdict_needs_sync(void **s) {
  (void)s;
  felix_identity_facts f = crashed(FELIX_FSYNC_PERIODIC, "boot-B", true);
  felix_identity_verdict v;
  felix_identity_decide(&f, NULL, NULL, &v);
  assert_false(v.rotate);
  assert_true(v.needs_sync);
  assert_false(v.synced);
}

static void sync_data_dir_walks_a_real_tree(void **s) {
  (void)s;
  char *d = tu_mkdtemp();
  char *sub = tu_path(d, "shards");
  assert_int_equal(mkdir(sub, 0755), 0);
  tu_write(sub, "a.log", "x", 1);
  tu_write(d, "storage-id", "y", 1);
  assert_int_equal(felix_sync_data_dir(d), 0);
  assert_int_equal(felix_sync_data_dir_cb(d), 0);
  assert_int_equal(felix_sync_data_dir("/nonexistent/felix"), ENOENT);
  free(sub);
  tu_rmdir(d);
}

static void last_run_of_maps_run_state(void **s) {
  (void)s;
  felix_run_state rs = {.state = FELIX_RUN_RUNNING};
  assert_int_equal(felix_last_run_of(&rs, false), FELIX_LAST_RUN_UNRECORDED);
  assert_int_equal(felix_last_run_of(&rs, true), FELIX_LAST_RUN_CRASHED);
  rs.state = FELIX_RUN_STOPPED;
  assert_int_equal(felix_last_run_of(&rs, true), FELIX_LAST_RUN_STOPPED);
  rs.state = FELIX_RUN_RESTORED;
  assert_int_equal(felix_last_run_of(&rs, true), FELIX_LAST_RUN_RESTORED);
  assert_string_equal(felix_last_run_name(FELIX_LAST_RUN_RESTORED), "restored");
  assert_string_equal(felix_last_run_name(FELIX_LAST_RUN_CRASHED), "crashed");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(row_created_now_keeps),
      cmocka_unit_test(row_no_run_state_rotates),
      cmocka_unit_test(row_stopped_cleanly_keeps),
      cmocka_unit_test(row_restored_keeps),
      cmocka_unit_test(row_same_boot_token_and_sync_keeps),
      cmocka_unit_test(row_same_boot_sync_fails_rotates),
      cmocka_unit_test(row_same_boot_without_token_rotates),
      cmocka_unit_test(row_on_commit_other_boot_keeps),
      cmocka_unit_test(row_relaxed_boot_absent_rotates),
      cmocka_unit_test(row_relaxed_other_boot_rotates),
      cmocka_unit_test(on_commit_boot_absent_asks_the_token),
      cmocka_unit_test(offline_verdict_needs_sync),
      cmocka_unit_test(sync_data_dir_walks_a_real_tree),
      cmocka_unit_test(last_run_of_maps_run_state),
  };
  return cmocka_run_group_tests_name("identity", tests, NULL, NULL);
}
