/* test_formal_twins.c — the tie of docs/formal/ to the code (issue 6): one
 * test per violating twin of shard.pml (docs/formal/README.md,
 * "Configurations"). Each replays the violating step of that twin's
 * counterexample against the real pure decision (lib/) or the control-plane
 * engine (cp_*, on a temp SQLite store), and asserts the code refuses where
 * the twin did not. Brokers A, B, C are brokers 0, 1, 2 of the model; W is
 * the model's one client write (offset 0 of generation 1 unless said). */
#include "testutil.h"

#include "felix/logfmt.h"
#include "control-plane/state.h"
#include "felix/identity.h"
#include "felix/placement.h"
#include "felix/replication.h"

/* ---- identity (felix_identity_decide) ---- */

static int sync_calls;

static int fake_sync_ok(void *ctx) {
  (void)ctx;
  sync_calls++;
  return 0; /* a succeeding sync: only the token can make it rotate */
}

static felix_identity_verdict decide_id(felix_fsync_mode mode, const char *last_boot, bool token) {
  felix_identity_facts f = {.last_run = FELIX_LAST_RUN_CRASHED, .last_mode = mode, .last_boot_known = last_boot != NULL,
                            .last_boot_id = last_boot, .current_boot_id = "boot-2", .boot_token_present = token};
  felix_identity_verdict v;
  sync_calls = 0;
  felix_identity_decide(&f, fake_sync_ok, NULL, &v);
  return v;
}

/* twin-no-rotation-on-crash: W acknowledged by A+B, HWM 0, B measured at 1;
 * B loses power (periodic, W unsynced) and comes back on a new boot with its
 * ids kept, so its old measurement and its fence answer count without W.
 * Real: the crash under a relaxed mode on another boot rotates the storage id
 * (then rebind_copy in broker/startup.c renews the copy id, cp_register's
 * forget_copies makes the slot a stranger). Without the rule rotate is false. */
static void twin_no_rotation_on_crash(void **s) {
  (void)s;
  felix_identity_verdict v = decide_id(FELIX_FSYNC_PERIODIC, "boot-1", false);
  assert_true(v.rotate);
  assert_non_null(strstr(v.reason, "another boot"));
}

/* twin-mixed-no-rotation-on-crash: as twin-no-rotation-on-crash with an
 * on_commit leader A and periodic followers. The decision is per data
 * directory (its last run's mode): periodic B rotates after a power loss on
 * another boot, whatever mode A runs. Fails if B kept its ids. */
static void twin_mixed_no_rotation_on_crash(void **s) {
  (void)s;
  assert_true(decide_id(FELIX_FSYNC_PERIODIC, "boot-1", false).rotate); /* follower B */
  assert_true(decide_id(FELIX_FSYNC_NONE, "boot-1", false).rotate);
}

/* twin-no-boot-token: a sync on B fails (pages clean but lost, token
 * removed by broker_fail_closed), B exits and restarts on the same boot; the
 * twin keeps its ids, the pages are evicted later under unchanged ids.
 * Real: crashed on this same boot with no token rotates, and does not even
 * try the sync (a sync now cannot vouch for pages already dropped). Fails if
 * the token were not consulted: the succeeding sync would keep the ids. */
static void twin_no_boot_token(void **s) {
  (void)s;
  felix_identity_verdict v = decide_id(FELIX_FSYNC_PERIODIC, "boot-2", false);
  assert_true(v.rotate);
  assert_int_equal(sync_calls, 0);
  assert_non_null(strstr(v.reason, "token is missing"));
}

/* twin-oncommit-same-boot-no-token: under on_commit a sync error on B, then a
 * same-boot restart keeps its ids without token and sync; the failed pages
 * count as held, then vanish. Real: on_commit does not skip the same-boot
 * row: no token rotates (with a recorded boot id, and with none). Fails if
 * on_commit kept ids on this boot unconditionally. */
static void twin_oncommit_same_boot_no_token(void **s) {
  (void)s;
  felix_identity_verdict v = decide_id(FELIX_FSYNC_ON_COMMIT, "boot-2", false);
  assert_true(v.rotate);
  assert_int_equal(sync_calls, 0);
  assert_true(decide_id(FELIX_FSYNC_ON_COMMIT, NULL, false).rotate); /* no boot id recorded: may be this boot */
}

/* ---- placement (felix_decide_failover) ---- */

/* twin-no-id-check-in-placement: W acked by A+B, reported with B measured at
 * 1 but HWM 0; B loses power (rotates, new copy b2), A dies; placement
 * ignores the copy id and promotes B on its old measurement. Real: B's
 * inventory names b2, not the slot's b1: excluded before its measurement is
 * even read; and once cp_register's forget_copies cleared the slot it is a
 * stranger. Without the check B (measured 1 >= max hwm 0) is eligible and,
 * ranking (1,1) over C's (0,0), chosen. */
