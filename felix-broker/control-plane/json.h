/* control-plane/json.h — reading request JSON with errors that name the field and the
 * value, and the validators of names and ids (docs/control-plane-api.md). */
#ifndef FELIX_CP_JSON_H
#define FELIX_CP_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "state.h"

/* Each getter returns false and writes a sentence into why when the field is
 * missing (and required), of the wrong type, or out of range. *out is left
 * unchanged when an optional field is absent. */
bool cpj_string(const cJSON *o, const char *field, bool required, size_t maxlen, const char **out, char *why,
                size_t cap);
bool cpj_int(const cJSON *o, const char *field, bool required, int64_t min, int64_t max, int64_t *out, char *why,
             size_t cap);
bool cpj_bool(const cJSON *o, const char *field, bool required, bool *out, char *why, size_t cap);

/* 1-64 of [A-Za-z0-9._-], not starting with '.' or '-' (stream names, broker ids). */
bool cp_valid_name(const char *s);
/* Exactly 32 lowercase hex characters (storage ids, copy ids). */
bool cp_valid_hex32(const char *s);

/* Parses an inventory array ("inventory" field; absent = *present false).
 * *out is malloc'd (free it). */
bool cpj_inventory(const cJSON *o, bool *present, cp_inv_entry **out, size_t *n, char *why, size_t cap);

/* Parses the body as a JSON object, or explains why not. */
cJSON *cpj_parse_object(const char *body, size_t len, char *why, size_t cap);

#endif
