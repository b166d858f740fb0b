/* control-plane/operator_api.c — the operator endpoints: /v1/cluster, /v1/brokers,
 * /v1/streams, /v1/shards (docs/control-plane-api.md "Operator endpoints").
 * Field names are fixed by the contract (felixctl -o json and scripts read
 * them); extra fields are additions, never renames. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adopt.h"
#include "api.h"
#include "felix/jsonnum.h"
#include "json.h"
#include "felix/fileutil.h"

static void reply_json(cp_reply *rep, int status, cJSON *o) {
  rep->status = status;
  free(rep->body);
  rep->body = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
}

static void db_error(cp_reply *rep, const felix_err *err) {
  cp_reply_error(rep, 500, "see the control plane's log", "database error: %s", err->msg);
}

/* The store keeps these times to the second: RFC 3339 with microseconds
 * (.000000), the one form of every time in the JSON (docs/json/). */
static void add_time(cJSON *o, const char *k, int64_t unix_s) { felix_json_add_time(o, k, unix_s * 1000000); }

static void add_str_or_null(cJSON *o, const char *k, const char *v) {
  if (v && *v) cJSON_AddStringToObject(o, k, v);
  else cJSON_AddNullToObject(o, k);
}

static const cp_broker_row *find_broker(const cp_broker_row *bs, size_t n, const char *id) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(bs[i].id, id)) return &bs[i];
  return NULL;
}

/* ---- JSON shapes ---- */

static cJSON *broker_json(cp_state *cp, const cp_broker_row *b) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "id", b->id);
  cJSON_AddStringToObject(o, "storage_id", b->storage_id);
  cJSON_AddStringToObject(o, "incarnation", b->incarnation);
  cJSON_AddStringToObject(o, "address", b->address);
  cJSON_AddStringToObject(o, "http_address", b->http_address);
  cJSON_AddBoolToObject(o, "alive", cp_broker_alive(cp, b->id));
  cJSON_AddStringToObject(o, "fsync_mode", b->fsync_mode);
  cJSON_AddStringToObject(o, "boot_id", b->boot_id);
  cJSON_AddNumberToObject(o, "lease_age_ms", (double)cp_broker_lease_age(cp, b->id));
  add_time(o, "registered_at", b->registered_at);
  cJSON_AddBoolToObject(o, "rotated", b->rotated);
  return o;
}

static cJSON *stream_json(const cp_stream_row *s) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", s->name);
  cJSON_AddStringToObject(o, "uuid", s->uuid);
  cJSON_AddNumberToObject(o, "shard_count", s->shards);
  cJSON_AddNumberToObject(o, "replication_factor", s->replicas); /* "replicas" is a shard's array of copies */
  cJSON_AddStringToObject(o, "acks", s->acks);
  add_time(o, "created_at", s->created_at);
  return o;
}

static cJSON *event_json(const cp_event *e) {
  cJSON *o = cJSON_CreateObject();
  felix_json_add_i64(o, "event_id", e->id); /* "id" is a broker's name */
  add_time(o, "occurred_at", e->ts);
  cJSON_AddStringToObject(o, "kind", e->kind);
  add_str_or_null(o, "stream", e->stream);
  if (e->shard >= 0) cJSON_AddNumberToObject(o, "shard", e->shard);
  else cJSON_AddNullToObject(o, "shard");
  if (e->generation >= 0) felix_json_add_i64(o, "generation", e->generation);
  else cJSON_AddNullToObject(o, "generation");
  add_str_or_null(o, "broker", e->broker);
  cJSON_AddStringToObject(o, "message", e->message);
  return o;
}

/* A copy is caught up when it is known (a copy id, not a stranger) and has
 * confirmed every record the shard ever committed. */
static bool slot_caught_up(const cp_shard_row *sh, const cp_slot_row *s) {
  return s->copy_id[0] && !s->stranger && s->confirmed >= sh->max_hwm;
}

int cp_caught_up_replicas(const cp_shard_row *sh, uint64_t *max_lag) {
  int n = 0;
  *max_lag = 0;
  for (int i = 0; i < sh->nslots; i++) {
    const cp_slot_row *s = &sh->slots[i];
    uint64_t have = s->copy_id[0] && !s->stranger ? (uint64_t)s->confirmed : 0;
    uint64_t lag = (uint64_t)sh->max_hwm > have ? (uint64_t)sh->max_hwm - have : 0;
    if (lag > *max_lag) *max_lag = lag;
    n += slot_caught_up(sh, s);
  }
  return n;
}

