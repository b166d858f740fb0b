/* control-plane/store_sqlite.c — SQLite schema, migrations and typed queries (control-plane/store.h).
 * Invariants: one connection; every write happens inside cp_store_begin /
 * cp_store_commit; the schema version only grows and a database newer than
 * this program is refused rather than guessed at. */
#include "store.h"

#include <sqlite3.h>
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CP_STMT_CACHE 32

/* Prepared statements are kept, keyed by their SQL text's address (every
 * call site passes a string literal): preparing a statement cost more than
 * running it, and the control plane runs the same few thousands of times a
 * second at scale (review 5, item 1). */
typedef struct cached_stmt {
  const char *sql;
  sqlite3_stmt *st;
} cached_stmt;

struct cp_store {
  sqlite3 *db;
  int version;
  cached_stmt cache[CP_STMT_CACHE];
  int ncache;
  void (*txn_end)(void *ctx, bool committed);
  void *txn_ctx;
};

/* Version 1: everything of DESIGN.md §4.1 that must survive a restart.
 * Leases and inventories are deliberately absent: they live in memory. */
static const char *schema_v1 =
    "CREATE TABLE schema_version(version INTEGER NOT NULL);"
    "CREATE TABLE brokers(id TEXT PRIMARY KEY, storage_id TEXT NOT NULL, counter INTEGER NOT NULL,"
    " incarnation TEXT NOT NULL, address TEXT NOT NULL, http_address TEXT NOT NULL,"
    " fsync_mode TEXT NOT NULL, boot_id TEXT NOT NULL, registered_at INTEGER NOT NULL,"
    " rotated INTEGER NOT NULL, report_seq INTEGER);"
    "CREATE TABLE streams(uuid TEXT PRIMARY KEY, name TEXT NOT NULL, shards INTEGER NOT NULL,"
    " replicas INTEGER NOT NULL, acks TEXT NOT NULL, created_at INTEGER NOT NULL, deleted_at INTEGER);"
    "CREATE UNIQUE INDEX streams_live_name ON streams(name) WHERE deleted_at IS NULL;"
    "CREATE TABLE shards(stream_uuid TEXT NOT NULL, shard INTEGER NOT NULL, generation INTEGER NOT NULL,"
    " seen_generation INTEGER NOT NULL, state TEXT NOT NULL, leader TEXT NOT NULL,"
    " leader_copy_id TEXT NOT NULL, leader_incarnation TEXT NOT NULL, hwm INTEGER NOT NULL,"
    " max_hwm INTEGER NOT NULL, max_hwm_generation INTEGER NOT NULL, detail TEXT NOT NULL,"
    " PRIMARY KEY(stream_uuid, shard));"
    "CREATE TABLE slots(stream_uuid TEXT NOT NULL, shard INTEGER NOT NULL, slot INTEGER NOT NULL,"
    " broker TEXT NOT NULL, copy_id TEXT NOT NULL, storage_id TEXT NOT NULL, stranger INTEGER NOT NULL,"
    " confirmed INTEGER NOT NULL, floor INTEGER NOT NULL, PRIMARY KEY(stream_uuid, shard, slot));"
    "CREATE INDEX slots_broker ON slots(broker);"
    "CREATE TABLE pins(stream_uuid TEXT NOT NULL, shard INTEGER NOT NULL, generation INTEGER NOT NULL,"
    " broker TEXT NOT NULL, copy_id TEXT NOT NULL, incarnation TEXT NOT NULL, issued_at INTEGER NOT NULL,"
    " PRIMARY KEY(stream_uuid, shard, generation));"
    "CREATE TABLE events(id INTEGER PRIMARY KEY AUTOINCREMENT, ts INTEGER NOT NULL, kind TEXT NOT NULL,"
    " stream TEXT NOT NULL, stream_uuid TEXT NOT NULL, shard INTEGER NOT NULL, generation INTEGER NOT NULL,"
    " broker TEXT NOT NULL, message TEXT NOT NULL);"
    "CREATE INDEX events_shard ON events(stream_uuid, shard);"
    "CREATE INDEX events_broker ON events(broker);"
    "INSERT INTO schema_version(version) VALUES (1);"
    "PRAGMA user_version = 1;";

