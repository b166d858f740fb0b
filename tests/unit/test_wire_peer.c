/* test_wire_peer.c — the replication frames (felix/wire_peer.h): round
 * trips, and every truncated or oversized frame rejected. */
#include "testutil.h"

#include "felix/wire_peer.h"

static const uint8_t *body_of(const felix_buf *b) { return b->data + FELIX_WIRE_HEADER; }
static size_t len_of(const felix_buf *b) { return b->len - FELIX_WIRE_HEADER; }

static void hello_round_trips(void **s) {
  (void)s;
  felix_peer_hello h = {.leader = "b1", .leader_storage_id = "00112233445566778899aabbccddeeff", .leader_incarnation = "i.3",
                        .leader_copy_id = "ffeeddccbbaa99887766554433221100", .stream = "orders",
                        .stream_uuid = "0a1b2c3d-0000-4000-8000-000000000001", .shard = 2, .generation = 7};
  felix_buf b = {0};
  felix_peer_hello_encode(&b, 5, &h);
  uint32_t flen, corr;
  uint16_t type;
  bool bad;
  assert_true(felix_frame_peek(b.data, b.len, &flen, &type, &corr, &bad));
  assert_int_equal(type, FELIX_WIRE_PEER_HELLO);
  felix_peer_hello out;
  felix_err err;
  assert_int_equal(felix_peer_hello_decode(body_of(&b), len_of(&b), &out, &err), FELIX_OK);
  assert_string_equal(out.leader, h.leader);
  assert_string_equal(out.leader_storage_id, h.leader_storage_id);
  assert_string_equal(out.leader_incarnation, h.leader_incarnation);
  assert_string_equal(out.leader_copy_id, h.leader_copy_id);
  assert_string_equal(out.stream, h.stream);
  assert_string_equal(out.stream_uuid, h.stream_uuid);
  assert_int_equal(out.shard, 2);
  assert_int_equal(out.generation, 7);
  for (size_t cut = 0; cut < len_of(&b); cut++)
    assert_int_equal(felix_peer_hello_decode(body_of(&b), cut, &out, &err), FELIX_E_INVAL);
  felix_buf_free(&b);
}

static void hello_reply_carries_the_generations(void **s) {
  (void)s;
  felix_peer_hello_reply r = {.status = FELIX_PS_OK, .broker = "b2", .copy_id = "c2", .generation = 7, .log_start = 0,
                              .log_end = 9, .held_end = 8, .ngens = 2, .gens = {{1, 0}, {4, 6}}};
  felix_buf b = {0};
  felix_peer_hello_reply_encode(&b, 5, &r);
  felix_peer_hello_reply out;
  felix_err err;
  assert_int_equal(felix_peer_hello_reply_decode(body_of(&b), len_of(&b), &out, &err), FELIX_OK);
  assert_int_equal(out.ngens, 2);
  assert_int_equal(out.gens[1].generation, 4);
  assert_int_equal(out.gens[1].start_offset, 6);
  assert_int_equal(out.held_end, 8);
  assert_string_equal(out.copy_id, "c2");
  felix_buf_free(&b);
  /* A generations count above the bound is refused, not trusted. */
  felix_buf big = {0};
  size_t st = felix_frame_begin(&big, FELIX_WIRE_PEER_HELLO | FELIX_WIRE_REPLY, 1);
  felix_buf_u16(&big, 0);
  for (int i = 0; i < 5; i++) felix_buf_str(&big, "");
  for (int i = 0; i < 4; i++) felix_buf_u64(&big, 0);
  felix_buf_u32(&big, FELIX_PEER_MAX_GENS + 1);
  felix_frame_end(&big, st);
  assert_int_equal(felix_peer_hello_reply_decode(body_of(&big), len_of(&big), &out, &err), FELIX_E_INVAL);
  felix_buf_free(&big);
}