static void twin_no_id_check_in_placement(void **s) {
  (void)s;
  felix_copy_view c[3] = {
      {.broker = "A", .alive = false, .slot_copy_id = "a1", .measured = true, .confirmed = 1, .last_generation = 1},
      {.broker = "B", .alive = true, .slot_copy_id = "b1", .has_inventory = true, .inv_copy_id = "b2",
       .log_end = 0, .last_generation = 0, .measured = true, .confirmed = 1},
      {.broker = "C", .alive = true, .slot_copy_id = "c1", .has_inventory = true, .inv_copy_id = "c1",
       .log_end = 0, .last_generation = 0, .measured = true, .confirmed = 0},
  };
  felix_failover_verdict v;
  assert_int_not_equal(felix_decide_failover(c, 3, 0, 0, &v), 1);
  assert_non_null(strstr(v.reason[1], "copy id changed: b2 is not the recorded b1"));
  c[1].slot_copy_id = ""; /* as the store has it after the new storage id registered */
  c[1].stranger = true;
  assert_int_not_equal(felix_decide_failover(c, 3, 0, 0, &v), 1);
  assert_non_null(strstr(v.reason[1], "a stranger"));
}

/* ---- the fence (felix_fence_count) ---- */

/* twin-fence-counts-any-answer: B rotated (b1 -> b2) after acknowledging W;
 * A is killed; leader-elect C counts B's answer and with its own makes a
 * majority without W. Real: an answer counts only over the connection whose
 * copy id is the named one; B's (b2) is not b1, nor is any answer counted
 * for a slot named none (a stranger). Without the check counted = 2 = majority. */
static void twin_fence_counts_any_answer(void **s) {
  (void)s;
  felix_fence_slot f[3] = {
      {.broker = "A", .named_copy_id = "a1"},
      {.broker = "B", .named_copy_id = "b1", .answered = true, .answer_copy_id = "b2", .rank = {0, 0}},
      {.broker = "C", .named_copy_id = "c1", .answered = true, .answer_copy_id = "c1", .rank = {0, 0}, .self = true},
  };
  felix_fence_verdict v;
  felix_fence_count(f, 3, 0, &v);
  assert_int_equal(v.counted, 1);
  assert_false(v.complete);
  assert_int_equal(v.adopt, -1);
  assert_non_null(strstr(v.why[1], "answered as copy b2, the assignment names b1"));
  f[1].named_copy_id = NULL; /* assignment made after B re-registered: a stranger is named none */
  felix_fence_count(f, 3, 0, &v);
  assert_false(v.complete);
}

/* twin-no-copy-id: B's shard directory is deleted and made anew (empty);
 * without copy ids it keeps its identity, A is killed, and C's fence counts
 * B's empty copy with its own: a majority without W. Real: the new directory
 * has a new copy id (shard_create_copy; the control plane forgets the old one
 * on "gone", note_copy in control-plane/decide.c), and its answer under it is not
 * counted for the named old one. Floor 0, rank (0,0): only the id refuses. */
static void twin_no_copy_id(void **s) {
  (void)s;
  felix_fence_slot f[3] = {
      {.broker = "A", .named_copy_id = "a1"},
      {.broker = "B", .named_copy_id = "b1", .answered = true, .answer_copy_id = "b1new", .rank = {0, 0}},
      {.broker = "C", .named_copy_id = "c1", .answered = true, .answer_copy_id = "c1", .rank = {0, 0}, .self = true},
  };
  felix_fence_verdict v;
  felix_fence_count(f, 3, 0, &v);
  assert_false(v.complete);
  assert_non_null(strstr(v.why[1], "not counted"));
}

/* twin-blind-reclaim: A (leader) and B lose power after W was committed (max
 * hwm 1) and both rotate; C (measured 0) is not caught up: no copy eligible.
 * The twin names A again without measuring the followers and counts A's own
 * short copy: A + C form a "majority" without W. Real: no reclaim exists;
 * felix_decide_failover finds no copy (control-plane/decide.c's failover marks the shard
 * NoCaughtUpReplica), and were A named, its stranger slot has no named copy
 * (control-plane/broker_api.c's assignment sends named_copy_id null), so A's own
 * promise is not counted. Fails if A's rotated copy were trusted. */
static void twin_blind_reclaim(void **s) {
  (void)s;
  felix_copy_view c[3] = {
      {.broker = "A", .alive = true, .slot_copy_id = "a2", .stranger = true, .has_inventory = true,
       .inv_copy_id = "a2", .log_end = 0},
      {.broker = "B", .alive = true, .slot_copy_id = "b2", .stranger = true, .has_inventory = true,
       .inv_copy_id = "b2", .log_end = 0},
      {.broker = "C", .alive = true, .slot_copy_id = "c1", .has_inventory = true, .inv_copy_id = "c1",
       .log_end = 0, .measured = true, .confirmed = 0},
  };
  felix_failover_verdict fv;
  assert_int_equal(felix_decide_failover(c, 3, 1, 1, &fv), -1);
  felix_fence_slot f[3] = {
      {.broker = "A", .named_copy_id = NULL, .answered = true, .answer_copy_id = "a2", .rank = {0, 0}, .self = true},
      {.broker = "B", .named_copy_id = NULL},
      {.broker = "C", .named_copy_id = "c1", .answered = true, .answer_copy_id = "c1", .rank = {0, 0}},
  };
  felix_fence_verdict v;
  felix_fence_count(f, 3, 1, &v);
  assert_int_equal(v.counted, 1);
  assert_false(v.complete);
  assert_int_equal(v.at_risk, 1);
  assert_non_null(strstr(v.why[0], "names no trusted copy"));
}

