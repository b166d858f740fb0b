/* test_cp_adopt.c — `stream adopt` in the control-plane engine (control-plane/adopt.c,
 * DESIGN.md §4.8): a stream the store does not know is rebuilt from the live
 * brokers' inventories, every copy holding records a stranger, every
 * promised generation seen; and each refusal. */
#include "cp_fixture3.h"

#include "control-plane/adopt.h"

#define LOST_UUID "0b9c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3"
#define OTHER_UUID "1b9c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3"

/* Broker i's inventory entry for shard k of the lost stream "late". */
static cp_inv_entry late(fx *f, int k, const char *copy, int64_t log_end, int64_t ballot_gen) {
  cp_inv_entry e = inv(f, copy, log_end, ballot_gen, INST1);
  snprintf(e.stream, sizeof e.stream, "late");
  snprintf(e.stream_uuid, sizeof e.stream_uuid, LOST_UUID);
  e.shard = k;
  e.shards = 1;
  e.replicas = 3;
  snprintf(e.acks, sizeof e.acks, "quorum");
  return e;
}

static void three_brokers(fx *f) {
  for (int i = 0; i < 3; i++) assert_int_equal(do_register(f, i, sids[i], NULL, 0), 200);
}

static void adopt(fx *f, const char *name, const char *uuid, cp_stream_row *s, cp_outcome *o) {
  cp_stream_adopt(&f->cp, name, uuid, s, o);
}

static cp_shard_row late0(fx *f) {
  snprintf(f->uuid, sizeof f->uuid, LOST_UUID);
  return shard0(f);
}

static void adopts_copies_as_strangers_above_every_generation(void **state) {
  fx *f = *state;
  three_brokers(f);
  cp_inv_entry a = late(f, 0, copies[0], 40, 2), b = late(f, 0, copies[1], 38, 2), c = late(f, 0, copies[2], 12, 3);
  heartbeat(f, 0, &a);
  heartbeat(f, 1, &b);
  heartbeat(f, 2, &c);
  cp_stream_row s;
  cp_outcome o;
  adopt(f, "late", NULL, &s, &o);
  assert_int_equal(o.status, 201);
  assert_string_equal(s.uuid, LOST_UUID);
  assert_int_equal(s.replicas, 3);
  assert_int_equal(s.shards, 1);
  cp_shard_row sh = late0(f);
  assert_string_equal(sh.state, "NoCaughtUpReplica");
  assert_int_equal(sh.generation, 0);
  assert_int_equal(sh.seen_generation, 3);
  assert_int_equal(sh.nslots, 3);
  for (int i = 0; i < 3; i++) {
    assert_true(sh.slots[i].stranger); /* nothing it holds was measured */
    assert_int_equal(sh.slots[i].floor, 0);
  }
  assert_int_equal(felix_next_generation(sh.generation, sh.seen_generation), 4);
  adopt(f, "late", NULL, &s, &o);
  assert_int_equal(o.status, 409);
  assert_non_null(strstr(o.error, "stream late exists"));
}

static void refusals(void **state) {
  fx *f = *state;
  three_brokers(f);
  cp_stream_row s;
  cp_outcome o;
  adopt(f, "late", NULL, &s, &o);
  assert_int_equal(o.status, 404);
  assert_non_null(strstr(o.error, "no live broker lists a copy of stream late"));
  cp_inv_entry a = late(f, 0, copies[0], 40, 2), b = late(f, 0, copies[1], 38, 2);
  a.replicas = 0; /* an older copy: says nothing */
  b.replicas = 0;
  heartbeat(f, 0, &a);
  heartbeat(f, 1, &b);
  adopt(f, "late", NULL, &s, &o);
  assert_int_equal(o.status, 422);
  assert_non_null(strstr(o.error, "no copy of stream late says its shard count"));
  a.replicas = 3;
  b.replicas = 5;
  heartbeat(f, 0, &a);
  heartbeat(f, 1, &b);
  adopt(f, "late", NULL, &s, &o);
  assert_int_equal(o.status, 422);
  assert_non_null(strstr(o.error, "disagree"));
  b = late(f, 0, copies[1], 38, 2);
  snprintf(b.stream_uuid, sizeof b.stream_uuid, OTHER_UUID); /* another stream of that name */
  heartbeat(f, 1, &b);
  adopt(f, "late", NULL, &s, &o);
  assert_int_equal(o.status, 409);
  assert_non_null(strstr(o.error, "more than one stream"));
  adopt(f, "late", LOST_UUID, &s, &o); /* --uuid chooses, but b1 alone lists a copy of it */
  assert_int_equal(o.status, 422);
  assert_non_null(strstr(o.error, "live brokers list 1 of its 3 copies, fewer than a majority"));
  cp_inv_entry c = late(f, 0, copies[2], 12, 2);
  snprintf(c.cp_instance, sizeof c.cp_instance, "%s", INST2); /* built for another instance: not counted */
  heartbeat(f, 2, &c);
  adopt(f, "late", LOST_UUID, &s, &o);
  assert_int_equal(o.status, 422);
  c = late(f, 0, copies[2], 12, 2);
  heartbeat(f, 2, &c);
  adopt(f, "late", LOST_UUID, &s, &o);
  assert_int_equal(o.status, 201);
  cp_shard_row sh = late0(f);
  int empty = 0;
  for (int i = 0; i < sh.nslots; i++) empty += sh.slots[i].copy_id[0] == '\0';
  assert_int_equal(empty, 1); /* placed on the other live broker, which makes a new copy */
}

