/* restore-point/files.c — the file work of restore points: link-or-copy with CRC-32,
 * checksumming, and removing a tree.
 *
 * Every destination file is synced before the function returns, so a
 * manifest written after it never vouches for bytes still in the page cache.
 * Errors name the file and, for a write that failed, how far it got (a full
 * disk says ENOSPC with the byte count). */
#include "felix/restorepoint.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define RP_CHUNK (1u << 20)

static void report(felix_rp_progress_fn progress, void *ctx, uint64_t *done, uint64_t add, uint64_t total) {
  if (!done) return;
  *done += add;
  if (progress) progress(ctx, *done, total);
}

static felix_status write_all(int fd, const uint8_t *p, size_t n, uint64_t at, const char *what, felix_err *err) {
  while (n > 0) {
    ssize_t w = pwrite(fd, p, n, (off_t)at);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      return felix_fail_errno(err, FELIX_E_IO, w < 0 ? errno : EIO, "write %s at byte %" PRIu64, what, at);
    p += w, n -= (size_t)w, at += (uint64_t)w;
  }
  return FELIX_OK;
}

/* Streams from `in` (and into `out` when >= 0) up to limit bytes, summing the CRC. */
static felix_status stream_crc(int in, int out, uint64_t limit, const char *what, const char *dst_what,
                               uint32_t *crc, uint64_t *size,
                               felix_rp_progress_fn progress, void *ctx, uint64_t *done, uint64_t total,
                               felix_err *err) {
  uint8_t *buf = malloc(RP_CHUNK);
  if (!buf) return felix_fail(err, FELIX_E_IO, "out of memory");
  uLong c = crc32(0L, Z_NULL, 0);
  uint64_t at = 0;
  felix_status st = FELIX_OK;
  while (!st && at < limit) {
    size_t want = limit - at < RP_CHUNK ? (size_t)(limit - at) : RP_CHUNK;
    ssize_t n = pread(in, buf, want, (off_t)at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) st = felix_fail_errno(err, FELIX_E_IO, errno, "read %s at byte %" PRIu64, what, at);
    if (n <= 0) break;
    if (out >= 0) st = write_all(out, buf, (size_t)n, at, dst_what, err);
    c = crc32(c, buf, (uInt)n);
    at += (uint64_t)n;
    report(progress, ctx, done, (uint64_t)n, total);
  }
  free(buf);
  *crc = (uint32_t)c;
  *size = at;
  return st;
}

felix_status felix_rp_open_regular(int dirfd, const char *name, const char *what, int *out, felix_err *err) {
  /* O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOFOLLOW: a
   * symlink in a restore point could point anywhere */
  int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0 && errno == ELOOP) return felix_fail(err, FELIX_E_CORRUPT, "%s is a symbolic link, not a file", what);
  if (fd < 0) return felix_fail_errno(err, errno == ENOENT ? FELIX_E_NOTFOUND : FELIX_E_IO, errno, "open %s", what);
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(fd);
    return felix_fail(err, FELIX_E_CORRUPT, "%s is not a regular file", what);
  }
  *out = fd;
  return FELIX_OK;
}

felix_status felix_rp_read_small(int dirfd, const char *name, const char *what, size_t max, char **out,
                                 size_t *len, felix_err *err) {
  int fd;
  *out = NULL;
  felix_status st = felix_rp_open_regular(dirfd, name, what, &fd, err);
  if (st) return st;
  struct stat sb;
  char *buf = NULL;
  if (fstat(fd, &sb) != 0) st = felix_fail_errno(err, FELIX_E_IO, errno, "stat %s", what);
  else if ((uint64_t)sb.st_size > max) st = felix_fail(err, FELIX_E_CORRUPT, "%s: %lld bytes, more than the %zu it may have", what, (long long)sb.st_size, max);
  else if (!(buf = malloc((size_t)sb.st_size + 1))) st = felix_fail(err, FELIX_E_IO, "out of memory");
  ssize_t got = st ? -1 : pread(fd, buf, (size_t)sb.st_size, 0);
  if (!st && got != (ssize_t)sb.st_size) st = felix_fail_errno(err, FELIX_E_IO, got < 0 ? errno : EIO, "read %s", what);
  close(fd);
  if (st) {
    free(buf);
    return st;
  }
  buf[got] = '\0';
  *out = buf;
  *len = (size_t)got;
  return FELIX_OK;
}

felix_status felix_rp_open_subdir(int dirfd, const char *name, const char *what, int *out, felix_err *err) {
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 && (errno == ELOOP || errno == ENOTDIR)) return felix_fail(err, FELIX_E_CORRUPT, "%s is not a directory (a link?)", what);
  if (fd < 0) return felix_fail_errno(err, errno == ENOENT ? FELIX_E_NOTFOUND : FELIX_E_IO, errno, "open %s", what);
  *out = fd;
  return FELIX_OK;
}

felix_status felix_rp_file_crc(int dirfd, const char *name, const char *what, uint64_t limit, uint32_t *crc,
                               uint64_t *size, felix_rp_progress_fn progress, void *ctx, uint64_t *done,
                               uint64_t total, felix_err *err) {
  int fd;
  felix_status st = felix_rp_open_regular(dirfd, name, what, &fd, err);
  if (st) return st;
  st = stream_crc(fd, -1, limit, what, what, crc, size, progress, ctx, done, total, err);
  close(fd);
  return st;
}

static felix_status try_link(int from_dirfd, int to_dirfd, const char *name, const char *what, bool *linked,
                             felix_err *err) {
  *linked = false;
  if (linkat(from_dirfd, name, to_dirfd, name, 0) == 0) return (*linked = true), FELIX_OK;
  /* another file system, or one without hard links: copy instead */
  if (errno == EXDEV || errno == EPERM || errno == EMLINK || errno == ENOTSUP) return FELIX_OK;
  return felix_fail_errno(err, errno == ENOENT ? FELIX_E_NOTFOUND : FELIX_E_IO, errno, "link %s", what);
}

felix_status felix_rp_copy_file(int from_dirfd, int to_dirfd, const char *name, uint64_t limit, bool link_ok,
                                const char *what, const char *dst_what, uint32_t *crc, uint64_t *size, bool *linked,
                                felix_rp_progress_fn progress, void *ctx, uint64_t *done, uint64_t total,
                                felix_err *err) {
  felix_status st = link_ok ? try_link(from_dirfd, to_dirfd, name, what, linked, err) : ((*linked = false), FELIX_OK);
  if (st) return st;
  if (*linked) return felix_rp_file_crc(to_dirfd, name, dst_what, UINT64_MAX, crc, size, progress, ctx, done, total, err);
  int in;
  st = felix_rp_open_regular(from_dirfd, name, what, &in, err);
  if (st) return st;
  int out = openat(to_dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) {
    st = felix_fail_errno(err, FELIX_E_IO, errno, "create %s", dst_what);
    close(in);
    return st;
  }
  st = stream_crc(in, out, limit, what, dst_what, crc, size, progress, ctx, done, total, err);
  if (!st && fsync(out) != 0) st = felix_fail_errno(err, FELIX_E_SYNC, errno, "fsync %s", dst_what);
  close(in);
  close(out);
  return st;
}

static int remove_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(p) == 0 || errno == ENOENT ? 0 : -1;
}

felix_status felix_rp_remove_tree(const char *path, felix_err *err) {
  struct stat sb;
  if (lstat(path, &sb) != 0 && errno == ENOENT) return FELIX_OK;
  if (nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
    return felix_fail_errno(err, FELIX_E_IO, errno, "remove %s", path);
  return FELIX_OK;
}