static cJSON *replica_json(cp_state *cp, const cp_shard_row *sh, const cp_slot_row *s, const cp_broker_row *b) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "broker", s->broker);
  add_str_or_null(o, "storage_id", s->storage_id);
  add_str_or_null(o, "registered_storage_id", b ? b->storage_id : NULL);
  add_str_or_null(o, "copy_id", s->copy_id);
  add_str_or_null(o, "incarnation", b ? b->incarnation : NULL);
  felix_json_add_i64(o, "confirmed", s->confirmed);
  cJSON_AddBoolToObject(o, "caught_up", slot_caught_up(sh, s));
  cJSON_AddBoolToObject(o, "stranger", s->stranger);
  cJSON_AddBoolToObject(o, "alive", cp_broker_alive(cp, s->broker));
  cJSON_AddBoolToObject(o, "refused", s->copy_id[0] && cp_copy_refused(cp, s->broker, sh->stream_uuid, sh->shard, s->copy_id));
  felix_json_add_i64(o, "floor", s->floor);
  return o;
}

static void add_log_bytes(cp_state *cp, cJSON *o, const cp_shard_row *sh) {
  int64_t bytes = cp_shard_log_bytes(cp, sh);
  if (bytes >= 0) felix_json_add_i64(o, "log_bytes", bytes);
  else cJSON_AddNullToObject(o, "log_bytes");
}

static cJSON *shard_json(cp_state *cp, const cp_shard_row *sh, const cp_broker_row *bs, size_t nb) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "stream", sh->stream);
  cJSON_AddNumberToObject(o, "shard", sh->shard);
  felix_json_add_i64(o, "generation", sh->generation);
  cJSON_AddStringToObject(o, "state", sh->state);
  bool led = sh->generation > 0 && sh->leader[0];
  add_str_or_null(o, "leader", led ? sh->leader : NULL);
  const cp_broker_row *lb = led ? find_broker(bs, nb, sh->leader) : NULL;
  add_str_or_null(o, "leader_address", lb ? lb->address : NULL);
  felix_json_add_i64(o, "hwm", sh->hwm);
  felix_json_add_i64(o, "max_hwm", sh->max_hwm);
  add_log_bytes(cp, o, sh);
  cJSON_AddStringToObject(o, "detail", sh->detail);
  add_str_or_null(o, "leader_copy_id", led ? sh->leader_copy_id : NULL);
  add_str_or_null(o, "leader_incarnation", led ? sh->leader_incarnation : NULL);
  cJSON_AddBoolToObject(o, "waiting_for_inventories", sh->generation > 0 && cp_shard_waiting(cp, sh));
  felix_json_add_i64(o, "seen_generation", sh->seen_generation);
  uint64_t lag;
  int caught = cp_caught_up_replicas(sh, &lag);
  cJSON_AddNumberToObject(o, "caught_up_replicas", caught);
  felix_json_add_u64(o, "max_lag_records", lag);
  cJSON_AddBoolToObject(o, "under_replicated", caught < sh->nslots);
  char who[FELIX_MAX_REPLICAS][CP_ID_MAX];
  int nwho = cp_shard_waiting_for(cp, sh, who);
  cJSON *w = cJSON_AddArrayToObject(o, "waiting_for"); /* the replicas whose inventories it still waits for */
  for (int i = 0; i < nwho; i++) cJSON_AddItemToArray(w, cJSON_CreateString(who[i]));
  cJSON *rs = cJSON_AddArrayToObject(o, "replicas");
  for (int i = 0; i < sh->nslots; i++)
    cJSON_AddItemToArray(rs, replica_json(cp, sh, &sh->slots[i], find_broker(bs, nb, sh->slots[i].broker)));
  return o;
}

/* ---- handlers ---- */

static void stream_reply(cp_state *cp, const cp_stream_row *s, int status, cp_reply *rep);