/* twin-reclaim-without-counted-majority: the whole rack loses power, every
 * copy rotates; the reclaim names old leader A and, without the
 * counted-majority guard, A serves its short copy. Real: every slot is a
 * stranger (named none), the fence counts nothing and never completes
 * (fence_evaluate in broker/peer_lead.c finishes only on v.complete); the
 * failover finds no copy: NoCaughtUpReplica. Fails if a fence could end on
 * fewer than a majority of counted answers. */
static void twin_reclaim_without_counted_majority(void **s) {
  (void)s;
  felix_copy_view c[3] = {
      {.broker = "A", .alive = true, .slot_copy_id = "", .stranger = true, .has_inventory = true, .inv_copy_id = "a2"},
      {.broker = "B", .alive = true, .slot_copy_id = "", .stranger = true, .has_inventory = true, .inv_copy_id = "b2"},
      {.broker = "C", .alive = true, .slot_copy_id = "", .stranger = true, .has_inventory = true, .inv_copy_id = "c2"},
  };
  felix_failover_verdict fv;
  assert_int_equal(felix_decide_failover(c, 3, 1, 1, &fv), -1);
  felix_fence_slot f[3] = {
      {.broker = "A", .answered = true, .answer_copy_id = "a2", .rank = {0, 0}, .self = true},
      {.broker = "B", .answered = true, .answer_copy_id = "b2", .rank = {0, 0}},
      {.broker = "C", .answered = true, .answer_copy_id = "c2", .rank = {0, 0}},
  };
  felix_fence_verdict v;
  felix_fence_count(f, 3, 1, &v);
  assert_int_equal(v.counted, 0);
  assert_false(v.complete);
  assert_int_equal(v.adopt, -1);
}

/* twin-pinned-shortcut-without-active: C is placed at generation 2 and killed
 * before its fence completes (generation 2 never Active); placed again at 3,
 * it ends the fence on its own copy by the pinned-leader shortcut and serves
 * without W (held by A and B). Real: there is no shortcut; fence_evaluate
 * ends a fence only when felix_fence_count counts a majority, so C's own
 * counted promise alone (A, B not yet answered) is not enough. And the
 * precondition of the shortcut is refused too: a report at HWM = the start
 * record's offset does not make generation 2 Active. Fails if one counted
 * answer (the pinned leader's) could end the fence. */
static void twin_pinned_shortcut_without_active(void **s) {
  (void)s;
  felix_pin pin2 = {.generation = 2, .broker = "C", .copy_id = "c1", .incarnation = "ic2"};
  felix_shard_report r2 = {.broker = "C", .copy_id = "c1", .incarnation = "ic2", .generation = 2, .hwm = 0,
                           .generation_start = 0, .last_generation = 2, .log_end = 1};
  felix_report_verdict rv;
  felix_judge_report(&pin2, 0, 0, &r2, &rv);
  assert_false(rv.active);
  felix_fence_slot f[3] = {
      {.broker = "A", .named_copy_id = "a1", .floor = 0},
      {.broker = "B", .named_copy_id = "b1", .floor = 0},
      {.broker = "C", .named_copy_id = "c1", .answered = true, .answer_copy_id = "c1", .rank = {0, 0}, .self = true},
  };
  felix_fence_verdict v;
  felix_fence_count(f, 3, 0, &v);
  assert_int_equal(v.counted, 1);
  assert_false(v.complete);
}

/* ---- HWM and acknowledgement (felix_hwm_compute, felix_ack_ready) ---- */

/* twin-oncommit-ack-without-own-copy: under on_commit leader A counts its
 * written-not-synced W (log end 1, held 0) with B (held 1), acknowledges,
 * loses W in a power loss, keeps its ids (on_commit, another boot) and serves
 * without it. Real: rule 2, the leader counts only what it holds (check_acks
 * and recompute_hwm pass st.held_end, the synced end under on_commit): no
 * majority with the leader in it holds W, so the HWM stays 0 and nothing is
 * acknowledged. Fails if the leader counted its written end. */
static void twin_oncommit_ack_without_own_copy(void **s) {
  (void)s;
  felix_follower_hold f[2] = {{.counted = true, .trusted = true, .held = 1}, {.counted = true, .trusted = true, .held = 0}};
  felix_hwm_input in = {.replicas = 3, .leader_counts = true, .leader_held = 0, .generation_start = 0, .hwm = 0,
                        .followers = f, .nfollowers = 2};
  assert_int_equal(felix_hwm_compute(&in), 0);
  f[1].held = 1; /* even with both followers holding it, the leader is in every majority */
  assert_int_equal(felix_hwm_compute(&in), 0);
  for (int policy = FELIX_ACK_QUORUM; policy <= FELIX_ACK_ALL; policy++) {
    felix_ack_input a = {.policy = policy, .end = 1, .hwm = 1, .leader_counts = true, .leader_held = 0,
                         .lease_valid = true, .trusted_replicas = 3, .followers = f, .nfollowers = 2};
    assert_false(felix_ack_ready(&a));
  }
}

