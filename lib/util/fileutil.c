/* util/fileutil.c — atomic small-file writes and directory-relative reads. */
#include "felix/fileutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static felix_status write_all(int fd, const void *data, size_t len, const char *what,
                              felix_err *err) {
  const uint8_t *p = data;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return felix_fail_errno(err, FELIX_E_IO, errno, "write %s", what);
    p += n;
    len -= (size_t)n;
  }
  return FELIX_OK;
}

felix_status felix_fsync_dir(int dirfd, const char *what, felix_err *err) {
  if (fsync(dirfd) != 0) return felix_fail_errno(err, FELIX_E_SYNC, errno, "fsync directory of %s", what);
  return FELIX_OK;
}

felix_status felix_write_file_atomic(int dirfd, const char *name, const void *data, size_t len,
                                     const char *what, felix_err *err) {
  char tmp[300];
  if (snprintf(tmp, sizeof tmp, ".%s.tmp", name) >= (int)sizeof tmp)
    return felix_fail(err, FELIX_E_INVAL, "file name too long: %s", name);
  int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return felix_fail_errno(err, FELIX_E_IO, errno, "create %s", what);
  felix_status st = write_all(fd, data, len, what, err);
  if (st == FELIX_OK && fsync(fd) != 0) st = felix_fail_errno(err, FELIX_E_SYNC, errno, "fsync %s", what);
  close(fd);
  if (st == FELIX_OK && renameat(dirfd, tmp, dirfd, name) != 0)
    st = felix_fail_errno(err, FELIX_E_IO, errno, "rename into place %s", what);
  if (st != FELIX_OK) {
    unlinkat(dirfd, tmp, 0);
    return st;
  }
  return felix_fsync_dir(dirfd, what, err);
}

felix_status felix_read_file(int dirfd, const char *name, size_t max_len, char **out, size_t *len,
                             const char *what, felix_err *err) {
  *out = NULL;
  int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    felix_status code = errno == ENOENT ? FELIX_E_NOTFOUND : FELIX_E_IO;
    return felix_fail_errno(err, code, errno, "open %s", what);
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    close(fd);
    return felix_fail_errno(err, FELIX_E_IO, e, "stat %s", what);
  }
  if ((size_t)sb.st_size > max_len) {
    close(fd);
    return felix_fail(err, FELIX_E_CORRUPT, "%s: %lld bytes, more than the %zu a valid file can have",
                      what, (long long)sb.st_size, max_len);
  }
  char *buf = malloc((size_t)sb.st_size + 1);
  size_t got = 0;
  while (buf && got < (size_t)sb.st_size) {
    ssize_t n = read(fd, buf + got, (size_t)sb.st_size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
  }
  int e = errno;
  close(fd);
  if (!buf) return felix_fail(err, FELIX_E_IO, "%s: out of memory", what);
  if (got != (size_t)sb.st_size) {
    free(buf);
    return felix_fail_errno(err, FELIX_E_IO, e, "read %s", what);
  }
  buf[got] = '\0';
  *out = buf;
  if (len) *len = got;
  return FELIX_OK;
}

felix_status felix_open_dir(int atfd, const char *path, int *out, felix_err *err) {
  int fd = openat(atfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    felix_status code = errno == ENOENT ? FELIX_E_NOTFOUND : FELIX_E_IO;
    return felix_fail_errno(err, code, errno, "open directory %s", path);
  }
  *out = fd;
  return FELIX_OK;
}

felix_status felix_random_bytes(void *buf, size_t len, felix_err *err) {
  uint8_t *p = buf;
  while (len > 0) {
    ssize_t n = getrandom(p, len, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return felix_fail_errno(err, FELIX_E_IO, errno, "getrandom");
    p += n;
    len -= (size_t)n;
  }
  return FELIX_OK;
}

void felix_hex_encode(const uint8_t *in, size_t len, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < len; i++) {
    out[2 * i] = digits[in[i] >> 4];
    out[2 * i + 1] = digits[in[i] & 15];
  }
  out[2 * len] = '\0';
}

bool felix_hex_valid(const char *s, size_t len) {
  if (strlen(s) != len) return false;
  for (size_t i = 0; i < len; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  return true;
}

uint64_t felix_now_micros(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void felix_format_rfc3339(char out[32], int64_t unix_seconds) {
  time_t t = (time_t)unix_seconds;
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

bool felix_path_join(char *out, size_t cap, const char *a, const char *b) {
  int n = snprintf(out, cap, "%s/%s", a, b);
  return n >= 0 && (size_t)n < cap;
}
