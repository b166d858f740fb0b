/* restore-point/create.c — making a restore point of a data directory, while its
 * broker runs or not.
 *
 * Per shard the copy is consistent: one state the copy really held.
 * - Sealed segments are hard-linked when the file systems allow (else
 *   copied); the newest is copied up to a record boundary (a record being
 *   appended while we read is cut off, as recovery would cut it).
 * - The log never writes into a file with more than one link: it replaces it
 *   by a private copy first (log_seg_unshare), so a linked segment keeps the
 *   bytes the manifest vouches for.
 * - The shard's small files (ballot, generations, stream) and its segment
 *   list (name and inode) are read before and after the copy; if any
 *   changed, the copy is thrown away and made again (a few times). Why that
 *   suffices: a truncation into a linked segment first unlinks every newer
 *   segment, which the second listing sees; records written after a
 *   truncation belong to a newer generation, whose line is in `generations`
 *   before any of its records is written.
 * Shards are consistent one by one, not with each other: a restore point is
 * the state of each copy at some moment during the create. */
#include "felix/restorepoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "felix/datadir.h"
#include "felix/fileutil.h"
#include "felix/log.h"
#include "felix/segment.h"
#include "felix/survey.h"

#define RP_ATTEMPTS 8

typedef struct seg_entry {
  char name[32];
  uint64_t base;
  ino_t ino;
} seg_entry;

typedef struct seg_list {
  seg_entry *items;
  size_t count;
} seg_list;

typedef struct small_file {
  const char *name;
  bool required;
  char *data;
  size_t len;
  bool present;
} small_file;

#define NSMALL 3
typedef struct small_set {
  small_file f[NSMALL];
} small_set;

typedef struct create_ctx {
  const felix_rp_create_opts *o;
  uint64_t done, total;
} create_ctx;

static int cmp_seg(const void *a, const void *b) {
  const seg_entry *x = a, *y = b;
  return x->base < y->base ? -1 : x->base > y->base;
}

static felix_status list_segments(int dirfd, const char *path, seg_list *out, felix_err *err) {
  memset(out, 0, sizeof *out);
  int fd = dup(dirfd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return felix_fail_errno(err, FELIX_E_IO, errno, "list %s", path);
  }
  rewinddir(d); /* the dup shares the offset an earlier listing left at the end */
  struct dirent *de;
  size_t cap = 0;
  felix_status st = FELIX_OK;
  while (!st && (de = readdir(d)) != NULL) {
    uint64_t base;
    struct stat sb;
    if (!felix_seg_parse_name(de->d_name, ".log", &base) || fstatat(dirfd, de->d_name, &sb, 0) != 0) continue;
    if (out->count == cap) {
      cap = cap ? cap * 2 : 16;
      seg_entry *ni = realloc(out->items, cap * sizeof *ni);
      if (!ni) st = felix_fail(err, FELIX_E_IO, "out of memory");
      else out->items = ni;
    }
    if (!st) {
      seg_entry *e = &out->items[out->count++];
      snprintf(e->name, sizeof e->name, "%.31s", de->d_name);
      e->base = base, e->ino = sb.st_ino;
    }
  }
  closedir(d);
  if (out->count) qsort(out->items, out->count, sizeof *out->items, cmp_seg);
  return st;
}

/* Every segment listed before is still there as the same file. */
static bool segments_kept(const seg_list *before, const seg_list *after) {
  for (size_t i = 0; i < before->count; i++) {
    bool kept = false;
    for (size_t j = 0; j < after->count && !kept; j++)
      kept = !strcmp(before->items[i].name, after->items[j].name) && before->items[i].ino == after->items[j].ino;
    if (!kept) return false;
  }
  return true;
}

static void small_init(small_set *s) {
  memset(s, 0, sizeof *s);
  s->f[0] = (small_file){.name = "ballot", .required = true};
  s->f[1] = (small_file){.name = "generations"};
  s->f[2] = (small_file){.name = "stream"};
}

