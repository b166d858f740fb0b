/* broker/assign.c — the loop's side of the control plane: build the
 * inventory and the report for the control-plane thread, and apply the
 * assignments, leader metadata and deletions it brings back. */
#include <assert.h>
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "felix/fileutil.h"
#include "felix/jsonnum.h"
#include "felix/lease.h"
#include "felix/logfmt.h"
#include "felix/replication.h"

static void post_to_cp(broker *b, char *json, bool report) {
  if (!json) { /* printing ran out of memory: the last one stays, and the next tick tries again (helper-30) */
    felix_log_event("error", report ? "out of memory: the report waits for the next tick"
                                    : "out of memory: the inventory waits for the next tick", NULL);
    if (report) b->report_due = true;
    else b->inventory_stale = true;
    return;
  }
  pthread_mutex_lock(&b->mb.mu);
  char **slot = report ? &b->mb.report_json : &b->mb.inventory_json;
  free(*slot);
  *slot = json;
  if (report) b->mb.report_dirty = true;
  else b->mb.inventory_dirty = true;
  pthread_cond_broadcast(&b->mb.cv);
  pthread_mutex_unlock(&b->mb.mu);
}

static cJSON *copy_json(const shard *s) {
  cJSON *j = cJSON_CreateObject();
  felix_log_stats st = {0};
  if (s->log) felix_log_get_stats(s->log, &st);
  /* A copy never shows an HWM beyond the records it has: a truncation lowers
   * it with the log (review 5, item 3). */
  assert(!s->log || s->hwm <= st.end_offset);
  cJSON_AddStringToObject(j, "stream", s->stream);
  cJSON_AddStringToObject(j, "stream_uuid", s->ballot.stream_uuid);
  cJSON_AddNumberToObject(j, "shard", s->index);
  cJSON_AddStringToObject(j, "copy_id", s->ballot.copy_id);
  felix_json_add_u64(j, "log_start", st.start_offset);
  felix_json_add_u64(j, "log_end", st.held_end);
  /* the size of its segments: `felixctl top` turns the leader's into bytes/s */
  felix_json_add_u64(j, "log_bytes", st.bytes);
  felix_json_add_u64(j, "last_generation", shard_last_generation(s, st.held_end));
  cJSON *g = cJSON_AddArrayToObject(j, "generations");
  for (size_t i = 0; i < s->gens.count; i++) {
    if (s->gens.items[i].start_offset >= st.held_end) break; /* no record of it is held */
    cJSON *pair = cJSON_CreateArray();
    cJSON_AddItemToArray(pair, felix_json_u64_item(s->gens.items[i].generation));
    cJSON_AddItemToArray(pair, felix_json_u64_item(s->gens.items[i].start_offset));
    cJSON_AddItemToArray(g, pair);
  }
  return j;
}

/* Puts the copy's entry in the inventory; false (and j freed) when it or
 * its last field could not be made (out of memory). */
static bool put_entry(cJSON *arr, cJSON *j, bool last_field_made) {
  if (j && arr && last_field_made && cJSON_AddItemToArray(arr, j)) return true;
  cJSON_Delete(j);
  return false;
}

static void publish_inventory_now(broker *b) {
  b->inventory_stale = false;
  cJSON *arr = cJSON_CreateArray();
  /* every copy or none: an inventory short of one (out of memory) would make
   * the control plane forget it at the next registration (helper-31) */
  bool whole = arr != NULL;
  for (shard *s = b->shards; s; s = s->next) {
    if (s->refused) {
      /* Said, not omitted: a gone copy is forgotten and made anew; a refused
       * one is neither placed nor counted until it is reopened. A copy refused
       * before its ballot was read has no id to say it under. */
      if (!felix_hex_valid(s->ballot.copy_id, 32) || !s->ballot.stream_uuid[0]) continue;
      cJSON *j = cJSON_CreateObject();
      cJSON_AddStringToObject(j, "stream", s->stream);
      cJSON_AddStringToObject(j, "stream_uuid", s->ballot.stream_uuid);
      cJSON_AddNumberToObject(j, "shard", s->index);
      cJSON_AddStringToObject(j, "copy_id", s->ballot.copy_id);
      felix_json_add_u64(j, "log_end", 0);
      whole = put_entry(arr, j, cJSON_AddTrueToObject(j, s->gone ? "gone" : "refused")) && whole;
      continue;
    }
    cJSON *j = copy_json(s);
    felix_json_add_u64(j, "ballot_generation", s->ballot.generation);
    cJSON_AddStringToObject(j, "ballot_leader", s->ballot.has_leader ? s->ballot.leader : "none");
    /* cp_instance (added last, below): built after the loop last heard from
     * this instance, every promise it gave to another instance's fence is
     * in the ballot above (§4.8). */
    if (s->has_meta) { /* what `stream adopt` needs of a stream a restored database lost (§4.8) */
      cJSON_AddNumberToObject(j, "shards", s->meta.shards);
      cJSON_AddNumberToObject(j, "replicas", s->meta.replicas);
      cJSON_AddStringToObject(j, "acks", s->meta.acks);
    }
    whole = put_entry(arr, j, cJSON_AddStringToObject(j, "cp_instance", b->cp_instance)) && whole;
  }
  post_to_cp(b, whole ? cJSON_PrintUnformatted(arr) : NULL, false);
  cJSON_Delete(arr);
}

