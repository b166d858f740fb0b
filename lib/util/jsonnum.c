/* jsonnum.c — exact 64-bit integers and RFC 3339 µs times in JSON (jsonnum.h). */
#include "felix/jsonnum.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

bool felix_json_add_u64(cJSON *obj, const char *key, uint64_t v) {
  char text[24];
  snprintf(text, sizeof text, "%" PRIu64, v);
  cJSON *raw = cJSON_CreateRaw(text);
  return raw && cJSON_AddItemToObject(obj, key, raw);
}

bool felix_json_add_i64(cJSON *obj, const char *key, int64_t v) {
  char text[24];
  snprintf(text, sizeof text, "%" PRId64, v);
  cJSON *raw = cJSON_CreateRaw(text);
  return raw && cJSON_AddItemToObject(obj, key, raw);
}

cJSON *felix_json_u64_item(uint64_t v) {
  char text[24];
  snprintf(text, sizeof text, "%" PRIu64, v);
  return cJSON_CreateRaw(text);
}

felix_json_int_status felix_json_i64(const cJSON *item, int64_t *out) {
  if (!cJSON_IsNumber(item)) return FELIX_JSON_INT_NOT_INTEGER;
  double d = item->valuedouble;
  /* No libm: the range first (NaN fails it too), then the cast round-trip
   * tells an integer. */
  if (!(d < FELIX_JSON_EXACT_MAX && d > -FELIX_JSON_EXACT_MAX))
    return d == d ? FELIX_JSON_INT_INEXACT : FELIX_JSON_INT_NOT_INTEGER;
  if ((double)(int64_t)d != d) return FELIX_JSON_INT_NOT_INTEGER;
  *out = (int64_t)d;
  return FELIX_JSON_INT_OK;
}

bool felix_json_u64(const cJSON *item, uint64_t *out) {
  int64_t v;
  if (felix_json_i64(item, &v) != FELIX_JSON_INT_OK || v < 0) return false;
  *out = (uint64_t)v;
  return true;
}

void felix_format_rfc3339_us(char out[FELIX_RFC3339_US_LEN], int64_t unix_micros) {
  int64_t s = unix_micros / 1000000, us = unix_micros % 1000000;
  if (us < 0) s -= 1, us += 1000000;
  time_t t = (time_t)s;
  struct tm tm;
  gmtime_r(&t, &tm);
  size_t n = strftime(out, FELIX_RFC3339_US_LEN, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out + n, FELIX_RFC3339_US_LEN - n, ".%06dZ", (int)us);
}

bool felix_json_add_time(cJSON *obj, const char *key, int64_t unix_micros) {
  if (unix_micros == 0) return cJSON_AddNullToObject(obj, key) != NULL;
  char text[FELIX_RFC3339_US_LEN];
  felix_format_rfc3339_us(text, unix_micros);
  return cJSON_AddStringToObject(obj, key, text) != NULL;
}
