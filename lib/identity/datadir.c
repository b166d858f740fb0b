/* identity/datadir.c — storage-id, run-state, boot id, boot token and the directory lock. */
#include "felix/datadir.h"

#include <assert.h>
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

/* The fields of run-state, in the order the writer puts them. */
enum { RS_STATE, RS_MODE, RS_BOOT, RS_BOOT_SRC, RS_PID, RS_SINCE, RS_BROKER, RS_FROM, RS_BY, RS_NFIELDS };

static felix_status rs_phase(const kv_field *f, const char *what, felix_run_phase *out, felix_err *err) {
  for (felix_run_phase p = FELIX_RUN_RUNNING; p <= FELIX_RUN_RESTORED; p++)
    if (strcmp(f->value, felix_run_phase_name(p)) == 0) {
      *out = p;
      return FELIX_OK;
    }
  return felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: state=%s is not running, stopped or restored", what, f->at, f->value);
}

/* A restored directory names no run (no fsync mode, pid, boot or broker:
 * none ran); a run's file names its fsync mode and pid. */
static felix_status rs_fields_of_phase(const kv_field *f, felix_run_phase phase, size_t len, const char *what,
                                       felix_err *err) {
  if (phase == FELIX_RUN_RESTORED) {
    for (int i = RS_MODE; i <= RS_BROKER; i++)
      if (i != RS_SINCE && f[i].value)
        return felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: %s= in a restored directory's run-state: no run happened", what, f[i].at, f[i].key);
    if (!f[RS_FROM].value) return felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: state=restored without restored_from=", what, len);
    return FELIX_OK;
  }
  if (!f[RS_MODE].value) return felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: required key 'fsync_mode' missing", what, len);
  if (!f[RS_PID].value) return felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: required key 'pid' missing", what, len);
  if (f[RS_BY].value) return felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: restored_by= belongs to state=restored only", what, f[RS_BY].at);
  return FELIX_OK;
}

static felix_status rs_boot(const kv_field *f, const char *what, felix_run_state *out, felix_err *err) {
  if (f[RS_BOOT].value) {
    if (strlen(f[RS_BOOT].value) == 0 || strlen(f[RS_BOOT].value) > FELIX_BOOT_ID_MAX)
      return felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: boot_id must have 1 to %d characters", what, f[RS_BOOT].at, FELIX_BOOT_ID_MAX);
    out->has_boot_id = true;
    snprintf(out->boot_id, sizeof out->boot_id, "%s", f[RS_BOOT].value);
  }
  if (f[RS_BOOT_SRC].value) {
    if (strcmp(f[RS_BOOT_SRC].value, "kernel") && strcmp(f[RS_BOOT_SRC].value, "file"))
      return felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: boot_id_source=%s is neither kernel nor file", what, f[RS_BOOT_SRC].at, f[RS_BOOT_SRC].value);
    if (!f[RS_BOOT].value) return felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: boot_id_source without boot_id", what, f[RS_BOOT_SRC].at);
    snprintf(out->boot_id_source, sizeof out->boot_id_source, "%s", f[RS_BOOT_SRC].value);
  }
  /* The writer spells an unset source "kernel"; read it the same way so that
   * what is read formats back to the same file. */
  if (out->has_boot_id && !out->boot_id_source[0]) snprintf(out->boot_id_source, sizeof out->boot_id_source, "kernel");
  return FELIX_OK;
}

/* A text field of 1 to cap-1 characters, copied to out when present. */
static felix_status rs_text(const kv_field *f, const char *what, char *out, size_t cap, felix_err *err) {
  if (!f->value) return FELIX_OK;
  if (!f->value[0] || strlen(f->value) >= cap)
    return felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: %s must have 1 to %zu characters", what, f->at, f->key, cap - 1);
  snprintf(out, cap, "%s", f->value);
  return FELIX_OK;
}