static void small_free(small_set *s) {
  for (int i = 0; i < NSMALL; i++) free(s->f[i].data);
}

static felix_status small_read(int dirfd, const char *path, small_set *s, felix_err *err) {
  small_init(s);
  for (int i = 0; i < NSMALL; i++) {
    char what[4400];
    snprintf(what, sizeof what, "%.4300s/%s", path, s->f[i].name);
    felix_status st = felix_rp_read_small(dirfd, s->f[i].name, what, 1u << 20, &s->f[i].data, &s->f[i].len, err);
    if (st == FELIX_E_NOTFOUND && !s->f[i].required) continue;
    if (st == FELIX_E_NOTFOUND) return felix_fail(err, FELIX_E_CORRUPT, "%s: missing: every shard copy has one", what);
    if (st) return st;
    s->f[i].present = true;
  }
  return FELIX_OK;
}

static bool small_equal(const small_set *a, const small_set *b) {
  for (int i = 0; i < NSMALL; i++) {
    if (a->f[i].present != b->f[i].present || a->f[i].len != b->f[i].len) return false;
    if (a->f[i].present && memcmp(a->f[i].data, b->f[i].data, a->f[i].len)) return false;
  }
  return true;
}

static felix_status add_file(felix_rp_shard *sh, const char *name, uint64_t size, uint32_t crc, bool linked,
                             felix_err *err) {
  felix_rp_file *nf = realloc(sh->files, (sh->nfiles + 1) * sizeof *nf);
  if (!nf) return felix_fail(err, FELIX_E_IO, "out of memory");
  sh->files = nf;
  felix_rp_file *f = &sh->files[sh->nfiles++];
  memset(f, 0, sizeof *f);
  snprintf(f->name, sizeof f->name, "%s", name);
  f->size = size, f->crc32 = crc, f->linked = linked;
  return FELIX_OK;
}

/* Scans the copied segment; cuts a torn tail of the newest; errors name the source. */
static felix_status check_segment(int dst_dirfd, const char *src_path, const seg_entry *e, bool newest,
                                  uint64_t expect_base, uint64_t *next_offset, uint64_t *size, uint32_t *crc,
                                  felix_err *err) {
  char what[4400];
  snprintf(what, sizeof what, "%.4300s/%s", src_path, e->name);
  int fd = openat(dst_dirfd, e->name, newest ? O_RDWR | O_CLOEXEC : O_RDONLY | O_CLOEXEC);
  if (fd < 0) return felix_fail_errno(err, FELIX_E_IO, errno, "open the copy of %s", what);
  felix_scan_opts so = {.start_position = FELIX_SEG_HEADER_LEN, .start_offset = e->base, .index_spacing = FELIX_DEFAULT_INDEX_SPACING,
                        .is_newest = newest, .check_base = true, .expect_base = e->base};
  felix_seg_scan sc;
  felix_status st = felix_seg_scan_fd(fd, what, &so, &sc, err);
  bool scanned = st == FELIX_OK;
  if (!st && e->base != expect_base)
    st = felix_fail(err, FELIX_E_CORRUPT, "%s: byte 8: offset_gap: starts at offset %" PRIu64 " but the previous segment ends at %" PRIu64,
                    what, e->base, expect_base);
  if (!st && sc.has_problem && !sc.problem.repairable)
    st = felix_fail(err, FELIX_E_CORRUPT, "%s: byte %" PRIu64 ": %s: %s", what, sc.problem.position, sc.problem.kind,
                    sc.problem.detail);
  if (!st && sc.has_problem) { /* the record being appended while we read */
    if (ftruncate(fd, (off_t)sc.valid_end) != 0 || fsync(fd) != 0)
      st = felix_fail_errno(err, FELIX_E_IO, errno, "cut the copy of %s at byte %" PRIu64, what, sc.valid_end);
    if (!st) st = felix_rp_file_crc(dst_dirfd, e->name, what, UINT64_MAX, crc, size, NULL, NULL, NULL, 0, err);
  }
  *next_offset = scanned ? sc.next_offset : 0;
  if (scanned) felix_seg_scan_free(&sc);
  close(fd);
  return st;
}

