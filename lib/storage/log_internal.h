/* storage/log_internal.h — the state shared by storage/log.c (runtime) and storage/log_recovery.c. */
#ifndef FELIX_LOG_INTERNAL_H
#define FELIX_LOG_INTERNAL_H

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>

#include "felix/log.h"

typedef struct log_seg {
  uint64_t base;
  uint64_t size;        /* bytes in the file */
  uint64_t next_offset; /* offset after its last record */
  int fd;               /* O_RDWR */
  int idx_fd;           /* O_RDWR, -1 when not open */
  felix_idx_entry *entries;
  size_t n_entries, cap_entries;
  uint64_t last_entry_pos;
  /* state as of the last successful write, restored when an append fails */
  uint64_t flushed_next_offset;
  size_t flushed_entries;
  uint64_t flushed_last_entry_pos;
} log_seg;

uint64_t log_monotonic_ns(void);

/* A disk sync now running, readable by another thread without mu, which a
 * sync made under it holds (felix_log_disk_waiting): started_ns 0 when none.
 * what and unsynced are stored before started_ns, so a reader that sees
 * started_ns unchanged around its reads has that sync's. */
typedef struct log_disk_slot {
  _Atomic uint64_t started_ns; /* CLOCK_MONOTONIC */
  _Atomic(const char *) what;  /* a static string: "sync", "segment seal", ... */
  _Atomic uint64_t unsynced;   /* bytes written and not yet synced when it began */
} log_disk_slot;
/* LOG_DISK_FLUSH: the sync round's (log_sync_round), run without mu;
 * LOG_DISK_LOCKED: every other sync, run under mu or before the log is shared. */
enum { LOG_DISK_FLUSH, LOG_DISK_LOCKED, LOG_DISK_SLOTS };

struct felix_log {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  char path[4096];
  char shard[256];
  int dirfd;
  felix_log_config cfg;
  log_seg *segs;
  size_t nsegs, cap_segs;

  uint64_t append_seq;   /* grows on every append batch, never reset */
  uint64_t synced_seq;   /* highest start sequence of a completed sync */
  uint64_t synced_end;   /* offsets below were synced */
  uint64_t bytes_total;  /* bytes ever written by this process (for unsynced) */
  uint64_t bytes_synced;
  bool sync_in_flight;
  log_disk_slot disk[LOG_DISK_SLOTS];
  uint64_t trunc_floor_during_sync;
  uint64_t *trunc_points; /* trunc_points[e] = offset of truncation e */
  size_t ntrunc, cap_trunc;
  int sync_error;         /* sticky errno; appends fail until reopened (set by log_storage_failed) */
  bool dir_gone;          /* sync_error came from a deleted directory, not the disk */
  uint64_t syncs;
  uint64_t sync_nanos;

  pthread_t flusher;
  bool flusher_running;
  bool closing;
};

static inline log_seg *log_active(felix_log *log) { return &log->segs[log->nsegs - 1]; }

/* What holds whenever mu is free: a sync never vouches for a sequence not
 * yet handed out, nor for offsets (or bytes) beyond what was written. */
static inline void log_assert_positions(const felix_log *log) {
  assert(log->nsegs > 0);
  assert(log->synced_seq <= log->append_seq);
  assert(log->synced_end <= log->segs[log->nsegs - 1].next_offset);
  assert(log->bytes_synced <= log->bytes_total);
  (void)log;
}

/* The sync primitive on a segment file (cfg.sync_fn or fdatasync), unwatched:
 * only log_sync_round, which watches it in LOG_DISK_FLUSH, calls it. */
int log_sync_data(felix_log *log, int fd);
/* Marks a sync that begins (mu held, or the log not yet shared) and ends. */
void log_disk_begin(felix_log *log, int slot, const char *what);
void log_disk_end(felix_log *log, int slot);
/* The syncs made under mu, each watched in LOG_DISK_LOCKED as `what`; each
 * returns 0 or an errno value. log_sync_fd: a segment file (cfg.sync_fn or
 * fdatasync); log_sync_index: an index file; log_sync_dir: the directory. */
int log_sync_fd(felix_log *log, int fd, const char *what);
int log_sync_index(felix_log *log, int fd, const char *what);
int log_sync_dir(felix_log *log, const char *what);
felix_status log_seg_add_entry(log_seg *s, uint64_t offset, uint64_t position);
/* Creates an empty segment with base `base` (temp, header, sync, rename,
 * directory sync) and its index, and appends it to log->segs. */
felix_status log_seg_create(felix_log *log, uint64_t base, felix_err *err);
void log_seg_close(log_seg *s);
/* A segment file with more than one link shares its inode with a restore
 * point (restore-point create hard-links sealed segments). The log never
 * writes into such a file: before it cuts or appends to one it replaces it,
 * durably, by a private copy of its first `keep` bytes, so the restore point
 * keeps exactly the bytes its manifest vouches for. No-op for a private file.
 * keep UINT64_MAX: the whole file. */
felix_status log_seg_unshare(felix_log *log, log_seg *s, uint64_t keep, felix_err *err);
/* Records s's state as written; an append that fails goes back to it. */
void log_seg_mark_flushed(log_seg *s);
void log_seg_name(const felix_log *log, const log_seg *s, const char *suffix, char *out, size_t cap);
/* One sync of the active segment; called and returns with mu held. */
void log_sync_round(felix_log *log);
/* Whether the shard directory was deleted (§3.2: the copy is refused). */
bool log_dir_gone(felix_log *log);
felix_status log_recover(felix_log *log, bool create, felix_recovery_report *report, felix_err *err);

/* The first failed sync or write of the log: sticky from now on, and the
 * owner's on_storage_error hears of it at once. Called with log->mu held. */
void log_storage_failed(felix_log *log, int sys_errno);
/* The error every call returns once sync_error is set: FELIX_E_GONE for a
 * deleted directory, FELIX_E_SYNC otherwise. */
felix_status log_sticky_error(felix_log *log, felix_err *err);

#endif