/* Version 2: placement abandon marks the generation it issued. */
static const char *schema_v2 =
    "ALTER TABLE shards ADD COLUMN abandon_generation INTEGER NOT NULL DEFAULT 0;"
    "UPDATE schema_version SET version = 2;"
    "PRAGMA user_version = 2;";

/* Version 3: settings that outlive one start — the longest lease ever used,
 * so that a start with a shorter one still waits out leases granted under
 * the longer one (§4.2). */
static const char *schema_v3 =
    "CREATE TABLE settings(key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
    "UPDATE schema_version SET version = 3;"
    "PRAGMA user_version = 3;";

static felix_status db_fail(cp_store *s, felix_err *err, const char *what) {
  return felix_fail(err, FELIX_E_IO, "%s: %s", what, sqlite3_errmsg(s->db));
}

static felix_status exec(cp_store *s, const char *sql, felix_err *err) {
  char *msg = NULL;
  if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) == SQLITE_OK) return FELIX_OK;
  felix_status st = felix_fail(err, FELIX_E_IO, "sqlite: %s", msg ? msg : "error");
  sqlite3_free(msg);
  return st;
}

static int read_user_version(cp_store *s) {
  sqlite3_stmt *st = NULL;
  int v = -1;
  if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  return v;
}

static felix_status migrate(cp_store *s, const char *path, felix_err *err) {
  s->version = read_user_version(s);
  if (s->version < 0) return db_fail(s, err, path);
  if (s->version > CP_SCHEMA_VERSION)
    return felix_fail(err, FELIX_E_REFUSED, "%s has schema version %d, newer than this program's %d", path,
                      s->version, CP_SCHEMA_VERSION);
  if (s->version == CP_SCHEMA_VERSION) return FELIX_OK;
  /* Each step runs in its own transaction so a crash leaves a whole version. */
  const char *const steps[] = {schema_v1, schema_v2, schema_v3};
  for (int v = s->version; v < CP_SCHEMA_VERSION; v++) {
    felix_status st = exec(s, "BEGIN IMMEDIATE", err);
    if (st == FELIX_OK) st = exec(s, steps[v], err);
    if (st == FELIX_OK) st = exec(s, "COMMIT", err);
    if (st != FELIX_OK) {
      sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
      return st;
    }
    s->version = v + 1;
  }
  return FELIX_OK;
}

felix_status cp_store_open(const char *path, cp_store **out, felix_err *err) {
  cp_store *s = calloc(1, sizeof *s);
  if (!s) return felix_fail(err, FELIX_E_IO, "out of memory");
  *out = NULL;
  if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) !=
      SQLITE_OK) {
    felix_status st = felix_fail(err, FELIX_E_IO, "open database %s: %s", path,
                                 s->db ? sqlite3_errmsg(s->db) : "out of memory");
    cp_store_close(s);
    return st;
  }
  sqlite3_busy_timeout(s->db, 5000);
  felix_status st = exec(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;", err);
  if (st == FELIX_OK) st = migrate(s, path, err);
  if (st != FELIX_OK) {
    cp_store_close(s);
    return st;
  }
  *out = s;
  return FELIX_OK;
}

void cp_store_close(cp_store *s) {
  if (!s) return;
  for (int i = 0; i < s->ncache; i++) sqlite3_finalize(s->cache[i].st);
  sqlite3_close(s->db);
  free(s);
}

int cp_store_schema_version(cp_store *s) {
  return s->version;
}

felix_status cp_store_begin(cp_store *s, felix_err *err) {
  return exec(s, "BEGIN IMMEDIATE", err);
}

felix_status cp_store_commit(cp_store *s, felix_err *err) {
  felix_status st = exec(s, "COMMIT", err);
  if (st != FELIX_OK) cp_store_rollback(s);
  else if (s->txn_end) s->txn_end(s->txn_ctx, true);
  return st;
}