static felix_status copy_segments(create_ctx *c, int src, const char *src_path, int dst, const char *dst_path,
                                  const seg_list *segs, felix_rp_shard *sh, felix_err *err) {
  uint64_t expect = segs->count ? segs->items[0].base : 0;
  felix_status st = FELIX_OK;
  sh->start_offset = sh->end_offset = expect;
  for (size_t i = 0; i < segs->count && !st; i++) {
    const seg_entry *e = &segs->items[i];
    bool newest = i + 1 == segs->count, linked;
    uint32_t crc;
    uint64_t size, next = expect;
    char what[4400], dst_what[4400];
    snprintf(what, sizeof what, "%.4300s/%s", src_path, e->name);
    snprintf(dst_what, sizeof dst_what, "%.4300s/%s", dst_path, e->name);
    st = felix_rp_copy_file(src, dst, e->name, UINT64_MAX, !newest, what, dst_what, &crc, &size, &linked, c->o->progress,
                            c->o->progress_ctx, &c->done, c->total, err);
    struct stat sb;
    if (!st && linked && (fstatat(dst, e->name, &sb, 0) != 0 || sb.st_ino != e->ino))
      st = felix_fail(err, FELIX_E_NOTFOUND, "%s was replaced while it was linked", what); /* a new file, maybe active */
    if (!st) st = check_segment(dst, src_path, e, newest, expect, &next, &size, &crc, err);
    if (!st) st = add_file(sh, e->name, size, crc, linked, err);
    expect = sh->end_offset = next;
  }
  return st;
}

static felix_status write_small(int dst, const char *to_path, const small_set *s, felix_rp_shard *sh,
                                felix_err *err) {
  felix_status st = FELIX_OK;
  for (int i = 0; i < NSMALL && !st; i++) {
    if (!s->f[i].present) continue;
    char what[4400];
    snprintf(what, sizeof what, "%.4300s/%s", to_path, s->f[i].name);
    st = felix_write_file_atomic(dst, s->f[i].name, s->f[i].data, s->f[i].len, what, err);
    if (!st) st = add_file(sh, s->f[i].name, s->f[i].len, (uint32_t)crc32(0L, (const Bytef *)s->f[i].data, (uInt)s->f[i].len), false, err);
  }
  return st;
}

/* The shard's identity from its small files (as they were read). */
static felix_status describe_shard(const small_set *s, const char *src_path, felix_rp_shard *sh, felix_err *err) {
  char what[4400];
  felix_ballot b;
  snprintf(what, sizeof what, "%.4300s/ballot", src_path);
  felix_status st = felix_ballot_parse(s->f[0].data, s->f[0].len, what, &b, err);
  if (st) return st;
  snprintf(sh->stream_uuid, sizeof sh->stream_uuid, "%s", b.stream_uuid);
  sh->ballot_generation = b.generation;
  if (!s->f[1].present) return FELIX_OK;
  snprintf(what, sizeof what, "%.4300s/generations", src_path);
  st = felix_generations_parse(s->f[1].data, s->f[1].len, what, &sh->gens, err);
  if (!st) felix_generations_trim_to(&sh->gens, sh->end_offset);
  return st;
}

static void shard_reset(felix_rp_shard *sh) {
  felix_generations_free(&sh->gens);
  free(sh->files);
  sh->files = NULL;
  sh->nfiles = 0;
}

/* Reads the small files and the segment list again: *changed when either
 * differs from what the attempt started from. */
static felix_status read_again(int src, const char *src_path, const small_set *before, const seg_list *l1,
                               small_set *after, seg_list *l2, bool *changed, felix_err *err) {
  felix_status st = small_read(src, src_path, after, err);
  if (!st) st = list_segments(src, src_path, l2, err);
  if (!st) *changed = !small_equal(before, after) || !segments_kept(l1, l2);
  return st;
}

