/* storage/log_retention.c — moving a log's start: retention (issue 16).
 *
 * The log start is the base of the oldest segment file, so it is as durable
 * as the directory: deleting whole sealed segments, oldest first, each
 * unlink made durable before the next, moves it; a power cut midway leaves a
 * contiguous suffix of the segments, never a gap (docs/formal: Trim and
 * FollowTrim; the callers keep the bound the model checks — never at or above
 * the HWM, never the segment holding the last record). */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "log_internal.h"

/* Deletes the oldest segment (a sealed one): its .log first, so that a power
 * cut before the .index goes leaves an orphan index, which recovery removes. */
static felix_status drop_oldest(felix_log *log, felix_err *err) {
  assert(log->nsegs > 1); /* never the active segment */
  log_seg *s = &log->segs[0];
  char name[32], iname[32];
  felix_seg_format_name(name, s->base, ".log");
  felix_seg_format_name(iname, s->base, ".index");
  if (unlinkat(log->dirfd, name, 0) != 0 && errno != ENOENT)
    return felix_fail_errno(err, FELIX_E_IO, errno, "shard %s: delete %s/%s", log->shard, log->path, name);
  int rc = log_sync_dir(log, "trim");
  if (rc) return felix_fail_errno(err, FELIX_E_SYNC, rc, "shard %s: fsync directory %s", log->shard, log->path);
  unlinkat(log->dirfd, iname, 0);
  log_seg_close(s);
  memmove(&log->segs[0], &log->segs[1], (log->nsegs - 1) * sizeof *log->segs);
  log->nsegs--;
  return FELIX_OK;
}

felix_status felix_log_trim(felix_log *log, uint64_t below, uint64_t *start_out, felix_err *err) {
  pthread_mutex_lock(&log->mu);
  felix_status st = FELIX_OK;
  if (log->sync_error) st = log_sticky_error(log, err);
  /* a sealed segment holds only offsets below the next one's base */
  while (!st && log->nsegs > 1 && log->segs[1].base <= below) {
    st = drop_oldest(log, err);
    if (st && log->dir_gone) st = log_sticky_error(log, err);
  }
  /* Every offset below the start was in a sealed segment, synced when it was
   * sealed (roll), so nothing below it is unsynced (the model's syn >= ls). */
  if (log->synced_end < log->segs[0].base) log->synced_end = log->segs[0].base;
  if (start_out) *start_out = log->segs[0].base;
  log_assert_positions(log);
  pthread_mutex_unlock(&log->mu);
  return st;
}
