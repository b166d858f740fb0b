/* storage/survey.c — read-only survey of shard directories for felix-inspect.
 *
 * Invariant: nothing here opens a file for writing, takes a lock, or changes
 * a byte. Segment damage is classified by the same scanner recovery uses
 * (storage/segment.c), so "repairable" means exactly what the next start would do. */
#include "felix/survey.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "felix/bytes.h"
#include "felix/fileutil.h"
#include "felix/log.h"

void felix_problems_add(felix_problems *p, const char *file, uint64_t position, const char *kind,
                        bool repairable, const char *fmt, ...) {
  if (p->count == p->cap) {
    size_t nc = p->cap ? p->cap * 2 : 8;
    felix_problem *ni = realloc(p->items, nc * sizeof *ni);
    if (!ni) return;
    p->items = ni;
    p->cap = nc;
  }
  felix_problem *x = &p->items[p->count++];
  memset(x, 0, sizeof *x);
  snprintf(x->file, sizeof x->file, "%s", file);
  x->position = position;
  snprintf(x->kind, sizeof x->kind, "%s", kind);
  x->repairable = repairable;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(x->detail, sizeof x->detail, fmt, ap);
  va_end(ap);
}

void felix_problems_add_err(felix_problems *p, const char *file, const char *kind, const felix_err *err) {
  const char *b = strstr(err->msg, "byte ");
  unsigned long long pos = 0;
  if (b) sscanf(b + 5, "%llu", &pos);
  felix_problems_add(p, file, pos, kind, false, "%s", err->msg);
}

void felix_problems_free(felix_problems *p) {
  free(p->items);
  memset(p, 0, sizeof *p);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Names in dirfd accepted by keep(), sorted. */
static felix_status list_names(const char *what, int dirfd, bool (*keep)(int, const char *), char ***names,
                               size_t *n, felix_err *err) {
  int fd = dup(dirfd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return felix_fail_errno(err, FELIX_E_IO, errno, "list %s", what);
  }
  size_t cap = 0;
  *names = NULL;
  *n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (!keep(dirfd, de->d_name)) continue;
    if (*n == cap) {
      cap = cap ? cap * 2 : 16;
      char **nn = realloc(*names, cap * sizeof *nn);
      if (!nn) break;
      *names = nn;
    }
    (*names)[(*n)++] = strdup(de->d_name);
  }
  closedir(d);
  if (*n) qsort(*names, *n, sizeof **names, cmp_str);
  return FELIX_OK;
}

void felix_free_names(char **names, size_t n) {
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
}

static bool is_segment_name(int dirfd, const char *name) {
  uint64_t b;
  (void)dirfd;
  return felix_seg_parse_name(name, ".log", &b);
}

static bool is_subdir(int dirfd, const char *name) {
  struct stat sb;
  return name[0] != '.' && fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(sb.st_mode);
}

felix_status felix_list_shard_dirs(const char *datadir, char ***names, size_t *n, felix_err *err) {
  char path[4200];
  snprintf(path, sizeof path, "%s/shards", datadir);
  int fd;
  *names = NULL;
  *n = 0;
  felix_status st = felix_open_dir(AT_FDCWD, path, &fd, err);
  if (st == FELIX_E_NOTFOUND) return FELIX_OK; /* a directory that never held a shard */
  if (st) return st;
  st = list_names(path, fd, is_subdir, names, n, err);
  close(fd);
  return st;
}

bool felix_is_data_dir(const char *path) {
  char p[4200];
  struct stat sb;
  snprintf(p, sizeof p, "%s/storage-id", path);
  if (stat(p, &sb) == 0) return true;
  snprintf(p, sizeof p, "%s/shards", path);
  return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Checks every index entry points at the start of the record it names. */
static const char *index_state(int dirfd, int segfd, const felix_seg_info *si, const char *dir,
                               felix_problems *probs) {
  char iname[32], ipath[4200];
  felix_seg_format_name(iname, si->base_offset, ".index");
  snprintf(ipath, sizeof ipath, "%s/%s", dir, iname);
  char *buf;
  size_t len;
  felix_err e;
  felix_status st = felix_read_file(dirfd, iname, SIZE_MAX / 2, &buf, &len, ipath, &e);
  if (st == FELIX_E_NOTFOUND) {
    felix_problems_add(probs, ipath, 0, "missing_index", true, "index file missing; rebuilt at next start");
    return "missing";
  }
  if (st) {
    felix_problems_add_err(probs, ipath, "unreadable_index", &e);
    return "bad";
  }
  felix_idx_entry *ent;
  size_t n;
  const char *kind;
  uint64_t pos;
  bool ok = felix_idx_decode((uint8_t *)buf, len, si->base_offset, &ent, &n, &kind, &pos);
  free(buf);
  if (!ok) {
    felix_problems_add(probs, ipath, pos, kind, true, "index rejected (%s); rebuilt at next start", kind);
    return "bad";
  }
  const char *state = "ok";
  for (size_t i = 0; i < n && !strcmp(state, "ok"); i++) {
    uint8_t hdr[FELIX_REC_HEADER_LEN];
    bool points = ent[i].offset < si->next_offset && ent[i].position + sizeof hdr <= si->bytes &&
                  pread(segfd, hdr, sizeof hdr, (off_t)ent[i].position) == (ssize_t)sizeof hdr &&
                  felix_get_u64(hdr + 4) == ent[i].offset;
    if (!points) {
      felix_problems_add(probs, ipath, FELIX_IDX_HEADER_LEN + i * FELIX_IDX_ENTRY_LEN, "index_entry_wrong", true,
                         "entry for offset %" PRIu64 " does not point at that record; rebuilt at next start", ent[i].offset);
      state = "bad";
    }
  }
  free(ent);
  return state;
}

/* expect_base: where the previous segment ended, or UINT64_MAX when its scan
 * stopped at damage (its true end is unknown: no gap can be judged).
 * Returns whether this segment was read to its end. */
static bool survey_segment(felix_shard_survey *s, int dirfd, const char *name, bool newest,
                           uint64_t expect_base) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", s->path, name);
  felix_seg_info *si = &s->segs[s->nsegs++];
  memset(si, 0, sizeof *si);
  snprintf(si->name, sizeof si->name, "%s", name);
  felix_seg_parse_name(name, ".log", &si->base_offset);
  si->index_state = "bad";
  int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    felix_problems_add(&s->problems, path, 0, "unreadable", false, "open: %s", strerror(errno));
    return false;
  }
  felix_scan_opts o = {.index_spacing = FELIX_DEFAULT_INDEX_SPACING, .is_newest = newest, .check_base = true,
                       .expect_base = si->base_offset};
  felix_seg_scan sc;
  felix_err e;
  if (felix_seg_scan_fd(fd, path, &o, &sc, &e) != FELIX_OK) {
    felix_problems_add_err(&s->problems, path, "unreadable", &e);
    close(fd);
    return false;
  }
  si->next_offset = sc.has_problem && sc.records == 0 ? si->base_offset : sc.next_offset;
  si->records = sc.records;
  si->bytes = sc.file_size;
  si->created_at_micros = sc.header.created_at_micros;
  if (s->nsegs > 1 && expect_base != UINT64_MAX && si->base_offset != expect_base)
    felix_problems_add(&s->problems, path, 8, "offset_gap", false,
                       "starts at offset %" PRIu64 " but the previous segment ends at %" PRIu64, si->base_offset, expect_base);
  if (sc.has_problem)
    felix_problems_add(&s->problems, path, sc.problem.position, sc.problem.kind, sc.problem.repairable, "%s%s",
                       sc.problem.detail, sc.problem.repairable ? " (torn tail: cut at next start)" : "");
  else
    si->index_state = index_state(dirfd, fd, si, s->path, &s->problems);
  bool read_to_end = !sc.has_problem;
  felix_seg_scan_free(&sc);
  close(fd);
  return read_to_end;
}