void cp_store_rollback(cp_store *s) {
  if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
  if (s->txn_end) s->txn_end(s->txn_ctx, false);
}

void cp_store_on_txn_end(cp_store *s, void (*fn)(void *ctx, bool committed), void *ctx) {
  s->txn_end = fn;
  s->txn_ctx = ctx;
}

bool cp_store_in_txn(cp_store *s) { return !sqlite3_get_autocommit(s->db); }

/* ---- small statement helpers ---- */

static felix_status prep(cp_store *s, const char *sql, sqlite3_stmt **st, felix_err *err) {
  for (int i = 0; i < s->ncache; i++)
    if (s->cache[i].sql == sql) {
      *st = s->cache[i].st;
      assert(!sqlite3_stmt_busy(*st)); /* released before it is taken again: never used twice at once */
      return FELIX_OK;
    }
  if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK)
    return db_fail(s, err, "prepare");
  if (s->ncache < CP_STMT_CACHE) s->cache[s->ncache++] = (cached_stmt){sql, *st};
  return FELIX_OK;
}

/* Gives back a statement prep returned: reset for its next use when it is
 * kept, finalized otherwise. */
static void release(cp_store *s, sqlite3_stmt *st) {
  for (int i = 0; i < s->ncache; i++)
    if (s->cache[i].st == st) {
      sqlite3_reset(st);
      sqlite3_clear_bindings(st);
      return;
    }
  release(s, st);
}

static felix_status finish(cp_store *s, sqlite3_stmt *st, felix_err *err) {
  int rc = sqlite3_step(st);
  felix_status r = rc == SQLITE_DONE || rc == SQLITE_ROW ? FELIX_OK : db_fail(s, err, "write");
  release(s, st);
  return r;
}

static void col_text(sqlite3_stmt *st, int i, char *out, size_t cap) {
  const unsigned char *t = sqlite3_column_text(st, i);
  snprintf(out, cap, "%s", t ? (const char *)t : "");
}

static void bind_text(sqlite3_stmt *st, int i, const char *v) {
  sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
}

/* Grows *buf (elements of size sz) so index n fits. */
static bool grow(void **buf, size_t *cap, size_t n, size_t sz) {
  if (n < *cap) return true;
  size_t ncap = *cap ? *cap * 2 : 16;
  void *p = realloc(*buf, ncap * sz);
  if (!p) return false;
  *buf = p;
  *cap = ncap;
  return true;
}

/* ---- settings ---- */

felix_status cp_store_setting_get(cp_store *s, const char *key, int64_t *value, bool *found, felix_err *err) {
  sqlite3_stmt *st;
  *found = false;
  if (prep(s, "SELECT value FROM settings WHERE key = ?", &st, err)) return err->status;
  bind_text(st, 1, key);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) *found = true, *value = sqlite3_column_int64(st, 0);
  release(s, st);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? FELIX_OK : db_fail(s, err, "read setting");
}

felix_status cp_store_setting_put(cp_store *s, const char *key, int64_t value, felix_err *err) {
  sqlite3_stmt *st;
  if (prep(s, "INSERT INTO settings(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
           &st, err))
    return err->status;
  bind_text(st, 1, key);
  sqlite3_bind_int64(st, 2, value);
  return finish(s, st, err);
}

/* ---- brokers ---- */

#define BROKER_COLS                                                                                    \
  "id, storage_id, counter, incarnation, address, http_address, fsync_mode, boot_id, registered_at, " \
  "rotated, report_seq"

static void broker_from(sqlite3_stmt *st, cp_broker_row *b) {
  memset(b, 0, sizeof *b);
  col_text(st, 0, b->id, sizeof b->id);
  col_text(st, 1, b->storage_id, sizeof b->storage_id);
  b->counter = sqlite3_column_int64(st, 2);
  col_text(st, 3, b->incarnation, sizeof b->incarnation);
  col_text(st, 4, b->address, sizeof b->address);
  col_text(st, 5, b->http_address, sizeof b->http_address);
  col_text(st, 6, b->fsync_mode, sizeof b->fsync_mode);
  col_text(st, 7, b->boot_id, sizeof b->boot_id);
  b->registered_at = sqlite3_column_int64(st, 8);
  b->rotated = sqlite3_column_int(st, 9) != 0;
  b->have_seq = sqlite3_column_type(st, 10) != SQLITE_NULL;
  b->report_seq = sqlite3_column_int64(st, 10);
}

