/* test_cp_flow.c — the control plane's engine end to end on a temp database:
 * generation 1 after inventories, report acceptance, the RF=1 failover rules,
 * lease expiry and the start-up wait for inventories (DESIGN.md §4.1, §4.5,
 * §4.6, §4.8). Time is driven by hand through cp_state_tick. */
#include "testutil.h"

#include "control-plane/abandon.h"
#include "felix/logfmt.h"
#include "control-plane/state.h"

#define SID1 "11111111111111111111111111111111"
#define SID2 "22222222222222222222222222222222"
#define COPY0 "c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0"
#define COPY9 "c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9"
#define INST1 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define INST2 "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

typedef struct fx {
  char *dir, *db;
  cp_state cp;
  uint64_t t;
  char inc[CP_INC_MAX];
  char uuid[40];
} fx;

static void fx_open(fx *f, const char *instance) {
  felix_err err;
  f->t += 1000;
  assert_int_equal(cp_state_open(&f->cp, f->db, instance, 5000, f->t, &err), FELIX_OK);
}

static int setup(void **state) {
  felix_log_set_level(FELIX_LOG_WARN);
  fx *f = calloc(1, sizeof *f);
  f->dir = tu_mkdtemp();
  f->db = tu_path(f->dir, "cp.db");
  fx_open(f, INST1);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx *f = *state;
  cp_state_close(&f->cp);
  free(f->db);
  tu_rmdir(f->dir);
  free(f);
  return 0;
}

/* Runs the ticker for ms milliseconds of processing. */
static void run_for(fx *f, uint64_t ms) {
  for (uint64_t d = 0; d < ms; d += CP_TICK_MS) {
    f->t += CP_TICK_MS;
    cp_state_tick(&f->cp, f->t);
  }
}

static cp_inv_entry inv(fx *f, const char *copy, int64_t log_end, int64_t last_gen) {
  cp_inv_entry e;
  memset(&e, 0, sizeof e);
  snprintf(e.stream, sizeof e.stream, "orders");
  snprintf(e.stream_uuid, sizeof e.stream_uuid, "%s", f->uuid);
  snprintf(e.copy_id, sizeof e.copy_id, "%s", copy);
  e.log_end = log_end;
  e.last_generation = last_gen;
  e.ballot_generation = last_gen;
  snprintf(e.cp_instance, sizeof e.cp_instance, "%s", f->cp.instance_id); /* built for the running instance */
  return e;
}

/* prev: the storage id the directory rotated away from (NULL: none). */
static int do_register_from(fx *f, const char *id, const char *sid, const char *prev, const cp_inv_entry *e,
                            size_t n) {
  cp_register_req r = {.broker_id = id, .storage_id = sid, .boot_id = "boot", .fsync_mode = "periodic",
                       .address = "127.0.0.1:7101", .http_address = "", .previous_storage_id = prev,
                       .inv = e, .ninv = n};
  cp_outcome o;
  cp_register(&f->cp, &r, f->inc, &o);
  return o.status;
}

static int do_register(fx *f, const char *id, const char *sid, const cp_inv_entry *e, size_t n) {
  cp_register_req r = {.broker_id = id, .storage_id = sid, .boot_id = "boot", .fsync_mode = "periodic",
                       .address = "127.0.0.1:7101", .http_address = "", .inv = e, .ninv = n};
  cp_outcome o;
  cp_register(&f->cp, &r, f->inc, &o);
  return o.status;
}

static cp_shard_row shard0(fx *f) {
  cp_shard_row sh;
  bool found;
  felix_err err;
  assert_int_equal(cp_store_shard_get(f->cp.store, f->uuid, 0, &sh, &found, &err), FELIX_OK);
  assert_true(found);
  return sh;
}

static void create_orders(fx *f) {
  cp_stream_row s;
  cp_outcome o;
  cp_stream_create(&f->cp, "orders", 1, 1, "quorum", &s, &o);
  assert_int_equal(o.status, 201);
  snprintf(f->uuid, sizeof f->uuid, "%s", s.uuid);
}

