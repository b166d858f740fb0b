/* identity/datadir.c — storage-id, run-state, boot id, boot token and the directory lock. */
#include "felix/datadir.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "felix/fileutil.h"
#include "kv.h"

static void what_of(char *out, size_t cap, const char *dir, const char *name) {
  snprintf(out, cap, "%s/%s", dir, name);
}

felix_status felix_storage_id_parse(const char *buf, size_t len, const char *what,
                                    felix_storage_id *out, felix_err *err) {
  for (size_t i = 0; i < FELIX_STORAGE_ID_HEX; i++) {
    if (i >= len)
      return felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: file ends after %zu of 32 hex characters", what, i, i);
    char c = buf[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: expected a lowercase hex character", what, i);
  }
  if (len < FELIX_STORAGE_ID_HEX + 1 || buf[FELIX_STORAGE_ID_HEX] != '\n')
    return felix_fail(err, FELIX_E_CORRUPT, "%s: byte 32: expected a newline after the 32 hex characters", what);
  if (len > FELIX_STORAGE_ID_HEX + 1)
    return felix_fail(err, FELIX_E_CORRUPT, "%s: byte 33: unexpected data after the storage id", what);
  memcpy(out->hex, buf, FELIX_STORAGE_ID_HEX);
  out->hex[FELIX_STORAGE_ID_HEX] = '\0';
  return FELIX_OK;
}

felix_status felix_storage_id_load(int dirfd, const char *dir, felix_storage_id *out, felix_err *err) {
  char what[4200], *buf;
  size_t len;
  what_of(what, sizeof what, dir, "storage-id");
  felix_status st = felix_read_file(dirfd, "storage-id", 4096, &buf, &len, what, err);
  if (st) return st;
  st = felix_storage_id_parse(buf, len, what, out, err);
  free(buf);
  return st;
}

felix_status felix_storage_id_replace(int dirfd, const char *dir, felix_storage_id *out, felix_err *err) {
  uint8_t raw[16];
  felix_status st = felix_random_bytes(raw, sizeof raw, err);
  if (st) return st;
  felix_hex_encode(raw, sizeof raw, out->hex);
  char line[FELIX_STORAGE_ID_HEX + 2], what[4200];
  snprintf(line, sizeof line, "%s\n", out->hex);
  what_of(what, sizeof what, dir, "storage-id");
  return felix_write_file_atomic(dirfd, "storage-id", line, FELIX_STORAGE_ID_HEX + 1, what, err);
}

felix_status felix_storage_id_load_or_create(int dirfd, const char *dir, felix_storage_id *out,
                                             bool *created, felix_err *err) {
  *created = false;
  felix_status st = felix_storage_id_load(dirfd, dir, out, err);
  if (st != FELIX_E_NOTFOUND) return st;
  *created = true;
  return felix_storage_id_replace(dirfd, dir, out, err);
}

felix_status felix_run_state_parse(const char *buf, size_t len, const char *what,
                                   felix_run_state *out, felix_err *err) {
  kv_field f[] = {{"state", NULL, 0, 1}, {"fsync_mode", NULL, 0, 1}, {"boot_id", NULL, 0, 0},
                  {"boot_id_source", NULL, 0, 0}, {"pid", NULL, 0, 1}, {"since", NULL, 0, 1},
                  {"broker_id", NULL, 0, 0}, {"restored_from", NULL, 0, 0}};
  size_t n = sizeof f / sizeof f[0];
  felix_status st = kv_parse(buf, len, what, f, n, err);
  if (st) return st;
  memset(out, 0, sizeof *out);
  uint64_t pid = 0;
  if (strcmp(f[0].value, "running") == 0) out->state = FELIX_RUN_RUNNING;
  else if (strcmp(f[0].value, "stopped") == 0) out->state = FELIX_RUN_STOPPED;
  else st = felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: state=%s is neither running nor stopped", what, f[0].at, f[0].value);
  if (!st && !felix_fsync_mode_parse(f[1].value, &out->fsync_mode))
    st = felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: fsync_mode=%s is not none, periodic or on_commit", what, f[1].at, f[1].value);
  if (!st && f[2].value) {
    if (strlen(f[2].value) == 0 || strlen(f[2].value) > FELIX_BOOT_ID_MAX)
      st = felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: boot_id must have 1 to %d characters", what, f[2].at, FELIX_BOOT_ID_MAX);
    else out->has_boot_id = true, snprintf(out->boot_id, sizeof out->boot_id, "%s", f[2].value);
  }
  if (!st && f[3].value) {
    if (strcmp(f[3].value, "kernel") && strcmp(f[3].value, "file"))
      st = felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: boot_id_source=%s is neither kernel nor file", what, f[3].at, f[3].value);
    else if (!f[2].value)
      st = felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: boot_id_source without boot_id", what, f[3].at);
    else snprintf(out->boot_id_source, sizeof out->boot_id_source, "%s", f[3].value);
  }
  /* The writer spells an unset source "kernel"; read it the same way so that
   * what is read formats back to the same file. */
  if (!st && out->has_boot_id && !out->boot_id_source[0])
    snprintf(out->boot_id_source, sizeof out->boot_id_source, "kernel");
  if (!st) st = kv_u64(&f[4], what, &pid, err);
  if (!st && pid > INT64_MAX)
    st = felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: pid=%" PRIu64 " is out of range", what, f[4].at, pid);
  if (!st && strlen(f[5].value) >= sizeof out->since)
    st = felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: since= is too long for an RFC 3339 time", what, f[5].at);
  if (!st && f[6].value && (!f[6].value[0] || strlen(f[6].value) >= sizeof out->broker_id))
    st = felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: broker_id must have 1 to %zu characters", what, f[6].at, sizeof out->broker_id - 1);
  if (!st && f[7].value && (!f[7].value[0] || strlen(f[7].value) >= sizeof out->restored_from))
    st = felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: restored_from must have 1 to %zu characters", what, f[7].at, sizeof out->restored_from - 1);
  if (!st) {
    out->pid = (int64_t)pid;
    snprintf(out->since, sizeof out->since, "%s", f[5].value);
    if (f[6].value) snprintf(out->broker_id, sizeof out->broker_id, "%s", f[6].value);
    if (f[7].value) snprintf(out->restored_from, sizeof out->restored_from, "%s", f[7].value);
  }
  kv_free(f, n);
  return st;
}

void felix_run_state_format(const felix_run_state *rs, char *out, size_t cap) {
  int n = snprintf(out, cap, "state=%s\nfsync_mode=%s\n", rs->state == FELIX_RUN_RUNNING ? "running" : "stopped",
                   felix_fsync_mode_name(rs->fsync_mode));
  if (rs->has_boot_id && n >= 0 && (size_t)n < cap)
    n += snprintf(out + n, cap - (size_t)n, "boot_id=%s\nboot_id_source=%s\n", rs->boot_id,
                  rs->boot_id_source[0] ? rs->boot_id_source : "kernel");
  if (n >= 0 && (size_t)n < cap) n += snprintf(out + n, cap - (size_t)n, "pid=%" PRId64 "\nsince=%s\n", rs->pid, rs->since);
  if (rs->broker_id[0] && n >= 0 && (size_t)n < cap) n += snprintf(out + n, cap - (size_t)n, "broker_id=%s\n", rs->broker_id);
  if (rs->restored_from[0] && n >= 0 && (size_t)n < cap) snprintf(out + n, cap - (size_t)n, "restored_from=%s\n", rs->restored_from);
}

felix_status felix_run_state_read(int dirfd, const char *dir, felix_run_state *out, bool *present,
                                  felix_err *err) {
  char what[4200], *buf;
  size_t len;
  what_of(what, sizeof what, dir, "run-state");
  *present = false;
  felix_status st = felix_read_file(dirfd, "run-state", 4096, &buf, &len, what, err);
  if (st == FELIX_E_NOTFOUND) return FELIX_OK;
  if (st) return st;
  st = felix_run_state_parse(buf, len, what, out, err);
  free(buf);
  *present = st == FELIX_OK;
  return st;
}

felix_status felix_run_state_write(int dirfd, const char *dir, const felix_run_state *rs, felix_err *err) {
  char buf[2048], what[4200];
  felix_run_state_format(rs, buf, sizeof buf);
  what_of(what, sizeof what, dir, "run-state");
  return felix_write_file_atomic(dirfd, "run-state", buf, strlen(buf), what, err);
}

felix_status felix_boot_id_read(char out[FELIX_BOOT_ID_MAX + 1], char source[8], felix_err *err) {
  const char *file = getenv("FELIX_BOOT_ID_FILE");
  const char *path = file && *file ? file : "/proc/sys/kernel/random/boot_id";
  snprintf(source, 8, "%s", file && *file ? "file" : "kernel");
  /* Read with read(2), not by st_size: /proc files report a size of 0. */
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return felix_fail_errno(err, errno == ENOENT ? FELIX_E_NOTFOUND : FELIX_E_IO, errno, "open boot id %s", path);
  char buf[FELIX_BOOT_ID_MAX + 3];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  int e = errno;
  close(fd);
  if (n < 0) return felix_fail_errno(err, FELIX_E_IO, e, "read boot id %s", path);
  size_t len = (size_t)n;
  buf[len] = '\0';
  while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ')) buf[--len] = '\0';
  if (len == 0 || len > FELIX_BOOT_ID_MAX || strpbrk(buf, "\n=/ \t"))
    return felix_fail(err, FELIX_E_CORRUPT, "%s: byte 0: expected one boot id of 1 to %d characters without spaces, '/' or '='", path, FELIX_BOOT_ID_MAX);
  memcpy(out, buf, len + 1);
  return FELIX_OK;
}

const char *felix_runtime_dir(void) {
  const char *d = getenv("FELIX_RUNTIME_DIR");
  return d && *d ? d : "/run/felix";
}

void felix_boot_token_path(const felix_storage_id *sid, const char *boot_id, char *out, size_t cap) {
  snprintf(out, cap, "%s/%s.%s.ok", felix_runtime_dir(), sid->hex, boot_id);
}

bool felix_boot_token_present(const felix_storage_id *sid, const char *boot_id) {
  char p[4200];
  felix_boot_token_path(sid, boot_id, p, sizeof p);
  return access(p, F_OK) == 0;
}

felix_status felix_boot_token_create(const felix_storage_id *sid, const char *boot_id, felix_err *err) {
  char p[4200];
  const char *dir = felix_runtime_dir();
  if (mkdir(dir, 0755) != 0 && errno != EEXIST)
    return felix_fail_errno(err, FELIX_E_IO, errno, "create runtime directory %s", dir);
  felix_boot_token_path(sid, boot_id, p, sizeof p);
  int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return felix_fail_errno(err, FELIX_E_IO, errno, "create boot token %s", p);
  close(fd);
  return FELIX_OK;
}

void felix_boot_token_remove(const felix_storage_id *sid, const char *boot_id) {
  char p[4200];
  felix_boot_token_path(sid, boot_id, p, sizeof p);
  unlink(p);
}

static pid_t read_pid(int fd) {
  char buf[32] = {0};
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  return n > 0 ? (pid_t)atol(buf) : 0;
}

felix_status felix_dir_lock_acquire(int dirfd, const char *dir, felix_dir_lock *out, felix_err *err) {
  out->fd = -1;
  int fd = openat(dirfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return felix_fail_errno(err, FELIX_E_IO, errno, "open %s/lock", dir);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    pid_t holder = read_pid(fd);
    close(fd);
    if (e == EWOULDBLOCK)
      return felix_fail(err, FELIX_E_BUSY, "data directory %s is locked by another broker (pid %ld); stop it first",
                        dir, (long)holder);
    return felix_fail_errno(err, FELIX_E_IO, e, "lock %s/lock", dir);
  }
  char buf[32];
  int n = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
  if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)n, 0) != n) {
    int e = errno;
    close(fd);
    return felix_fail_errno(err, FELIX_E_IO, e, "write pid to %s/lock", dir);
  }
  out->fd = fd;
  return FELIX_OK;
}

void felix_dir_lock_release(felix_dir_lock *lock) {
  if (lock->fd >= 0) close(lock->fd);
  lock->fd = -1;
}

pid_t felix_dir_lock_holder(int dirfd) {
  struct stat sb;
  if (fstatat(dirfd, "lock", &sb, 0) != 0) return 0;
  FILE *f = fopen("/proc/locks", "r");
  if (!f) return 0;
  char line[512];
  pid_t found = 0;
  while (!found && fgets(line, sizeof line, f)) {
    /* "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF": major and minor in hex */
    char type[16], kind[16], mode[16];
    long pid;
    unsigned maj, min;
    unsigned long long ino;
    if (sscanf(line, "%*[^:]: %15s %15s %15s %ld %x:%x:%llu", type, kind, mode, &pid, &maj, &min, &ino) == 7 &&
        strcmp(type, "FLOCK") == 0 && ino == (unsigned long long)sb.st_ino && maj == major(sb.st_dev) &&
        min == minor(sb.st_dev))
      found = (pid_t)pid;
  }
  fclose(f);
  return found;
}