static void get_cluster(cp_state *cp, cp_reply *rep) {
  felix_err err;
  cp_broker_row *bs = NULL;
  cp_stream_row *ss = NULL;
  cp_shard_row *sh = NULL;
  size_t nb = 0, ns = 0, nsh = 0;
  if (cp_store_brokers_list(cp->store, &bs, &nb, &err) || cp_store_streams_list(cp->store, &ss, &ns, &err) ||
      cp_store_shards_list(cp->store, NULL, &sh, &nsh, &err)) {
    db_error(rep, &err);
  } else {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "instance_id", cp->instance_id);
    add_time(o, "started_at", cp->started_at);
    cJSON_AddNumberToObject(o, "lease_ms", (double)cp->lease_ms);
    int alive = 0, active = 0, fencing = 0, stuck = 0, waiting = 0, under = 0;
    uint64_t lag;
    for (size_t i = 0; i < nb; i++) alive += cp_broker_alive(cp, bs[i].id);
    for (size_t i = 0; i < nsh; i++) {
      waiting += cp_shard_waiting(cp, &sh[i]);
      active += !strcmp(sh[i].state, "Active");
      fencing += !strcmp(sh[i].state, "Fencing");
      stuck += !strcmp(sh[i].state, "NoCaughtUpReplica");
      under += cp_caught_up_replicas(&sh[i], &lag) < sh[i].nslots;
    }
    /* Counts are flat <thing>_<property> numbers: "shards" is an array
     * everywhere, and waiting_for_inventories a shard's boolean. */
    cJSON_AddNumberToObject(o, "brokers_total", (double)nb);
    cJSON_AddNumberToObject(o, "brokers_alive", alive);
    cJSON_AddNumberToObject(o, "streams_total", (double)ns);
    cJSON_AddNumberToObject(o, "shards_total", (double)nsh);
    cJSON_AddNumberToObject(o, "shards_active", active);
    cJSON_AddNumberToObject(o, "shards_fencing", fencing);
    cJSON_AddNumberToObject(o, "shards_no_caught_up_replica", stuck);
    cJSON_AddNumberToObject(o, "shards_waiting_for_inventories", waiting); /* §4.8: no decision for them yet */
    cJSON_AddNumberToObject(o, "shards_under_replicated", under);           /* fewer caught-up copies than replicas */
    cJSON_AddBoolToObject(o, "start_up_wait_open", cp_waiting_for_inventories(cp));
    cJSON_AddNumberToObject(o, "schema_version", cp_store_schema_version(cp->store));
    reply_json(rep, 200, o);
  }
  free(bs);
  free(ss);
  free(sh);
}

static void get_brokers(cp_state *cp, cp_reply *rep) {
  felix_err err;
  cp_broker_row *bs = NULL;
  size_t nb = 0;
  if (cp_store_brokers_list(cp->store, &bs, &nb, &err)) {
    db_error(rep, &err);
  } else {
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < nb; i++) cJSON_AddItemToArray(a, broker_json(cp, &bs[i]));
    reply_json(rep, 200, a);
  }
  free(bs);
}

static void add_copies(const char *id, const cp_shard_row *sh, size_t nsh, cJSON *o) {
  cJSON *a = cJSON_AddArrayToObject(o, "copies");
  for (size_t k = 0; k < nsh; k++)
    for (int i = 0; i < sh[k].nslots; i++) {
      if (strcmp(sh[k].slots[i].broker, id)) continue;
      cJSON *c = cJSON_CreateObject();
      cJSON_AddStringToObject(c, "stream", sh[k].stream);
      cJSON_AddNumberToObject(c, "shard", sh[k].shard);
      add_str_or_null(c, "copy_id", sh[k].slots[i].copy_id);
      cJSON_AddStringToObject(c, "role", sh[k].generation == 0            ? "replica"
                                         : !strcmp(sh[k].leader, id) ? "leader"
                                                                     : "follower");
      felix_json_add_i64(c, "generation", sh[k].generation);
      cJSON_AddItemToArray(a, c);
    }
}

static void add_history(const cp_event *ev, size_t n, cJSON *o) {
  cJSON *a = o ? cJSON_AddArrayToObject(o, "history") : NULL;
  for (size_t i = 0; i < n && a; i++) cJSON_AddItemToArray(a, event_json(&ev[i]));
}