/* twin-old-leader-appends-after-promise (NV=2): A drains; B's fence takes
 * A's promise for generation 2, but A keeps appending W2 (offset 1) in
 * generation 1 and counts itself with C (held 2): W2 "committed" and
 * acknowledged in a generation already handed over. Real: take_promise
 * (broker/peer_follow.c) calls shard_stop_leading, so not_serving refuses
 * appends, and the pure rules give such a copy no vote: with leader_counts
 * false (the ballot no longer names this process at this generation) the HWM
 * stays 1 and nothing is acknowledged. Fails if leader_counts were ignored. */
static void twin_old_leader_appends_after_promise(void **s) {
  (void)s;
  felix_follower_hold f[2] = {{.counted = true, .trusted = true, .held = 1}, {.counted = true, .trusted = true, .held = 2}};
  felix_hwm_input in = {.replicas = 3, .leader_counts = false, .leader_held = 2, .generation_start = 0, .hwm = 1,
                        .followers = f, .nfollowers = 2};
  assert_int_equal(felix_hwm_compute(&in), 1);
  felix_ack_input a = {.policy = FELIX_ACK_LEADER, .end = 2, .hwm = 2, .leader_counts = false, .leader_held = 2,
                       .lease_valid = true, .trusted_replicas = 3, .followers = f, .nfollowers = 2};
  assert_false(felix_ack_ready(&a));
  a.policy = FELIX_ACK_QUORUM;
  assert_false(felix_ack_ready(&a));
}

/* twin-no-generation-start-record: A commits W (HWM 1, A+B hold it) and is
 * killed before reporting (max hwm 0). B's fence writes no start record, so
 * generation 2 becomes Active at its first report with HWM 0: committed W
 * hidden. Real: shard_become_leader appends the start record (offset 1,
 * generation_start 1); the HWM moves only past it (felix_hwm_compute counts n
 * > generation_start), and felix_judge_report makes the generation Active
 * only when hwm > generation_start. So the HWM-0 report is accepted but not
 * Active; once C holds the start record the HWM (2) covers W. Fails if a
 * report made a generation Active at its start. */
static void twin_no_generation_start_record(void **s) {
  (void)s;
  felix_follower_hold f[2] = {{.counted = false}, {.counted = true, .trusted = true, .held = 1}}; /* A down, C has W */
  felix_hwm_input in = {.replicas = 3, .leader_counts = true, .leader_held = 2, .generation_start = 1, .hwm = 0,
                        .followers = f, .nfollowers = 2};
  uint64_t h = felix_hwm_compute(&in);
  assert_int_equal(h, 0); /* rule 3 (the HWM_OLD_GEN switch): W, of generation 1, is not counted */
  felix_pin pin = {.generation = 2, .broker = "B", .copy_id = "b1", .incarnation = "ib1"};
  felix_shard_report r = {.broker = "B", .copy_id = "b1", .incarnation = "ib1", .generation = 2, .hwm = (int64_t)h,
                          .generation_start = 1, .last_generation = 2, .log_end = 2};
  felix_report_verdict v;
  felix_judge_report(&pin, 0, 0, &r, &v);
  assert_true(v.accepted);
  assert_false(v.active);
  f[1].held = 2; /* C confirms the start record */
  r.hwm = (int64_t)felix_hwm_compute(&in);
  assert_int_equal(r.hwm, 2);
  felix_judge_report(&pin, 0, 0, &r, &v);
  assert_true(v.active);
}

/* ---- measurements (felix_judge_measurement) ---- */

/* twin-cursor-not-reset: B is wiped (new copy b2, empty) and comes back a
 * stranger; A keeps B's old cursor (1, W) under b2, commits with it and
 * clears the stranger; B then wins the fence without W. Real: the cursor
 * reset is measure() in broker/peer_lead.c (a new copy id sets held = 0,
 * h0 = the leader's log end, ships from the log start); this test replays
 * the pure halves: (1) a measurement carried under the old copy id b1 does
 * not count for the slot's b2; (2) with the reset cursor (held 0 < h0 1) the
 * stranger stays and B adds nothing to the HWM. Assertion (1) fails if the
 * copy-id check in felix_judge_measurement were removed, (2) if a stranger
 * were trusted below h0; the reset itself is only in measure(). */
static void twin_cursor_not_reset(void **s) {
  (void)s;
  felix_slot_trust slot = {.copy_id = "b2", .stranger = true, .confirmed = 0, .floor = 0};
  felix_measure_verdict v;
  felix_follower_measure old = {.copy_id = "b1", .connected = true, .held = 1, .h0 = 0};
  felix_judge_measurement(&slot, &old, true, 1, &v);
  assert_true(v.stranger);
  assert_false(v.changed);
  felix_follower_measure reset = {.copy_id = "b2", .connected = true, .held = 0, .h0 = 1};
  felix_judge_measurement(&slot, &reset, true, 0, &v);
  assert_true(v.stranger);
  felix_follower_hold f[2] = {{.counted = true, .trusted = false, .held = 0}, {.counted = false}}; /* B reset, C down */
  felix_hwm_input in = {.replicas = 3, .leader_counts = true, .leader_held = 1, .generation_start = 0, .hwm = 0,
                        .followers = f, .nfollowers = 2};
  assert_int_equal(felix_hwm_compute(&in), 0);
}

/* ---- the control-plane engine (cp_register / cp_report on a temp store) ---- */

