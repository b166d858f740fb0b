/* control-plane/json.c — request field readers and validators (control-plane/json.h). Every error
 * names the field (with its index inside arrays) and, where short, the value. */
#include "json.h"

#include "felix/jsonnum.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cJSON *cpj_parse_object(const char *body, size_t len, char *why, size_t cap) {
  cJSON *o = cJSON_ParseWithLength(body, len);
  if (!o) {
    snprintf(why, cap, "request body is not valid JSON");
    return NULL;
  }
  if (!cJSON_IsObject(o)) {
    snprintf(why, cap, "request body must be a JSON object");
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

bool cpj_string(const cJSON *o, const char *field, bool required, size_t maxlen, const char **out, char *why,
                size_t cap) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, field);
  if (!v || cJSON_IsNull(v)) {
    if (required) snprintf(why, cap, "field %s is required", field);
    return !required;
  }
  if (!cJSON_IsString(v)) {
    snprintf(why, cap, "field %s must be a string", field);
    return false;
  }
  if (strlen(v->valuestring) > maxlen) {
    snprintf(why, cap, "field %s is longer than %zu characters", field, maxlen);
    return false;
  }
  *out = v->valuestring;
  return true;
}

bool cpj_int(const cJSON *o, const char *field, bool required, int64_t min, int64_t max, int64_t *out, char *why,
             size_t cap) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, field);
  if (!v || cJSON_IsNull(v)) {
    if (required) snprintf(why, cap, "field %s is required", field);
    return !required;
  }
  int64_t n;
  switch (felix_json_i64(v, &n)) {
  case FELIX_JSON_INT_INEXACT:
    snprintf(why, cap, "field %s is 2^53 or beyond, more than a JSON number here carries exactly", field);
    return false;
  case FELIX_JSON_INT_NOT_INTEGER:
    snprintf(why, cap, "field %s must be an integer", field);
    return false;
  case FELIX_JSON_INT_OK: break;
  }
  if (n < min || n > max) {
    snprintf(why, cap, "field %s is %lld, must be %lld..%lld", field, (long long)n, (long long)min, (long long)max);
    return false;
  }
  *out = n;
  return true;
}

bool cpj_bool(const cJSON *o, const char *field, bool required, bool *out, char *why, size_t cap) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, field);
  if (!v || cJSON_IsNull(v)) {
    if (required) snprintf(why, cap, "field %s is required", field);
    return !required;
  }
  if (!cJSON_IsBool(v)) {
    snprintf(why, cap, "field %s must be true or false", field);
    return false;
  }
  *out = cJSON_IsTrue(v);
  return true;
}

bool cp_valid_name(const char *s) {
  size_t n = strlen(s);
  if (n < 1 || n > 64 || s[0] == '.' || s[0] == '-') return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-';
    if (!ok) return false;
  }
  return true;
}

bool cp_valid_hex32(const char *s) {
  if (strlen(s) != 32) return false;
  for (const char *p = s; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return false;
  return true;
}

/* Reads the optional "generations": [[generation, start], ...] of an entry,
 * keeping the newest CP_MAX_GENS. */
static bool inv_generations(const cJSON *g, const char *prefix, cp_inv_entry *x, char *why, size_t cap) {
  if (!g) return true;
  int n = cJSON_IsArray(g) ? cJSON_GetArraySize(g) : -1;
  for (int i = 0; i < n; i++) {
    const cJSON *p = cJSON_GetArrayItem(g, i);
    const cJSON *a = cJSON_GetArrayItem(p, 0), *b = cJSON_GetArrayItem(p, 1);
    int64_t gen, start;
    /* the checked reader: a pair at 2^53 or beyond is refused, never rounded
     * (a rounded generation promised once adopted a copy below its own) */
    if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 2 || felix_json_i64(a, &gen) != FELIX_JSON_INT_OK ||
        felix_json_i64(b, &start) != FELIX_JSON_INT_OK || gen < 0 || start < 0) {
      n = -1;
      break;
    }
    int k = n - i <= CP_MAX_GENS ? x->ngens++ : -1;
    if (k >= 0) x->gens[k][0] = gen, x->gens[k][1] = start;
  }
  if (n < 0)
    snprintf(why, cap, "%s: field generations must be a list of [generation, start offset] pairs of integers below 2^53",
             prefix);
  return n >= 0;
}