static felix_status rs_decode(const kv_field *f, size_t len, const char *what, felix_run_state *out, felix_err *err) {
  felix_status st = rs_phase(&f[RS_STATE], what, &out->state, err);
  if (!st) st = rs_fields_of_phase(f, out->state, len, what, err);
  if (!st && f[RS_MODE].value && !felix_fsync_mode_parse(f[RS_MODE].value, &out->fsync_mode))
    st = felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: fsync_mode=%s is not none, periodic or on_commit", what, f[RS_MODE].at, f[RS_MODE].value);
  if (!st) st = rs_boot(f, what, out, err);
  uint64_t pid = 0;
  if (!st && f[RS_PID].value) st = kv_u64(&f[RS_PID], what, &pid, err);
  if (!st && pid > INT64_MAX)
    st = felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: pid=%" PRIu64 " is out of range", what, f[RS_PID].at, pid);
  out->pid = (int64_t)pid;
  if (!st && strlen(f[RS_SINCE].value) >= sizeof out->since)
    st = felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: since= is too long for an RFC 3339 time", what, f[RS_SINCE].at);
  if (!st) snprintf(out->since, sizeof out->since, "%s", f[RS_SINCE].value);
  if (!st) st = rs_text(&f[RS_BROKER], what, out->broker_id, sizeof out->broker_id, err);
  if (!st) st = rs_text(&f[RS_FROM], what, out->restored_from, sizeof out->restored_from, err);
  if (!st) st = rs_text(&f[RS_BY], what, out->restored_by, sizeof out->restored_by, err);
  return st;
}

felix_status felix_run_state_parse(const char *buf, size_t len, const char *what,
                                   felix_run_state *out, felix_err *err) {
  kv_field f[RS_NFIELDS] = {{"state", NULL, 0, 1},     {"fsync_mode", NULL, 0, 0}, {"boot_id", NULL, 0, 0},
                            {"boot_id_source", NULL, 0, 0}, {"pid", NULL, 0, 0},   {"since", NULL, 0, 1},
                            {"broker_id", NULL, 0, 0}, {"restored_from", NULL, 0, 0}, {"restored_by", NULL, 0, 0}};
  felix_status st = kv_parse(buf, len, what, f, RS_NFIELDS, err);
  if (st) return st;
  memset(out, 0, sizeof *out);
  st = rs_decode(f, len, what, out, err);
  kv_free(f, RS_NFIELDS);
  return st;
}

/* Appends one "key=value\n" line when it fits. */
static void rs_line(char *out, size_t cap, size_t *n, const char *key, const char *value) {
  if (*n >= cap) return;
  int k = snprintf(out + *n, cap - *n, "%s=%s\n", key, value);
  *n = k < 0 ? cap : *n + (size_t)k;
}

const char *felix_run_phase_name(felix_run_phase p) {
  switch (p) {
  case FELIX_RUN_RUNNING: return "running";
  case FELIX_RUN_STOPPED: return "stopped";
  case FELIX_RUN_RESTORED: return "restored";
  }
  return "unknown";
}

void felix_run_state_format(const felix_run_state *rs, char *out, size_t cap) {
  size_t n = 0;
  char pid[24];
  out[0] = '\0';
  rs_line(out, cap, &n, "state", felix_run_phase_name(rs->state));
  if (rs->state == FELIX_RUN_RESTORED) {
    assert(rs->restored_from[0] && !rs->has_boot_id && !rs->broker_id[0]); /* a restore names no run */
    rs_line(out, cap, &n, "since", rs->since);
    rs_line(out, cap, &n, "restored_from", rs->restored_from);
    if (rs->restored_by[0]) rs_line(out, cap, &n, "restored_by", rs->restored_by);
    return;
  }
  rs_line(out, cap, &n, "fsync_mode", felix_fsync_mode_name(rs->fsync_mode));
  if (rs->has_boot_id) {
    rs_line(out, cap, &n, "boot_id", rs->boot_id);
    rs_line(out, cap, &n, "boot_id_source", rs->boot_id_source[0] ? rs->boot_id_source : "kernel");
  }
  snprintf(pid, sizeof pid, "%" PRId64, rs->pid);
  rs_line(out, cap, &n, "pid", pid);
  rs_line(out, cap, &n, "since", rs->since);
  if (rs->broker_id[0]) rs_line(out, cap, &n, "broker_id", rs->broker_id);
  if (rs->restored_from[0]) rs_line(out, cap, &n, "restored_from", rs->restored_from);
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
