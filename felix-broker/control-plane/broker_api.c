/* control-plane/broker_api.c — /v1/broker/{register,heartbeat,assignments,report}
 * (docs/control-plane-api.md "Broker endpoints"). Parses and validates the
 * request, calls the engine (control-plane/state.h), and builds the reply from the store
 * only after the engine committed, so a reply never announces an uncommitted
 * generation, pin or incarnation. */
#include <stdio.h>
#include "felix/jsonnum.h"
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "json.h"

#define WHY_CAP 512

static const char *address_of(const cp_broker_row *rows, size_t n, const char *id) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(rows[i].id, id)) return rows[i].address;
  return "";
}

static void add_str_or_null(cJSON *o, const char *k, const char *v) {
  if (v && *v) cJSON_AddStringToObject(o, k, v);
  else cJSON_AddNullToObject(o, k);
}

/* unsure: the control plane cannot yet trust its store for this shard
 * (§4.8): the assignment carries no ballot (leader null), so no copy takes
 * an old pin from a restored database. */
static cJSON *assignment(const cp_shard_row *sh, int slot, const cp_broker_row *bs, size_t nb, bool unsure,
                         bool renew_lease, int nshards) {
  cJSON *a = cJSON_CreateObject();
  cJSON_AddStringToObject(a, "stream", sh->stream);
  cJSON_AddStringToObject(a, "stream_uuid", sh->stream_uuid);
  cJSON_AddNumberToObject(a, "shard", sh->shard);
  cJSON_AddNumberToObject(a, "shards", nshards); /* the broker keeps it in the copy's stream file */
  cJSON_AddNumberToObject(a, "replicas", sh->replicas);
  cJSON_AddStringToObject(a, "acks", sh->acks);
  felix_json_add_i64(a, "generation", sh->generation);
  felix_json_add_i64(a, "max_hwm", sh->max_hwm);
  /* The generation placement abandon issued: its fence adopts the pinned copy only. */
  cJSON_AddBoolToObject(a, "abandon", sh->abandon_generation > 0 && sh->abandon_generation == sh->generation);
  cJSON_AddStringToObject(a, "state", sh->state);
  /* false: the pinned leader's per-shard lease is no longer renewed, the shard is about to move (item 6) */
  cJSON_AddBoolToObject(a, "renew_lease", renew_lease);
  const char *me = sh->slots[slot].broker;
  cJSON_AddStringToObject(a, "role", sh->generation == 0 ? "replica" : !strcmp(sh->leader, me) ? "leader" : "follower");
  cJSON_AddBoolToObject(a, "create_copy", sh->slots[slot].copy_id[0] == '\0');
  if (sh->generation > 0 && sh->leader[0] && !unsure) {
    cJSON *l = cJSON_AddObjectToObject(a, "leader");
    cJSON_AddStringToObject(l, "broker", sh->leader);
    cJSON_AddStringToObject(l, "address", address_of(bs, nb, sh->leader));
    cJSON_AddStringToObject(l, "copy_id", sh->leader_copy_id);
    cJSON_AddStringToObject(l, "incarnation", sh->leader_incarnation);
  } else {
    cJSON_AddNullToObject(a, "leader");
  }
  cJSON *m = cJSON_AddArrayToObject(a, "members");
  for (int i = 0; i < sh->nslots; i++) {
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "broker", sh->slots[i].broker);
    cJSON_AddStringToObject(x, "address", address_of(bs, nb, sh->slots[i].broker));
    add_str_or_null(x, "copy_id", sh->slots[i].copy_id);
    /* The copy a fence may count for this replica (§4.6): a stranger's is none. */
    add_str_or_null(x, "named_copy_id", sh->slots[i].stranger ? NULL : sh->slots[i].copy_id);
    felix_json_add_i64(x, "floor", sh->slots[i].floor);
    cJSON_AddItemToArray(m, x);
  }
  return a;
}