static int report_as(fx *f, const char *broker, int64_t seq, int64_t gen, int64_t hwm, int64_t gen_start,
                     char *reason) {
  cp_report_shard r = {.stream = "orders", .shard = 0, .generation = gen, .copy_id = COPY0, .log_end = hwm,
                       .last_generation = gen, .generation_start = gen_start, .hwm = hwm};
  cp_report_rejection rej[1];
  size_t nrej = 0;
  cp_outcome o;
  int n = cp_report(&f->cp, broker, f->inc, seq, &r, 1, rej, &nrej, &o);
  assert_int_equal(o.status, 200);
  if (reason) snprintf(reason, 200, "%s", nrej ? rej[0].reason : "");
  return n;
}

static int report(fx *f, int64_t seq, int64_t gen, int64_t hwm, int64_t gen_start, char *reason) {
  return report_as(f, "b1", seq, gen, hwm, gen_start, reason);
}

/* b1 registered, "orders" created, its copy listed, generation 1 issued, and
 * (when hwm > 0) Active at max_hwm hwm of generation 1. */
static void bring_up(fx *f, int64_t hwm) {
  assert_int_equal(do_register(f, "b1", SID1, NULL, 0), 200);
  create_orders(f);
  cp_inv_entry e = inv(f, COPY0, 0, 0);
  cp_outcome o;
  cp_heartbeat(&f->cp, "b1", f->inc, &e, 1, &o);
  assert_int_equal(o.status, 200);
  if (hwm > 0) assert_int_equal(report(f, 1, 1, hwm, 0, NULL), 1);
}

static bool history_has(fx *f, const char *kind, const char *text) {
  cp_event *ev = NULL;
  size_t n = 0;
  felix_err err;
  assert_int_equal(cp_store_events_list(f->cp.store, f->uuid, 0, NULL, &ev, &n, &err), FELIX_OK);
  bool found = false;
  for (size_t i = 0; i < n && !found; i++) found = !strcmp(ev[i].kind, kind) && strstr(ev[i].message, text);
  free(ev);
  return found;
}

/* ---- tests ---- */

static void generation_one_waits_for_the_empty_copy(void **state) {
  fx *f = *state;
  assert_int_equal(do_register(f, "b1", SID1, NULL, 0), 200);
  create_orders(f);
  cp_shard_row sh = shard0(f);
  assert_int_equal(sh.generation, 0);
  assert_string_equal(sh.state, "Fencing");
  assert_string_equal(sh.slots[0].copy_id, "");
  cp_outcome o;
  cp_heartbeat(&f->cp, "b1", f->inc, NULL, 0, &o); /* no inventory: nothing to issue */
  assert_int_equal(shard0(f).generation, 0);
  cp_inv_entry e = inv(f, COPY0, 0, 0);
  cp_heartbeat(&f->cp, "b1", f->inc, &e, 1, &o);
  assert_int_equal(o.status, 200);
  sh = shard0(f);
  assert_int_equal(sh.generation, 1);
  assert_string_equal(sh.state, "Fencing");
  assert_string_equal(sh.leader, "b1");
  assert_string_equal(sh.leader_copy_id, COPY0);
  assert_string_equal(sh.leader_incarnation, f->inc);
  assert_string_equal(sh.slots[0].copy_id, COPY0);
  assert_int_equal(sh.slots[0].floor, 0);
  assert_true(history_has(f, "copy_created", "measured at (0, 0), floor 0"));
  assert_true(history_has(f, "generation", "generation 1 issued to b1"));
}