static void get_broker(cp_state *cp, const char *id, cp_reply *rep) {
  felix_err err;
  cp_broker_row b;
  bool found = false;
  cp_shard_row *sh = NULL;
  cp_event *ev = NULL;
  size_t nsh = 0, nev = 0;
  if (cp_store_broker_get(cp->store, id, &b, &found, &err) ||
      cp_store_shards_list(cp->store, NULL, &sh, &nsh, &err) ||
      cp_store_events_list(cp->store, NULL, 0, id, &ev, &nev, &err)) {
    db_error(rep, &err);
  } else if (!found) {
    cp_reply_error(rep, 404, "felixctl broker list shows the brokers", "broker %s is not known", id);
  } else {
    cJSON *o = broker_json(cp, &b);
    add_copies(id, sh, nsh, o);
    add_history(ev, nev, o);
    reply_json(rep, 200, o);
  }
  free(sh);
  free(ev);
}

static bool valid_acks(const char *a) {
  return !strcmp(a, "quorum") || !strcmp(a, "leader") || !strcmp(a, "all");
}

static bool read_create(const cJSON *o, const char **name, int64_t *shards, int64_t *replicas, const char **acks,
                        char *why, size_t cap) {
  if (!cpj_string(o, "name", true, 256, name, why, cap) || !cpj_int(o, "shard_count", true, 1, 1024, shards, why, cap) ||
      !cpj_int(o, "replication_factor", false, INT32_MIN, INT32_MAX, replicas, why, cap) ||
      !cpj_string(o, "acks", false, 16, acks, why, cap))
    return false;
  if (!cp_valid_name(*name))
    snprintf(why, cap, "field name is '%.256s', must be 1-64 of A-Z a-z 0-9 . _ - not starting with . or -", *name);
  else if (*replicas < 1 || *replicas > 7 || *replicas % 2 == 0)
    snprintf(why, cap, "field replication_factor is %" PRId64 ", must be odd, 1 to 7", *replicas);
  else if (!valid_acks(*acks))
    snprintf(why, cap, "field acks is '%s', must be quorum, leader or all", *acks);
  else
    return true;
  return false;
}

static void post_stream(cp_state *cp, const cp_request *req, cp_reply *rep) {
  char why[512] = "";
  const char *name = NULL, *acks = "quorum";
  int64_t shards = 0, replicas = 1; /* replicas defaults to 1 until replication lands */
  cJSON *o = cpj_parse_object(req->body, req->body_len, why, sizeof why);
  if (!o || !read_create(o, &name, &shards, &replicas, &acks, why, sizeof why)) {
    cp_reply_error(rep, 400, "see docs/control-plane-api.md", "%s", why);
    cJSON_Delete(o);
    return;
  }
  cp_stream_row s;
  cp_outcome out;
  cp_stream_create(cp, name, (int)shards, (int)replicas, acks, &s, &out);
  cJSON_Delete(o);
  if (out.status != 201) {
    cp_reply_outcome(rep, &out);
    return;
  }
  cp_reevaluate_all(cp);
  stream_reply(cp, &s, 201, rep);
}

static void get_streams(cp_state *cp, cp_reply *rep) {
  felix_err err;
  cp_stream_row *ss = NULL;
  size_t n = 0;
  if (cp_store_streams_list(cp->store, &ss, &n, &err)) {
    db_error(rep, &err);
  } else {
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(a, stream_json(&ss[i]));
    reply_json(rep, 200, a);
  }
  free(ss);
}

/* The stream object plus its shards. */
static void stream_reply(cp_state *cp, const cp_stream_row *s, int status, cp_reply *rep) {
  felix_err err;
  cp_shard_row *sh = NULL;
  cp_broker_row *bs = NULL;
  size_t nsh = 0, nb = 0;
  if (cp_store_shards_list(cp->store, s->uuid, &sh, &nsh, &err) || cp_store_brokers_list(cp->store, &bs, &nb, &err)) {
    db_error(rep, &err);
  } else {
    cJSON *o = stream_json(s);
    cJSON *a = cJSON_AddArrayToObject(o, "shards");
    for (size_t i = 0; i < nsh; i++) cJSON_AddItemToArray(a, shard_json(cp, &sh[i], bs, nb));
    reply_json(rep, status, o);
  }
  free(sh);
  free(bs);
}

