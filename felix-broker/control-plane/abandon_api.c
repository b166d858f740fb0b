/* control-plane/abandon_api.c — POST /v1/shards/{stream}/{shard}/abandon
 * (docs/control-plane-api.md "placement abandon"): parses the request,
 * calls cp_abandon, and answers what was (or would be) chosen. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abandon.h"
#include "api.h"
#include "felix/jsonnum.h"
#include "json.h"

static cJSON *result_json(const char *stream, int shard, const cp_abandon_result *r, bool dry_run) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "stream", stream);
  cJSON_AddNumberToObject(o, "shard", shard);
  cJSON_AddBoolToObject(o, "dry_run", dry_run);
  felix_json_add_i64(o, "generation", r->generation);
  felix_json_add_i64(o, "max_hwm", r->max_hwm);
  felix_json_add_i64(o, "records_at_risk", r->at_risk);
  cJSON_AddStringToObject(o, "digest", r->digest);
  const cp_abandon_copy *c = &r->copies[r->chosen];
  cJSON *ch = cJSON_AddObjectToObject(o, "chosen");
  cJSON_AddStringToObject(ch, "broker", c->broker);
  cJSON_AddStringToObject(ch, "copy_id", c->copy_id);
  char expect[200];
  snprintf(expect, sizeof expect, "%s:%s", c->broker, c->copy_id);
  cJSON_AddStringToObject(ch, "expect_copy", expect);
  cJSON *cs = cJSON_AddArrayToObject(o, "copies");
  for (int i = 0; i < r->ncopies; i++) {
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "broker", r->copies[i].broker);
    cJSON_AddStringToObject(x, "copy_id", r->copies[i].copy_id);
    cJSON_AddBoolToObject(x, "live", r->copies[i].live);
    felix_json_add_i64(x, "last_generation", r->copies[i].last_generation);
    felix_json_add_i64(x, "log_end", r->copies[i].log_end);
    felix_json_add_i64(x, "keeps", r->copies[i].kept);
    cJSON_AddItemToArray(cs, x);
  }
  /* §4.8: the replicas a shard still waits for; acting then needs above_generation. */
  cJSON *w = cJSON_AddArrayToObject(o, "waiting_for");
  for (int i = 0; i < r->nwaiting_for; i++) cJSON_AddItemToArray(w, cJSON_CreateString(r->waiting_for[i]));
  return o;
}

void cp_api_abandon(cp_state *cp, const cp_request *req, const char *stream, const char *num, cp_reply *rep) {
  char why[512] = "", *end;
  long k = strtol(num, &end, 10);
  if (!*num || *end || k < 0 || k > 1023)
    return cp_reply_error(rep, 400, "address a shard as STREAM/N", "shard '%s' is not a shard number", num);
  cJSON *o = cpj_parse_object(req->body, req->body_len, why, sizeof why);
  cp_abandon_req q = {.stream = stream, .shard = (int)k, .expect_generation = -1};
  bool ok = o && cpj_bool(o, "dry_run", false, &q.dry_run, why, sizeof why) &&
            cpj_int(o, "expect_generation", !q.dry_run, 0, INT64_MAX, &q.expect_generation, why, sizeof why) &&
            cpj_string(o, "expect_copy", !q.dry_run, 200, &q.expect_copy, why, sizeof why) &&
            cpj_string(o, "expect_digest", !q.dry_run, 16, &q.expect_digest, why, sizeof why) &&
            cpj_int(o, "above_generation", false, 1, INT64_MAX, &q.above_generation, why, sizeof why);
  if (!ok) {
    cJSON_Delete(o);
    return cp_reply_error(rep, 400, "see docs/control-plane-api.md", "%s", why);
  }
  cp_abandon_result r;
  cp_outcome out;
  cp_abandon(cp, &q, &r, &out);
  if (out.status != 200) {
    cJSON_Delete(o);
    return cp_reply_outcome(rep, &out);
  }
  rep->status = 200;
  free(rep->body);
  cJSON *j = result_json(stream, (int)k, &r, q.dry_run);
  rep->body = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  cJSON_Delete(o);
}
