/* control-plane/streams.c — creating and deleting streams (docs/control-plane-api.md
 * "POST /v1/streams", DESIGN.md §4.1). Invariants: a new shard's replicas are
 * R distinct brokers alive at creation, committed with the stream before the
 * 201; a new shard starts at generation 0 (Fencing) with no copy ids, and
 * control-plane/decide.c issues generation 1 once the copies exist. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state_internal.h"
#include "felix/fileutil.h"

static felix_status make_uuid(char out[40], felix_err *err) {
  unsigned char r[16];
  if (felix_random_bytes(r, sizeof r, err)) return err->status;
  r[6] = (unsigned char)((r[6] & 0x0f) | 0x40); /* version 4 */
  r[8] = (unsigned char)((r[8] & 0x3f) | 0x80); /* RFC 4122 variant */
  char hex[33];
  felix_hex_encode(r, sizeof r, hex);
  snprintf(out, 40, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16, hex + 20);
  return FELIX_OK;
}

/* Every broker with its load (replicas placed) and leaderships; free both. */
static felix_status load_brokers(cp_state *cp, felix_place_broker **pb, cp_broker_row **rows, size_t *n,
                                 felix_err *err) {
  *pb = NULL;
  if (cp_store_brokers_list(cp->store, rows, n, err)) return err->status;
  *pb = calloc(*n ? *n : 1, sizeof **pb);
  if (!*pb) return felix_fail(err, FELIX_E_IO, "out of memory");
  cp_shard_row *sh = NULL;
  size_t nsh = 0;
  if (cp_store_shards_list(cp->store, NULL, &sh, &nsh, err)) {
    free(sh);
    return err->status;
  }
  for (size_t i = 0; i < *n; i++) {
    felix_place_broker *p = &(*pb)[i];
    p->id = (*rows)[i].id;
    p->alive = cp_broker_alive(cp, p->id);
    for (size_t k = 0; k < nsh; k++) {
      p->leaderships += sh[k].generation > 0 && !strcmp(sh[k].leader, p->id);
      for (int j = 0; j < sh[k].nslots; j++) p->load += !strcmp(sh[k].slots[j].broker, p->id);
    }
  }
  free(sh);
  return FELIX_OK;
}

static felix_status insert_shards(cp_state *cp, const cp_stream_row *s, felix_place_broker *pb, size_t npb,
                                  cp_outcome *out, felix_err *err) {
  for (int k = 0; k < s->shards; k++) {
    size_t chosen[FELIX_MAX_REPLICAS];
    felix_err perr;
    if (felix_place_shard(pb, npb, s->replicas, chosen, &perr) != FELIX_OK) {
      cp_outcome_fail(out, 422, "start more brokers, or create the stream with fewer replicas", "%s", perr.msg);
      return FELIX_OK;
    }
    cp_shard_row sh;
    memset(&sh, 0, sizeof sh);
    snprintf(sh.stream_uuid, sizeof sh.stream_uuid, "%s", s->uuid);
    snprintf(sh.stream, sizeof sh.stream, "%s", s->name);
    sh.shard = k;
    snprintf(sh.state, sizeof sh.state, "Fencing");
    sh.nslots = s->replicas;
    char names[600] = "";
    for (int j = 0; j < s->replicas; j++) {
      snprintf(sh.slots[j].broker, sizeof sh.slots[j].broker, "%s", pb[chosen[j]].id);
      size_t used = strlen(names);
      snprintf(names + used, sizeof names - used, "%s%s", j ? ", " : "", pb[chosen[j]].id);
    }
    snprintf(sh.detail, sizeof sh.detail, "waiting for the replicas' empty copies");
    if (cp_store_shard_put(cp->store, &sh, err) ||
        cp_event_add(cp, "created", &sh, sh.slots[0].broker, 0, err, "%s/%d placed on %s at generation 0",
                     sh.stream, sh.shard, names))
      return err->status;
  }
  return FELIX_OK;
}

static felix_status create_txn(cp_state *cp, cp_stream_row *s, cp_outcome *out, felix_err *err) {
  cp_stream_row existing;
  bool found;
  if (cp_store_stream_by_name(cp->store, s->name, &existing, &found, err)) return err->status;
  if (found) {
    cp_outcome_fail(out, 409, "choose another name, or delete the stream first", "stream %s exists (uuid %s)",
                    s->name, existing.uuid);
    return FELIX_OK;
  }
  if (s->replicas < 1 || s->replicas % 2 == 0 || s->replicas > FELIX_MAX_REPLICAS) {
    cp_outcome_fail(out, 422, "use an odd replication factor such as 3",
                    "replicas %d: the replication factor must be odd and at most %d, so that a majority is always "
                    "more than half", s->replicas, FELIX_MAX_REPLICAS);
    return FELIX_OK;
  }
  felix_place_broker *pb = NULL;
  cp_broker_row *rows = NULL;
  size_t n = 0;
  felix_status st = load_brokers(cp, &pb, &rows, &n, err);
  if (st == FELIX_OK) st = make_uuid(s->uuid, err);
  if (st == FELIX_OK) st = cp_store_stream_insert(cp->store, s, err);
  if (st == FELIX_OK) st = insert_shards(cp, s, pb, n, out, err);
  free(pb);
  free(rows);
  return st;
}

void cp_stream_create(cp_state *cp, const char *name, int shards, int replicas, const char *acks,
                      cp_stream_row *created, cp_outcome *out) {
  felix_err err;
  memset(created, 0, sizeof *created);
  snprintf(created->name, sizeof created->name, "%s", name);
  snprintf(created->acks, sizeof created->acks, "%s", acks ? acks : "quorum");
  created->shards = shards;
  created->replicas = replicas;
  created->created_at = (int64_t)(felix_now_micros() / 1000000u);
  cp_outcome_ok(out, 201);
  if (cp_store_begin(cp->store, &err) || create_txn(cp, created, out, &err) || out->status != 201 ||
      cp_store_commit(cp->store, &err)) {
    cp_store_rollback(cp->store);
    if (out->status == 201) cp_outcome_store_error(out, &err);
  }
}

void cp_stream_delete(cp_state *cp, const char *name, cp_stream_row *deleted, cp_outcome *out) {
  felix_err err;
  bool found;
  cp_outcome_ok(out, 200);
  if (cp_store_begin(cp->store, &err) || cp_store_stream_by_name(cp->store, name, deleted, &found, &err))
    goto fail;
  if (!found) {
    cp_store_rollback(cp->store);
    cp_outcome_fail(out, 404, "felixctl stream list shows the streams", "stream %s does not exist", name);
    return;
  }
  cp_shard_row sh;
  memset(&sh, 0, sizeof sh);
  snprintf(sh.stream, sizeof sh.stream, "%s", deleted->name);
  snprintf(sh.stream_uuid, sizeof sh.stream_uuid, "%s", deleted->uuid);
  sh.shard = -1;
  if (cp_store_stream_delete(cp->store, deleted->uuid, (int64_t)(felix_now_micros() / 1000000u), &err) ||
      cp_event_add(cp, "deleted", &sh, NULL, -1, &err, "stream %s (uuid %s) deleted", deleted->name, deleted->uuid) ||
      cp_store_commit(cp->store, &err))
    goto fail;
  cp_shard_mem_forget(cp, deleted->uuid);
  return;
fail:
  cp_store_rollback(cp->store);
  cp_outcome_store_error(out, &err);
}
