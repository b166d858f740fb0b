/* test_wire.c — the data protocol's frame codec (docs/wire.md). */
#include "testutil.h"

#include "felix/bytes.h"
#include "felix/wire.h"

static void publish_request_round_trips_and_pins_its_bytes(void **s) {
  (void)s;
  felix_wire_record r = {0, 9, (const uint8_t *)"hi", 2};
  felix_publish_req req = {.stream = "s", .shard = 1, .acks = FELIX_ACKS_QUORUM, .count = 1, .records = &r};
  felix_buf b = {0};
  felix_wire_publish_req_encode(&b, 7, &req);
  static const uint8_t want[] = {0, 0, 0, 0x20, 0, 1, 0, 0, 0, 7,       /* length 32, type, correlation */
                                 0, 1, 's', 0, 0, 0, 1, 1, 0, 0, 0, 1, /* stream, shard, acks, count */
                                 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 2, 'h', 'i'};
  assert_int_equal(b.len, sizeof want);
  assert_memory_equal(b.data, want, sizeof want);
  felix_publish_req out;
  felix_err err;
  assert_int_equal(felix_wire_publish_req_decode(b.data + FELIX_WIRE_HEADER, b.len - FELIX_WIRE_HEADER, &out, &err), FELIX_OK);
  assert_string_equal(out.stream, "s");
  assert_int_equal(out.shard, 1);
  assert_int_equal(out.count, 1);
  assert_int_equal(out.records[0].timestamp_micros, 9);
  assert_memory_equal(out.records[0].payload, "hi", 2);
  felix_publish_req_free(&out);
  felix_buf_free(&b);
}

static void truncated_or_trailing_bytes_are_rejected(void **s) {
  (void)s;
  felix_fetch_req req = {.stream = "orders", .shard = 3, .offset = 42, .max_records = 10, .max_bytes = 4096, .wait_ms = 1000};
  felix_buf b = {0};
  felix_wire_fetch_req_encode(&b, 1, &req);
  const uint8_t *body = b.data + FELIX_WIRE_HEADER;
  size_t len = b.len - FELIX_WIRE_HEADER;
  felix_fetch_req out;
  felix_err err;
  assert_int_equal(felix_wire_fetch_req_decode(body, len, &out, &err), FELIX_OK);
  assert_int_equal(out.offset, 42);
  assert_int_equal(out.wait_ms, 1000);
  for (size_t cut = 0; cut < len; cut++) assert_int_equal(felix_wire_fetch_req_decode(body, cut, &out, &err), FELIX_E_INVAL);
  uint8_t longer[256];
  memcpy(longer, body, len);
  longer[len] = 0;
  assert_int_equal(felix_wire_fetch_req_decode(longer, len + 1, &out, &err), FELIX_E_INVAL);
  assert_non_null(strstr(err.msg, "byte"));
  felix_buf_free(&b);
}

static void a_huge_record_count_never_allocates_past_the_frame(void **s) {
  (void)s;
  uint8_t body[] = {0, 1, 's', 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff};
  felix_publish_req out;
  felix_err err;
  assert_int_equal(felix_wire_publish_req_decode(body, sizeof body, &out, &err), FELIX_E_INVAL);
  assert_null(out.records);
}

static void frame_peek_bounds_the_length(void **s) {
  (void)s;
  uint8_t h[FELIX_WIRE_HEADER] = {0};
  uint32_t len, corr;
  uint16_t type;
  bool bad;
  assert_false(felix_frame_peek(h, 9, &len, &type, &corr, &bad));
  felix_put_u32(h, FELIX_WIRE_MAX_FRAME + 1);
  assert_true(felix_frame_peek(h, sizeof h, &len, &type, &corr, &bad));
  assert_true(bad);
  felix_put_u32(h, 5); /* shorter than type + correlation */
  assert_true(felix_frame_peek(h, sizeof h, &len, &type, &corr, &bad));
  assert_true(bad);
  felix_put_u32(h, 6);
  felix_put_u16(h + 4, 0x8002);
  felix_put_u32(h + 6, 77);
  assert_true(felix_frame_peek(h, sizeof h, &len, &type, &corr, &bad));
  assert_false(bad);
  assert_int_equal(type, 0x8002);
  assert_int_equal(corr, 77);
}

static void fetch_reply_with_records_round_trips(void **s) {
  (void)s;
  felix_fetch_reply r = {.status = FELIX_WS_OK, .log_start = 0, .hwm = 12, .next_offset = 12};
  felix_buf b = {0};
  size_t count_at, start = felix_wire_fetch_reply_begin(&b, 5, &r, &count_at);
  felix_wire_fetch_reply_record(&b, 10, 100, "a", 1);
  felix_wire_fetch_reply_record(&b, 11, 101, "bc", 2);
  felix_wire_fetch_reply_end(&b, start, count_at, 2);
  felix_fetch_reply out;
  felix_err err;
  assert_int_equal(felix_wire_fetch_reply_decode(b.data + FELIX_WIRE_HEADER, b.len - FELIX_WIRE_HEADER, &out, &err), FELIX_OK);
  assert_int_equal(out.count, 2);
  assert_int_equal(out.records[1].offset, 11);
  assert_memory_equal(out.records[1].payload, "bc", 2);
  assert_int_equal(out.hwm, 12);
  felix_fetch_reply_free(&out);
  felix_buf_free(&b);
}

static void metadata_and_publish_reply_round_trip(void **s) {
  (void)s;
  felix_metadata_entry e = {.stream = "orders", .shard = 2, .generation = 4, .state = "Active", .leader = "b1", .address = "127.0.0.1:7101"};
  felix_metadata_reply r = {.status = 0, .count = 1, .entries = &e};
  felix_buf b = {0};
  felix_wire_metadata_reply_encode(&b, 3, &r);
  felix_metadata_reply out;
  felix_err err;
  assert_int_equal(felix_wire_metadata_reply_decode(b.data + FELIX_WIRE_HEADER, b.len - FELIX_WIRE_HEADER, &out, &err), FELIX_OK);
  assert_string_equal(out.entries[0].address, "127.0.0.1:7101");
  assert_int_equal(out.entries[0].generation, 4);
  felix_metadata_reply_free(&out);
  felix_buf_free(&b);
  felix_publish_reply pr = {.status = FELIX_WS_NOT_LEADER, .message = "not here", .leader_address = "127.0.0.1:7102"};
  felix_wire_publish_reply_encode(&b, 9, &pr);
  felix_publish_reply pout;
  assert_int_equal(felix_wire_publish_reply_decode(b.data + FELIX_WIRE_HEADER, b.len - FELIX_WIRE_HEADER, &pout, &err), FELIX_OK);
  assert_int_equal(pout.status, FELIX_WS_NOT_LEADER);
  assert_string_equal(pout.leader_address, "127.0.0.1:7102");
  assert_string_equal(felix_wire_status_name(pout.status), "NOT_LEADER");
  felix_buf_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(publish_request_round_trips_and_pins_its_bytes),
      cmocka_unit_test(truncated_or_trailing_bytes_are_rejected),
      cmocka_unit_test(a_huge_record_count_never_allocates_past_the_frame),
      cmocka_unit_test(frame_peek_bounds_the_length),
      cmocka_unit_test(fetch_reply_with_records_round_trips),
      cmocka_unit_test(metadata_and_publish_reply_round_trip),
  };
  return cmocka_run_group_tests_name("wire", tests, NULL, NULL);
}
