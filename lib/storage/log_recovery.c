/* storage/log_recovery.c — opening a log: find its segments, check them, repair only
 * a torn tail of the newest one (DESIGN.md §3.1).
 *
 * Invariants: sealed segments are checked past their last index entry; the
 * newest is checked in full; any other damage, or an offset gap between
 * segments, fails the open with shard, segment file and byte position.
 * Running recovery twice changes nothing the second time. */
#include <dirent.h>
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

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Lists segment bases (sorted) and removes leftover temp files. */
static felix_status list_segments(felix_log *log, uint64_t **bases, size_t *n,
                                  felix_recovery_report *rep, felix_err *err) {
  int fd = dup(log->dirfd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return felix_fail_errno(err, FELIX_E_IO, errno, "shard %s: list %s", log->shard, log->path);
  }
  size_t cap = 0;
  *bases = NULL;
  *n = 0;
  struct dirent *de;
  felix_status st = FELIX_OK;
  while ((de = readdir(d)) != NULL) {
    size_t l = strlen(de->d_name);
    uint64_t base;
    if (de->d_name[0] == '.' && l > 5 && strcmp(de->d_name + l - 4, ".tmp") == 0) {
      if (unlinkat(log->dirfd, de->d_name, 0) == 0) rep->temp_files_removed++;
      continue;
    }
    if (!felix_seg_parse_name(de->d_name, ".log", &base)) continue;
    if (*n == cap) {
      cap = cap ? cap * 2 : 16;
      uint64_t *nb = realloc(*bases, cap * sizeof *nb);
      if (!nb) {
        st = felix_fail(err, FELIX_E_IO, "out of memory");
        break;
      }
      *bases = nb;
    }
    (*bases)[(*n)++] = base;
  }
  closedir(d);
  if (*n) qsort(*bases, *n, sizeof **bases, cmp_u64);
  return st;
}

static felix_status seg_error(felix_log *log, const felix_problem *p, felix_err *err) {
  return felix_fail(err, FELIX_E_CORRUPT, "shard %s: segment %s: byte %" PRIu64 ": %s: %s",
                    log->shard, p->file, p->position, p->kind, p->detail);
}

/* Loads the index file of s; false when missing or malformed. */
static bool load_index(felix_log *log, log_seg *s) {
  char name[32];
  felix_seg_format_name(name, s->base, ".index");
  char *buf;
  size_t len;
  if (felix_read_file(log->dirfd, name, SIZE_MAX / 2, &buf, &len, name, NULL) != FELIX_OK) return false;
  const char *kind;
  uint64_t pos;
  felix_idx_entry *e;
  size_t n = 0;
  bool ok = felix_idx_decode((uint8_t *)buf, len, s->base, &e, &n, &kind, &pos);
  free(buf);
  if (!ok) return false;
  if (n == 0) {
    free(e);
    return true;
  }
  free(s->entries);
  s->entries = e;
  s->n_entries = s->cap_entries = n;
  s->last_entry_pos = e[n - 1].position;
  return true;
}

static felix_status scan(felix_log *log, log_seg *s, const char *path, const felix_scan_opts *o,
                         felix_seg_scan *out, felix_err *err) {
  felix_scan_opts checked = *o;
  checked.check_base = true;
  checked.expect_base = s->base;
  (void)log;
  return felix_seg_scan_fd(s->fd, path, &checked, out, err);
}

/* Replaces s's index (memory and file) with the entries of a full scan. */
static felix_status write_index(felix_log *log, log_seg *s, const felix_seg_scan *sc, felix_err *err) {
  free(s->entries);
  s->entries = NULL;
  s->n_entries = s->cap_entries = 0;
  s->last_entry_pos = 0;
  for (size_t i = 0; i < sc->n_entries; i++)
    if (log_seg_add_entry(s, sc->entries[i].offset, sc->entries[i].position)) return felix_fail(err, FELIX_E_IO, "out of memory");
  size_t len;
  uint8_t *buf = felix_idx_encode(s->base, s->entries, s->n_entries, &len);
  if (!buf) return felix_fail(err, FELIX_E_IO, "out of memory");
  char name[32], what[4200];
  felix_seg_format_name(name, s->base, ".index");
  snprintf(what, sizeof what, "%s/%s", log->path, name);
  felix_status st = felix_write_file_atomic(log->dirfd, name, buf, len, what, err);
  free(buf);
  return st;
}

static bool index_matches(const log_seg *s, const felix_seg_scan *sc) {
  if (s->n_entries != sc->n_entries) return false;
  for (size_t i = 0; i < sc->n_entries; i++)
    if (s->entries[i].offset != sc->entries[i].offset || s->entries[i].position != sc->entries[i].position)
      return false;
  return true;
}

static felix_status full_scan(felix_log *log, log_seg *s, const char *path, bool newest,
                              felix_seg_scan *sc, felix_err *err) {
  felix_scan_opts o = {.index_spacing = log->cfg.index_spacing_bytes, .is_newest = newest};
  return scan(log, s, path, &o, sc, err);
}