static void report_acceptance(void **state) {
  fx *f = *state;
  char why[200];
  bring_up(f, 0);
  assert_int_equal(report(f, 1, 1, 0, 0, why), 1); /* at its generation start: still Fencing */
  assert_string_equal(shard0(f).state, "Fencing");
  assert_int_equal(report(f, 1, 1, 1, 0, why), 0); /* same seq again */
  assert_non_null(strstr(why, "seq 1 is not above the last accepted 1"));
  assert_int_equal(report(f, 2, 1, 5, 0, why), 1);
  cp_shard_row sh = shard0(f);
  assert_string_equal(sh.state, "Active");
  assert_int_equal(sh.max_hwm, 5);
  assert_true(history_has(f, "active", "generation 1 of orders/0 is active on b1"));
  assert_int_equal(report(f, 3, 1, 4, 0, why), 0); /* below the max hwm: changes nothing */
  assert_int_equal(shard0(f).max_hwm, 5);
  /* Another broker is not the pinned leader. */
  assert_int_equal(do_register(f, "b2", SID2, NULL, 0), 200);
  assert_int_equal(report_as(f, "b2", 1, 1, 9, 0, why), 0);
  assert_string_equal(why, "not the pinned leader of generation 1");
  /* A generation above the stored one (a restored database, §4.8): refused,
   * and the shard fails over above everything seen. */
  assert_int_equal(report(f, 4, 2, 9, 0, why), 0);
  assert_non_null(strstr(why, "a copy promised a generation above the one the control plane stores"));
  sh = shard0(f);
  assert_int_equal(sh.max_hwm, 5);
  assert_int_equal(sh.generation, 3);
  assert_string_equal(sh.state, "Fencing");
}

static void reregistered_leader_gets_next_generation(void **state) {
  fx *f = *state;
  bring_up(f, 12);
  char old_inc[CP_INC_MAX];
  snprintf(old_inc, sizeof old_inc, "%s", f->inc);
  cp_inv_entry e = inv(f, COPY0, 12, 1);
  assert_int_equal(do_register(f, "b1", SID1, &e, 1), 200);
  assert_string_not_equal(f->inc, old_inc);
  cp_shard_row sh = shard0(f);
  assert_int_equal(sh.generation, 2);
  assert_string_equal(sh.state, "Fencing");
  assert_string_equal(sh.leader_incarnation, f->inc);
  assert_string_equal(sh.leader_copy_id, COPY0);
  /* The old process is no longer anyone: its heartbeat must re-register. */
  cp_outcome o;
  cp_heartbeat(&f->cp, "b1", old_inc, NULL, 0, &o);
  assert_int_equal(o.status, 409);
  assert_true(o.reregister);
  /* A generation seen in a ballot raises the next one above it. */
  e = inv(f, COPY0, 13, 1);
  e.ballot_generation = 7;
  assert_int_equal(do_register(f, "b1", SID1, &e, 1), 200);
  assert_int_equal(shard0(f).generation, 8);
}

static void lapsed_leader_is_no_caught_up_until_it_reports(void **state) {
  fx *f = *state;
  bring_up(f, 12);
  run_for(f, 4900);
  assert_true(cp_broker_alive(&f->cp, "b1"));
  assert_string_equal(shard0(f).state, "Active");
  run_for(f, 200);
  assert_false(cp_broker_alive(&f->cp, "b1"));
  cp_shard_row sh = shard0(f);
  assert_string_equal(sh.state, "NoCaughtUpReplica");
  assert_int_equal(sh.generation, 1); /* nothing durable changed */
  assert_string_equal(sh.leader_incarnation, f->inc);
  assert_non_null(strstr(sh.detail, "b1: lease lapsed"));
  assert_true(history_has(f, "no_caught_up_replica", "b1: lease lapsed"));
  /* The same process comes back: the still-pinned leader's report returns it. */
  cp_outcome o;
  cp_heartbeat(&f->cp, "b1", f->inc, NULL, 0, &o);
  assert_string_equal(shard0(f).state, "NoCaughtUpReplica");
  assert_int_equal(report(f, 2, 1, 13, 0, NULL), 1);
  assert_string_equal(shard0(f).state, "Active");
  assert_int_equal(shard0(f).generation, 1);
}

/* §3.2 for a broker that was down: its registration (same storage id) lists
 * no copy of the shard, so the directory was deleted meanwhile. The slot
 * forgets the copy (a stranger, so not eligible on its old measurement) and
 * the broker is asked to make a new one. Once, the slot kept naming the
 * copy, `caught_up` on its old measurement, and create_copy never came. */
static void a_copy_missing_from_a_registration_is_forgotten(void **state) {
  fx *f = *state;
  bring_up(f, 12);
  assert_false(shard0(f).slots[0].stranger);
  cp_register_req r = {.broker_id = "b1", .storage_id = SID1, .boot_id = "boot", .fsync_mode = "periodic",
                       .address = "127.0.0.1:7101", .http_address = "", .has_inventory = true};
  cp_outcome o;
  cp_register(&f->cp, &r, f->inc, &o); /* an empty inventory: the broker holds nothing */
  assert_int_equal(o.status, 200);
  cp_shard_row sh = shard0(f);
  assert_string_equal(sh.slots[0].copy_id, "");
  assert_true(sh.slots[0].stranger);
  assert_int_equal(sh.slots[0].confirmed, 0);
  assert_true(history_has(f, "copy_gone", "is missing from its registration's inventory"));
}