#define SID1 "11111111111111111111111111111111"
#define SID2 "22222222222222222222222222222222"
#define COPY0 "c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0"
#define COPY9 "c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9c9"
#define INST1 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

typedef struct fx {
  char *dir, *db;
  cp_state cp;
  uint64_t t;
  char inc[CP_INC_MAX];
  char uuid[40];
} fx;

static int setup(void **state) {
  felix_log_set_level(FELIX_LOG_WARN);
  fx *f = calloc(1, sizeof *f);
  f->dir = tu_mkdtemp();
  f->db = tu_path(f->dir, "cp.db");
  felix_err err;
  f->t = 1000;
  assert_int_equal(cp_state_open(&f->cp, f->db, INST1, 5000, f->t, &err), FELIX_OK);
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

/* prev: the storage id b1's directory rotated away from (NULL: none). */
static int do_register_from(fx *f, const char *sid, const char *prev, const cp_inv_entry *e, size_t n) {
  cp_register_req r = {.broker_id = "b1", .storage_id = sid, .boot_id = "boot", .fsync_mode = "periodic",
                       .address = "127.0.0.1:7101", .http_address = "", .previous_storage_id = prev,
                       .inv = e, .ninv = n};
  cp_outcome o;
  cp_register(&f->cp, &r, f->inc, &o);
  return o.status;
}

static int do_register(fx *f, const char *sid, const cp_inv_entry *e, size_t n) {
  cp_register_req r = {.broker_id = "b1", .storage_id = sid, .boot_id = "boot", .fsync_mode = "periodic",
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

/* A report of b1 as incarnation inc and copy copy; returns the number
 * accepted (0 also when the incarnation is refused with 409). */
static int report(fx *f, const char *inc, const char *copy, int64_t seq, int64_t gen, int64_t hwm, char *reason) {
  cp_report_shard r = {.stream = "orders", .shard = 0, .generation = gen, .copy_id = copy, .log_end = hwm,
                       .last_generation = gen, .generation_start = 0, .hwm = hwm};
  cp_report_rejection rej[1];
  size_t nrej = 0;
  cp_outcome o;
  int n = cp_report(&f->cp, "b1", inc, seq, &r, 1, rej, &nrej, &o);
  snprintf(reason, 200, "%.199s", o.status != 200 ? o.error : nrej ? rej[0].reason : "");
  return n;
}

/* b1 (SID1) registered, "orders" (one replica) created, copy COPY0 listed,
 * generation 1 pinned to it, and (hwm > 0) Active at max hwm hwm. */
static void bring_up(fx *f, int64_t hwm) {
  assert_int_equal(do_register(f, SID1, NULL, 0), 200);
  cp_stream_row s;
  cp_outcome o;
  cp_stream_create(&f->cp, "orders", 1, 1, "quorum", &s, &o);
  assert_int_equal(o.status, 201);
  snprintf(f->uuid, sizeof f->uuid, "%s", s.uuid);
  cp_inv_entry e = inv(f, COPY0, 0, 0);
  cp_heartbeat(&f->cp, "b1", f->inc, &e, 1, &o);
  assert_int_equal(o.status, 200);
  char why[200];
  if (hwm > 0) assert_int_equal(report(f, f->inc, COPY0, 1, 1, hwm, why), 1);
  assert_int_equal(shard0(f).generation, 1);
}

/* twin-returning-leader-by-registration: leader A loses W in a power loss
 * and returns with new ids; compared with its latest registration it still
 * looks like generation 1's pinned leader, and the pinned-leader shortcut
 * ends the generation-2 fence on its own short copy. Real: the pin is the
 * (copy id, incarnation) issue_generation stored; cp_register leaves it,
 * forgets the slot's copy (new storage id) and leader_lost sees the new
 * incarnation: the failover finds the stranger ineligible (NoCaughtUpReplica,
 * generation 1 unchanged, pin still COPY0 and the old incarnation), and
 * felix_judge_report refuses the returned process's report. (The C fence has
 * no shortcut at all: see twin_pinned_shortcut_without_active.) Fails if the
 * pin followed the registration: the report would be accepted. */
static void twin_returning_leader_by_registration(void **state) {
  fx *f = *state;
  char why[200], old_inc[CP_INC_MAX];
  bring_up(f, 12);
  snprintf(old_inc, sizeof old_inc, "%s", f->inc);
  cp_inv_entry e = inv(f, COPY9, 11, 1); /* rotated storage id, new copy id, lost its tail */
  assert_int_equal(do_register_from(f, SID2, SID1, &e, 1), 200);
  cp_shard_row sh = shard0(f);
  assert_int_equal(sh.generation, 1);
  assert_string_equal(sh.leader_copy_id, COPY0);
  assert_string_equal(sh.leader_incarnation, old_inc);
  assert_string_equal(sh.state, "NoCaughtUpReplica");
  assert_true(sh.slots[0].stranger);
  assert_int_equal(report(f, f->inc, COPY9, 1, 1, 12, why), 0);
  assert_string_equal(why, "not the pinned leader of generation 1");
  felix_pin pin = {.generation = 1, .broker = "b1", .copy_id = COPY0, .incarnation = old_inc};
  felix_shard_report r = {.broker = "b1", .copy_id = COPY9, .incarnation = f->inc, .generation = 1, .hwm = 12, .log_end = 12};
  felix_report_verdict v;
  felix_judge_report(&pin, 12, 1, &r, &v);
  assert_false(v.accepted);
}

/* twin-same-id-restart-resumes: leader A is killed and restarted with the
 * same ids (same boot, token present) and resumes generation 1: two
 * processes acknowledge in it (OneLeaderPerGeneration). Real: a generation
 * belongs to one incarnation. The registration of a new incarnation makes
 * the pinned leader lost (leader_lost in control-plane/decide.c) and issues generation
 * 2 = felix_next_generation(1, seen) to the new process, which must fence
 * it; the new process's report for generation 1 is refused (pin by
 * incarnation, felix_judge_report), the old process is no longer anyone
 * (409). On the broker, shard_apply_assignment leads only when the pin
 * names this incarnation, and peer_start_fence's led_generation check stops
 * a process fencing a generation it already led. Fails if re-registration
 * left generation 1 in place or the pin ignored the incarnation. */
static void twin_same_id_restart_resumes(void **state) {
  fx *f = *state;
  char why[200], old_inc[CP_INC_MAX];
  bring_up(f, 12);
  snprintf(old_inc, sizeof old_inc, "%s", f->inc);
  cp_inv_entry e = inv(f, COPY0, 12, 1);
  assert_int_equal(do_register(f, SID1, &e, 1), 200); /* same storage id, same copy id */
  cp_shard_row sh = shard0(f);
  assert_int_equal(sh.generation, 2);
  assert_string_equal(sh.leader_incarnation, f->inc);
  assert_string_equal(sh.state, "Fencing");
  assert_int_equal(report(f, f->inc, COPY0, 1, 1, 13, why), 0);
  assert_string_equal(why, "not the pinned leader of generation 2");
  assert_int_equal(report(f, old_inc, COPY0, 2, 1, 13, why), 0);
  assert_non_null(strstr(why, "is not the current one"));
  felix_pin pin1 = {.generation = 1, .broker = "b1", .copy_id = COPY0, .incarnation = old_inc};
  felix_shard_report r = {.broker = "b1", .copy_id = COPY0, .incarnation = f->inc, .generation = 1, .hwm = 13, .log_end = 13};
  felix_report_verdict v;
  felix_judge_report(&pin1, 12, 1, &r, &v);
  assert_false(v.accepted);
}

/* twin-copy-id-not-bound: B loses power and its storage-id file; a new
 * storage id is created ("already new": no rotation), but the copy id is
 * not renewed, so its short copy (it lost W; HWM and floor 0) is trusted.
 * Real: rebind_copy (broker/startup.c) renews a copy id made under another
 * storage id; independently the control plane binds a slot's copy to the
 * storage id it was made under: cp_register's forget_copies makes the slot a
 * stranger even if the same copy id comes back, so no failover picks it.
 * Replayed with one replica (the slot rule is per slot, not per role).
 * Fails if the binding were removed: COPY0 at 0 >= floor 0 would be eligible
 * and generation 2 issued on it. */
static void twin_copy_id_not_bound(void **state) {
  fx *f = *state;
  bring_up(f, 0);
  felix_identity_facts idf = {.storage_id_created = true, .last_run = FELIX_LAST_RUN_CRASHED,
                              .last_mode = FELIX_FSYNC_PERIODIC, .current_boot_id = "boot-2"};
  felix_identity_verdict iv;
  felix_identity_decide(&idf, NULL, NULL, &iv);
  assert_false(iv.rotate); /* the premise: the new storage id is the only renewal */
  cp_inv_entry e = inv(f, COPY0, 0, 0); /* the twin's unrenewed copy id */
  assert_int_equal(do_register(f, SID2, &e, 1), 200);
  assert_true(shard0(f).slots[0].stranger);
  /* A storage id made anew, not rotated from the registered one: the shard
   * moves once the old process's lease has passed (review 5, item 6). */
  for (int k = 0; k < 52; k++) { /* the lease clock advances in ticks; b1 heartbeats on */
    cp_outcome o;
    cp_heartbeat(&f->cp, "b1", f->inc, NULL, 0, &o);
    assert_int_equal(o.status, 200);
    f->t += 100;
    cp_state_tick(&f->cp, f->t);
  }
  cp_shard_row sh = shard0(f);
  assert_true(sh.slots[0].stranger);
  assert_int_equal(sh.generation, 1);
  assert_string_equal(sh.state, "NoCaughtUpReplica");
}

/* twin-leader-does-not-give-up: leader A loses W in a power loss, rotates,
 * and, not giving up, resumes the generation its ballot names (under its new
 * ids) and serves without W. Real: rebind_copy clears the ballot's leader
 * when the copy id is renewed, and shard_apply_assignment refuses to lead
 * when the pin names another copy or incarnation; the pure rules give a
 * process its ballot does not name no vote (leader_counts false: HWM kept,
 * nothing acknowledged) and the control plane refuses its report under the
 * new ids. Fails if the identity kept A's ids, if a copy its ballot does not
 * name could count itself, or if the report were accepted. */
static void twin_leader_does_not_give_up(void **s) {
  (void)s;
  assert_true(decide_id(FELIX_FSYNC_PERIODIC, "boot-1", false).rotate);
  /* A (empty after the crash) appends V at offset 0 of generation 1 and ships
   * it to C; B still holds W at offset 0 (measured 0: it diverges). */
  felix_follower_hold f[2] = {{.counted = true, .trusted = true, .held = 0}, {.counted = true, .trusted = true, .held = 1}};
  felix_hwm_input in = {.replicas = 3, .leader_counts = false, .leader_held = 1, .generation_start = 0, .hwm = 0,
                        .followers = f, .nfollowers = 2};
  assert_int_equal(felix_hwm_compute(&in), 0);
  felix_ack_input a = {.policy = FELIX_ACK_LEADER, .end = 1, .leader_counts = false, .leader_held = 1,
                       .lease_valid = true, .trusted_replicas = 3, .followers = f, .nfollowers = 2};
  assert_false(felix_ack_ready(&a));
  felix_pin pin = {.generation = 1, .broker = "A", .copy_id = "a1", .incarnation = "ia1"};
  felix_shard_report r = {.broker = "A", .copy_id = "a2", .incarnation = "ia2", .generation = 1, .hwm = 1, .log_end = 1};
  felix_report_verdict v;
  felix_judge_report(&pin, 0, 0, &r, &v);
  assert_false(v.accepted);
}

/* ---- twins of the newer configurations (configs.tsv) ---- */

/* twin-hwm-old-generation (partitions across three generations): the
 * leader of generation 3 holds a generation-1 record at offset 0 that a
 * majority now holds, and moves its HWM over it before its own start record
 * is held by a majority; a later leader holding another record at 0 (of
 * generation 2, higher rank) overwrites the "committed" one. Real: rule 3
 * counts only n > generation_start (record n-1 of the leader's generation):
 * HWM stays 0 with the start record (offset 1) held by the leader alone.
 * Fails if records of an older generation could be counted. */
static void twin_hwm_old_generation(void **s) {
  (void)s;
  felix_follower_hold f[2] = {{.counted = true, .trusted = true, .held = 1}, {.counted = false}};
  felix_hwm_input in = {.replicas = 3, .leader_counts = true, .leader_held = 2, .generation_start = 1, .hwm = 0,
                        .followers = f, .nfollowers = 2};
  assert_int_equal(felix_hwm_compute(&in), 0);
}

/* twin-rank-by-offset: two eligible copies, X ends with a record of
 * generation 2 (log end 1), Y with generation-1 records (log end 2); the
 * twin picks Y, the furthest by offset, whose tail was never committed, and
 * loses X's acknowledged record. Real: placement and the fence rank by the
 * last generation first: X is chosen and adopted. Fails if log end ranked first. */
static void twin_rank_by_offset(void **s) {
  (void)s;
  felix_copy_view c[2] = {
      {.broker = "Y", .alive = true, .slot_copy_id = "y1", .has_inventory = true, .inv_copy_id = "y1",
       .log_end = 2, .last_generation = 1, .measured = true, .confirmed = 1},
      {.broker = "X", .alive = true, .slot_copy_id = "x1", .has_inventory = true, .inv_copy_id = "x1",
       .log_end = 1, .last_generation = 2, .measured = true, .confirmed = 1},
  };
  felix_failover_verdict v;
  assert_int_equal(felix_decide_failover(c, 2, 1, 1, &v), 1);
  felix_fence_slot f[3] = {
      {.broker = "Y", .named_copy_id = "y1", .answered = true, .answer_copy_id = "y1", .rank = {1, 2}, .self = true},
      {.broker = "X", .named_copy_id = "x1", .answered = true, .answer_copy_id = "x1", .rank = {2, 1}},
      {.broker = "Z", .named_copy_id = "z1"},
  };
  felix_fence_verdict fv;
  felix_fence_count(f, 3, 1, &fv);
  assert_true(fv.complete);
  assert_int_equal(fv.adopt, 1);
}

/* twin-generation-from-store: after a control-plane rollback the store says
 * generation 1 while generation 2 was issued (and seen in a ballot); the twin
 * numbers the next one 2 from the store alone, reusing a number copies
 * already promised. Real: felix_next_generation goes above stored and seen
 * (note_copy and judge_one raise seen_generation). Fails if seen were ignored. */
static void twin_generation_from_store(void **s) {
  (void)s;
  assert_int_equal(felix_next_generation(1, 2), 3);
}

/* twin-no-floor-check (hand-restored directory): B's directory is restored
 * from an older snapshot under unchanged ids (holds 0; its floor is 1, W was
 * measured on it); without floors its answer and measurement still count and
 * a fence of B and C drops W. Real: a fence answer below the floor is not
 * counted; a measurement below the floor makes the copy a stranger (so does
 * a registration's inventory, note_copy in control-plane/decide.c). Fails without floors. */
static void twin_no_floor_check(void **s) {
  (void)s;
  felix_fence_slot f[3] = {
      {.broker = "A", .named_copy_id = "a1", .floor = 1},
      {.broker = "B", .named_copy_id = "b1", .floor = 1, .answered = true, .answer_copy_id = "b1", .rank = {0, 0}},
      {.broker = "C", .named_copy_id = "c1", .floor = 0, .answered = true, .answer_copy_id = "c1", .rank = {0, 0}, .self = true},
  };
  felix_fence_verdict v;
  felix_fence_count(f, 3, 1, &v);
  assert_false(v.complete);
  assert_non_null(strstr(v.why[1], "below its floor 1"));
  felix_slot_trust slot = {.copy_id = "b1", .stranger = false, .confirmed = 1, .floor = 1};
  felix_follower_measure m = {.copy_id = "b1", .connected = true, .held = 0, .h0 = 0};
  felix_measure_verdict mv;
  felix_judge_measurement(&slot, &m, true, 1, &mv);
  assert_true(mv.stranger);
}

/* twin-stale-follower-hwm (review 5, item 3): B learned HWM 2 from A's
 * shipments of W and X in generation 1; A is destroyed, B pauses past its
 * lease, the operator abandons to C (empty): C serves [S2]; B resumes, is cut
 * to 0 and copied [S2] with its HWM 2 still in memory; C pauses, B is placed
 * at 3 and serves [S2, S3] with HWM 2 — S3 exposed while only B holds it, and
 * a record B appends next acknowledged on its copy alone. Real: peer_truncate
 * clamps the HWM and shard_become_leader starts from min(max HWM, held) alone
 * (broker code: tests/bats/t2150 "3:"); the pure rules below refuse a report
 * whose HWM is beyond the leader's log and acknowledge nothing that a
 * majority does not hold now, whatever the HWM says. */
static void twin_stale_follower_hwm(void **s) {
  (void)s;
  felix_follower_hold f[2] = {{.counted = true, .trusted = true, .held = 1}, {.counted = false}}; /* A' holds S2, C paused */
  felix_hwm_input h = {.replicas = 3, .leader_counts = true, .leader_held = 3, .generation_start = 1, .hwm = 0,
                       .followers = f, .nfollowers = 2};
  felix_ack_input a = {.policy = FELIX_ACK_QUORUM, .end = 3, .hwm = 3, .confirmed = felix_hwm_compute(&h),
                       .leader_counts = true, .leader_held = 3, .trusted_replicas = 3, .followers = f, .nfollowers = 2};
  assert_int_equal(a.confirmed, 0);
  assert_false(felix_ack_ready(&a)); /* Y at offset 2: the stale HWM covers it, no majority held it */
  f[0].held = 3;
  a.confirmed = felix_hwm_compute(&h);
  assert_true(felix_ack_ready(&a)); /* once A' holds it too */
  felix_pin pin = {.generation = 3, .broker = "B", .copy_id = "b1", .incarnation = "ib2"};
  felix_shard_report r = {.broker = "B", .copy_id = "b1", .incarnation = "ib2", .generation = 3, .hwm = 100,
                          .generation_start = 1, .last_generation = 3, .log_end = 3};
  felix_report_verdict v;
  felix_judge_report(&pin, 1, 2, &r, &v);
  assert_false(v.accepted); /* an HWM learned before the abandon, beyond the log: refused */
  assert_int_equal(v.max_hwm, 1);
}

/* twin-refence-served-generation: A led generation 1 (W committed, HWM 1);
 * a control plane rolled back to a backup pins A to generation 1 again; the
 * twin lets A fence generation 1 a second time and start from the restored
 * maximum HWM, hiding or exposing W before a majority of the second fence
 * holds it. Real: peer_start_fence asks felix_may_fence, which refuses a
 * generation at or below one the process led, and allows the next. Fails if
 * a process could fence a generation it already led. */
static void twin_refence_served_generation(void **s) {
  (void)s;
  assert_false(felix_may_fence(1, 1));
  assert_false(felix_may_fence(1, 2));
  assert_true(felix_may_fence(2, 1));
  assert_true(felix_may_fence(1, 0)); /* a process that led nothing yet */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(twin_no_id_check_in_placement),
      cmocka_unit_test(twin_no_rotation_on_crash),
      cmocka_unit_test(twin_blind_reclaim),
      cmocka_unit_test(twin_leader_does_not_give_up),
      cmocka_unit_test_setup_teardown(twin_returning_leader_by_registration, setup, teardown),
      cmocka_unit_test(twin_fence_counts_any_answer),
      cmocka_unit_test_setup_teardown(twin_same_id_restart_resumes, setup, teardown),
      cmocka_unit_test(twin_no_generation_start_record),
      cmocka_unit_test(twin_cursor_not_reset),
      cmocka_unit_test(twin_no_copy_id),
      cmocka_unit_test_setup_teardown(twin_copy_id_not_bound, setup, teardown),
      cmocka_unit_test(twin_no_boot_token),
      cmocka_unit_test(twin_old_leader_appends_after_promise),
      cmocka_unit_test(twin_reclaim_without_counted_majority),
      cmocka_unit_test(twin_pinned_shortcut_without_active),
      cmocka_unit_test(twin_oncommit_ack_without_own_copy),
      cmocka_unit_test(twin_oncommit_same_boot_no_token),
      cmocka_unit_test(twin_mixed_no_rotation_on_crash),
      cmocka_unit_test(twin_hwm_old_generation),
      cmocka_unit_test(twin_rank_by_offset),
      cmocka_unit_test(twin_generation_from_store),
      cmocka_unit_test(twin_no_floor_check),
      cmocka_unit_test(twin_stale_follower_hwm),
      cmocka_unit_test(twin_refence_served_generation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
