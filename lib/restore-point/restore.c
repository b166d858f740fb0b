/* restore-point/restore.c — verifying a restore point and writing it into a data
 * directory.
 *
 * Restore changes nothing until the point has been verified, the
 * directory's lock is held and the disk has room. Then, in this order:
 *   1. run-state is removed: from here on, a start of this directory that
 *      finds the restore unfinished rotates its storage id (no run-state);
 *   2. every shard is built in shards/.new-<dir> (copied, checked against
 *      the manifest again, index rebuilt, ballot rewritten: new copy id, the
 *      new storage id, leader=none); a failure removes them all and leaves
 *      the old copies as they were;
 *   3. the journal (restore-point/journal.c) is written, then each copy swapped in:
 *      shards/<dir> -> shards/.replaced-<dir>, then shards/.new-<dir> ->
 *      shards/<dir>;
 *   4. the new storage-id is written (the restore is now finished), then
 *      run-state: restored, restored_from=<point>; then the .replaced- copies
 *      are removed and the journal last.
 * A crash leaves .new- (the broker removes it), .replaced- directories and
 * the journal: settling (the broker at start, which refuses to start if it
 * fails, and the next restore) finishes a finished restore and undoes any
 * other. A restore is all or nothing; after an undone one run-state is gone,
 * so the storage id rotates at the next start.
 * A copy restored this way is a stranger to the control plane (a storage id
 * it never registered, copy ids it never saw): it is measured before it is
 * trusted, and `placement abandon` can pick it (DESIGN.md §4.4, §4.9).
 * Copies in the directory that were not restored keep their files but their
 * ballots name the old storage id, so they get new copy ids at the next start
 * (§3.4) and are strangers too. */
#include "felix/restorepoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "felix/datadir.h"
#include "felix/fileutil.h"
#include "felix/log.h"
#include "felix/segment.h"

void felix_rp_mismatches_free(felix_rp_mismatches *p) {
  free(p->items);
  memset(p, 0, sizeof *p);
}

static void mismatch(felix_rp_mismatches *p, const char *file, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void mismatch(felix_rp_mismatches *p, const char *file, const char *kind, const char *fmt, ...) {
  felix_rp_mismatch *n = realloc(p->items, (p->count + 1) * sizeof *n);
  if (!n) return;
  p->items = n;
  felix_rp_mismatch *m = &p->items[p->count++];
  snprintf(m->file, sizeof m->file, "%s", file);
  snprintf(m->kind, sizeof m->kind, "%s", kind);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->detail, sizeof m->detail, fmt, ap);
  va_end(ap);
}

static bool listed(const felix_rp_shard *s, const char *name) {
  for (size_t i = 0; i < s->nfiles; i++)
    if (!strcmp(s->files[i].name, name)) return true;
  return false;
}

static void verify_file(int dirfd, const char *dir_path, const felix_rp_file *f, felix_rp_mismatches *p,
                        felix_rp_progress_fn progress, void *ctx, uint64_t *done, uint64_t total) {
  char what[4400];
  felix_err e;
  uint32_t crc;
  uint64_t size;
  snprintf(what, sizeof what, "%.4300s/%s", dir_path, f->name);
  /* one byte past the manifest's size is enough to see that it is longer */
  felix_status st = felix_rp_file_crc(dirfd, f->name, what, f->size + 1, &crc, &size, progress, ctx, done, total, &e);
  if (st == FELIX_E_NOTFOUND) mismatch(p, what, "missing", "the manifest lists it (%" PRIu64 " bytes)", f->size);
  else if (st) mismatch(p, what, "unreadable", "%s", e.msg);
  else if (size != f->size) mismatch(p, what, "size", "%s%" PRIu64 " bytes, the manifest says %" PRIu64, size > f->size ? "more than " : "", size > f->size ? f->size : size, f->size);
  else if (crc != f->crc32) mismatch(p, what, "crc32", "CRC-32 %08x, the manifest says %08x", crc, f->crc32);
}