felix_status cp_store_broker_get(cp_store *s, const char *id, cp_broker_row *out, bool *found, felix_err *err) {
  sqlite3_stmt *st;
  *found = false;
  if (prep(s, "SELECT " BROKER_COLS " FROM brokers WHERE id = ?", &st, err)) return err->status;
  bind_text(st, 1, id);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    broker_from(st, out);
    *found = true;
  }
  release(s, st);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? FELIX_OK : db_fail(s, err, "read broker");
}

felix_status cp_store_broker_put(cp_store *s, const cp_broker_row *b, felix_err *err) {
  sqlite3_stmt *st;
  if (prep(s, "INSERT OR REPLACE INTO brokers(" BROKER_COLS ") VALUES (?,?,?,?,?,?,?,?,?,?,?)", &st, err))
    return err->status;
  bind_text(st, 1, b->id);
  bind_text(st, 2, b->storage_id);
  sqlite3_bind_int64(st, 3, b->counter);
  bind_text(st, 4, b->incarnation);
  bind_text(st, 5, b->address);
  bind_text(st, 6, b->http_address);
  bind_text(st, 7, b->fsync_mode);
  bind_text(st, 8, b->boot_id);
  sqlite3_bind_int64(st, 9, b->registered_at);
  sqlite3_bind_int(st, 10, b->rotated);
  if (b->have_seq) sqlite3_bind_int64(st, 11, b->report_seq);
  else sqlite3_bind_null(st, 11);
  return finish(s, st, err);
}

felix_status cp_store_brokers_list(cp_store *s, cp_broker_row **out, size_t *n, felix_err *err) {
  sqlite3_stmt *st;
  *out = NULL;
  *n = 0;
  if (prep(s, "SELECT " BROKER_COLS " FROM brokers ORDER BY id", &st, err)) return err->status;
  size_t cap = 0;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (!grow((void **)out, &cap, *n, sizeof **out)) break;
    broker_from(st, &(*out)[(*n)++]);
  }
  release(s, st);
  return rc == SQLITE_DONE ? FELIX_OK : db_fail(s, err, "list brokers");
}

/* ---- streams ---- */

#define STREAM_COLS "uuid, name, shards, replicas, acks, created_at"

static void stream_from(sqlite3_stmt *st, cp_stream_row *r) {
  memset(r, 0, sizeof *r);
  col_text(st, 0, r->uuid, sizeof r->uuid);
  col_text(st, 1, r->name, sizeof r->name);
  r->shards = sqlite3_column_int(st, 2);
  r->replicas = sqlite3_column_int(st, 3);
  col_text(st, 4, r->acks, sizeof r->acks);
  r->created_at = sqlite3_column_int64(st, 5);
}

felix_status cp_store_stream_insert(cp_store *s, const cp_stream_row *r, felix_err *err) {
  sqlite3_stmt *st;
  if (prep(s, "INSERT INTO streams(" STREAM_COLS ") VALUES (?,?,?,?,?,?)", &st, err)) return err->status;
  bind_text(st, 1, r->uuid);
  bind_text(st, 2, r->name);
  sqlite3_bind_int(st, 3, r->shards);
  sqlite3_bind_int(st, 4, r->replicas);
  bind_text(st, 5, r->acks);
  sqlite3_bind_int64(st, 6, r->created_at);
  return finish(s, st, err);
}