static void publish_report_now(broker *b) {
  cJSON *arr = cJSON_CreateArray();
  for (shard *s = b->shards; s; s = s->next) {
    if (!s->leading) continue;
    cJSON *j = copy_json(s);
    felix_json_add_u64(j, "generation", s->ballot.generation);
    felix_json_add_u64(j, "generation_start", s->generation_start);
    felix_json_add_u64(j, "hwm", s->hwm);
    cJSON_AddNumberToObject(j, "no_quorum_ms", s->stalled_since_ms ? (double)(uv_now(b->loop) - s->stalled_since_ms) : 0);
    felix_json_add_u64(j, "hwm_generation", (s->hwm ? shard_last_generation(s, s->hwm) : 0));
    cJSON_AddItemToObject(j, "followers", peer_followers_json(s));
    cJSON_AddItemToArray(arr, j);
  }
  post_to_cp(b, cJSON_PrintUnformatted(arr), true);
  cJSON_Delete(arr);
}

void broker_publish_inventory(broker *b) { b->inventory_due = true; }
void broker_publish_report(broker *b) { b->report_due = true; }

/* Once per loop iteration (a uv_prepare handle, before libuv polls): what
 * changed since goes out in one inventory and one report.
 * Built once per change, as before, they were O(shards) each and most of a
 * broker's time at 256 shards (review 5, item 1: perf). */
void broker_publish_due(broker *b) {
  if (b->inventory_due) {
    b->inventory_due = false;
    publish_inventory_now(b);
  }
  if (b->report_due) {
    b->report_due = false;
    publish_report_now(b);
  }
}

static const char *str_of(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItem(o, k);
  return cJSON_IsString(v) ? v->valuestring : "";
}

/* A control-plane field as an integer, by the one checked reader: 0 when
 * absent or not a number, and 0 with an error logged when not an exact integer (2^53 or
 * beyond would have been rounded by the double cJSON keeps). */
static int64_t num_of(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItem(o, k);
  int64_t n = 0;
  if (cJSON_IsNumber(v) && felix_json_i64(v, &n) != FELIX_JSON_INT_OK) {
    felix_log_event("error", "a control-plane field is not an exact integer: read as 0", "field", k, NULL);
    n = 0;
  }
  return n;
}

/* Keeps the copy's `stream` file equal to what the control plane assigns. */
static void keep_stream_meta(broker *b, shard *s, const cJSON *a) {
  felix_stream_meta m = {.shards = (uint32_t)num_of(a, "shards"), .replicas = (uint32_t)s->replicas};
  snprintf(m.name, sizeof m.name, "%s", s->stream);
  snprintf(m.uuid, sizeof m.uuid, "%s", s->ballot.stream_uuid);
  snprintf(m.acks, sizeof m.acks, "%s", felix_ack_policy_name(s->ack_policy));
  if (s->refused || s->dirfd < 0 || m.shards == 0 || m.replicas == 0 || (s->has_meta && felix_stream_meta_equal(&m, &s->meta))) return;
  char what[4700];
  felix_err err;
  snprintf(what, sizeof what, "%s/stream", s->path);
  if (felix_stream_meta_write(s->dirfd, what, &m, &err)) {
    shard_fail_closed(b, s, "stream", err.msg); /* memory keeps what is on disk */
    return;
  }
  s->meta = m;
  s->has_meta = true;
  b->inventory_stale = true; /* published at the next tick, once for every copy that changed */
}

/* The replica set, the stream's ack policy and, for a fence, the copy id
 * and floor the control plane names for each replica (§4.6). */