/* <point>/shards/<dir>, where neither shards nor <dir> may be a link. */
static felix_status open_point_shard(const char *point, const char *dir, int *out, felix_err *err) {
  char what[4400];
  int pfd, sfd;
  felix_status st = felix_open_dir(AT_FDCWD, point, &pfd, err);
  if (st) return st;
  snprintf(what, sizeof what, "%.4000s/shards", point);
  st = felix_rp_open_subdir(pfd, "shards", what, &sfd, err);
  close(pfd);
  if (st) return st;
  snprintf(what, sizeof what, "%.4000s/shards/%s", point, dir);
  st = felix_rp_open_subdir(sfd, dir, what, out, err);
  close(sfd);
  return st;
}

static int cmp_files_by_base(const void *a, const void *b) {
  uint64_t x = 0, y = 0;
  felix_seg_parse_name(((const felix_rp_file *const *)a)[0]->name, ".log", &x);
  felix_seg_parse_name(((const felix_rp_file *const *)b)[0]->name, ".log", &y);
  return x < y ? -1 : x > y;
}

/* Scans one segment of the point: intact records from `expect` on. */
static bool segment_ok(int fd, const char *dir_path, const felix_rp_file *f, uint64_t *expect, felix_rp_mismatches *p) {
  char what[4400];
  uint64_t base = 0;
  felix_seg_parse_name(f->name, ".log", &base);
  snprintf(what, sizeof what, "%.4300s/%s", dir_path, f->name);
  if (base != *expect) {
    mismatch(p, what, "structure", "starts at offset %" PRIu64 ", the shard's records so far end at %" PRIu64, base, *expect);
    return false;
  }
  int sfd = -1;
  felix_err oe;
  if (felix_rp_open_regular(fd, f->name, what, &sfd, &oe)) sfd = -1;
  felix_scan_opts so = {.start_position = FELIX_SEG_HEADER_LEN, .start_offset = base, .index_spacing = FELIX_DEFAULT_INDEX_SPACING,
                        .check_base = true, .expect_base = base};
  felix_seg_scan sc;
  felix_err e;
  bool ok = sfd >= 0 && felix_seg_scan_fd(sfd, what, &so, &sc, &e) == FELIX_OK;
  if (sfd >= 0) close(sfd);
  if (!ok) return mismatch(p, what, "unreadable", "cannot scan it"), false;
  if (sc.has_problem) mismatch(p, what, "structure", "byte %" PRIu64 ": %s", sc.problem.position, sc.problem.kind);
  *expect = sc.next_offset;
  ok = !sc.has_problem;
  felix_seg_scan_free(&sc);
  return ok;
}

/* The manifest's shape holds: a ballot, contiguous intact segments from
 * start_offset to end_offset. (Sizes and CRCs matched already.) */
static void verify_structure(int fd, const char *dir_path, const felix_rp_shard *s, felix_rp_mismatches *p) {
  const felix_rp_file **segs = calloc(s->nfiles + 1, sizeof *segs);
  size_t n = 0;
  bool ballot = false;
  if (!segs) return mismatch(p, dir_path, "unreadable", "out of memory");
  for (size_t i = 0; i < s->nfiles; i++) {
    uint64_t b;
    if (!strcmp(s->files[i].name, "ballot")) ballot = true;
    else if (felix_seg_parse_name(s->files[i].name, ".log", &b)) segs[n++] = &s->files[i];
  }
  if (!ballot) mismatch(p, dir_path, "structure", "the manifest lists no ballot for this shard");
  if (n == 0) mismatch(p, dir_path, "structure", "the manifest lists no segment for this shard");
  qsort(segs, n, sizeof *segs, cmp_files_by_base);
  uint64_t expect = s->start_offset;
  bool ok = true;
  for (size_t i = 0; i < n && ok; i++) ok = segment_ok(fd, dir_path, segs[i], &expect, p);
  if (ok && n && expect != s->end_offset)
    mismatch(p, dir_path, "structure", "its records end at offset %" PRIu64 ", the manifest says %" PRIu64, expect, s->end_offset);
  free(segs);
}