felix_status cp_store_stream_by_name(cp_store *s, const char *name, cp_stream_row *out, bool *found, felix_err *err) {
  sqlite3_stmt *st;
  *found = false;
  if (prep(s, "SELECT " STREAM_COLS " FROM streams WHERE name = ? AND deleted_at IS NULL", &st, err))
    return err->status;
  bind_text(st, 1, name);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    stream_from(st, out);
    *found = true;
  }
  release(s, st);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? FELIX_OK : db_fail(s, err, "read stream");
}

felix_status cp_store_streams_list(cp_store *s, cp_stream_row **out, size_t *n, felix_err *err) {
  sqlite3_stmt *st;
  *out = NULL;
  *n = 0;
  if (prep(s, "SELECT " STREAM_COLS " FROM streams WHERE deleted_at IS NULL ORDER BY name", &st, err))
    return err->status;
  size_t cap = 0;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (!grow((void **)out, &cap, *n, sizeof **out)) break;
    stream_from(st, &(*out)[(*n)++]);
  }
  release(s, st);
  return rc == SQLITE_DONE ? FELIX_OK : db_fail(s, err, "list streams");
}

static felix_status exec_uuid(cp_store *s, const char *sql, const char *uuid, int64_t at, felix_err *err) {
  sqlite3_stmt *st;
  if (prep(s, sql, &st, err)) return err->status;
  sqlite3_bind_int64(st, 1, at);
  bind_text(st, 2, uuid);
  return finish(s, st, err);
}

felix_status cp_store_stream_delete(cp_store *s, const char *uuid, int64_t at, felix_err *err) {
  /* ?1 is unused by the last two statements; binding it is harmless. */
  if (exec_uuid(s, "UPDATE streams SET deleted_at = ?1 WHERE uuid = ?2", uuid, at, err)) return err->status;
  if (exec_uuid(s, "DELETE FROM slots WHERE ?1 IS NOT NULL AND stream_uuid = ?2", uuid, at, err)) return err->status;
  return exec_uuid(s, "DELETE FROM shards WHERE ?1 IS NOT NULL AND stream_uuid = ?2", uuid, at, err);
}

felix_status cp_store_deleted_uuids(cp_store *s, char (**out)[40], size_t *n, felix_err *err) {
  sqlite3_stmt *st;
  *out = NULL;
  *n = 0;
  if (prep(s, "SELECT uuid FROM streams WHERE deleted_at IS NOT NULL ORDER BY deleted_at, uuid", &st, err))
    return err->status;
  size_t cap = 0;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (!grow((void **)out, &cap, *n, sizeof **out)) break;
    col_text(st, 0, (*out)[(*n)++], 40);
  }
  release(s, st);
  return rc == SQLITE_DONE ? FELIX_OK : db_fail(s, err, "list deleted streams");
}

/* ---- shards and slots ---- */

#define SHARD_COLS                                                                                           \
  "h.stream_uuid, s.name, s.replicas, s.acks, h.shard, h.generation, h.seen_generation, h.state, h.leader, " \
  "h.leader_copy_id, h.leader_incarnation, h.hwm, h.max_hwm, h.max_hwm_generation, h.detail, h.abandon_generation"

static void shard_from(sqlite3_stmt *st, cp_shard_row *r) {
  memset(r, 0, sizeof *r);
  col_text(st, 0, r->stream_uuid, sizeof r->stream_uuid);
  col_text(st, 1, r->stream, sizeof r->stream);
  r->replicas = sqlite3_column_int(st, 2);
  col_text(st, 3, r->acks, sizeof r->acks);
  r->shard = sqlite3_column_int(st, 4);
  r->generation = sqlite3_column_int64(st, 5);
  r->seen_generation = sqlite3_column_int64(st, 6);
  col_text(st, 7, r->state, sizeof r->state);
  col_text(st, 8, r->leader, sizeof r->leader);
  col_text(st, 9, r->leader_copy_id, sizeof r->leader_copy_id);
  col_text(st, 10, r->leader_incarnation, sizeof r->leader_incarnation);
  r->hwm = sqlite3_column_int64(st, 11);
  r->max_hwm = sqlite3_column_int64(st, 12);
  r->max_hwm_generation = sqlite3_column_int64(st, 13);
  col_text(st, 14, r->detail, sizeof r->detail);
  r->abandon_generation = sqlite3_column_int64(st, 15);
}