static void one_stream(cp_state *cp, const cp_request *req, const char *name, cp_reply *rep) {
  if (!strcmp(req->method, "DELETE")) {
    cp_stream_row s;
    cp_outcome out;
    cp_stream_delete(cp, name, &s, &out);
    if (out.status != 200) {
      cp_reply_outcome(rep, &out);
      return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", s.name);
    cJSON_AddStringToObject(o, "uuid", s.uuid);
    cJSON_AddBoolToObject(o, "deleted", true);
    reply_json(rep, 200, o);
    return;
  }
  felix_err err;
  cp_stream_row s;
  bool found;
  if (cp_store_stream_by_name(cp->store, name, &s, &found, &err)) db_error(rep, &err);
  else if (!found) cp_reply_error(rep, 404, "felixctl stream list shows the streams", "stream %s does not exist", name);
  else stream_reply(cp, &s, 200, rep);
}

/* POST /v1/streams/{name}/adopt {"uuid": optional} (§4.8). */
static void adopt_stream(cp_state *cp, const cp_request *req, const char *name, cp_reply *rep) {
  char why[512] = "";
  const char *uuid = NULL;
  cJSON *o = req->body_len ? cpj_parse_object(req->body, req->body_len, why, sizeof why) : cJSON_CreateObject();
  if (!o || !cpj_string(o, "uuid", false, 39, &uuid, why, sizeof why)) {
    cp_reply_error(rep, 400, "see docs/control-plane-api.md", "%s", why);
    cJSON_Delete(o);
    return;
  }
  cp_stream_row s;
  cp_outcome out;
  cp_stream_adopt(cp, name, uuid && *uuid ? uuid : NULL, &s, &out);
  cJSON_Delete(o);
  if (out.status != 201) cp_reply_outcome(rep, &out);
  else stream_reply(cp, &s, 201, rep);
}

static bool valid_state(const char *s) {
  return !strcmp(s, "Active") || !strcmp(s, "Fencing") || !strcmp(s, "NoCaughtUpReplica");
}

static void get_shards(cp_state *cp, const cp_request *req, cp_reply *rep) {
  const char *state = req->query ? req->query(req->query_ctx, "state") : NULL;
  if (state && !valid_state(state)) {
    cp_reply_error(rep, 400, "state is Active, Fencing or NoCaughtUpReplica", "unknown state '%s'", state);
    return;
  }
  felix_err err;
  cp_shard_row *sh = NULL;
  cp_broker_row *bs = NULL;
  size_t nsh = 0, nb = 0;
  if (cp_store_shards_list(cp->store, NULL, &sh, &nsh, &err) || cp_store_brokers_list(cp->store, &bs, &nb, &err)) {
    db_error(rep, &err);
  } else {
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < nsh; i++)
      if (!state || !strcmp(sh[i].state, state)) cJSON_AddItemToArray(a, shard_json(cp, &sh[i], bs, nb));
    reply_json(rep, 200, a);
  }
  free(sh);
  free(bs);
}

/* GET /v1/events?limit=N: the newest N (default 20, 1..1000) events of the cluster, oldest first. */
static void get_events(cp_state *cp, const cp_request *req, cp_reply *rep) {
  const char *lim = req->query ? req->query(req->query_ctx, "limit") : NULL;
  char *end = NULL;
  long limit = lim ? strtol(lim, &end, 10) : 20;
  if (lim && (!*lim || *end || limit < 1 || limit > 1000)) {
    cp_reply_error(rep, 400, "limit is an integer from 1 to 1000", "limit '%s' is not an integer from 1 to 1000", lim);
    return;
  }
  felix_err err;
  cp_event *ev = NULL;
  size_t n = 0;
  if (cp_store_events_recent(cp->store, (int)limit, &ev, &n, &err)) {
    db_error(rep, &err);
  } else {
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(a, event_json(&ev[i]));
    reply_json(rep, 200, a);
  }
  free(ev);
}