static void verify_shard(const char *path, const felix_rp_shard *s, felix_rp_mismatches *p,
                         felix_rp_progress_fn progress, void *ctx, uint64_t *done, uint64_t total) {
  char dir_path[4400];
  snprintf(dir_path, sizeof dir_path, "%.4000s/shards/%s", path, s->dir);
  int fd;
  felix_err e;
  felix_status st = open_point_shard(path, s->dir, &fd, &e);
  if (st) {
    mismatch(p, dir_path, st == FELIX_E_NOTFOUND ? "missing" : "unreadable", "%s", st == FELIX_E_NOTFOUND ? "the manifest lists this shard directory" : e.msg);
    return;
  }
  size_t before = p->count;
  for (size_t i = 0; i < s->nfiles; i++) verify_file(fd, dir_path, &s->files[i], p, progress, ctx, done, total);
  if (p->count == before) verify_structure(fd, dir_path, s, p);
  DIR *d = fdopendir(fd);
  struct dirent *de;
  while (d && (de = readdir(d)) != NULL) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || listed(s, de->d_name)) continue;
    char what[4400];
    snprintf(what, sizeof what, "%.4100s/%.255s", dir_path, de->d_name);
    mismatch(p, what, "unexpected", "the manifest does not list it");
  }
  if (d) closedir(d);
  else close(fd);
}

static uint64_t selected_bytes(const felix_rp_manifest *m, const felix_rp_select *sel) {
  uint64_t n = 0;
  for (size_t i = 0; i < m->nshards; i++)
    if (felix_rp_selected(sel, m->shards[i].stream, m->shards[i].shard))
      for (size_t j = 0; j < m->shards[i].nfiles; j++) n += m->shards[i].files[j].size;
  return n;
}

felix_status felix_rp_verify(const char *path, const felix_rp_manifest *m, const felix_rp_select *sel,
                             felix_rp_mismatches *p, felix_rp_progress_fn progress, void *ctx, felix_err *err) {
  memset(p, 0, sizeof *p);
  felix_status st = felix_rp_select_check(sel, m, path, err);
  if (st) return st;
  uint64_t done = 0, total = selected_bytes(m, sel);
  for (size_t i = 0; i < m->nshards; i++)
    if (felix_rp_selected(sel, m->shards[i].stream, m->shards[i].shard))
      verify_shard(path, &m->shards[i], p, progress, ctx, &done, total);
  return FELIX_OK;
}

/* --- restore ------------------------------------------------------------- */

typedef struct restore_ctx {
  const felix_rp_restore_opts *o;
  int dirfd, shards_fd;
  char new_sid[33];
  uint64_t done, total;
  uint32_t index_spacing;
  char from_abs[1024]; /* what run-state's restored_from records */
} restore_ctx;

static felix_status random_hex(char out[33], felix_err *err) {
  uint8_t raw[16];
  felix_status st = felix_random_bytes(raw, sizeof raw, err);
  if (!st) felix_hex_encode(raw, sizeof raw, out);
  return st;
}

/* The restored ballot: the promise's generation stays (a stale leader is
 * still refused), everything that named a copy or a leader is new or none. */
static felix_status write_ballot(restore_ctx *c, int src, int dst, const char *src_path, const char *dst_path,
                                 const felix_rp_file *f, felix_err *err) {
  char what[4400], *buf;
  size_t len;
  felix_ballot b;
  snprintf(what, sizeof what, "%.4300s/ballot", src_path);
  int bfd;
  felix_status st = felix_rp_open_regular(src, "ballot", what, &bfd, err);
  if (st) return st;
  buf = malloc(f->size + 2);
  ssize_t got = buf ? pread(bfd, buf, f->size + 1, 0) : -1; /* one byte more shows a longer file */
  close(bfd);
  if (got < 0) {
    free(buf);
    return felix_fail_errno(err, FELIX_E_IO, errno, "read %s", what);
  }
  len = (size_t)got;
  if (len != f->size || (uint32_t)crc32(0L, (const Bytef *)buf, (uInt)len) != f->crc32)
    st = felix_fail(err, FELIX_E_CORRUPT, "%s changed since it was verified (size or CRC-32 differs from the manifest)", what);
  if (!st) st = felix_ballot_parse(buf, len, what, &b, err);
  free(buf);
  if (!st) st = random_hex(b.copy_id, err);
  if (st) return st;
  snprintf(b.storage_id, sizeof b.storage_id, "%s", c->new_sid);
  b.has_leader = false;
  b.leader[0] = b.leader_copy_id[0] = b.leader_incarnation[0] = '\0';
  snprintf(what, sizeof what, "%.4300s/ballot", dst_path);
  return felix_ballot_write(dst, what, &b, err);
}

