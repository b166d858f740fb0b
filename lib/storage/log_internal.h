/* storage/log_internal.h — the state shared by storage/log.c (runtime) and storage/log_recovery.c. */
#ifndef FELIX_LOG_INTERNAL_H
#define FELIX_LOG_INTERNAL_H

#include <assert.h>
#include <pthread.h>

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
  uint64_t sync_started_ns; /* CLOCK_MONOTONIC when the sync in flight began */
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

/* Runs the shard's sync primitive; returns 0 or an errno value. */
int log_sync_fd(felix_log *log, int fd);
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