int64_t cp_inv_generation_at(const cp_inv_entry *e, int64_t offset) {
  if (e->ngens == 0) return e->last_generation;
  for (int i = e->ngens; i > 0; i--)
    if (e->gens[i - 1][1] <= offset) return e->gens[i - 1][0];
  return 0;
}

/* Reads one inventory entry; prefix names it in errors ("inventory[2]"). */
static bool inv_entry(const cJSON *e, const char *prefix, cp_inv_entry *x, char *why, size_t cap) {
  char f[64];
  const char *stream = "", *uuid = "", *copy = "", *bleader = "", *inst = "", *acks = "";
  int64_t shard = 0, nshards = 0, replicas = 0;
  memset(x, 0, sizeof x[0]);
  if (!cJSON_IsObject(e)) {
    snprintf(why, cap, "%s must be an object", prefix);
    return false;
  }
  bool ok = cpj_string(e, "stream", false, 64, &stream, why, cap) &&
            cpj_string(e, "stream_uuid", true, 39, &uuid, why, cap) &&
            cpj_int(e, "shard", true, 0, 1023, &shard, why, cap) &&
            cpj_string(e, "copy_id", true, 32, &copy, why, cap) &&
            cpj_int(e, "log_start", false, 0, INT64_MAX, &x->log_start, why, cap) &&
            cpj_int(e, "log_end", true, 0, INT64_MAX, &x->log_end, why, cap) &&
            cpj_int(e, "last_generation", false, 0, INT64_MAX, &x->last_generation, why, cap) &&
            cpj_int(e, "ballot_generation", false, 0, INT64_MAX, &x->ballot_generation, why, cap) &&
            cpj_string(e, "ballot_leader", false, 64, &bleader, why, cap) &&
            cpj_bool(e, "gone", false, &x->gone, why, cap) &&
            cpj_bool(e, "refused", false, &x->refused, why, cap) &&
            cpj_string(e, "cp_instance", false, 63, &inst, why, cap) &&
            cpj_int(e, "shards", false, 0, 1024, &nshards, why, cap) &&
            cpj_int(e, "replicas", false, 0, FELIX_MAX_REPLICAS, &replicas, why, cap) &&
            cpj_string(e, "acks", false, 7, &acks, why, cap);
  if (ok && !cp_valid_hex32(copy)) {
    snprintf(why, cap, "field copy_id is '%s', must be 32 lowercase hex characters", copy);
    ok = false;
  }
  if (!ok) {
    snprintf(f, sizeof f, "%s: ", prefix);
    size_t fl = strlen(f), wl = strlen(why);
    if (fl + wl < cap) {
      memmove(why + fl, why, wl + 1);
      memcpy(why, f, fl);
    }
    return false;
  }
  snprintf(x->stream, sizeof x->stream, "%s", stream);
  snprintf(x->stream_uuid, sizeof x->stream_uuid, "%s", uuid);
  snprintf(x->copy_id, sizeof x->copy_id, "%s", copy);
  if (!inv_generations(cJSON_GetObjectItem(e, "generations"), prefix, x, why, cap)) return false;
  snprintf(x->ballot_leader, sizeof x->ballot_leader, "%s", bleader);
  snprintf(x->cp_instance, sizeof x->cp_instance, "%s", inst);
  x->shards = (int)nshards;
  x->replicas = (int)replicas;
  snprintf(x->acks, sizeof x->acks, "%s", acks);
  x->shard = (int)shard;
  return true;
}

bool cpj_inventory(const cJSON *o, bool *present, cp_inv_entry **out, size_t *n, char *why, size_t cap) {
  *out = NULL;
  *n = 0;
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "inventory");
  *present = a && !cJSON_IsNull(a);
  if (!*present) return true;
  if (!cJSON_IsArray(a)) {
    snprintf(why, cap, "field inventory must be an array");
    return false;
  }
  int count = cJSON_GetArraySize(a);
  if (count == 0) return true;
  *out = calloc((size_t)count, sizeof **out);
  if (!*out) {
    snprintf(why, cap, "out of memory");
    return false;
  }
  int i = 0;
  for (const cJSON *e = a->child; e; e = e->next, i++) {
    char prefix[32];
    snprintf(prefix, sizeof prefix, "inventory[%d]", i);
    if (!inv_entry(e, prefix, &(*out)[i], why, cap)) {
      free(*out);
      *out = NULL;
      return false;
    }
  }
  *n = (size_t)count;
  return true;
}
