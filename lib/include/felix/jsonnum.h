/* jsonnum.h — 64-bit integers and times in JSON, one way for every program.
 *
 * cJSON keeps numbers as doubles, exact only up to 2^53: an offset, HWM or
 * generation written through cJSON_AddNumberToObject would come out rounded
 * above that. felix_json_add_u64 writes the exact integer text
 * (cJSON_CreateRaw); felix_json_u64 reads one back and refuses a value the
 * double cannot hold exactly, instead of rounding it silently. */
#ifndef FELIX_JSONNUM_H
#define FELIX_JSONNUM_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#define FELIX_JSON_EXACT_MAX 9007199254740992.0 /* 2^53: the first value a double may have rounded to */

/* obj[key] = v as exact integer text; false when out of memory. */
bool felix_json_add_u64(cJSON *obj, const char *key, uint64_t v);
bool felix_json_add_i64(cJSON *obj, const char *key, int64_t v);
/* item as a non-negative integer: false unless it is a number with no
 * fraction, at least 0 and below 2^53 (2^53 itself may be 2^53 + 1 rounded). */
bool felix_json_u64(const cJSON *item, uint64_t *out);

/* RFC 3339 in UTC with microseconds, "2026-12-06T03:47:12.123456Z" (28
 * characters and the NUL): the one form of a time in every JSON answer. */
#define FELIX_RFC3339_US_LEN 32
void felix_format_rfc3339_us(char out[FELIX_RFC3339_US_LEN], int64_t unix_micros);
/* obj[key] = that text, or null when unix_micros is 0 (never happened). */
bool felix_json_add_time(cJSON *obj, const char *key, int64_t unix_micros);

#endif