static void rotated_storage_id_is_not_eligible(void **state) {
  fx *f = *state;
  bring_up(f, 12);
  cp_inv_entry e = inv(f, COPY9, 12, 1); /* its directory's storage id rotated, new copy id */
  assert_int_equal(do_register_from(f, "b1", SID2, SID1, &e, 1), 200);
  cp_shard_row sh = shard0(f);
  assert_string_equal(sh.state, "NoCaughtUpReplica");
  assert_int_equal(sh.generation, 1);
  assert_non_null(strstr(sh.detail, "a stranger: copy id changed (storage id rotated or directory made anew), not measured by an active leader since"));
  assert_true(sh.slots[0].stranger);
  assert_string_equal(sh.slots[0].copy_id, COPY9);
  assert_true(history_has(f, "new_storage_id", "forgets copy " COPY0));
}

static void short_copy_waits_until_it_catches_up(void **state) {
  fx *f = *state;
  bring_up(f, 12);
  /* The copy was measured at 12 (its floor); its own inventory under the
   * same ids now shows 10: it lost writes (§4.5), a stranger from now on. */
  cp_inv_entry e = inv(f, COPY0, 10, 1);
  assert_int_equal(do_register(f, "b1", SID1, &e, 1), 200);
  cp_shard_row sh = shard0(f);
  assert_string_equal(sh.state, "NoCaughtUpReplica");
  assert_non_null(strstr(sh.detail, "a stranger"));
  assert_true(sh.slots[0].stranger);
  assert_int_equal(sh.generation, 1);
  /* Holding 12 again does not make it trusted: only a measurement could. */
  e = inv(f, COPY0, 12, 1);
  cp_outcome o;
  cp_heartbeat(&f->cp, "b1", f->inc, &e, 1, &o);
  sh = shard0(f);
  assert_int_equal(sh.generation, 1);
  assert_string_equal(sh.state, "NoCaughtUpReplica");
}

/* A heartbeat's inventory may be older than a measurement it crosses (the
 * copy was measured at 12 by its leader after the snapshot was taken):
 * only a registration's inventory can show lost writes. */
static void heartbeat_inventory_below_floor_is_not_a_loss(void **state) {
  fx *f = *state;
  bring_up(f, 12);
  cp_inv_entry e = inv(f, COPY0, 10, 1);
  cp_outcome o;
  cp_heartbeat(&f->cp, "b1", f->inc, &e, 1, &o);
  cp_shard_row sh = shard0(f);
  assert_false(sh.slots[0].stranger);
  assert_string_equal(sh.state, "Active");
}

/* §4.6: a fence not complete within a lease (on the lease clock) is a
 * trigger; the leader-elect is passed over, and with no other copy the shard
 * says so; a later report of the still-pinned leader makes it Active. */
static void fence_not_complete_within_a_lease_passes_the_leader_elect_over(void **state) {
  fx *f = *state;
  bring_up(f, 12);
  cp_inv_entry e = inv(f, COPY0, 12, 1);
  assert_int_equal(do_register(f, "b1", SID1, &e, 1), 200); /* a new incarnation: generation 2 */
  cp_shard_row sh = shard0(f);
  assert_int_equal(sh.generation, 2);
  assert_string_equal(sh.state, "Fencing");
  cp_outcome o;
  for (int k = 0; k < 4; k++) { /* alive all along: only the fence is late */
    run_for(f, 1000);
    cp_heartbeat(&f->cp, "b1", f->inc, NULL, 0, &o);
  }
  assert_string_equal(shard0(f).state, "Fencing"); /* within a lease: nothing */
  for (int k = 0; k < 3; k++) {
    run_for(f, 1000);
    cp_heartbeat(&f->cp, "b1", f->inc, NULL, 0, &o);
  }
  sh = shard0(f);
  assert_string_equal(sh.state, "NoCaughtUpReplica");
  assert_non_null(strstr(sh.detail, "passed over for a while"));
  assert_true(history_has(f, "no_caught_up_replica", "did not complete within a lease"));
  assert_int_equal(sh.generation, 2); /* nothing durable changed */
  assert_int_equal(report(f, 1, 2, 13, 12, NULL), 1);
  assert_string_equal(shard0(f).state, "Active");
}