static felix_status copy_checked(restore_ctx *c, int src, int dst, const char *src_path, const char *dst_path,
                                 const felix_rp_file *f, felix_err *err) {
  char what[4400], dst_what[4400];
  uint32_t crc;
  uint64_t size;
  bool linked;
  snprintf(what, sizeof what, "%.4300s/%s", src_path, f->name);
  snprintf(dst_what, sizeof dst_what, "%.4300s/%s", dst_path, f->name);
  felix_status st = felix_rp_copy_file(src, dst, f->name, f->size + 1, false, what, dst_what, &crc, &size, &linked,
                                       c->o->progress, c->o->progress_ctx, &c->done, c->total, err);
  if (!st && (size != f->size || crc != f->crc32))
    st = felix_fail(err, FELIX_E_CORRUPT, "%s changed since it was verified (size or CRC-32 differs from the manifest)", what);
  return st;
}

/* The sparse index of a restored segment, as recovery would build it, so the
 * restored directory is complete (felix-inspect verify finds nothing). */
static felix_status write_index(int dst, const char *dst_path, const felix_rp_file *f, uint32_t spacing,
                                felix_err *err) {
  uint64_t base;
  if (!felix_seg_parse_name(f->name, ".log", &base)) return FELIX_OK;
  char what[4400], iname[32];
  snprintf(what, sizeof what, "%.4300s/%s", dst_path, f->name);
  int fd = openat(dst, f->name, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return felix_fail_errno(err, FELIX_E_IO, errno, "open %s", what);
  felix_scan_opts so = {.start_position = FELIX_SEG_HEADER_LEN, .start_offset = base, .index_spacing = spacing,
                        .check_base = true, .expect_base = base, .is_newest = true};
  felix_seg_scan sc;
  felix_status st = felix_seg_scan_fd(fd, what, &so, &sc, err);
  close(fd);
  if (st) return st;
  if (sc.has_problem)
    st = felix_fail(err, FELIX_E_CORRUPT, "%s: byte %" PRIu64 ": %s: %s", what, sc.problem.position, sc.problem.kind,
                    sc.problem.detail);
  size_t len = 0;
  uint8_t *buf = st ? NULL : felix_idx_encode(base, sc.entries, sc.n_entries, &len);
  if (!st && !buf) st = felix_fail(err, FELIX_E_IO, "out of memory");
  felix_seg_format_name(iname, base, ".index");
  snprintf(what, sizeof what, "%.4300s/%s", dst_path, iname);
  if (!st) st = felix_write_file_atomic(dst, iname, buf, len, what, err);
  free(buf);
  felix_seg_scan_free(&sc);
  return st;
}

static felix_status build_shard(restore_ctx *c, const felix_rp_shard *s, const char *stage, felix_err *err) {
  char src_path[4400], dst_path[4400];
  snprintf(src_path, sizeof src_path, "%.4000s/shards/%s", c->o->from, s->dir);
  snprintf(dst_path, sizeof dst_path, "%.4000s/shards/%s", c->o->data_dir, stage);
  int src = -1, dst = -1;
  felix_status st = open_point_shard(c->o->from, s->dir, &src, err);
  if (!st && mkdirat(c->shards_fd, stage, 0755) != 0) st = felix_fail_errno(err, FELIX_E_IO, errno, "create %s", dst_path);
  if (!st) st = felix_open_dir(c->shards_fd, stage, &dst, err);
  for (size_t i = 0; i < s->nfiles && !st; i++) {
    st = !strcmp(s->files[i].name, "ballot") ? write_ballot(c, src, dst, src_path, dst_path, &s->files[i], err)
                                             : copy_checked(c, src, dst, src_path, dst_path, &s->files[i], err);
    if (!st) st = write_index(dst, dst_path, &s->files[i], c->index_spacing, err);
  }
  if (!st && fsync(dst) != 0) st = felix_fail_errno(err, FELIX_E_SYNC, errno, "fsync %s", dst_path);
  if (src >= 0) close(src);
  if (dst >= 0) close(dst);
  return st;
}

static void stage_name(char *out, size_t cap, const char *prefix, const felix_rp_shard *s) {
  snprintf(out, cap, "%s%s", prefix, s->dir);
}

/* The shards of m the restore writes, in manifest order (malloc'd). */
static const felix_rp_shard **pick(const restore_ctx *c, const felix_rp_manifest *m, size_t *n) {
  const felix_rp_shard **out = calloc(m->nshards + 1, sizeof *out);
  *n = 0;
  for (size_t i = 0; out && i < m->nshards; i++)
    if (felix_rp_selected(&c->o->select, m->shards[i].stream, m->shards[i].shard)) out[(*n)++] = &m->shards[i];
  return out;
}

/* Builds shards/.new-<dir>; on failure removes it. */
static felix_status stage_shard(restore_ctx *c, const felix_rp_shard *s, felix_err *err) {
  char stage[320], p[4400];
  stage_name(stage, sizeof stage, ".new-", s);
  snprintf(p, sizeof p, "%.4000s/shards/%s", c->o->data_dir, stage);
  felix_status st = felix_rp_remove_tree(p, err);
  if (!st) st = build_shard(c, s, stage, err);
  if (st) {
    felix_err ignored;
    felix_rp_remove_tree(p, &ignored);
  }
  return st;
}

/* shards/<dir> (if any) becomes shards/.replaced-<dir>, shards/.new-<dir>
 * becomes shards/<dir>. A crash between the two renames leaves .replaced-
 * without its copy: felix_rp_settle_leftovers puts it back. */
static felix_status swap_shard(restore_ctx *c, const felix_rp_shard *s, felix_err *err) {
  char stage[320], old[320];
  stage_name(stage, sizeof stage, ".new-", s);
  stage_name(old, sizeof old, FELIX_RP_REPLACED, s);
  if (renameat(c->shards_fd, s->dir, c->shards_fd, old) != 0 && errno != ENOENT)
    return felix_fail_errno(err, FELIX_E_IO, errno, "move the copy being replaced aside: %s/shards/%s", c->o->data_dir, s->dir);
  if (renameat(c->shards_fd, stage, c->shards_fd, s->dir) != 0)
    return felix_fail_errno(err, FELIX_E_IO, errno, "rename %s/shards/%s into place", c->o->data_dir, stage);
  return FELIX_OK;
}

static void remove_stages(restore_ctx *c, const felix_rp_shard *const *sel, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char name[320], p[4400];
    felix_err ignored;
    stage_name(name, sizeof name, ".new-", sel[i]);
    snprintf(p, sizeof p, "%.4000s/shards/%s", c->o->data_dir, name);
    felix_rp_remove_tree(p, &ignored);
  }
}

