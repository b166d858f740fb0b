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
/* v as exact integer text, for an array; NULL when out of memory. */
cJSON *felix_json_u64_item(uint64_t v);

/* The one checked reader of an integer (every program's, the control
 * plane's request fields too): what cJSON's double holds is an integer only
 * if it has no fraction and lies strictly between -2^53 and 2^53 (2^53
 * itself may be 2^53 + 1 rounded). */
typedef enum { FELIX_JSON_INT_OK, FELIX_JSON_INT_NOT_INTEGER, FELIX_JSON_INT_INEXACT } felix_json_int_status;
felix_json_int_status felix_json_i64(const cJSON *item, int64_t *out);
/* item as a non-negative integer, by felix_json_i64: false otherwise. */
bool felix_json_u64(const cJSON *item, uint64_t *out);

/* RFC 3339 in UTC with microseconds, "2026-12-06T03:47:12.123456Z" (28
 * characters and the NUL): the one form of a time in every JSON answer. */
#define FELIX_RFC3339_US_LEN 32
void felix_format_rfc3339_us(char out[FELIX_RFC3339_US_LEN], int64_t unix_micros);
/* obj[key] = that text, or null when unix_micros is 0 (never happened). */
bool felix_json_add_time(cJSON *obj, const char *key, int64_t unix_micros);

#endif