static void apply_members(broker *b, shard *s, const cJSON *a) {
  const cJSON *ms = cJSON_GetObjectItem(a, "members");
  if (!cJSON_IsArray(ms)) return;
  s->replicas = (int)num_of(a, "replicas");
  uint64_t was_generation = s->members_generation;
  s->members_generation = (uint64_t)num_of(a, "generation");
  s->cp_max_hwm = (int64_t)num_of(a, "max_hwm");
  s->abandon_fence = cJSON_IsTrue(cJSON_GetObjectItem(a, "abandon"));
  int policy = felix_ack_policy_parse(str_of(a, "acks"));
  s->ack_policy = policy ? policy : FELIX_ACK_QUORUM;
  int n = 0;
  bool changed = false;
  const cJSON *m;
  cJSON_ArrayForEach(m, ms) {
    if (n >= BROKER_MAX_MEMBERS) break;
    member x = {0};
    snprintf(x.broker, sizeof x.broker, "%s", str_of(m, "broker"));
    snprintf(x.address, sizeof x.address, "%s", str_of(m, "address"));
    snprintf(x.named_copy_id, sizeof x.named_copy_id, "%s", str_of(m, "named_copy_id"));
    x.floor = (int64_t)num_of(m, "floor");
    const member *was = &s->members[n];
    changed |= n >= s->nmembers || strcmp(x.broker, was->broker) || strcmp(x.address, was->address) ||
               strcmp(x.named_copy_id, was->named_copy_id) || x.floor != was->floor;
    s->members[n++] = x;
  }
  changed |= n != s->nmembers || was_generation != s->members_generation;
  s->nmembers = n;
  keep_stream_meta(b, s, a);
  if (changed) peer_members_changed(b, s);
}

void broker_drop_shard_leases(broker *b) {
  for (shard *s = b->shards; s; s = s->next) s->lease_until_ms = 0;
}

/* §4.2: a reply that confirms this process's pin at the copy's generation
 * renews the shard's lease for leader acknowledgements. */
static void renew_shard_lease(broker *b, shard *s, const cJSON *a, const cJSON *leader, uint64_t sent_ms,
                              uint64_t lease_ms) {
  /* Only an Active generation that this process leads: a Fencing one may
   * still be failed over by a fence timeout while a lease would run (found
   * by the adversarial review), and Active never returns to Fencing. */
  if (!lease_ms || !sent_ms || !s->leading || strcmp(str_of(a, "state"), "Active") ||
      cJSON_IsFalse(cJSON_GetObjectItem(a, "renew_lease")) || /* the shard is about to move (item 6) */
      (uint64_t)num_of(a, "generation") != s->ballot.generation ||
      strcmp(str_of(leader, "broker"), b->cfg.id) || strcmp(str_of(leader, "copy_id"), s->ballot.copy_id) ||
      strcmp(str_of(leader, "incarnation"), b->incarnation))
    return;
  uint64_t until = felix_shard_lease_until(sent_ms, lease_ms);
  /* CLOCK_BOOTTIME is monotonic: the request went out before its reply, and
   * the lease ends before the control plane's would, counted from the send. */
  assert(sent_ms <= felix_boottime_ms());
  assert(until < sent_ms + lease_ms);
  if (until <= s->lease_until_ms) return;
  s->lease_until_ms = until;
  peer_check_acks(b, s); /* leader acknowledgements that waited for it */
}

/* A directory of that name is here, refused before its ballot could say
 * which shard it holds: a new copy cannot take its place (and must not). */
static bool dir_taken(broker *b, const char *stream, uint32_t index, const char *uuid) {
  char name[300];
  if (!felix_shard_dir_name(name, sizeof name, stream, index, uuid)) return false;
  for (shard *s = b->shards; s; s = s->next)
    if (!strcmp(s->dir_name, name)) return true;
  return false;
}

/* Review 5, item 7: the leader-elect of an abandon's generation is the copy
 * it keeps, and the maximum HWM its first assignment carries is what the
 * abandon said it keeps. Taken once per abandon, as the model's `keep` is at
 * the fence's start (later assignments carry a maximum HWM that grew). */
static void note_abandon_keeps(broker *b, shard *s, const cJSON *leader, uint64_t generation) {
  if (!s->abandon_fence || s->ballot.generation != generation || generation == s->abandon_keeps_generation ||
      strcmp(str_of(leader, "broker"), b->cfg.id) || strcmp(str_of(leader, "copy_id"), s->ballot.copy_id))
    return;
  s->abandon_keeps_generation = generation;
  s->abandon_keeps = s->cp_max_hwm;
  char kept[32];
  snprintf(kept, sizeof kept, "%" PRId64, s->abandon_keeps);
  felix_log_event("info", "placement abandon keeps this copy: no cut below what it keeps", "shard", s->dir_name,
                  "kept", kept, NULL);
}