/* Finds stream/shard from URL segments; replies 404/400 itself when not. */
static bool lookup_shard(cp_state *cp, const char *stream, const char *num, cp_shard_row *out, cp_reply *rep) {
  char *end;
  long k = strtol(num, &end, 10);
  if (!*num || *end || k < 0 || k > 1023) {
    cp_reply_error(rep, 400, "address a shard as STREAM/N", "shard '%s' is not a shard number", num);
    return false;
  }
  felix_err err;
  cp_stream_row s;
  bool found;
  if (cp_store_stream_by_name(cp->store, stream, &s, &found, &err) ||
      (found && cp_store_shard_get(cp->store, s.uuid, (int)k, out, &found, &err))) {
    db_error(rep, &err);
    return false;
  }
  if (!found) cp_reply_error(rep, 404, "felixctl shard list shows the shards", "shard %s/%ld does not exist", stream, k);
  return found;
}

static void one_shard(cp_state *cp, char **path, int npath, cp_reply *rep) {
  cp_shard_row sh;
  if (!lookup_shard(cp, path[0], path[1], &sh, rep)) return;
  felix_err err;
  if (npath == 3) {
    cp_event *ev = NULL;
    size_t n = 0;
    if (cp_store_events_list(cp->store, sh.stream_uuid, sh.shard, NULL, &ev, &n, &err)) {
      db_error(rep, &err);
    } else {
      cJSON *a = cJSON_CreateArray();
      for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(a, event_json(&ev[i]));
      reply_json(rep, 200, a);
    }
    free(ev);
    return;
  }
  cp_broker_row *bs = NULL;
  size_t nb = 0;
  if (cp_store_brokers_list(cp->store, &bs, &nb, &err)) db_error(rep, &err);
  else reply_json(rep, 200, shard_json(cp, &sh, bs, nb));
  free(bs);
}

static bool method_is(const cp_request *req, const char *allowed, cp_reply *rep) {
  /* allowed is "GET" or "GET,POST" ...: a whole-word match */
  size_t n = strlen(req->method);
  for (const char *p = allowed; (p = strstr(p, req->method)) != NULL; p += n)
    if ((p == allowed || p[-1] == ',') && (p[n] == '\0' || p[n] == ',')) return true;
  cp_reply_error(rep, 405, NULL, "method %s is not allowed on %s; use %s", req->method, req->url, allowed);
  return false;
}

void cp_api_operator(cp_state *cp, const cp_request *req, char **path, int npath, cp_reply *rep) {
  const char *r = path[0];
  if (!strcmp(r, "cluster") && npath == 1) {
    if (method_is(req, "GET", rep)) get_cluster(cp, rep);
  } else if (!strcmp(r, "brokers") && npath <= 2) {
    if (method_is(req, "GET", rep)) npath == 1 ? get_brokers(cp, rep) : get_broker(cp, path[1], rep);
  } else if (!strcmp(r, "streams") && npath == 1) {
    if (method_is(req, "GET,POST", rep)) !strcmp(req->method, "GET") ? get_streams(cp, rep) : post_stream(cp, req, rep);
  } else if (!strcmp(r, "streams") && npath == 2) {
    if (method_is(req, "GET,DELETE", rep)) one_stream(cp, req, path[1], rep);
  } else if (!strcmp(r, "streams") && npath == 3 && !strcmp(path[2], "adopt")) {
    if (method_is(req, "POST", rep)) adopt_stream(cp, req, path[1], rep);
  } else if (!strcmp(r, "events") && npath == 1) {
    if (method_is(req, "GET", rep)) get_events(cp, req, rep);
  } else if (!strcmp(r, "shards") && npath == 1) {
    if (method_is(req, "GET", rep)) get_shards(cp, req, rep);
  } else if (!strcmp(r, "shards") && npath == 4 && !strcmp(path[3], "abandon")) {
    if (method_is(req, "POST", rep)) cp_api_abandon(cp, req, path[1], path[2], rep);
  } else if (!strcmp(r, "shards") && (npath == 3 || (npath == 4 && !strcmp(path[3], "history")))) {
    if (method_is(req, "GET", rep)) one_shard(cp, path + 1, npath - 1, rep);
  } else {
    cp_reply_error(rep, 404, "see docs/control-plane-api.md", "no such endpoint: %s %s", req->method, req->url);
  }
}
