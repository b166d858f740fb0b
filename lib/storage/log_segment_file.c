/* storage/log_segment_file.c — creating and indexing one segment file of a log. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "felix/fileutil.h"
#include "log_internal.h"

int log_sync_data(felix_log *log, int fd) {
  if (log->cfg.sync_fn) return log->cfg.sync_fn(fd, log->cfg.sync_ctx);
  return fdatasync(fd) == 0 ? 0 : errno;
}

void log_disk_begin(felix_log *log, int slot, const char *what) {
  log_disk_slot *d = &log->disk[slot];
  assert(atomic_load(&d->started_ns) == 0); /* one sync a slot: the flusher's, or one under mu */
  atomic_store(&d->what, what);
  atomic_store(&d->unsynced, log->bytes_total - log->bytes_synced);
  atomic_store(&d->started_ns, log_monotonic_ns());
}

void log_disk_end(felix_log *log, int slot) { atomic_store(&log->disk[slot].started_ns, 0); }

int log_sync_fd(felix_log *log, int fd, const char *what) {
  log_disk_begin(log, LOG_DISK_LOCKED, what);
  int rc = log_sync_data(log, fd);
  log_disk_end(log, LOG_DISK_LOCKED);
  return rc;
}

int log_sync_index(felix_log *log, int fd, const char *what) {
  log_disk_begin(log, LOG_DISK_LOCKED, what);
  int rc = fdatasync(fd) == 0 ? 0 : errno;
  log_disk_end(log, LOG_DISK_LOCKED);
  return rc;
}

int log_sync_dir(felix_log *log, const char *what) {
  log_disk_begin(log, LOG_DISK_LOCKED, what);
  int rc = fsync(log->dirfd) == 0 ? 0 : errno;
  log_disk_end(log, LOG_DISK_LOCKED);
  return rc;
}

void felix_log_disk_waiting(felix_log *log, felix_log_disk_wait *out) {
  memset(out, 0, sizeof *out);
  for (int i = 0; i < LOG_DISK_SLOTS; i++) {
    log_disk_slot *d = &log->disk[i];
    uint64_t t = atomic_load(&d->started_ns);
    const char *what = atomic_load(&d->what);
    uint64_t unsynced = atomic_load(&d->unsynced);
    if (t == 0 || atomic_load(&d->started_ns) != t) continue; /* none, or it ended meanwhile */
    if (out->started_ns == 0 || t < out->started_ns) *out = (felix_log_disk_wait){t, 0, what, unsynced};
  }
  uint64_t now = log_monotonic_ns();
  if (out->started_ns && now > out->started_ns) out->ms = (now - out->started_ns) / 1000000u;
}

void log_seg_name(const felix_log *log, const log_seg *s, const char *suffix, char *out, size_t cap) {
  char name[32];
  felix_seg_format_name(name, s->base, suffix);
  snprintf(out, cap, "%s/%s", log->path, name);
}

felix_status log_seg_add_entry(log_seg *s, uint64_t offset, uint64_t position) {
  /* entries ascend, the first one at the segment's first record (§3.1) */
  assert(s->n_entries ? offset > s->entries[s->n_entries - 1].offset && position > s->entries[s->n_entries - 1].position
                      : offset == s->base && position == FELIX_SEG_HEADER_LEN);
  if (s->n_entries == s->cap_entries) {
    size_t nc = s->cap_entries ? s->cap_entries * 2 : 16;
    felix_idx_entry *ne = realloc(s->entries, nc * sizeof *ne);
    if (!ne) return FELIX_E_IO;
    s->entries = ne;
    s->cap_entries = nc;
  }
  s->entries[s->n_entries++] = (felix_idx_entry){offset, position};
  s->last_entry_pos = position;
  return FELIX_OK;
}

void log_seg_mark_flushed(log_seg *s) {
  s->flushed_next_offset = s->next_offset;
  s->flushed_entries = s->n_entries;
  s->flushed_last_entry_pos = s->last_entry_pos;
}

void log_seg_close(log_seg *s) {
  if (s->fd >= 0) close(s->fd);
  if (s->idx_fd >= 0) close(s->idx_fd);
  free(s->entries);
  memset(s, 0, sizeof *s);
  s->fd = s->idx_fd = -1;
}