/* One attempt; *changed when the copy moved under us (the attempt is void). */
static felix_status snapshot_once(create_ctx *c, int src, const char *src_path, int dst, const char *dst_path,
                                  felix_rp_shard *sh, bool *changed, felix_err *err) {
  small_set before, after;
  seg_list l1 = {0}, l2 = {0};
  small_init(&before);
  small_init(&after);
  felix_status st = small_read(src, src_path, &before, err);
  if (!st) st = list_segments(src, src_path, &l1, err);
  if (!st && l1.count == 0) st = felix_fail(err, FELIX_E_CORRUPT, "%s: holds no segment: its records are gone", src_path);
  if (!st) st = copy_segments(c, src, src_path, dst, dst_path, &l1, sh, err);
  if (st == FELIX_E_NOTFOUND || st == FELIX_E_CORRUPT) { /* moved under us (truncated, recreated), or damaged */
    felix_err again;
    bool moved = true; /* a shard that cannot even be read again has moved too */
    if (st == FELIX_E_CORRUPT) (void)read_again(src, src_path, &before, &l1, &after, &l2, &moved, &again);
    *changed = moved;
    if (moved) st = FELIX_OK;
  }
  if (!st && !*changed) st = write_small(dst, dst_path, &before, sh, err);
  if (!st && !*changed) st = read_again(src, src_path, &before, &l1, &after, &l2, changed, err);
  if (!st && !*changed) st = describe_shard(&before, src_path, sh, err);
  if (!st && !*changed && fsync(dst) != 0) st = felix_fail_errno(err, FELIX_E_SYNC, errno, "fsync %s", dst_path);
  small_free(&before);
  small_free(&after);
  free(l1.items);
  free(l2.items);
  return st;
}

static felix_status snapshot_shard(create_ctx *c, int src_shards, const char *data_dir, int dst_shards,
                                   const char *to, const char *name, felix_rp_shard *sh, felix_err *err) {
  char src_path[4400], dst_path[4400];
  snprintf(src_path, sizeof src_path, "%s/shards/%s", data_dir, name);
  snprintf(dst_path, sizeof dst_path, "%s/shards/%s", to, name);
  snprintf(sh->dir, sizeof sh->dir, "%s", name);
  char uuid16[17];
  felix_shard_dir_parse(name, sh->stream, sizeof sh->stream, &sh->shard, uuid16);
  felix_status st = FELIX_OK;
  for (int attempt = 0; attempt < RP_ATTEMPTS; attempt++) {
    int src = -1, dst = -1;
    bool changed = false;
    shard_reset(sh);
    st = felix_rp_remove_tree(dst_path, err);
    if (!st && mkdirat(dst_shards, name, 0755) != 0) st = felix_fail_errno(err, FELIX_E_IO, errno, "create %s", dst_path);
    if (!st) st = felix_open_dir(dst_shards, name, &dst, err);
    if (st) return st;
    st = felix_rp_open_subdir(src_shards, name, src_path, &src, err);
    if (!st) st = snapshot_once(c, src, src_path, dst, dst_path, sh, &changed, err);
    if (src >= 0) close(src);
    close(dst);
    if (st || !changed) return st;
  }
  return felix_fail(err, FELIX_E_UNAVAILABLE, "%s changed under every one of %d attempts (truncations or new generations); run create again",
                    src_path, RP_ATTEMPTS);
}

/* --- the target directory ------------------------------------------------ */

/* What a directory holds: a complete point, only what a create writes (its
 * marker first), or nothing at all. */
static felix_status target_state(const char *to, bool *empty, bool *ours, bool *complete, felix_err *err) {
  DIR *d = opendir(to);
  bool marker = false, foreign = false;
  *complete = false;
  if (!d) return felix_fail_errno(err, errno == ENOENT ? FELIX_E_NOTFOUND : FELIX_E_IO, errno, "open --to %s", to);
  struct dirent *de;
  *empty = true;
  while ((de = readdir(d)) != NULL) {
    const char *n = de->d_name;
    if (!strcmp(n, ".") || !strcmp(n, "..")) continue;
    *empty = false;
    if (!strcmp(n, FELIX_RP_MANIFEST)) *complete = true;
    else if (!strcmp(n, FELIX_RP_MARKER)) marker = true;
    else if (strcmp(n, "shards") && strcmp(n, "." FELIX_RP_MANIFEST ".tmp")) foreign = true;
  }
  closedir(d);
  *ours = marker && !foreign;
  return FELIX_OK;
}