/* Columns c.. c+5 of st: broker, copy_id, storage_id, stranger, confirmed, floor. */
static void slot_from(sqlite3_stmt *st, int c, cp_slot_row *x) {
  col_text(st, c, x->broker, sizeof x->broker);
  col_text(st, c + 1, x->copy_id, sizeof x->copy_id);
  col_text(st, c + 2, x->storage_id, sizeof x->storage_id);
  x->stranger = sqlite3_column_int(st, c + 3) != 0;
  x->confirmed = sqlite3_column_int64(st, c + 4);
  x->floor = sqlite3_column_int64(st, c + 5);
}

static felix_status slots_load(cp_store *s, cp_shard_row *r, felix_err *err) {
  sqlite3_stmt *st;
  if (prep(s, "SELECT broker, copy_id, storage_id, stranger, confirmed, floor FROM slots"
              " WHERE stream_uuid = ? AND shard = ? ORDER BY slot", &st, err))
    return err->status;
  bind_text(st, 1, r->stream_uuid);
  sqlite3_bind_int(st, 2, r->shard);
  r->nslots = 0;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW && r->nslots < FELIX_MAX_REPLICAS)
    slot_from(st, 0, &r->slots[r->nslots++]);
  release(s, st);
  return rc == SQLITE_DONE || rc == SQLITE_ROW ? FELIX_OK : db_fail(s, err, "read slots");
}

/* The slots of every listed shard in one query, in the list's order (stream
 * name, shard, slot): one statement instead of one per shard, which was most
 * of the control plane's time at 1,024 shards (review 5, item 1: perf). */
static felix_status slots_load_all(cp_store *s, const char *stream_uuid, cp_shard_row *rows, size_t n,
                                   felix_err *err) {
  sqlite3_stmt *st;
  if (prep(s, "SELECT l.stream_uuid, l.shard, l.broker, l.copy_id, l.storage_id, l.stranger, l.confirmed, l.floor"
              " FROM slots l JOIN streams s ON s.uuid = l.stream_uuid"
              " WHERE s.deleted_at IS NULL AND (?1 IS NULL OR l.stream_uuid = ?1) ORDER BY s.name, l.shard, l.slot",
           &st, err))
    return err->status;
  if (stream_uuid) bind_text(st, 1, stream_uuid);
  for (size_t i = 0; i < n; i++) rows[i].nslots = 0;
  size_t k = 0;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    char uuid[40];
    col_text(st, 0, uuid, sizeof uuid);
    int shard = sqlite3_column_int(st, 1);
    size_t at = k;
    while (at < n && (strcmp(rows[at].stream_uuid, uuid) || rows[at].shard != shard)) at++;
    if (at == n) continue; /* a slot of a shard the list does not hold: skipped, the merge goes on */
    k = at;
    cp_shard_row *r = &rows[k];
    if (r->nslots == FELIX_MAX_REPLICAS) continue;
    slot_from(st, 2, &r->slots[r->nslots++]);
  }
  release(s, st);
  return rc == SQLITE_DONE || rc == SQLITE_ROW ? FELIX_OK : db_fail(s, err, "read slots");
}

static felix_status slot_put(cp_store *s, const cp_shard_row *r, int i, felix_err *err) {
  sqlite3_stmt *st;
  if (prep(s, "INSERT OR REPLACE INTO slots(stream_uuid, shard, slot, broker, copy_id, storage_id, stranger,"
              " confirmed, floor) VALUES (?,?,?,?,?,?,?,?,?)", &st, err))
    return err->status;
  const cp_slot_row *x = &r->slots[i];
  bind_text(st, 1, r->stream_uuid);
  sqlite3_bind_int(st, 2, r->shard);
  sqlite3_bind_int(st, 3, i);
  bind_text(st, 4, x->broker);
  bind_text(st, 5, x->copy_id);
  bind_text(st, 6, x->storage_id);
  sqlite3_bind_int(st, 7, x->stranger);
  sqlite3_bind_int64(st, 8, x->confirmed);
  sqlite3_bind_int64(st, 9, x->floor);
  return finish(s, st, err);
}

