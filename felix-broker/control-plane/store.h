/* control-plane/store.h — the control plane's store (DESIGN.md §4.1): the
 * one interface through which the engine (state.c, decide.c, registry.c,
 * streams.c, abandon.c, adopt.c) reads and writes what must outlive a
 * restart. Nothing above it knows how the rows are kept.
 *
 * The contract every implementation keeps: used only under the caller's lock
 * (cp_state serializes every access); writes happen between cp_store_begin
 * and cp_store_commit and are all or nothing; a commit that returned is
 * durable, so callers commit every generation, pin, placement and
 * incarnation change before the reply that announces it.
 *
 * Implementations: store_sqlite.c (one SQLite connection, WAL,
 * synchronous=FULL; the schema is created and migrated there, PRAGMA
 * user_version plus a schema_version table that says the same). */
#ifndef FELIX_CP_STORE_H
#define FELIX_CP_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "felix/error.h"
#include "felix/placement.h"

#define CP_SCHEMA_VERSION 3
#define CP_ID_MAX 65   /* broker ids, stream names: up to 64 chars */
#define CP_HEX_MAX 65  /* storage ids, copy ids, boot ids */
#define CP_INC_MAX 96  /* "<32 hex>.<counter>" */
#define CP_ADDR_MAX 256

typedef struct cp_store cp_store;

typedef struct cp_broker_row {
  char id[CP_ID_MAX];
  char storage_id[CP_HEX_MAX];
  int64_t counter; /* registrations ever; the incarnation's counter */
  char incarnation[CP_INC_MAX];
  char address[CP_ADDR_MAX], http_address[CP_ADDR_MAX];
  char fsync_mode[16];
  char boot_id[CP_HEX_MAX];
  int64_t registered_at; /* unix seconds */
  bool rotated;
  bool have_seq;
  int64_t report_seq; /* last accepted report seq of this incarnation */
} cp_broker_row;

typedef struct cp_stream_row {
  char uuid[40];
  char name[CP_ID_MAX];
  int shards, replicas;
  char acks[8];
  int64_t created_at;
} cp_stream_row;

typedef struct cp_slot_row {
  char broker[CP_ID_MAX];
  char copy_id[CP_HEX_MAX];    /* "" = none: the broker must make (or list) a copy */
  char storage_id[CP_HEX_MAX]; /* the storage id the copy was measured under */
  bool stranger;               /* joined under a new identity, never measured since */
  int64_t confirmed;           /* what the newest trusted measurement saw it hold */
  int64_t floor;
} cp_slot_row;

typedef struct cp_shard_row {
  char stream_uuid[40];
  char stream[CP_ID_MAX]; /* joined from streams */
  int replicas;           /* joined */
  char acks[8];           /* joined */
  int shard;
  int64_t generation;
  int64_t seen_generation; /* highest seen in any ballot, inventory, report or refusal */
  char state[24];          /* "Fencing" | "Active" | "NoCaughtUpReplica" */
  char leader[CP_ID_MAX];  /* the pin of `generation`; "" at generation 0 */
  char leader_copy_id[CP_HEX_MAX];
  char leader_incarnation[CP_INC_MAX];
  int64_t hwm, max_hwm, max_hwm_generation;
  int64_t abandon_generation; /* the generation `placement abandon` issued (its fence adopts the chosen copy only) */
  char detail[1200];
  int nslots;
  cp_slot_row slots[FELIX_MAX_REPLICAS];
} cp_shard_row;

typedef struct cp_event {
  int64_t id;
  int64_t ts;
  char kind[32];
  char stream[CP_ID_MAX];
  char stream_uuid[40];
  int shard;              /* -1 = none */
  int64_t generation;     /* -1 = none */
  char broker[CP_ID_MAX]; /* "" = none */
  char message[1400];
} cp_event;

felix_status cp_store_open(const char *path, cp_store **out, felix_err *err);
void cp_store_close(cp_store *s);
int cp_store_schema_version(cp_store *s);

/* Settings (schema 3): an integer per key; *found false when never set. */
felix_status cp_store_setting_get(cp_store *s, const char *key, int64_t *value, bool *found, felix_err *err);
felix_status cp_store_setting_put(cp_store *s, const char *key, int64_t value, felix_err *err);

felix_status cp_store_begin(cp_store *s, felix_err *err);
felix_status cp_store_commit(cp_store *s, felix_err *err);
void cp_store_rollback(cp_store *s);
/* fn(ctx, committed) runs when a transaction ends: true after a commit that
 * returned, false after a rollback or a commit that failed. */
void cp_store_on_txn_end(cp_store *s, void (*fn)(void *ctx, bool committed), void *ctx);
bool cp_store_in_txn(cp_store *s);

felix_status cp_store_broker_get(cp_store *s, const char *id, cp_broker_row *out, bool *found, felix_err *err);
felix_status cp_store_broker_put(cp_store *s, const cp_broker_row *b, felix_err *err);
/* All brokers, sorted by id; free(*out). */
felix_status cp_store_brokers_list(cp_store *s, cp_broker_row **out, size_t *n, felix_err *err);

felix_status cp_store_stream_insert(cp_store *s, const cp_stream_row *r, felix_err *err);
felix_status cp_store_stream_by_name(cp_store *s, const char *name, cp_stream_row *out, bool *found, felix_err *err);
/* Live (not deleted) streams sorted by name; free(*out). */
felix_status cp_store_streams_list(cp_store *s, cp_stream_row **out, size_t *n, felix_err *err);
/* Marks the stream deleted and drops its shards and slots. */
felix_status cp_store_stream_delete(cp_store *s, const char *uuid, int64_t at, felix_err *err);
/* Uuids of deleted streams, 40 bytes each; free(*out). */
felix_status cp_store_deleted_uuids(cp_store *s, char (**out)[40], size_t *n, felix_err *err);

/* Inserts or replaces the shard and all its slots. */
felix_status cp_store_shard_put(cp_store *s, const cp_shard_row *r, felix_err *err);
felix_status cp_store_shard_get(cp_store *s, const char *stream_uuid, int shard, cp_shard_row *out, bool *found,
                                felix_err *err);
/* Shards of live streams, sorted by stream name then shard; stream_uuid NULL
 * for all. free(*out). */
/* How many live shards pin broker as the leader of their current generation. */
felix_status cp_store_leaderships(cp_store *s, const char *broker, int *count, felix_err *err);
felix_status cp_store_shards_list(cp_store *s, const char *stream_uuid, cp_shard_row **out, size_t *n,
                                  felix_err *err);
felix_status cp_store_pin_insert(cp_store *s, const cp_shard_row *r, int64_t at, felix_err *err);

felix_status cp_store_event_add(cp_store *s, const cp_event *e, felix_err *err);
/* Events, oldest first, of one shard (broker NULL) or one broker (stream_uuid NULL). free(*out). */
felix_status cp_store_events_list(cp_store *s, const char *stream_uuid, int shard, const char *broker,
                                  cp_event **out, size_t *n, felix_err *err);
/* The newest `limit` events of the whole cluster, oldest first. free(*out). */
felix_status cp_store_events_recent(cp_store *s, int limit, cp_event **out, size_t *n, felix_err *err);

#endif