static felix_status prepare_target(const char *to, int *out, bool *created, felix_err *err) {
  *created = mkdir(to, 0755) == 0;
  if (!*created && errno != EEXIST)
    return felix_fail_errno(err, errno == ENOENT ? FELIX_E_NOTFOUND : FELIX_E_IO, errno, "--to %s: create the directory (its parent must exist)", to);
  bool empty = false, ours = false, complete = false;
  felix_status st = target_state(to, &empty, &ours, &complete, err);
  if (st) return st;
  if (complete)
    return felix_fail(err, FELIX_E_REFUSED, "--to %s already holds a complete restore point; choose a new path or remove it", to);
  if (!empty && !ours)
    return felix_fail(err, FELIX_E_REFUSED, "--to %s is not empty and is not an interrupted restore point; choose an empty or new path", to);
  st = felix_open_dir(AT_FDCWD, to, out, err);
  char what[4200];
  snprintf(what, sizeof what, "%.4100s/%s", to, FELIX_RP_MARKER);
  if (!st && empty) st = felix_write_file_atomic(*out, FELIX_RP_MARKER, "", 0, what, err);
  char p[4200];
  snprintf(p, sizeof p, "%.4100s/shards", to); /* an interrupted create: start over */
  if (!st) st = felix_rp_remove_tree(p, err);
  if (!st && mkdir(p, 0755) != 0) st = felix_fail_errno(err, FELIX_E_IO, errno, "create %s", p);
  return st;
}

/* A create that failed (a full disk, damage) takes back what it wrote; a
 * crash leaves it for the next create to start over. */
static void discard_target(const char *to, bool created) {
  char p[4200];
  felix_err ignored;
  snprintf(p, sizeof p, "%.4100s/shards", to);
  felix_rp_remove_tree(p, &ignored);
  if (!created) return;
  snprintf(p, sizeof p, "%.4100s/%s", to, FELIX_RP_MARKER);
  unlink(p);
  rmdir(to);
}

