/* log.h — the disk log of one shard copy (DESIGN.md §3.1–3.2).
 *
 * A log is a directory of segments. It appends (single and batch), reads
 * ranges with every checksum verified, rolls segments by size, truncates for
 * replication, and makes data durable under one of three fsync modes.
 *
 * Binding pending work to the entry: every append gets a sequence number from
 * a counter that only grows, across truncation too. A sync vouches only for
 * the sequence it recorded when it started, and a pending append whose offsets
 * were truncated fails with FELIX_E_TRUNCATED even if a later record now sits
 * at the same offset. A failed sync is sticky: the log refuses every append
 * and wait until it is reopened. Thread-safe. */
#ifndef FELIX_LOG_H
#define FELIX_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "felix/error.h"
#include "felix/segment.h"

typedef enum felix_fsync_mode {
  FELIX_FSYNC_NONE = 0,     /* flush on seal and close only */
  FELIX_FSYNC_PERIODIC = 1, /* default: a timer flushes every interval */
  FELIX_FSYNC_ON_COMMIT = 2 /* appends are held only once synced (group commit) */
} felix_fsync_mode;

const char *felix_fsync_mode_name(felix_fsync_mode mode);
bool felix_fsync_mode_parse(const char *s, felix_fsync_mode *out);
/* Relaxed modes hold what was written; on_commit holds what was synced. */
static inline bool felix_fsync_mode_relaxed(felix_fsync_mode m) { return m != FELIX_FSYNC_ON_COMMIT; }

/* The sync primitive; tests substitute one to delay or fail syncs. Returns 0
 * or an errno value. */
typedef int (*felix_sync_fn)(int fd, void *ctx);

typedef struct felix_log_config {
  uint64_t segment_bytes;       /* roll when a segment would exceed this */
  uint32_t index_spacing_bytes; /* sparse index spacing */
  felix_fsync_mode fsync_mode;
  uint32_t fsync_interval_ms;   /* periodic mode timer */
  felix_sync_fn sync_fn;        /* NULL: fdatasync */
  void *sync_ctx;
  /* Called once per log, in the thread that saw it, when a sync or write
   * first fails (not for a deleted directory), before any waiter wakes and
   * with the log's lock held: it must not call back into the log. The owner
   * removes its boot token there (review 5, item 4). NULL: nobody hears. */
  void (*on_storage_error)(void *ctx, const char *shard, int sys_errno);
  void *on_storage_error_ctx;
} felix_log_config;

#define FELIX_DEFAULT_SEGMENT_BYTES (64ull * 1024 * 1024)
#define FELIX_DEFAULT_INDEX_SPACING 4096u
#define FELIX_DEFAULT_FSYNC_INTERVAL_MS 250u

/* Defaults, overridden by FELIX_DURABLE_* environment variables. Fails with a
 * message naming the variable when one is malformed. */
felix_status felix_log_config_from_env(felix_log_config *cfg, felix_err *err);

typedef struct felix_log felix_log;

/* What recovery did when the log was opened. */
typedef struct felix_recovery_report {
  uint64_t segments;
  uint64_t truncated_bytes;   /* torn tail removed from the newest segment */
  uint64_t truncated_at;      /* position of the cut (when truncated_bytes > 0) */
  char truncated_kind[48];
  uint64_t indexes_rebuilt;
  uint64_t temp_files_removed;
} felix_recovery_report;

/* Opens (creating when `create` and absent) the log in directory `path`.
 * `shard` names the shard in error messages. Recovery runs here. */
felix_status felix_log_open(const char *path, const char *shard, const felix_log_config *cfg,
                            bool create, felix_log **out, felix_recovery_report *report,
                            felix_err *err);
/* Flushes (sync unless a sync already failed) and frees. */
felix_status felix_log_close(felix_log *log, felix_err *err);

typedef struct felix_record_in {
  const void *payload;
  uint32_t len;
  uint64_t timestamp_micros; /* 0: now */
} felix_record_in;

/* An appended batch: what a pending acknowledgement is bound to. */
typedef struct felix_appended {
  uint64_t first_offset;
  uint64_t last_offset;
  uint64_t seq;          /* append sequence of this batch */
  uint64_t trunc_epoch;  /* truncations seen before it was written */
} felix_appended;