static felix_status check_room(const char *data_dir, uint64_t need, felix_err *err) {
  struct statvfs vs;
  if (statvfs(data_dir, &vs) != 0) return felix_fail_errno(err, FELIX_E_IO, errno, "statvfs %s", data_dir);
  uint64_t avail = (uint64_t)vs.f_bavail * (uint64_t)vs.f_frsize;
  if (avail < need + need / 100 + (1u << 20))
    return felix_fail_errno(err, FELIX_E_IO, ENOSPC, "--data-dir %s: the restore needs %" PRIu64 " bytes, %" PRIu64 " are free",
                            data_dir, need, avail);
  return FELIX_OK;
}

static felix_status open_data_dir(const char *data_dir, int *fd, felix_err *err) {
  if (mkdir(data_dir, 0755) != 0 && errno != EEXIST)
    return felix_fail_errno(err, errno == ENOENT ? FELIX_E_NOTFOUND : FELIX_E_IO, errno, "--data-dir %s: create", data_dir);
  return felix_open_dir(AT_FDCWD, data_dir, fd, err);
}

/* run-state is one key=value per line: a control character becomes '?', and
 * a command longer than the field ends in "..." (cut between UTF-8
 * characters, so the field stays valid UTF-8). */
static void record_command(char *out, size_t cap, const char *command) {
  size_t n = strlen(command), keep = n < cap ? n : cap - 4;
  while (keep < n && keep > 0 && ((unsigned char)command[keep] & 0xC0) == 0x80) keep--;
  for (size_t i = 0; i < keep; i++) out[i] = (unsigned char)command[i] < 0x20 || command[i] == 0x7f ? '?' : command[i];
  snprintf(out + keep, cap - keep, "%s", keep < n ? "..." : "");
}