/* The absolute form of a path whose last component may not exist yet. */
static bool resolve(const char *path, char out[PATH_MAX]) {
  if (realpath(path, out)) return true;
  char parent[PATH_MAX];
  const char *slash = strrchr(path, '/');
  snprintf(parent, sizeof parent, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
  if (slash == path) snprintf(parent, sizeof parent, "/");
  char rp[PATH_MAX];
  if (!realpath(parent, rp)) return false;
  snprintf(out, PATH_MAX, "%.2000s/%.2000s", rp, slash ? slash + 1 : path);
  return true;
}

static bool inside(const char *a, const char *b) { /* a is b or below it */
  size_t n = strlen(b);
  return !strncmp(a, b, n) && (a[n] == '/' || a[n] == '\0' || (n == 1 && b[0] == '/'));
}

/* Neither may hold the other: the broker would meet the restore point, or
 * the create would clear the data directory as an interrupted point. */
static felix_status check_apart(const char *data_dir, const char *to, felix_err *err) {
  char d[PATH_MAX], t[PATH_MAX];
  if (!realpath(data_dir, d)) return felix_fail_errno(err, errno == ENOENT ? FELIX_E_NOTFOUND : FELIX_E_IO, errno, "--data-dir %s", data_dir);
  if (!resolve(to, t)) return felix_fail_errno(err, FELIX_E_NOTFOUND, errno, "--to %s: create the directory (its parent must exist)", to);
  if (inside(t, d))
    return felix_fail(err, FELIX_E_INVAL, "--to %s lies inside --data-dir %s; put restore points elsewhere", to, data_dir);
  if (inside(d, t))
    return felix_fail(err, FELIX_E_INVAL, "--data-dir %s lies inside --to %s; put restore points elsewhere", data_dir, to);
  return FELIX_OK;
}

/* --- shards to copy ------------------------------------------------------ */

/* A restore that stopped midway hides copies under shards/.replaced-: a
 * point made now would silently lack them. */
static felix_status check_no_interrupted_restore(const char *data_dir, felix_err *err) {
  char p[4200];
  snprintf(p, sizeof p, "%.4100s/shards", data_dir);
  DIR *d = opendir(p);
  struct dirent *de;
  felix_status st = FELIX_OK;
  while (d && !st && (de = readdir(d)) != NULL)
    if (!strncmp(de->d_name, FELIX_RP_REPLACED, strlen(FELIX_RP_REPLACED)) || !strcmp(de->d_name, FELIX_RP_JOURNAL))
      st = felix_fail(err, FELIX_E_REFUSED, "%s/%s: a restore stopped midway here; start the broker (it settles it) or run the restore again first",
                      p, de->d_name);
  if (d) closedir(d);
  return st;
}

static felix_status pick_shards(const felix_rp_create_opts *o, char ***names, size_t *n, felix_err *err) {
  felix_status st = check_no_interrupted_restore(o->data_dir, err);
  if (!st) st = felix_list_shard_dirs(o->data_dir, names, n, err);
  size_t kept = 0;
  for (size_t i = 0; !st && i < *n; i++) {
    char stream[128], uuid16[17];
    uint32_t shard;
    bool keep = felix_shard_dir_parse((*names)[i], stream, sizeof stream, &shard, uuid16) &&
                felix_rp_selected(&o->select, stream, shard);
    if (keep) (*names)[kept++] = (*names)[i];
    else free((*names)[i]);
  }
  if (!st) *n = kept;
  for (size_t s = 0; !st && s < o->select.count; s++) {
    bool found = false;
    for (size_t i = 0; i < *n && !found; i++) {
      char stream[128], uuid16[17];
      uint32_t shard;
      felix_rp_select one = {&o->select.items[s], 1};
      found = felix_shard_dir_parse((*names)[i], stream, sizeof stream, &shard, uuid16) &&
              felix_rp_selected(&one, stream, shard);
    }
    if (!found) st = felix_fail(err, FELIX_E_NOTFOUND, "--shard %s: %s/shards holds no copy of it", o->select.items[s], o->data_dir);
  }
  return st;
}

static uint64_t tree_bytes(const char *data_dir, char **names, size_t n) {
  uint64_t total = 0;
  for (size_t i = 0; i < n; i++) {
    char p[4400];
    snprintf(p, sizeof p, "%s/shards/%s", data_dir, names[i]);
    DIR *d = opendir(p);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
      struct stat sb;
      uint64_t base;
      if (felix_seg_parse_name(de->d_name, ".log", &base) && fstatat(dirfd(d), de->d_name, &sb, 0) == 0)
        total += (uint64_t)sb.st_size;
    }
    if (d) closedir(d);
  }
  return total;
}

static felix_status describe_source(const char *data_dir, felix_rp_manifest *m, felix_err *err) {
  int dirfd;
  felix_storage_id sid;
  felix_run_state rs;
  bool present = false;
  felix_status st = felix_open_dir(AT_FDCWD, data_dir, &dirfd, err);
  if (st == FELIX_E_NOTFOUND) return felix_fail(err, st, "--data-dir %s does not exist", data_dir);
  if (st) return st;
  st = felix_storage_id_load(dirfd, data_dir, &sid, err);
  if (st == FELIX_E_NOTFOUND) st = felix_fail(err, FELIX_E_NOTFOUND, "--data-dir %s is not a data directory (it has no storage-id)", data_dir);
  if (!st && felix_run_state_read(dirfd, data_dir, &rs, &present, err) == FELIX_OK && present)
    snprintf(m->broker_id, sizeof m->broker_id, "%s", rs.broker_id);
  if (!st) {
    snprintf(m->storage_id, sizeof m->storage_id, "%s", sid.hex);
    m->broker_was_running = felix_dir_lock_holder(dirfd) > 0;
    if (!realpath(data_dir, m->source_data_dir)) snprintf(m->source_data_dir, sizeof m->source_data_dir, "%s", data_dir);
  }
  close(dirfd);
  return st;
}

