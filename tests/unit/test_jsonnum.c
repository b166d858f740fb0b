/* test_jsonnum.c — lib/util/jsonnum.c: 64-bit integers written exactly,
 * read back only when a double holds them exactly, and RFC 3339 µs times. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "felix/jsonnum.h"

static void integers_above_2_53_are_written_exactly(void **state) {
  (void)state;
  cJSON *o = cJSON_CreateObject();
  assert_true(felix_json_add_u64(o, "hwm", UINT64_MAX));
  assert_true(felix_json_add_u64(o, "near", 9007199254740993ull)); /* 2^53 + 1: a double would print ...992 */
  assert_true(felix_json_add_i64(o, "gen", INT64_MIN));
  char *s = cJSON_PrintUnformatted(o);
  assert_string_equal(s, "{\"hwm\":18446744073709551615,\"near\":9007199254740993,\"gen\":-9223372036854775808}");
  free(s);
  cJSON_Delete(o);
}

static void reading_back_refuses_what_a_double_may_have_rounded(void **state) {
  (void)state;
  cJSON *o = cJSON_Parse("{\"a\":9007199254740991,\"b\":9007199254740993,\"b2\":9007199254740992,\"c\":1.5,\"d\":-1,\"e\":\"7\",\"f\":0}");
  uint64_t v = 42;
  assert_true(felix_json_u64(cJSON_GetObjectItem(o, "a"), &v) && v == 9007199254740991ull);
  assert_false(felix_json_u64(cJSON_GetObjectItem(o, "b"), &v));  /* parsed as ...992: rounded */
  assert_false(felix_json_u64(cJSON_GetObjectItem(o, "b2"), &v)); /* cannot be told from b */
  assert_false(felix_json_u64(cJSON_GetObjectItem(o, "c"), &v));
  assert_false(felix_json_u64(cJSON_GetObjectItem(o, "d"), &v));
  assert_false(felix_json_u64(cJSON_GetObjectItem(o, "e"), &v));
  assert_true(felix_json_u64(cJSON_GetObjectItem(o, "f"), &v) && v == 0);
  cJSON_Delete(o);
}

static void the_signed_reader_tells_why(void **state) {
  (void)state;
  cJSON *o = cJSON_Parse("{\"a\":-9007199254740991,\"b\":-9007199254740993,\"c\":2.5,\"d\":null,\"e\":1e300,\"f\":-7}");
  int64_t v = 42;
  assert_int_equal(felix_json_i64(cJSON_GetObjectItem(o, "a"), &v), FELIX_JSON_INT_OK);
  assert_true(v == -9007199254740991ll);
  v = 42;
  assert_int_equal(felix_json_i64(cJSON_GetObjectItem(o, "b"), &v), FELIX_JSON_INT_INEXACT);
  assert_int_equal(felix_json_i64(cJSON_GetObjectItem(o, "c"), &v), FELIX_JSON_INT_NOT_INTEGER);
  assert_int_equal(felix_json_i64(cJSON_GetObjectItem(o, "d"), &v), FELIX_JSON_INT_NOT_INTEGER);
  assert_int_equal(felix_json_i64(cJSON_GetObjectItem(o, "e"), &v), FELIX_JSON_INT_INEXACT);
  assert_int_equal(felix_json_i64(NULL, &v), FELIX_JSON_INT_NOT_INTEGER);
  assert_true(v == 42); /* untouched by every refusal */
  assert_int_equal(felix_json_i64(cJSON_GetObjectItem(o, "f"), &v), FELIX_JSON_INT_OK);
  assert_true(v == -7);
  cJSON_Delete(o);
  cJSON *arr = cJSON_CreateArray();
  cJSON_AddItemToArray(arr, felix_json_u64_item(9007199254740993ull));
  char *text = cJSON_PrintUnformatted(arr);
  assert_string_equal(text, "[9007199254740993]");
  free(text);
  cJSON_Delete(arr);
}

static void times_are_rfc3339_utc_with_microseconds(void **state) {
  (void)state;
  char t[FELIX_RFC3339_US_LEN];
  felix_format_rfc3339_us(t, 1796528832123456);
  assert_string_equal(t, "2026-12-06T03:47:12.123456Z");
  felix_format_rfc3339_us(t, 0);
  assert_string_equal(t, "1970-01-01T00:00:00.000000Z");
  felix_format_rfc3339_us(t, -1);
  assert_string_equal(t, "1969-12-31T23:59:59.999999Z");
  cJSON *o = cJSON_CreateObject();
  assert_true(felix_json_add_time(o, "never", 0));
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "never")));
  cJSON_Delete(o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(integers_above_2_53_are_written_exactly),
      cmocka_unit_test(reading_back_refuses_what_a_double_may_have_rounded),
      cmocka_unit_test(the_signed_reader_tells_why), cmocka_unit_test(times_are_rfc3339_utc_with_microseconds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