static felix_status write_identity(restore_ctx *c, felix_rp_restore_result *res, felix_err *err) {
  char line[34], what[4400];
  snprintf(line, sizeof line, "%s\n", c->new_sid);
  snprintf(what, sizeof what, "%.4300s/storage-id", c->o->data_dir);
  felix_status st = felix_write_file_atomic(c->dirfd, "storage-id", line, strlen(line), what, err);
  if (st) return st;
  snprintf(res->storage_id, sizeof res->storage_id, "%s", c->new_sid);
  felix_run_state rs = {.state = FELIX_RUN_RESTORED};
  felix_format_rfc3339(rs.since, time(NULL));
  snprintf(rs.restored_from, sizeof rs.restored_from, "%s", c->from_abs);
  if (c->o->command) record_command(rs.restored_by, sizeof rs.restored_by, c->o->command);
  return felix_run_state_write(c->dirfd, c->o->data_dir, &rs, err);
}

static felix_status swap_in(restore_ctx *c, const felix_rp_shard *const *sel, size_t n,
                            felix_rp_restore_result *res, felix_err *err);

static felix_status restore_locked(restore_ctx *c, const felix_rp_manifest *m, felix_rp_restore_result *res,
                                   felix_err *err) {
  felix_storage_id prev;
  if (felix_storage_id_load(c->dirfd, c->o->data_dir, &prev, err) == FELIX_OK)
    snprintf(res->previous_storage_id, sizeof res->previous_storage_id, "%s", prev.hex);
  size_t n = 0;
  const felix_rp_shard **sel = pick(c, m, &n);
  if (!sel) return felix_fail(err, FELIX_E_IO, "out of memory");
  felix_status st = felix_rp_settle_leftovers(c->o->data_dir, err); /* an earlier restore that stopped midway */
  if (!st) st = check_room(c->o->data_dir, c->total, err);
  if (!st) st = random_hex(c->new_sid, err);
  char what[4400];
  snprintf(what, sizeof what, "%.4300s/run-state", c->o->data_dir);
  if (!st && unlinkat(c->dirfd, "run-state", 0) != 0 && errno != ENOENT)
    st = felix_fail_errno(err, FELIX_E_IO, errno, "remove %s", what);
  if (st) {
    free(sel);
    return st;
  }
  res->run_state_removed = true;
  st = felix_fsync_dir(c->dirfd, what, err);
  if (!st && mkdirat(c->dirfd, "shards", 0755) != 0 && errno != EEXIST)
    st = felix_fail_errno(err, FELIX_E_IO, errno, "create %s/shards", c->o->data_dir);
  if (!st) st = felix_open_dir(c->dirfd, "shards", &c->shards_fd, err);
  /* every copy is built before any is replaced: a failure leaves the old ones */
  for (size_t i = 0; i < n && !st; i++) st = stage_shard(c, sel[i], err);
  if (st) remove_stages(c, sel, n);
  else st = swap_in(c, sel, n, res, err);
  free(sel);
  return st;
}