static void live_duplicate_storage_id_is_refused(void **state) {
  fx *f = *state;
  assert_int_equal(do_register(f, "b1", SID1, NULL, 0), 200);
  assert_int_equal(do_register(f, "b2", SID1, NULL, 0), 409);
  run_for(f, 5000);
  assert_int_equal(do_register(f, "b2", SID1, NULL, 0), 200); /* b1's lease lapsed */
}

static void stream_creation_refusals(void **state) {
  fx *f = *state;
  cp_stream_row s;
  cp_outcome o;
  cp_stream_create(&f->cp, "orders", 1, 1, "quorum", &s, &o);
  assert_int_equal(o.status, 422);
  assert_string_equal(o.error, "need 1 live broker for 1 replica, 0 are alive");
  assert_int_equal(do_register(f, "b1", SID1, NULL, 0), 200);
  cp_stream_create(&f->cp, "orders", 1, 3, "quorum", &s, &o);
  assert_int_equal(o.status, 422);
  assert_non_null(strstr(o.error, "need 3 live brokers for 3 replicas"));
  cp_stream_create(&f->cp, "orders", 1, 2, "quorum", &s, &o);
  assert_int_equal(o.status, 422);
  assert_non_null(strstr(o.error, "must be odd"));
  cp_stream_create(&f->cp, "orders", 4, 1, "quorum", &s, &o);
  assert_int_equal(o.status, 201);
  cp_stream_create(&f->cp, "orders", 1, 1, "quorum", &s, &o);
  assert_int_equal(o.status, 409);
  cp_stream_delete(&f->cp, "orders", &s, &o);
  assert_int_equal(o.status, 200);
  char(*del)[40] = NULL;
  size_t nd = 0;
  felix_err err;
  assert_int_equal(cp_store_deleted_uuids(f->cp.store, &del, &nd, &err), FELIX_OK);
  assert_int_equal(nd, 1); /* brokers learn it through deleted_streams */
  assert_string_equal(del[0], s.uuid);
  free(del);
  cp_stream_row again;
  cp_stream_delete(&f->cp, "orders", &again, &o);
  assert_int_equal(o.status, 404);
  cp_stream_create(&f->cp, "orders", 1, 1, "all", &again, &o); /* the name is free again */
  assert_int_equal(o.status, 201);
  assert_string_not_equal(again.uuid, s.uuid);
}

/* Found by the adversarial review: a report of a deleted stream's copy,
 * sent before its broker applied the deletion, named the stream created
 * again under the same name and raised its seen generation — a healthy
 * shard failed over. The report's stream uuid must match. */
static void report_of_a_deleted_stream_changes_nothing(void **state) {
  fx *f = *state;
  bring_up(f, 12);
  char old_uuid[40];
  snprintf(old_uuid, sizeof old_uuid, "%s", f->uuid);
  cp_stream_row s;
  cp_outcome o;
  cp_stream_delete(&f->cp, "orders", &s, &o);
  assert_int_equal(o.status, 200);
  create_orders(f);
  cp_report_shard r = {.stream = "orders", .stream_uuid = old_uuid, .shard = 0, .generation = 4, .copy_id = COPY0,
                       .log_end = 20, .last_generation = 4, .hwm = 20};
  cp_report_rejection rej[1];
  size_t nrej = 0;
  assert_int_equal(cp_report(&f->cp, "b1", f->inc, 50, &r, 1, rej, &nrej, &o), 0);
  assert_int_equal(nrej, 1);
  assert_non_null(strstr(rej[0].reason, "another stream of that name"));
  assert_int_equal(shard0(f).seen_generation, 0);
}

/* §4.8: the wait is not bounded in time (ending it early could miss a
 * generation a majority promised): a lapsed leader that sent no inventory
 * is not failed over, only the operator may abandon after a lease. */
