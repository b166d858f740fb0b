/* storage/log.c — the running log: append, group commit, read, truncate, close.
 *
 * Locking: one mutex guards all state; a sync runs with the mutex released on
 * a dup of the active segment's descriptor, so appends continue meanwhile.
 * Only one sync runs at a time; waiters whose sequence it does not cover start
 * the next one (group commit). See log.h for the binding of pending work. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "felix/bytes.h"
#include "felix/fileutil.h"
#include "log_internal.h"

const char *felix_fsync_mode_name(felix_fsync_mode mode) {
  switch (mode) {
  case FELIX_FSYNC_NONE: return "none";
  case FELIX_FSYNC_PERIODIC: return "periodic";
  case FELIX_FSYNC_ON_COMMIT: return "on_commit";
  }
  return "unknown";
}

bool felix_fsync_mode_parse(const char *s, felix_fsync_mode *out) {
  for (int m = FELIX_FSYNC_NONE; m <= FELIX_FSYNC_ON_COMMIT; m++)
    if (strcmp(s, felix_fsync_mode_name((felix_fsync_mode)m)) == 0) return *out = (felix_fsync_mode)m, true;
  return false;
}

static felix_status env_u64(const char *name, uint64_t min, uint64_t max, uint64_t *out, felix_err *err) {
  const char *v = getenv(name);
  if (!v || !*v) return FELIX_OK;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  if (errno || *end || v[0] == '-' || x < min || x > max)
    return felix_fail(err, FELIX_E_INVAL, "environment %s=%s: expected an integer from %" PRIu64 " to %" PRIu64,
                      name, v, min, max);
  *out = x;
  return FELIX_OK;
}

felix_status felix_log_config_from_env(felix_log_config *cfg, felix_err *err) {
  *cfg = (felix_log_config){FELIX_DEFAULT_SEGMENT_BYTES, FELIX_DEFAULT_INDEX_SPACING,
                            FELIX_FSYNC_PERIODIC, FELIX_DEFAULT_FSYNC_INTERVAL_MS, NULL, NULL};
  const char *mode = getenv("FELIX_DURABLE_FSYNC_MODE");
  if (mode && *mode && !felix_fsync_mode_parse(mode, &cfg->fsync_mode))
    return felix_fail(err, FELIX_E_INVAL, "environment FELIX_DURABLE_FSYNC_MODE=%s: expected none, periodic or on_commit", mode);
  uint64_t seg = cfg->segment_bytes, sp = cfg->index_spacing_bytes, iv = cfg->fsync_interval_ms;
  felix_status st = env_u64("FELIX_DURABLE_SEGMENT_BYTES", 4096, 1ull << 40, &seg, err);
  if (!st) st = env_u64("FELIX_DURABLE_INDEX_SPACING_BYTES", 1, 1u << 30, &sp, err);
  if (!st) st = env_u64("FELIX_DURABLE_FSYNC_INTERVAL_MS", 1, 3600000, &iv, err);
  cfg->segment_bytes = seg;
  cfg->index_spacing_bytes = (uint32_t)sp;
  cfg->fsync_interval_ms = (uint32_t)iv;
  return st;
}

felix_fsync_mode felix_log_mode(const felix_log *log) { return log->cfg.fsync_mode; }

static uint64_t log_end(felix_log *log) { return log_active(log)->next_offset; }

bool log_dir_gone(felix_log *log) {
  struct stat sb;
  return fstat(log->dirfd, &sb) != 0 || sb.st_nlink == 0;
}

void log_storage_failed(felix_log *log, int sys_errno) {
  if (log->sync_error) return;
  if (log_dir_gone(log)) {
    /* A deleted directory, not the disk (§3.2): whatever step failed on it
     * (a roll, a truncation, an unshare, the last sync), only this copy is
     * refused; the owner's fail-closed callback is for the disk. */
    log->sync_error = ENOENT, log->dir_gone = true;
    return;
  }
  log->sync_error = sys_errno ? sys_errno : EIO;
  if (log->cfg.on_storage_error) log->cfg.on_storage_error(log->cfg.on_storage_error_ctx, log->shard, log->sync_error);
}

bool felix_log_dir_deleted(felix_log *log) {
  if (!log_dir_gone(log)) return false;
  pthread_mutex_lock(&log->mu);
  if (!log->sync_error) log->sync_error = ENOENT; /* never acknowledge into an unlinked file */
  log->dir_gone = true;
  pthread_mutex_unlock(&log->mu);
  return true;
}