/* A sealed segment: trust a well-formed index, check past its last entry. */
static felix_status recover_sealed(felix_log *log, log_seg *s, const char *path,
                                   felix_recovery_report *rep, felix_err *err) {
  felix_seg_scan sc;
  felix_status st;
  if (load_index(log, s) && s->n_entries > 0) {
    felix_idx_entry last = s->entries[s->n_entries - 1];
    felix_scan_opts o = {.start_position = last.position, .start_offset = last.offset,
                         .last_entry_position = last.position,
                         .index_spacing = log->cfg.index_spacing_bytes};
    st = scan(log, s, path, &o, &sc, err);
    if (st) return st;
    if (!sc.has_problem && sc.n_entries == 0 && sc.records > 0) {
      s->size = sc.file_size;
      s->next_offset = sc.next_offset;
      felix_seg_scan_free(&sc);
      return FELIX_OK;
    }
    felix_seg_scan_free(&sc); /* index incomplete or pointing at damage: decide by a full scan */
  }
  st = full_scan(log, s, path, false, &sc, err);
  if (st == FELIX_OK && sc.has_problem) st = seg_error(log, &sc.problem, err);
  if (st == FELIX_OK) {
    s->size = sc.file_size;
    s->next_offset = sc.next_offset;
    if (!index_matches(s, &sc)) {
      st = write_index(log, s, &sc, err);
      rep->indexes_rebuilt++;
    }
  }
  felix_seg_scan_free(&sc);
  return st;
}

/* The newest segment: full scan, cut a torn tail, rebuild the index if off. */
static felix_status recover_newest(felix_log *log, log_seg *s, const char *path,
                                   felix_recovery_report *rep, felix_err *err) {
  felix_seg_scan sc;
  /* the newest segment is the one appends (and a torn-tail cut) write into */
  felix_status st = log_seg_unshare(log, s, UINT64_MAX, err);
  if (st) return st;
  bool have_index = load_index(log, s);
  st = full_scan(log, s, path, true, &sc, err);
  if (st) return st;
  if (sc.has_problem && !sc.problem.repairable) {
    st = seg_error(log, &sc.problem, err);
  } else if (sc.has_problem) {
    int rc = ftruncate(s->fd, (off_t)sc.valid_end) == 0 ? log_sync_fd(log, s->fd, "recovery") : errno;
    if (rc) st = felix_fail_errno(err, FELIX_E_IO, rc, "shard %s: cut torn tail of %s at byte %" PRIu64,
                                  log->shard, path, sc.valid_end);
    rep->truncated_bytes = sc.file_size - sc.valid_end;
    rep->truncated_at = sc.valid_end;
    snprintf(rep->truncated_kind, sizeof rep->truncated_kind, "%s", sc.problem.kind);
  }
  if (st == FELIX_OK) {
    s->size = sc.valid_end;
    s->next_offset = sc.next_offset;
    if (!have_index || !index_matches(s, &sc)) {
      st = write_index(log, s, &sc, err);
      rep->indexes_rebuilt++;
    }
  }
  felix_seg_scan_free(&sc);
  return st;
}

static felix_status open_segment(felix_log *log, uint64_t base, log_seg *s, felix_err *err) {
  *s = (log_seg){.base = base, .fd = -1, .idx_fd = -1};
  char name[32];
  felix_seg_format_name(name, base, ".log");
  s->fd = openat(log->dirfd, name, O_RDWR | O_CLOEXEC);
  if (s->fd < 0) return felix_fail_errno(err, FELIX_E_IO, errno, "shard %s: open %s/%s", log->shard, log->path, name);
  return FELIX_OK;
}

static felix_status open_index_fd(felix_log *log, log_seg *s, felix_err *err) {
  char name[32];
  felix_seg_format_name(name, s->base, ".index");
  s->idx_fd = openat(log->dirfd, name, O_RDWR | O_CLOEXEC);
  if (s->idx_fd < 0) return felix_fail_errno(err, FELIX_E_IO, errno, "shard %s: open %s/%s", log->shard, log->path, name);
  return FELIX_OK;
}

/* Removes index files whose segment is gone (derived data, safe to drop). */
static void remove_orphan_indexes(felix_log *log) {
  int fd = dup(log->dirfd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return;
  }
  /* the dup shares the directory offset list_segments read to the end */
  rewinddir(d);
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    uint64_t base;
    bool found = false;
    if (!felix_seg_parse_name(de->d_name, ".index", &base)) continue;
    for (size_t i = 0; i < log->nsegs && !found; i++) found = log->segs[i].base == base;
    if (!found) unlinkat(log->dirfd, de->d_name, 0);
  }
  closedir(d);
}

felix_status log_recover(felix_log *log, bool create, felix_recovery_report *rep, felix_err *err) {
  uint64_t *bases = NULL;
  size_t n = 0;
  felix_status st = list_segments(log, &bases, &n, rep, err);
  if (st) return st;
  if (n > 0) {
    log->segs = calloc(n, sizeof *log->segs);
    if (!log->segs) st = felix_fail(err, FELIX_E_IO, "out of memory");
    log->cap_segs = n;
  }
  for (size_t i = 0; st == FELIX_OK && i < n; i++) {
    log_seg *s = &log->segs[i];
    char path[4200];
    st = open_segment(log, bases[i], s, err);
    log->nsegs = i + 1;
    if (st) break;
    log_seg_name(log, s, ".log", path, sizeof path);
    if (i > 0 && bases[i] != log->segs[i - 1].next_offset) {
      st = felix_fail(err, FELIX_E_CORRUPT,
                      "shard %s: segment %s: byte 8: offset_gap: starts at offset %" PRIu64
                      " but the previous segment ends at %" PRIu64, log->shard, path, bases[i],
                      log->segs[i - 1].next_offset);
      break;
    }
    st = i + 1 < n ? recover_sealed(log, s, path, rep, err) : recover_newest(log, s, path, rep, err);
  }
  free(bases);
  rep->segments = n;
  if (st == FELIX_OK && n == 0 && !create)
    st = felix_fail(err, FELIX_E_NOTFOUND, "shard %s: %s holds no segment: its records are gone", log->shard, log->path);
  if (st == FELIX_OK && n == 0) st = log_seg_create(log, 0, err);
  if (st == FELIX_OK && n > 0) st = open_index_fd(log, log_active(log), err);
  if (st == FELIX_OK) remove_orphan_indexes(log);
  return st;
}