felix_status felix_log_append_batch(felix_log *log, const felix_record_in *recs, size_t n,
                                    felix_appended *out, felix_err *err);
/* Blocks until the batch is held under the log's mode: at once for relaxed
 * modes, after a sync that started after the append for on_commit (group
 * commit: concurrent waiters share one sync). Fails with FELIX_E_TRUNCATED if
 * the batch was truncated, FELIX_E_SYNC if a sync failed. */
felix_status felix_log_wait_held(felix_log *log, const felix_appended *a, felix_err *err);
/* Append then wait: the common producer path. */
felix_status felix_log_append(felix_log *log, const void *payload, uint32_t len,
                              uint64_t *offset, felix_err *err);

/* Syncs everything written before the call started. */
felix_status felix_log_sync(felix_log *log, felix_err *err);

/* Removes every record at offset >= `offset` durably (log_start <= offset). */
felix_status felix_log_truncate(felix_log *log, uint64_t offset, felix_err *err);

/* Retention (issue 16): deletes every sealed segment whose records all lie
 * below `below`, oldest first, each deletion durable before the next, so a
 * power cut midway leaves a contiguous suffix. Never the active segment:
 * the log start moves to the base of the oldest segment left, returned in
 * *start_out (NULL: not wanted). The caller decides `below` (never above the
 * HWM: docs/formal, TrimmedCommitted). */
felix_status felix_log_trim(felix_log *log, uint64_t below, uint64_t *start_out, felix_err *err);

typedef struct felix_record {
  uint64_t offset;
  uint64_t timestamp_micros;
  uint64_t position; /* byte position in its segment */
  uint32_t len;
  const uint8_t *payload; /* points into the batch buffer */
} felix_record;

typedef struct felix_record_batch {
  felix_record *records;
  size_t count;
  uint8_t *buf;
} felix_record_batch;

/* Reads records from `from` up to max_records and (after the first record)
 * max_bytes of payload; every checksum verified. from == log end gives zero
 * records; from outside [start, end] fails with FELIX_E_INVAL. */
felix_status felix_log_read(felix_log *log, uint64_t from, size_t max_records, size_t max_bytes,
                            felix_record_batch *out, felix_err *err);
void felix_record_batch_free(felix_record_batch *b);

typedef struct felix_log_stats {
  uint64_t start_offset;   /* first offset present */
  uint64_t end_offset;     /* next offset to be written */
  uint64_t held_end;       /* offsets below this are held (§3.2) */
  uint64_t synced_end;     /* offsets below this were synced */
  uint64_t append_seq;     /* last sequence number handed out */
  uint64_t synced_seq;     /* sequence the last completed sync vouched for */
  uint64_t syncs;          /* completed syncs */
  uint64_t sync_nanos;     /* time spent in those syncs */
  uint64_t segments;
  uint64_t bytes;          /* total segment bytes */
  uint64_t unsynced_bytes;
  int sync_error;          /* errno of a failed sync, 0 if none */
  bool dir_gone;           /* the shard directory was deleted: refuse this copy alone */
} felix_log_stats;

void felix_log_get_stats(felix_log *log, felix_log_stats *out);

/* The oldest disk sync of a log now running: the periodic flusher's or
 * on_commit's, and those made under the log's lock (a segment seal or
 * create, a truncation, a trim, an unshare, their directory syncs). */
typedef struct felix_log_disk_wait {
  uint64_t started_ns;     /* CLOCK_MONOTONIC start; 0: no sync is running (then all is 0) */
  uint64_t ms;             /* how long it has run */
  const char *what;        /* "sync", "segment seal", "segment create", "truncate", "trim", "unshare", "recovery" */
  uint64_t unsynced_bytes; /* written and not yet synced when it began */
} felix_log_disk_wait;
/* Reads it without the log's lock, which a sync hung under it holds: safe
 * from any thread while the log is open, and never blocks. */
void felix_log_disk_waiting(felix_log *log, felix_log_disk_wait *out);
/* True when the shard directory was deleted under the open log (an idle log
 * notices only here or at its next write or sync); marks the log gone. */
bool felix_log_dir_deleted(felix_log *log);
felix_fsync_mode felix_log_mode(const felix_log *log);

#endif