felix_status cp_store_shard_put(cp_store *s, const cp_shard_row *r, felix_err *err) {
  sqlite3_stmt *st;
  if (prep(s, "INSERT OR REPLACE INTO shards(stream_uuid, shard, generation, seen_generation, state, leader,"
              " leader_copy_id, leader_incarnation, hwm, max_hwm, max_hwm_generation, detail, abandon_generation)"
              " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", &st, err))
    return err->status;
  bind_text(st, 1, r->stream_uuid);
  sqlite3_bind_int(st, 2, r->shard);
  sqlite3_bind_int64(st, 3, r->generation);
  sqlite3_bind_int64(st, 4, r->seen_generation);
  bind_text(st, 5, r->state);
  bind_text(st, 6, r->leader);
  bind_text(st, 7, r->leader_copy_id);
  bind_text(st, 8, r->leader_incarnation);
  sqlite3_bind_int64(st, 9, r->hwm);
  sqlite3_bind_int64(st, 10, r->max_hwm);
  sqlite3_bind_int64(st, 11, r->max_hwm_generation);
  bind_text(st, 12, r->detail);
  sqlite3_bind_int64(st, 13, r->abandon_generation);
  if (finish(s, st, err)) return err->status;
  for (int i = 0; i < r->nslots; i++)
    if (slot_put(s, r, i, err)) return err->status;
  return FELIX_OK;
}

felix_status cp_store_shard_get(cp_store *s, const char *stream_uuid, int shard, cp_shard_row *out, bool *found,
                                felix_err *err) {
  sqlite3_stmt *st;
  *found = false;
  if (prep(s, "SELECT " SHARD_COLS " FROM shards h JOIN streams s ON s.uuid = h.stream_uuid"
              " WHERE h.stream_uuid = ? AND h.shard = ?", &st, err))
    return err->status;
  bind_text(st, 1, stream_uuid);
  sqlite3_bind_int(st, 2, shard);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    shard_from(st, out);
    *found = true;
  }
  release(s, st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return db_fail(s, err, "read shard");
  return *found ? slots_load(s, out, err) : FELIX_OK;
}

felix_status cp_store_leaderships(cp_store *s, const char *broker, int *count, felix_err *err) {
  sqlite3_stmt *st;
  *count = 0;
  if (prep(s, "SELECT COUNT(*) FROM shards h JOIN streams s ON s.uuid = h.stream_uuid"
              " WHERE s.deleted_at IS NULL AND h.generation > 0 AND h.leader = ?", &st, err))
    return err->status;
  bind_text(st, 1, broker);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) *count = sqlite3_column_int(st, 0);
  release(s, st);
  return rc == SQLITE_ROW ? FELIX_OK : db_fail(s, err, "count leaderships");
}

felix_status cp_store_shards_list(cp_store *s, const char *stream_uuid, cp_shard_row **out, size_t *n,
                                  felix_err *err) {
  sqlite3_stmt *st;
  *out = NULL;
  *n = 0;
  if (prep(s, "SELECT " SHARD_COLS " FROM shards h JOIN streams s ON s.uuid = h.stream_uuid"
              " WHERE s.deleted_at IS NULL AND (?1 IS NULL OR h.stream_uuid = ?1) ORDER BY s.name, h.shard",
           &st, err))
    return err->status;
  if (stream_uuid) bind_text(st, 1, stream_uuid);
  size_t cap = 0;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (!grow((void **)out, &cap, *n, sizeof **out)) break;
    shard_from(st, &(*out)[(*n)++]);
  }
  release(s, st);
  if (rc != SQLITE_DONE) return db_fail(s, err, "list shards");
  return slots_load_all(s, stream_uuid, *out, *n, err);
}