uint64_t log_monotonic_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* One sync round. Called and returns with mu held; releases it meanwhile. */
void log_sync_round(felix_log *log) {
  assert(!log->sync_in_flight); /* one sync at a time */
  log->sync_in_flight = true;
  log_disk_begin(log, LOG_DISK_FLUSH, "sync");
  uint64_t start_seq = log->append_seq, start_end = log_end(log), start_bytes = log->bytes_total;
  log->trunc_floor_during_sync = UINT64_MAX;
  int fd = dup(log_active(log)->fd);
  pthread_mutex_unlock(&log->mu);
  /* A shard directory that was deleted under us is refused (§3.2): syncing
   * files nobody can reach would vouch for nothing. */
  int rc = log_dir_gone(log) ? ENOENT : 0;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (rc == 0) rc = fd < 0 ? errno : log_sync_data(log, fd);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (fd >= 0) close(fd);
  pthread_mutex_lock(&log->mu);
  log->sync_in_flight = false;
  log_disk_end(log, LOG_DISK_FLUSH);
  if (rc != 0 && !log->sync_error && log_dir_gone(log)) {
    log->sync_error = rc, log->dir_gone = true; /* a deleted directory, not the disk: the copy is refused */
  } else if (rc != 0) {
    log_storage_failed(log, rc);
  } else {
    /* syncs run one at a time, so this one started after the last one did */
    assert(start_seq >= log->synced_seq && start_seq <= log->append_seq);
    if (start_seq > log->synced_seq) log->synced_seq = start_seq;
    uint64_t end = start_end < log->trunc_floor_during_sync ? start_end : log->trunc_floor_during_sync;
    if (end > log->synced_end) log->synced_end = end;
    if (start_bytes > log->bytes_synced) log->bytes_synced = start_bytes;
    log->syncs++;
    log->sync_nanos += (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
  }
  log_assert_positions(log);
  pthread_cond_broadcast(&log->cv);
}

static void *flusher_main(void *arg) {
  felix_log *log = arg;
  pthread_mutex_lock(&log->mu);
  while (!log->closing) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)log->cfg.fsync_interval_ms * 1000000u;
    ts.tv_sec += (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    while (!log->closing && pthread_cond_timedwait(&log->cv, &log->mu, &ts) != ETIMEDOUT) {
    }
    if (!log->closing && !log->sync_error && !log->sync_in_flight && log->append_seq > log->synced_seq)
      log_sync_round(log);
  }
  pthread_mutex_unlock(&log->mu);
  return NULL;
}

felix_status felix_log_open(const char *path, const char *shard, const felix_log_config *cfg,
                            bool create, felix_log **out, felix_recovery_report *report, felix_err *err) {
  felix_recovery_report scratch;
  felix_recovery_report *rep = report ? report : &scratch;
  memset(rep, 0, sizeof *rep);
  *out = NULL;
  if (create && mkdir(path, 0755) != 0 && errno != EEXIST)
    return felix_fail_errno(err, FELIX_E_IO, errno, "shard %s: create directory %s", shard, path);
  felix_log *log = calloc(1, sizeof *log);
  if (!log) return felix_fail(err, FELIX_E_IO, "out of memory");
  snprintf(log->path, sizeof log->path, "%s", path);
  snprintf(log->shard, sizeof log->shard, "%s", shard);
  log->cfg = *cfg;
  if (!log->cfg.index_spacing_bytes) log->cfg.index_spacing_bytes = FELIX_DEFAULT_INDEX_SPACING;
  if (!log->cfg.segment_bytes) log->cfg.segment_bytes = FELIX_DEFAULT_SEGMENT_BYTES;
  if (!log->cfg.fsync_interval_ms) log->cfg.fsync_interval_ms = FELIX_DEFAULT_FSYNC_INTERVAL_MS;
  pthread_mutex_init(&log->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&log->cv, &ca);
  pthread_condattr_destroy(&ca);
  felix_status st = felix_open_dir(AT_FDCWD, path, &log->dirfd, err);
  if (st == FELIX_E_NOTFOUND) felix_fail(err, st, "shard %s: directory %s does not exist", shard, path);
  if (st) log->dirfd = -1;
  if (!st) st = log_recover(log, create, rep, err);
  if (!st) {
    /* What recovery found may live only in the page cache: sync it, so that
     * everything present counts as synced from here on. */
    int rc = log_sync_fd(log, log_active(log)->fd, "recovery");
    if (rc) st = felix_fail_errno(err, FELIX_E_SYNC, rc, "shard %s: sync %s", shard, path);
  }
  if (st) {
    /* Only a failed sync is a storage failure the owner must hear of; a
     * corrupt or missing file, EMFILE or ENOMEM refuse this copy alone. */
    if (st == FELIX_E_SYNC) log_storage_failed(log, err && err->sys_errno ? err->sys_errno : EIO);
    else log->sync_error = log->sync_error ? log->sync_error : EIO;
    felix_log_close(log, NULL);
    return st;
  }
  log->synced_end = log_end(log);
  log_assert_positions(log);
  if (log->cfg.fsync_mode == FELIX_FSYNC_PERIODIC) {
    if (pthread_create(&log->flusher, NULL, flusher_main, log) == 0) log->flusher_running = true;
  }
  *out = log;
  return FELIX_OK;
}

felix_status felix_log_close(felix_log *log, felix_err *err) {
  if (!log) return FELIX_OK;
  felix_status st = FELIX_OK;
  pthread_mutex_lock(&log->mu);
  log->closing = true;
  pthread_cond_broadcast(&log->cv);
  pthread_mutex_unlock(&log->mu);
  if (log->flusher_running) pthread_join(log->flusher, NULL);
  pthread_mutex_lock(&log->mu);
  while (log->sync_in_flight) pthread_cond_wait(&log->cv, &log->mu);
  if (log->nsegs > 0 && !log->sync_error && log->append_seq > log->synced_seq) log_sync_round(log);
  if (log->sync_error && log->dir_gone) st = log_sticky_error(log, err);
  else if (log->sync_error)
    st = felix_fail_errno(err, FELIX_E_SYNC, log->sync_error, "shard %s: a sync failed; unsynced data may be lost", log->shard);
  pthread_mutex_unlock(&log->mu);
  for (size_t i = 0; i < log->nsegs; i++) log_seg_close(&log->segs[i]);
  free(log->segs);
  free(log->trunc_points);
  if (log->dirfd >= 0) close(log->dirfd);
  pthread_cond_destroy(&log->cv);
  pthread_mutex_destroy(&log->mu);
  free(log);
  return st;
}