static cJSON *leader_entry(const cp_shard_row *sh, const cp_broker_row *bs, size_t nb) {
  cJSON *l = cJSON_CreateObject();
  cJSON_AddStringToObject(l, "stream", sh->stream);
  cJSON_AddNumberToObject(l, "shard", sh->shard);
  felix_json_add_i64(l, "generation", sh->generation);
  cJSON_AddStringToObject(l, "state", sh->state);
  cJSON_AddStringToObject(l, "leader", sh->leader);
  cJSON_AddStringToObject(l, "address", address_of(bs, nb, sh->leader));
  return l;
}

static int shards_of(const cp_stream_row *st, size_t n, const char *uuid) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(st[i].uuid, uuid)) return st[i].shards;
  return 0;
}

/* Adds "assignments", "leaders" and "deleted_streams" for broker to o. */
static bool add_placement(cp_state *cp, const char *broker, cJSON *o) {
  felix_err err;
  cp_shard_row *sh = NULL;
  cp_broker_row *bs = NULL;
  cp_stream_row *st = NULL;
  char(*del)[40] = NULL;
  size_t nsh = 0, nb = 0, nd = 0, nst = 0;
  bool ok = cp_store_shards_list(cp->store, NULL, &sh, &nsh, &err) == FELIX_OK &&
            cp_store_brokers_list(cp->store, &bs, &nb, &err) == FELIX_OK &&
            cp_store_streams_list(cp->store, &st, &nst, &err) == FELIX_OK &&
            cp_store_deleted_uuids(cp->store, &del, &nd, &err) == FELIX_OK;
  if (ok) {
    cJSON *as = cJSON_AddArrayToObject(o, "assignments");
    cJSON *ls = cJSON_AddArrayToObject(o, "leaders");
    cJSON *ds = cJSON_AddArrayToObject(o, "deleted_streams");
    for (size_t k = 0; k < nsh; k++) {
      bool unsure = cp_shard_unsure(cp, &sh[k]), renew = cp_leader_lease_renewed(cp, &sh[k]);
      for (int i = 0; i < sh[k].nslots; i++)
        if (!strcmp(sh[k].slots[i].broker, broker))
          cJSON_AddItemToArray(as, assignment(&sh[k], i, bs, nb, unsure, renew, shards_of(st, nst, sh[k].stream_uuid)));
      /* an unsure shard's stored leader may be a deposed one: clients get none */
      if (sh[k].generation > 0 && sh[k].leader[0] && !unsure) cJSON_AddItemToArray(ls, leader_entry(&sh[k], bs, nb));
    }
    for (size_t k = 0; k < nd; k++) cJSON_AddItemToArray(ds, cJSON_CreateString(del[k]));
  }
  free(sh);
  free(bs);
  free(st);
  free(del);
  return ok;
}

static void add_timing(cp_state *cp, cJSON *o) {
  cJSON_AddNumberToObject(o, "lease_ms", (double)cp->lease_ms);
  cJSON_AddNumberToObject(o, "heartbeat_ms", (double)cp->heartbeat_ms);
}

static void reply_json(cp_reply *rep, int status, cJSON *o) {
  rep->status = status;
  free(rep->body);
  rep->body = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
}

static void reply_placement(cp_state *cp, const char *broker, cJSON *o, bool timing, cp_reply *rep) {
  /* Every placement says whose it is: a broker refuses fences of another
   * instance's assignments once it has seen this one (§4.8). */
  cJSON_AddStringToObject(o, "instance_id", cp->instance_id);
  if (timing) add_timing(cp, o);
  if (!add_placement(cp, broker, o)) {
    cJSON_Delete(o);
    cp_reply_error(rep, 500, "see the control plane's log", "database error while listing assignments");
    return;
  }
  reply_json(rep, 200, o);
}

static bool valid_fsync_mode(const char *m) {
  return !strcmp(m, "none") || !strcmp(m, "periodic") || !strcmp(m, "on_commit");
}