felix_status cp_store_pin_insert(cp_store *s, const cp_shard_row *r, int64_t at, felix_err *err) {
  sqlite3_stmt *st;
  if (prep(s, "INSERT OR REPLACE INTO pins(stream_uuid, shard, generation, broker, copy_id, incarnation,"
              " issued_at) VALUES (?,?,?,?,?,?,?)", &st, err))
    return err->status;
  bind_text(st, 1, r->stream_uuid);
  sqlite3_bind_int(st, 2, r->shard);
  sqlite3_bind_int64(st, 3, r->generation);
  bind_text(st, 4, r->leader);
  bind_text(st, 5, r->leader_copy_id);
  bind_text(st, 6, r->leader_incarnation);
  sqlite3_bind_int64(st, 7, at);
  return finish(s, st, err);
}

/* ---- events ---- */

felix_status cp_store_event_add(cp_store *s, const cp_event *e, felix_err *err) {
  sqlite3_stmt *st;
  if (prep(s, "INSERT INTO events(ts, kind, stream, stream_uuid, shard, generation, broker, message)"
              " VALUES (?,?,?,?,?,?,?,?)", &st, err))
    return err->status;
  sqlite3_bind_int64(st, 1, e->ts);
  bind_text(st, 2, e->kind);
  bind_text(st, 3, e->stream);
  bind_text(st, 4, e->stream_uuid);
  sqlite3_bind_int(st, 5, e->shard);
  sqlite3_bind_int64(st, 6, e->generation);
  bind_text(st, 7, e->broker);
  bind_text(st, 8, e->message);
  return finish(s, st, err);
}

static felix_status read_events(cp_store *s, sqlite3_stmt *st, cp_event **out, size_t *n, felix_err *err);

felix_status cp_store_events_list(cp_store *s, const char *stream_uuid, int shard, const char *broker,
                                  cp_event **out, size_t *n, felix_err *err) {
  sqlite3_stmt *st;
  *out = NULL;
  *n = 0;
  if (prep(s, "SELECT id, ts, kind, stream, stream_uuid, shard, generation, broker, message FROM events"
              " WHERE (?1 IS NULL OR (stream_uuid = ?1 AND shard = ?2)) AND (?3 IS NULL OR broker = ?3)"
              " ORDER BY id", &st, err))
    return err->status;
  if (stream_uuid) bind_text(st, 1, stream_uuid);
  sqlite3_bind_int(st, 2, shard);
  if (broker) bind_text(st, 3, broker);
  return read_events(s, st, out, n, err);
}

felix_status cp_store_events_recent(cp_store *s, int limit, cp_event **out, size_t *n, felix_err *err) {
  sqlite3_stmt *st;
  *out = NULL;
  *n = 0;
  if (prep(s, "SELECT * FROM (SELECT id, ts, kind, stream, stream_uuid, shard, generation, broker, message"
              " FROM events ORDER BY id DESC LIMIT ?1) ORDER BY id", &st, err))
    return err->status;
  sqlite3_bind_int(st, 1, limit);
  return read_events(s, st, out, n, err);
}

/* Steps st (columns as above) into *out, then finalizes it. */
static felix_status read_events(cp_store *s, sqlite3_stmt *st, cp_event **out, size_t *n, felix_err *err) {
  size_t cap = 0;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (!grow((void **)out, &cap, *n, sizeof **out)) break;
    cp_event *e = &(*out)[(*n)++];
    memset(e, 0, sizeof *e);
    e->id = sqlite3_column_int64(st, 0);
    e->ts = sqlite3_column_int64(st, 1);
    col_text(st, 2, e->kind, sizeof e->kind);
    col_text(st, 3, e->stream, sizeof e->stream);
    col_text(st, 4, e->stream_uuid, sizeof e->stream_uuid);
    e->shard = sqlite3_column_int(st, 5);
    e->generation = sqlite3_column_int64(st, 6);
    col_text(st, 7, e->broker, sizeof e->broker);
    col_text(st, 8, e->message, sizeof e->message);
  }
  release(s, st);
  return rc == SQLITE_DONE ? FELIX_OK : db_fail(s, err, "list events");
}
