/* test_felixctl_parse.c — felixctl's pure helpers: numbers, STREAM/SHARD,
 * percent-encoding, control-plane URL normalisation, ack and state names.
 * felixctl is a program, not a library, so its file is included directly. */
#include "testutil.h"

#include "../../felixctl/parse.c"

static void test_parse_u64(void **state) {
  (void)state;
  uint64_t v = 7;
  assert_true(ctl_parse_u64("0", 10, &v) && v == 0);
  assert_true(ctl_parse_u64("18446744073709551615", UINT64_MAX, &v) && v == UINT64_MAX);
  assert_false(ctl_parse_u64("18446744073709551616", UINT64_MAX, &v));
  assert_false(ctl_parse_u64("11", 10, &v));
  assert_false(ctl_parse_u64("-1", UINT64_MAX, &v));
  assert_false(ctl_parse_u64("+1", UINT64_MAX, &v));
  assert_false(ctl_parse_u64(" 1", UINT64_MAX, &v));
  assert_false(ctl_parse_u64("1x", UINT64_MAX, &v));
  assert_false(ctl_parse_u64("", UINT64_MAX, &v));
  assert_false(ctl_parse_u64(NULL, UINT64_MAX, &v));
}

static void test_stream_shard(void **state) {
  (void)state;
  char s[16];
  uint32_t n = 9;
  assert_true(ctl_parse_stream_shard("orders/3", s, sizeof s, &n));
  assert_string_equal(s, "orders");
  assert_int_equal(n, 3);
  assert_true(ctl_parse_stream_shard("a/b/0", s, sizeof s, &n)); /* split at the last '/' */
  assert_string_equal(s, "a/b");
  assert_false(ctl_parse_stream_shard("orders", s, sizeof s, &n));
  assert_false(ctl_parse_stream_shard("/0", s, sizeof s, &n));
  assert_false(ctl_parse_stream_shard("orders/", s, sizeof s, &n));
  assert_false(ctl_parse_stream_shard("orders/-1", s, sizeof s, &n));
  assert_false(ctl_parse_stream_shard("orders/4294967296", s, sizeof s, &n));
  assert_false(ctl_parse_stream_shard("a-very-long-stream-name/0", s, sizeof s, &n));
}

static void test_url_escape(void **state) {
  (void)state;
  char out[32];
  assert_true(ctl_url_escape("a.b_c-d~9", out, sizeof out));
  assert_string_equal(out, "a.b_c-d~9");
  assert_true(ctl_url_escape("a b/c?%", out, sizeof out));
  assert_string_equal(out, "a%20b%2Fc%3F%25");
  assert_true(ctl_url_escape("\xff", out, sizeof out));
  assert_string_equal(out, "%FF");
  assert_false(ctl_url_escape("////////////", out, sizeof out)); /* 36 bytes needed */
  assert_false(ctl_url_escape("abcd", out, 4));
  assert_true(ctl_url_escape("abc", out, 4));
}

static void test_normalise_url(void **state) {
  (void)state;
  char *u = ctl_normalise_url("127.0.0.1:7070");
  assert_string_equal(u, "http://127.0.0.1:7070");
  free(u);
  u = ctl_normalise_url("https://cp.example:7070//");
  assert_string_equal(u, "https://cp.example:7070");
  free(u);
  u = ctl_normalise_url("http://127.0.0.1:7070/prefix/");
  assert_string_equal(u, "http://127.0.0.1:7070/prefix");
  free(u);
  assert_null(ctl_normalise_url("ftp://x"));
  assert_null(ctl_normalise_url(""));
  assert_null(ctl_normalise_url("http://"));
  assert_null(ctl_normalise_url("http://a b"));
}

static void test_names(void **state) {
  (void)state;
  assert_int_equal(ctl_acks_value("quorum"), FELIX_ACKS_QUORUM);
  assert_int_equal(ctl_acks_value("leader"), FELIX_ACKS_LEADER);
  assert_int_equal(ctl_acks_value("all"), FELIX_ACKS_ALL);
  assert_int_equal(ctl_acks_value("Quorum"), -1);
  assert_int_equal(ctl_acks_value(NULL), -1);
  assert_true(ctl_is_shard_state("Active"));
  assert_true(ctl_is_shard_state("Fencing"));
  assert_true(ctl_is_shard_state("NoCaughtUpReplica"));
  assert_false(ctl_is_shard_state("active"));
  assert_false(ctl_is_shard_state(NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_u64),  cmocka_unit_test(test_stream_shard), cmocka_unit_test(test_url_escape),
      cmocka_unit_test(test_normalise_url), cmocka_unit_test(test_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