/* The journal, the swaps, the new identity, then the journal's end. */
static felix_status swap_in(restore_ctx *c, const felix_rp_shard *const *sel, size_t n,
                            felix_rp_restore_result *res, felix_err *err) {
  char shards[4200];
  snprintf(shards, sizeof shards, "%.4100s/shards", c->o->data_dir);
  felix_rp_journal_entry *je = calloc(n + 1, sizeof *je);
  if (!je) return felix_fail(err, FELIX_E_IO, "out of memory");
  for (size_t i = 0; i < n; i++) {
    struct stat sb;
    snprintf(je[i].dir, sizeof je[i].dir, "%s", sel[i]->dir);
    je[i].existed = fstatat(c->shards_fd, sel[i]->dir, &sb, AT_SYMLINK_NOFOLLOW) == 0;
  }
  felix_status st = felix_rp_journal_write(c->shards_fd, shards, c->new_sid, je, n, err); /* before the first swap */
  for (size_t i = 0; i < n && !st; i++) {
    st = swap_shard(c, sel[i], err);
    res->shards++, res->files += sel[i]->nfiles;
  }
  if (!st && fsync(c->shards_fd) != 0) st = felix_fail_errno(err, FELIX_E_SYNC, errno, "fsync %s/shards", c->o->data_dir);
  if (!st) st = write_identity(c, res, err); /* the restore is finished once its storage id is on disk */
  felix_err check;
  /* even when writing run-state (or a directory sync) failed, the id may be there: say so */
  if (felix_rp_storage_id_is(c->o->data_dir, c->new_sid, &res->finished, &check)) res->outcome_unknown = true;
  if (!st) st = felix_rp_journal_finish(c->shards_fd, shards, je, n, err);
  free(je);
  res->bytes = c->done;
  return st;
}

felix_status felix_rp_restore(const felix_rp_restore_opts *o, felix_rp_manifest *m, felix_rp_mismatches *bad,
                              felix_rp_restore_result *res, felix_err *err) {
  memset(res, 0, sizeof *res);
  memset(bad, 0, sizeof *bad);
  felix_status st = felix_rp_manifest_read(o->from, m, err);
  if (!st) st = felix_rp_verify(o->from, m, &o->select, bad, NULL, NULL, err);
  if (!st && bad->count)
    st = felix_fail(err, FELIX_E_CORRUPT, "restore point %s does not match its manifest (%zu problem%s, first: %s: %s); nothing was restored",
                    o->from, bad->count, bad->count == 1 ? "" : "s", bad->items[0].file, bad->items[0].kind);
  if (st) return st;
  restore_ctx c = {.o = o, .dirfd = -1, .shards_fd = -1, .total = selected_bytes(m, &o->select)};
  char *from_abs = realpath(o->from, NULL);
  if (!from_abs) return felix_fail_errno(err, FELIX_E_IO, errno, "--from %s", o->from);
  size_t flen = strlen(from_abs);
  if (flen < sizeof c.from_abs) memcpy(c.from_abs, from_abs, flen + 1);
  free(from_abs);
  if (flen >= sizeof c.from_abs)
    return felix_fail(err, FELIX_E_INVAL, "--from: its absolute path has %zu characters, more than the %zu run-state can record (%.200s...)",
                      flen, sizeof c.from_abs - 1, o->from);
  for (size_t k = 0; k < flen; k++)
    if ((unsigned char)c.from_abs[k] < 32 || c.from_abs[k] == 127)
      return felix_fail(err, FELIX_E_INVAL, "--from: its path has a control character at byte %zu, which run-state cannot record", k);
  felix_log_config lc;
  st = felix_log_config_from_env(&lc, err);
  if (st) return st;
  c.index_spacing = lc.index_spacing_bytes ? lc.index_spacing_bytes : FELIX_DEFAULT_INDEX_SPACING;
  felix_dir_lock lock = {.fd = -1};
  st = open_data_dir(o->data_dir, &c.dirfd, err);
  if (!st) st = felix_dir_lock_acquire(c.dirfd, o->data_dir, &lock, err);
  if (!st) {
    st = restore_locked(&c, m, res, err);
    felix_dir_lock_release(&lock);
  }
  if (c.shards_fd >= 0) close(c.shards_fd);
  if (c.dirfd >= 0) close(c.dirfd);
  return st;
}