static felix_status write_new_file(felix_log *log, const char *name, const uint8_t *data, size_t len,
                                   int *out_fd, felix_err *err) {
  char tmp[64], what[4200];
  snprintf(tmp, sizeof tmp, ".%s.tmp", name);
  snprintf(what, sizeof what, "%s/%s", log->path, name);
  int fd = openat(log->dirfd, tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return felix_fail_errno(err, FELIX_E_IO, errno, "shard %s: create %s", log->shard, what);
  int rc = pwrite(fd, data, len, 0) == (ssize_t)len ? 0 : (errno ? errno : EIO);
  if (rc == 0) rc = log_sync_fd(log, fd, "segment create");
  if (rc == 0 && renameat(log->dirfd, tmp, log->dirfd, name) != 0) rc = errno;
  if (rc != 0) {
    close(fd);
    unlinkat(log->dirfd, tmp, 0);
    return felix_fail_errno(err, FELIX_E_IO, rc, "shard %s: create %s", log->shard, what);
  }
  *out_fd = fd;
  return FELIX_OK;
}

felix_status log_seg_create(felix_log *log, uint64_t base, felix_err *err) {
  assert(log->nsegs == 0 || base == log_active(log)->next_offset); /* no offset gap between segments */
  if (log->nsegs == log->cap_segs) {
    size_t nc = log->cap_segs ? log->cap_segs * 2 : 8;
    log_seg *ns = realloc(log->segs, nc * sizeof *ns);
    if (!ns) return felix_fail(err, FELIX_E_IO, "out of memory");
    log->segs = ns;
    log->cap_segs = nc;
  }
  log_seg s = {.base = base, .size = FELIX_SEG_HEADER_LEN, .next_offset = base, .fd = -1, .idx_fd = -1};
  uint8_t hdr[FELIX_SEG_HEADER_LEN], ihdr[FELIX_IDX_HEADER_LEN];
  char name[32], iname[32];
  felix_seg_format_name(name, base, ".log");
  felix_seg_format_name(iname, base, ".index");
  felix_seg_header_encode(hdr, base, felix_now_micros());
  felix_idx_header_encode(ihdr, base);
  felix_status st = write_new_file(log, name, hdr, sizeof hdr, &s.fd, err);
  if (st == FELIX_OK) st = write_new_file(log, iname, ihdr, sizeof ihdr, &s.idx_fd, err);
  int rc = st == FELIX_OK ? log_sync_dir(log, "segment create") : 0;
  if (rc) st = felix_fail_errno(err, FELIX_E_SYNC, rc, "shard %s: fsync directory %s", log->shard, log->path);
  if (st != FELIX_OK) {
    log_seg_close(&s);
    return st;
  }
  log->segs[log->nsegs++] = s;
  return FELIX_OK;
}

/* Copies the first `keep` bytes of from_fd into to_fd. */
static int copy_prefix(int from_fd, int to_fd, uint64_t keep) {
  static const size_t chunk = 1u << 20;
  uint8_t *buf = malloc(chunk);
  if (!buf) return ENOMEM;
  int rc = 0;
  for (uint64_t at = 0; rc == 0 && at < keep;) {
    size_t want = keep - at < chunk ? (size_t)(keep - at) : chunk;
    ssize_t n = pread(from_fd, buf, want, (off_t)at);
    if (n <= 0) rc = n < 0 ? errno : EIO;
    else if (pwrite(to_fd, buf, (size_t)n, (off_t)at) != n) rc = errno ? errno : EIO;
    else at += (uint64_t)n;
  }
  free(buf);
  return rc;
}

felix_status log_seg_unshare(felix_log *log, log_seg *s, uint64_t keep, felix_err *err) {
  struct stat sb;
  if (fstat(s->fd, &sb) != 0)
    return felix_fail_errno(err, FELIX_E_IO, errno, "shard %s: stat segment %020" PRIu64 ".log", log->shard, s->base);
  if (sb.st_nlink <= 1) return FELIX_OK;
  if (keep == UINT64_MAX) keep = (uint64_t)sb.st_size; /* a short file with any other keep fails, as it must */
  char name[32], tmp[64], what[4200];
  felix_seg_format_name(name, s->base, ".log");
  snprintf(tmp, sizeof tmp, ".%s.unshare.tmp", name); /* .tmp: recovery removes a leftover */
  snprintf(what, sizeof what, "%s/%s", log->path, name);
  int fd = openat(log->dirfd, tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return felix_fail_errno(err, FELIX_E_IO, errno, "shard %s: unshare %s", log->shard, what);
  int rc = copy_prefix(s->fd, fd, keep);
  if (rc == 0) rc = log_sync_fd(log, fd, "unshare");
  if (rc == 0 && renameat(log->dirfd, tmp, log->dirfd, name) != 0) rc = errno;
  if (rc == 0) rc = log_sync_dir(log, "unshare");
  if (rc != 0) {
    close(fd);
    unlinkat(log->dirfd, tmp, 0);
    return felix_fail_errno(err, FELIX_E_IO, rc, "shard %s: unshare %s (a restore point links it)", log->shard, what);
  }
  close(s->fd);
  s->fd = fd;
  return FELIX_OK;
}