static felix_status snapshot_all(create_ctx *c, int to_fd, char **names, size_t n, felix_rp_manifest *m,
                                 felix_err *err) {
  int src_shards = -1, dst_shards = -1;
  char p[4200];
  snprintf(p, sizeof p, "%s/shards", c->o->data_dir);
  felix_status st = n ? felix_open_dir(AT_FDCWD, p, &src_shards, err) : FELIX_OK;
  if (!st) st = felix_open_dir(to_fd, "shards", &dst_shards, err);
  m->shards = calloc(n + 1, sizeof *m->shards);
  if (!st && !m->shards) st = felix_fail(err, FELIX_E_IO, "out of memory");
  for (size_t i = 0; i < n && !st; i++) {
    felix_rp_shard *sh = &m->shards[m->nshards++];
    st = snapshot_shard(c, src_shards, c->o->data_dir, dst_shards, c->o->to, names[i], sh, err);
    if (st == FELIX_E_NOTFOUND && faccessat(src_shards, names[i], F_OK, AT_SYMLINK_NOFOLLOW) != 0) {
      /* its stream was deleted meanwhile: the point holds the others */
      char gone[4400];
      felix_err ignored;
      snprintf(gone, sizeof gone, "%.4000s/shards/%s", c->o->to, names[i]);
      felix_rp_remove_tree(gone, &ignored);
      if (c->o->warn) c->o->warn(c->o->progress_ctx, names[i], "its directory went away during the create (stream deleted?); left out");
      shard_reset(sh);
      memset(sh, 0, sizeof *sh);
      m->nshards--;
      st = FELIX_OK;
    }
  }
  if (!st && fsync(dst_shards) != 0) st = felix_fail_errno(err, FELIX_E_SYNC, errno, "fsync %s/shards", c->o->to);
  if (src_shards >= 0) close(src_shards);
  if (dst_shards >= 0) close(dst_shards);
  return st;
}

static felix_status write_manifest(int to_fd, const char *to, const felix_rp_manifest *m, felix_err *err) {
  char *text = felix_rp_manifest_encode(m), what[4400];
  if (!text) return felix_fail(err, FELIX_E_IO, "out of memory");
  snprintf(what, sizeof what, "%.4300s/%s", to, FELIX_RP_MANIFEST);
  felix_status st = felix_write_file_atomic(to_fd, FELIX_RP_MANIFEST, text, strlen(text), what, err);
  free(text);
  return st;
}

felix_status felix_rp_create(const felix_rp_create_opts *o, felix_rp_manifest *m, felix_err *err) {
  memset(m, 0, sizeof *m);
  m->version = FELIX_RP_VERSION;
  m->created_at_micros = felix_now_micros();
  felix_format_rfc3339(m->created_at, (int64_t)(m->created_at_micros / 1000000u));
  char **names = NULL;
  size_t n = 0;
  int to_fd = -1;
  create_ctx c = {.o = o};
  felix_status st = describe_source(o->data_dir, m, err);
  if (!st) st = pick_shards(o, &names, &n, err);
  bool created = false;
  if (!st) st = check_apart(o->data_dir, o->to, err);
  if (!st) st = prepare_target(o->to, &to_fd, &created, err);
  if (!st) c.total = tree_bytes(o->data_dir, names, n);
  if (!st) st = snapshot_all(&c, to_fd, names, n, m, err);
  if (!st) st = write_manifest(to_fd, o->to, m, err);
  if (to_fd >= 0) close(to_fd);
  if (st && to_fd >= 0) discard_target(o->to, created);
  felix_free_names(names, n);
  if (st) felix_rp_manifest_free(m);
  return st;
}