static void survey_small_files(felix_shard_survey *s, int dirfd) {
  char what[4200];
  felix_err e;
  snprintf(what, sizeof what, "%s/ballot", s->path);
  felix_status st = felix_ballot_read(dirfd, what, &s->ballot, &e);
  s->has_ballot = st == FELIX_OK;
  if (st && st != FELIX_E_NOTFOUND) felix_problems_add_err(&s->problems, what, "bad_ballot", &e);
  snprintf(what, sizeof what, "%s/generations", s->path);
  st = felix_generations_read(dirfd, what, &s->gens, &e);
  s->has_generations = st == FELIX_OK;
  if (st && st != FELIX_E_NOTFOUND) felix_problems_add_err(&s->problems, what, "bad_generations", &e);
  for (size_t i = 0; s->has_generations && i < s->gens.count; i++)
    if (s->gens.items[i].start_offset >= s->end_offset)
      felix_problems_add(&s->problems, what, 0, "generations_ahead", true,
                         "generation %" PRIu64 " starts at %" PRIu64 ", at or past the log end %" PRIu64 "; dropped at next start",
                         s->gens.items[i].generation, s->gens.items[i].start_offset, s->end_offset);
  snprintf(what, sizeof what, "%s/stream", s->path);
  if (felix_stream_meta_read(dirfd, what, &s->stream, &s->has_stream, &e))
    felix_problems_add_err(&s->problems, what, "bad_stream", &e);
}

felix_status felix_shard_survey_run(const char *path, felix_shard_survey *s, felix_err *err) {
  memset(s, 0, sizeof *s);
  snprintf(s->path, sizeof s->path, "%s", path);
  const char *slash = strrchr(path, '/');
  snprintf(s->name, sizeof s->name, "%s", slash && slash[1] ? slash + 1 : path);
  int dirfd;
  felix_status st = felix_open_dir(AT_FDCWD, path, &dirfd, err);
  if (st) return st;
  char **names;
  size_t n;
  st = list_names(path, dirfd, is_segment_name, &names, &n, err);
  if (st) {
    close(dirfd);
    return st;
  }
  s->segs = calloc(n ? n : 1, sizeof *s->segs);
  uint64_t expect = 0;
  for (size_t i = 0; i < n && s->segs; i++) {
    bool end_known = survey_segment(s, dirfd, names[i], i + 1 == n, expect);
    expect = end_known ? s->segs[i].next_offset : UINT64_MAX;
    s->records += s->segs[i].records;
    s->bytes += s->segs[i].bytes;
  }
  if (s->nsegs) {
    s->start_offset = s->segs[0].base_offset;
    s->end_offset = s->segs[s->nsegs - 1].next_offset;
  }
  survey_small_files(s, dirfd);
  felix_free_names(names, n);
  close(dirfd);
  return FELIX_OK;
}

void felix_shard_survey_free(felix_shard_survey *s) {
  free(s->segs);
  felix_generations_free(&s->gens);
  felix_problems_free(&s->problems);
  memset(s, 0, sizeof *s);
}

void felix_base64_encode(const uint8_t *in, size_t len, char *out) {
  static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t o = 0;
  for (size_t i = 0; i < len; i += 3) {
    uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0) | (i + 2 < len ? in[i + 2] : 0);
    out[o++] = t[(v >> 18) & 63];
    out[o++] = t[(v >> 12) & 63];
    out[o++] = i + 1 < len ? t[(v >> 6) & 63] : '=';
    out[o++] = i + 2 < len ? t[v & 63] : '=';
  }
  out[o] = '\0';
}