/* Reads and validates the register body into r; false with why. */
static bool read_register(const cJSON *o, cp_register_req *r, char *why) {
  char host[256], port[16];
  r->boot_id = r->http_address = r->previous_storage_id = "";
  r->unread_copies = 0;
  r->rotated = false;
  if (!cpj_string(o, "broker_id", true, 64, &r->broker_id, why, WHY_CAP) ||
      !cpj_string(o, "storage_id", true, 32, &r->storage_id, why, WHY_CAP) ||
      !cpj_string(o, "boot_id", false, 64, &r->boot_id, why, WHY_CAP) ||
      !cpj_string(o, "fsync_mode", true, 15, &r->fsync_mode, why, WHY_CAP) ||
      !cpj_string(o, "address", true, 255, &r->address, why, WHY_CAP) ||
      !cpj_string(o, "http_address", false, 255, &r->http_address, why, WHY_CAP) ||
      !cpj_string(o, "previous_storage_id", false, 32, &r->previous_storage_id, why, WHY_CAP) ||
      !cpj_int(o, "unread_copies", false, 0, 1000000000, &r->unread_copies, why, WHY_CAP) ||
      !cpj_bool(o, "rotated", false, &r->rotated, why, WHY_CAP))
    return false;
  if (!cp_valid_name(r->broker_id))
    snprintf(why, WHY_CAP, "field broker_id is '%s', must be 1-64 of A-Z a-z 0-9 . _ - not starting with . or -",
             r->broker_id);
  else if (!cp_valid_hex32(r->storage_id))
    snprintf(why, WHY_CAP, "field storage_id is '%s', must be 32 lowercase hex characters", r->storage_id);
  else if (r->previous_storage_id[0] && !cp_valid_hex32(r->previous_storage_id))
    snprintf(why, WHY_CAP, "field previous_storage_id is '%s', must be 32 lowercase hex characters",
             r->previous_storage_id);
  else if (!valid_fsync_mode(r->fsync_mode))
    snprintf(why, WHY_CAP, "field fsync_mode is '%s', must be none, periodic or on_commit", r->fsync_mode);
  else if (!cp_split_addr(r->address, host, sizeof host, port, sizeof port))
    snprintf(why, WHY_CAP, "field address is '%s', must be HOST:PORT", r->address);
  else
    return true;
  return false;
}

static void do_register(cp_state *cp, const cJSON *o, cp_reply *rep) {
  char why[WHY_CAP] = "";
  cp_register_req r = {0};
  cp_inv_entry *inv = NULL;
  bool present;
  if (!read_register(o, &r, why) || !cpj_inventory(o, &present, &inv, &r.ninv, why, WHY_CAP)) {
    cp_reply_error(rep, 400, "see docs/control-plane-api.md", "%s", why);
    return;
  }
  r.inv = inv;
  r.has_inventory = present;
  char inc[CP_INC_MAX];
  cp_outcome out;
  cp_register(cp, &r, inc, &out);
  free(inv);
  if (out.status != 200) {
    cp_reply_outcome(rep, &out);
    return;
  }
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "broker_id", r.broker_id);
  cJSON_AddStringToObject(j, "incarnation", inc);
  reply_placement(cp, r.broker_id, j, true, rep);
}

static bool read_ids(const cJSON *o, const char **broker, const char **inc, char *why) {
  return cpj_string(o, "broker_id", true, 64, broker, why, WHY_CAP) &&
         cpj_string(o, "incarnation", true, CP_INC_MAX - 1, inc, why, WHY_CAP);
}

static void do_heartbeat(cp_state *cp, const cJSON *o, cp_reply *rep) {
  char why[WHY_CAP] = "";
  const char *broker = NULL, *inc = NULL;
  cp_inv_entry *inv = NULL;
  size_t ninv = 0;
  bool present;
  if (!read_ids(o, &broker, &inc, why) || !cpj_inventory(o, &present, &inv, &ninv, why, WHY_CAP)) {
    cp_reply_error(rep, 400, "see docs/control-plane-api.md", "%s", why);
    return;
  }
  cp_outcome out;
  /* An empty inventory array is still an inventory: the broker holds nothing. */
  static const cp_inv_entry none;
  cp_heartbeat(cp, broker, inc, present ? (inv ? inv : &none) : NULL, ninv, &out);
  free(inv);
  if (out.status != 200) {
    cp_reply_outcome(rep, &out);
    return;
  }
  if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "draining"))) cp_note_draining(cp, broker);
  reply_placement(cp, broker, cJSON_CreateObject(), true, rep);
}