static void append_round_trips_with_offsets_from_first(void **s) {
  (void)s;
  felix_wire_record recs[] = {{0, 11, (const uint8_t *)"a", 1}, {0, 12, (const uint8_t *)"", 0}, {0, 13, (const uint8_t *)"ccc", 3}};
  felix_peer_append a = {.stream = "orders", .shard = 1, .generation = 3, .truncate_to = 40, .leader_hwm = 41,
                         .ngens = 1, .gens = {{3, 41}}, .first_offset = 40, .count = 3, .records = recs};
  felix_buf b = {0};
  felix_peer_append_encode(&b, 9, &a);
  felix_peer_append out;
  felix_err err;
  assert_int_equal(felix_peer_append_decode(body_of(&b), len_of(&b), &out, &err), FELIX_OK);
  assert_int_equal(out.count, 3);
  assert_int_equal(out.records[2].offset, 42);
  assert_int_equal(out.records[1].len, 0);
  assert_memory_equal(out.records[2].payload, "ccc", 3);
  assert_int_equal(out.truncate_to, 40);
  assert_int_equal(out.gens[0].start_offset, 41);
  felix_peer_append_free(&out);
  for (size_t cut = 0; cut < len_of(&b); cut++)
    assert_int_equal(felix_peer_append_decode(body_of(&b), cut, &out, &err), FELIX_E_INVAL);
  /* A count larger than the frame could hold fails before allocating. */
  felix_peer_append huge = a;
  huge.count = 0;
  felix_buf h = {0};
  felix_peer_append_encode(&h, 9, &huge);
  uint8_t *count_at = h.data + h.len - 4;
  count_at[0] = 0x7f;
  assert_int_equal(felix_peer_append_decode(body_of(&h), len_of(&h), &out, &err), FELIX_E_INVAL);
  assert_null(out.records);
  felix_buf_free(&h);
  felix_buf_free(&b);
}

static void append_reply_round_trips(void **s) {
  (void)s;
  felix_peer_append_reply r = {.status = FELIX_PS_REFUSED, .message = "promised generation 9", .generation = 9,
                               .held_end = 4, .log_end = 5};
  felix_buf b = {0};
  felix_peer_append_reply_encode(&b, 2, &r);
  felix_peer_append_reply out;
  felix_err err;
  assert_int_equal(felix_peer_append_reply_decode(body_of(&b), len_of(&b), &out, &err), FELIX_OK);
  assert_int_equal(out.status, FELIX_PS_REFUSED);
  assert_string_equal(out.message, r.message);
  assert_int_equal(out.generation, 9);
  assert_int_equal(out.held_end, 4);
  assert_int_equal(out.log_end, 5);
  felix_buf_free(&b);
}

static void read_and_its_reply_round_trip(void **s) {
  (void)s;
  felix_peer_read q = {.stream = "orders", .shard = 4, .generation = 6, .from = 10, .max_records = 256};
  felix_buf b = {0};
  felix_peer_read_encode(&b, 3, &q);
  felix_peer_read qo;
  felix_err err;
  assert_int_equal(felix_peer_read_decode(body_of(&b), len_of(&b), &qo, &err), FELIX_OK);
  assert_int_equal(qo.from, 10);
  assert_int_equal(qo.generation, 6);
  felix_buf_free(&b);
  felix_wire_record recs[] = {{0, 5, (const uint8_t *)"x", 1}, {0, 6, (const uint8_t *)"yz", 2}};
  felix_peer_read_reply r = {.status = FELIX_PS_OK, .copy_id = "c9", .held_end = 12,
                             .body = {.stream = "orders", .shard = 4, .generation = 6, .truncate_to = FELIX_PEER_NO_TRUNCATE,
                                      .ngens = 1, .gens = {{6, 11}}, .first_offset = 10, .count = 2, .records = recs}};
  felix_peer_read_reply_encode(&b, 3, &r);
  felix_peer_read_reply out;
  assert_int_equal(felix_peer_read_reply_decode(body_of(&b), len_of(&b), &out, &err), FELIX_OK);
  assert_string_equal(out.copy_id, "c9");
  assert_int_equal(out.held_end, 12);
  assert_int_equal(out.body.count, 2);
  assert_int_equal(out.body.records[1].offset, 11);
  assert_memory_equal(out.body.records[1].payload, "yz", 2);
  felix_peer_append_free(&out.body);
  for (size_t cut = 0; cut < len_of(&b); cut++) {
    assert_int_equal(felix_peer_read_reply_decode(body_of(&b), cut, &out, &err), FELIX_E_INVAL);
    assert_null(out.body.records);
  }
  felix_buf_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(hello_round_trips),
      cmocka_unit_test(hello_reply_carries_the_generations),
      cmocka_unit_test(append_round_trips_with_offsets_from_first),
      cmocka_unit_test(append_reply_round_trips),
      cmocka_unit_test(read_and_its_reply_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