static void apply_one(broker *b, const cJSON *a, uint64_t sent_ms, uint64_t lease_ms) {
  const char *stream = str_of(a, "stream"), *uuid = str_of(a, "stream_uuid");
  uint32_t index = (uint32_t)num_of(a, "shard");
  shard *s = broker_find_shard_uuid(b, uuid, index);
  if (s && s->gone && s->pending_held == 0 && cJSON_IsTrue(cJSON_GetObjectItem(a, "create_copy"))) {
    shard_delete(b, s); /* what is left of a deleted directory: a new copy replaces it */
    s = NULL;
  }
  if (!s && cJSON_IsTrue(cJSON_GetObjectItem(a, "create_copy")) && !dir_taken(b, stream, index, uuid)) {
    if (shard_create_copy(b, stream, index, uuid) == 0) broker_publish_inventory(b);
    s = broker_find_shard_uuid(b, uuid, index);
  }
  const cJSON *leader = cJSON_GetObjectItem(a, "leader");
  if (!s) return;
  /* Review 5, item 7: a role of generation G ends before G+1's members are
   * applied, and never runs under another generation's members. */
  uint64_t generation = (uint64_t)num_of(a, "generation");
  if ((s->leading || s->fencing) && generation > s->ballot.generation)
    shard_stop_leading(b, s, "the control plane issued a newer generation");
  bool in_role = s->leading || s->fencing;
  if (!in_role || generation == s->ballot.generation) apply_members(b, s, a);
  if (!cJSON_IsObject(leader)) return;
  shard_apply_assignment(b, s, generation, str_of(leader, "broker"), str_of(leader, "copy_id"),
                         str_of(leader, "incarnation"), str_of(leader, "address"));
  note_abandon_keeps(b, s, leader, generation);
  renew_shard_lease(b, s, a, leader, sent_ms, lease_ms);
}

/* A new control-plane instance (a restart or a restored database): from now
 * on this copy refuses fences of the old one's assignments, and its next
 * inventory — the only one the new instance counts — says so (§4.8). */
static void note_cp_instance(broker *b, const cJSON *j) {
  const char *inst = str_of(j, "instance_id");
  if (!inst[0] || !strcmp(inst, b->cp_instance)) return;
  snprintf(b->cp_instance, sizeof b->cp_instance, "%s", inst);
  felix_log_event("info", "control-plane instance", "instance_id", inst, NULL);
  broker_drop_shard_leases(b); /* granted by another instance: only this one's replies renew them */
  broker_publish_inventory(b);
}

static void apply_leaders(broker *b, const cJSON *leaders) {
  size_t n = (size_t)cJSON_GetArraySize(leaders);
  leader_entry *le = calloc(n ? n : 1, sizeof *le);
  if (!le) return;
  size_t k = 0;
  const cJSON *x;
  cJSON_ArrayForEach(x, leaders) {
    leader_entry *e = &le[k++];
    snprintf(e->stream, sizeof e->stream, "%s", str_of(x, "stream"));
    e->shard = (uint32_t)num_of(x, "shard");
    e->generation = (uint64_t)num_of(x, "generation");
    snprintf(e->state, sizeof e->state, "%s", str_of(x, "state"));
    snprintf(e->leader, sizeof e->leader, "%s", str_of(x, "leader"));
    snprintf(e->address, sizeof e->address, "%s", str_of(x, "address"));
  }
  free(b->leaders);
  b->leaders = le;
  b->nleaders = k;
}

static void apply_deletions(broker *b, const cJSON *deleted) {
  const cJSON *x;
  cJSON_ArrayForEach(x, deleted) {
    if (!cJSON_IsString(x)) continue;
    for (shard *s = b->shards, *next; s; s = next) {
      next = s->next;
      /* an on_commit batch still syncing holds the shard: delete it next time */
      if (!strcmp(s->ballot.stream_uuid, x->valuestring) && s->pending_held == 0) shard_delete(b, s);
    }
  }
}

void broker_apply_cp(broker *b, const char *json, uint64_t sent_ms) {
  cJSON *j = cJSON_Parse(json);
  if (!j) return;
  note_cp_instance(b, j);
  apply_leaders(b, cJSON_GetObjectItem(j, "leaders"));
  apply_deletions(b, cJSON_GetObjectItem(j, "deleted_streams"));
  const cJSON *a;
  uint64_t lease_ms = (uint64_t)num_of(j, "lease_ms"); /* heartbeat and registration replies carry it */
  int64_t hb = num_of(j, "heartbeat_ms"); /* the cadence the control-plane thread keeps */
  if (hb >= 1 && hb <= 60000) {
    pthread_mutex_lock(&b->mb.mu);
    b->mb.heartbeat_ms = (uint64_t)hb;
    pthread_mutex_unlock(&b->mb.mu);
  }
  cJSON_ArrayForEach(a, cJSON_GetObjectItem(j, "assignments")) apply_one(b, a, sent_ms, lease_ms);
  cJSON_Delete(j);
}