static void do_assignments(cp_state *cp, const cp_request *req, cp_reply *rep) {
  const char *broker = req->query ? req->query(req->query_ctx, "broker_id") : NULL;
  const char *inc = req->query ? req->query(req->query_ctx, "incarnation") : NULL;
  if (!broker || !inc) {
    cp_reply_error(rep, 400, "GET /v1/broker/assignments?broker_id=B&incarnation=I", "query argument %s is required",
                   broker ? "incarnation" : "broker_id");
    return;
  }
  cp_outcome out;
  cp_check_incarnation(cp, broker, inc, &out);
  if (out.status != 200) {
    cp_reply_outcome(rep, &out);
    return;
  }
  reply_placement(cp, broker, cJSON_CreateObject(), false, rep);
}

/* Reads a report's optional "followers": what the leader measured each
 * replica holding on its live connection (§4.5). */
static bool read_followers(const cJSON *arr, cp_report_shard *s, char *why) {
  if (!arr) return true;
  if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > FELIX_MAX_REPLICAS) {
    snprintf(why, WHY_CAP, "field followers must be an array of at most %d objects", FELIX_MAX_REPLICAS);
    return false;
  }
  const cJSON *f;
  cJSON_ArrayForEach(f, arr) {
    cp_report_follower *x = &s->followers[s->nfollowers++];
    bool ok = cJSON_IsObject(f) && cpj_string(f, "broker", true, 64, &x->broker, why, WHY_CAP) &&
              cpj_bool(f, "connected", true, &x->connected, why, WHY_CAP) &&
              cpj_string(f, "copy_id", x->connected, 32, &x->copy_id, why, WHY_CAP) &&
              cpj_int(f, "held", x->connected, 0, INT64_MAX, &x->held, why, WHY_CAP) &&
              cpj_int(f, "h0", x->connected, 0, INT64_MAX, &x->h0, why, WHY_CAP);
    if (!ok) {
      char inner[WHY_CAP];
      snprintf(inner, sizeof inner, "%s", cJSON_IsObject(f) ? why : "must be an object");
      snprintf(why, WHY_CAP, "followers[%zu]: %.400s", s->nfollowers - 1, inner);
      return false;
    }
  }
  return true;
}

/* Reads shards[i] of a report; false with why. */
static bool read_report_shard(const cJSON *e, int i, cp_report_shard *s, char *why) {
  int64_t shard = 0;
  memset(s, 0, sizeof *s);
  s->log_bytes = -1; /* a broker before log_bytes sends none */
  bool ok = cJSON_IsObject(e) && cpj_string(e, "stream", true, 64, &s->stream, why, WHY_CAP) &&
            cpj_string(e, "stream_uuid", false, 39, &s->stream_uuid, why, WHY_CAP) &&
            cpj_int(e, "shard", true, 0, 1023, &shard, why, WHY_CAP) &&
            cpj_int(e, "generation", true, 0, INT64_MAX, &s->generation, why, WHY_CAP) &&
            cpj_string(e, "copy_id", true, 32, &s->copy_id, why, WHY_CAP) &&
            cpj_int(e, "log_start", false, 0, INT64_MAX, &s->log_start, why, WHY_CAP) &&
            cpj_int(e, "log_end", true, 0, INT64_MAX, &s->log_end, why, WHY_CAP) &&
            cpj_int(e, "last_generation", true, 0, INT64_MAX, &s->last_generation, why, WHY_CAP) &&
            cpj_int(e, "generation_start", true, 0, INT64_MAX, &s->generation_start, why, WHY_CAP) &&
            cpj_int(e, "hwm", true, 0, INT64_MAX, &s->hwm, why, WHY_CAP) &&
            cpj_int(e, "no_quorum_ms", false, 0, INT64_MAX, &s->no_quorum_ms, why, WHY_CAP) &&
            cpj_int(e, "log_bytes", false, 0, INT64_MAX, &s->log_bytes, why, WHY_CAP);
  if (ok && cJSON_GetObjectItem(e, "hwm_generation"))
    ok = s->has_hwm_generation = cpj_int(e, "hwm_generation", true, 0, INT64_MAX, &s->hwm_generation, why, WHY_CAP);
  if (ok) ok = read_followers(cJSON_GetObjectItem(e, "followers"), s, why);
  s->shard = (int)shard;
  if (!ok) {
    char inner[WHY_CAP];
    snprintf(inner, sizeof inner, "%s", cJSON_IsObject(e) ? why : "must be an object");
    snprintf(why, WHY_CAP, "shards[%d]: %.400s", i, inner);
  }
  return ok;
}