static void restart_waits_for_inventories(void **state) {
  fx *f = *state;
  bring_up(f, 12);
  assert_int_equal(do_register(f, "b2", SID2, NULL, 0), 200);
  cp_state_close(&f->cp);
  fx_open(f, INST2);
  /* Every known broker has one fresh lease; the shard waits for b1's inventory. */
  assert_true(cp_broker_alive(&f->cp, "b1"));
  assert_true(cp_waiting_for_inventories(&f->cp));
  cp_shard_row sh = shard0(f);
  assert_true(cp_shard_waiting(&f->cp, &sh));
  cp_abandon_req q = {.stream = "orders", .shard = 0, .dry_run = true};
  cp_abandon_result ar;
  cp_outcome o;
  cp_abandon(&f->cp, &q, &ar, &o);
  assert_int_equal(o.status, 409);
  assert_non_null(strstr(o.error, "still waiting for inventories"));
  run_for(f, 5200); /* b1's lease lapses: still no decision without its inventory */
  assert_false(cp_broker_alive(&f->cp, "b1"));
  assert_false(cp_waiting_for_inventories(&f->cp)); /* the start-up lease is over */
  sh = shard0(f);
  assert_true(cp_shard_waiting(&f->cp, &sh));
  assert_string_equal(sh.state, "Active");
  assert_int_equal(sh.generation, 1);
  assert_int_equal(sh.max_hwm, 12);
  cp_abandon(&f->cp, &q, &ar, &o); /* now the operator's: refused only for want of a live copy */
  assert_int_equal(o.status, 409);
  assert_non_null(strstr(o.error, "no live copy"));
  /* b1 comes back as a new process: its inventory ends the wait, and its new
   * incarnation is a failover trigger. */
  cp_inv_entry e = inv(f, COPY0, 12, 1);
  assert_int_equal(do_register(f, "b1", SID1, &e, 1), 200);
  sh = shard0(f);
  assert_false(cp_shard_waiting(&f->cp, &sh));
  assert_int_equal(sh.generation, 2);
}

static void inventory_ends_the_wait(void **state) {
  fx *f = *state;
  bring_up(f, 12);
  char inc[CP_INC_MAX];
  snprintf(inc, sizeof inc, "%s", f->inc);
  cp_state_close(&f->cp);
  fx_open(f, INST2);
  assert_true(cp_waiting_for_inventories(&f->cp));
  cp_inv_entry e = inv(f, COPY0, 12, 1);
  cp_outcome o;
  cp_heartbeat(&f->cp, "b1", inc, &e, 1, &o); /* the broker kept its incarnation */
  assert_int_equal(o.status, 200);
  assert_false(cp_waiting_for_inventories(&f->cp));
  assert_string_equal(shard0(f).state, "Active"); /* no failover storm */
}


int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(generation_one_waits_for_the_empty_copy, setup, teardown),
      cmocka_unit_test_setup_teardown(report_acceptance, setup, teardown),
      cmocka_unit_test_setup_teardown(reregistered_leader_gets_next_generation, setup, teardown),
      cmocka_unit_test_setup_teardown(lapsed_leader_is_no_caught_up_until_it_reports, setup, teardown),
      cmocka_unit_test_setup_teardown(a_copy_missing_from_a_registration_is_forgotten, setup, teardown),
      cmocka_unit_test_setup_teardown(rotated_storage_id_is_not_eligible, setup, teardown),
      cmocka_unit_test_setup_teardown(short_copy_waits_until_it_catches_up, setup, teardown),
      cmocka_unit_test_setup_teardown(heartbeat_inventory_below_floor_is_not_a_loss, setup, teardown),
      cmocka_unit_test_setup_teardown(fence_not_complete_within_a_lease_passes_the_leader_elect_over, setup, teardown),
      cmocka_unit_test_setup_teardown(live_duplicate_storage_id_is_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(stream_creation_refusals, setup, teardown),
      cmocka_unit_test_setup_teardown(restart_waits_for_inventories, setup, teardown),
      cmocka_unit_test_setup_teardown(report_of_a_deleted_stream_changes_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(inventory_ends_the_wait, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