/* Found by the adversarial review: two replaced disks (empty copies that took
 * generation 5's pin) beside a missing copy that holds the records were
 * trusted at (0, 0), and a generation issued on them lost every record.
 * Empty copies are trusted only when all R are listed and none promised. */
static void empty_copies_beside_a_missing_one_are_strangers(void **state) {
  fx *f = *state;
  three_brokers(f);
  cp_inv_entry b = late(f, 0, copies[1], 0, 5), c = late(f, 0, copies[2], 0, 5);
  heartbeat(f, 1, &b);
  heartbeat(f, 2, &c);
  cp_stream_row s;
  cp_outcome o;
  adopt(f, "late", NULL, &s, &o);
  assert_int_equal(o.status, 201);
  cp_shard_row sh = late0(f);
  assert_string_equal(sh.state, "NoCaughtUpReplica");
  assert_int_equal(sh.generation, 0);
  for (int i = 0; i < sh.nslots; i++)
    if (sh.slots[i].copy_id[0]) assert_true(sh.slots[i].stranger);
}

static void empty_copies_start_like_a_new_shard(void **state) {
  fx *f = *state;
  three_brokers(f);
  for (int i = 0; i < 3; i++) {
    cp_inv_entry e = late(f, 0, copies[i], 0, 0); /* all R listed, empty, nothing promised */
    heartbeat(f, i, &e);
  }
  cp_stream_row s;
  cp_outcome o;
  adopt(f, "late", NULL, &s, &o);
  assert_int_equal(o.status, 201);
  cp_shard_row sh = late0(f);
  assert_int_equal(sh.generation, 1); /* issued at once */
  assert_string_equal(sh.state, "Fencing");
  for (int i = 0; i < 3; i++) assert_false(sh.slots[i].stranger);
}

static void a_deleted_stream_is_not_adopted(void **state) {
  fx *f = *state;
  three_brokers(f);
  cp_stream_row s;
  cp_outcome o;
  cp_stream_create(&f->cp, "late", 1, 3, "quorum", &s, &o);
  assert_int_equal(o.status, 201);
  cp_stream_delete(&f->cp, "late", &s, &o);
  assert_int_equal(o.status, 200);
  cp_inv_entry a = late(f, 0, copies[0], 4, 1);
  snprintf(a.stream_uuid, sizeof a.stream_uuid, "%s", s.uuid);
  heartbeat(f, 0, &a);
  adopt(f, "late", NULL, &s, &o);
  assert_int_equal(o.status, 409);
  assert_non_null(strstr(o.error, "of a deleted stream"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(adopts_copies_as_strangers_above_every_generation, setup, teardown),
      cmocka_unit_test_setup_teardown(refusals, setup, teardown),
      cmocka_unit_test_setup_teardown(empty_copies_start_like_a_new_shard, setup, teardown),
      cmocka_unit_test_setup_teardown(empty_copies_beside_a_missing_one_are_strangers, setup, teardown),
      cmocka_unit_test_setup_teardown(a_deleted_stream_is_not_adopted, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