static void report_reply(int accepted, const cp_report_rejection *rej, size_t nrej, cp_reply *rep) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "accepted", accepted);
  cJSON *ra = cJSON_AddArrayToObject(j, "rejected");
  for (size_t i = 0; i < nrej; i++) {
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "stream", rej[i].stream);
    cJSON_AddNumberToObject(x, "shard", rej[i].shard);
    cJSON_AddStringToObject(x, "reason", rej[i].reason);
    cJSON_AddItemToArray(ra, x);
  }
  reply_json(rep, 200, j);
}

static void do_report(cp_state *cp, const cJSON *o, cp_reply *rep) {
  char why[WHY_CAP] = "";
  const char *broker = NULL, *inc = NULL;
  int64_t seq = 0;
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "shards");
  bool ok = read_ids(o, &broker, &inc, why) && cpj_int(o, "seq", true, 0, INT64_MAX, &seq, why, WHY_CAP);
  if (ok && !cJSON_IsArray(arr)) {
    snprintf(why, WHY_CAP, "field shards must be an array");
    ok = false;
  }
  int n = ok ? cJSON_GetArraySize(arr) : 0;
  cp_report_shard *s = calloc((size_t)n + 1, sizeof *s);
  cp_report_rejection *rej = calloc((size_t)n + 1, sizeof *rej);
  int i = 0;
  for (const cJSON *e = ok ? arr->child : NULL; e && ok; e = e->next, i++) ok = read_report_shard(e, i, &s[i], why);
  if (!ok || !s || !rej) {
    cp_reply_error(rep, 400, "see docs/control-plane-api.md", "%s", why[0] ? why : "out of memory");
  } else {
    cp_outcome out;
    size_t nrej = 0;
    int accepted = cp_report(cp, broker, inc, seq, s, (size_t)n, rej, &nrej, &out);
    if (out.status != 200) cp_reply_outcome(rep, &out);
    else report_reply(accepted, rej, nrej, rep);
  }
  free(s);
  free(rej);
}

void cp_api_broker(cp_state *cp, const cp_request *req, char **path, int npath, cp_reply *rep) {
  const char *ep = npath == 1 ? path[0] : "";
  bool is_get = !strcmp(ep, "assignments");
  if (strcmp(ep, "register") && strcmp(ep, "heartbeat") && strcmp(ep, "report") && !is_get) {
    cp_reply_error(rep, 404, "see docs/control-plane-api.md", "no such endpoint: %s %s", req->method, req->url);
    return;
  }
  if (strcmp(req->method, is_get ? "GET" : "POST")) {
    cp_reply_error(rep, 405, NULL, "method %s is not allowed on %s; use %s", req->method, req->url,
                   is_get ? "GET" : "POST");
    return;
  }
  if (is_get) {
    do_assignments(cp, req, rep);
    return;
  }
  char why[WHY_CAP];
  cJSON *o = cpj_parse_object(req->body, req->body_len, why, sizeof why);
  if (!o) {
    cp_reply_error(rep, 400, "send a JSON object", "%s", why);
    return;
  }
  if (!strcmp(ep, "register")) do_register(cp, o, rep);
  else if (!strcmp(ep, "heartbeat")) do_heartbeat(cp, o, rep);
  else do_report(cp, o, rep);
  cJSON_Delete(o);
}
