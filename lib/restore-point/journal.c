/* restore-point/journal.c — what makes a restore all or nothing: its journal, and the
 * settling of what a restore that stopped midway left.
 *
 * Before restore swaps its first copy in, it writes shards/.restore-journal
 * (whole, synced): the new storage id and every copy it will swap, each
 * marked `existed` (an old copy is moved to shards/.replaced-<dir>) or `new`.
 * The restore is finished exactly when the data directory's storage-id holds
 * the journal's id: storage-id is written only after every swap is on disk,
 * and nothing else ever writes that id there (the broker's run-state, which
 * it rewrites at every start, plays no part). Then, in shards/:
 *   remove every .replaced-<dir>, fsync, remove the journal, fsync
 * so the journal outlives every .replaced- copy on disk.
 *
 * Settling (the broker at start, under the lock; restore before it begins):
 *   no journal, no .replaced-   nothing to do
 *   no journal, a .replaced-    refused: nothing says which way to go
 *   finished                    finish: remove the .replaced- copies
 *   not finished                undo, per copy: `existed` with .replaced-X:
 *                               remove X (restored) and rename .replaced-X
 *                               back; `existed` without it: X was never
 *                               swapped, keep it; `new`: remove X if there
 * Every copy is settled even when one fails; the first failure is returned
 * and the journal is kept, so the next attempt settles the rest. */
#include "felix/restorepoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "felix/datadir.h"
#include "felix/fileutil.h"

#define JOURNAL FELIX_RP_JOURNAL
#define JOURNAL_MAX (64u << 20) /* the reader's limit, checked by the writer too */

felix_status felix_rp_journal_write(int shards_fd, const char *shards_dir, const char *new_sid,
                                    const felix_rp_journal_entry *e, size_t n, felix_err *err) {
  size_t cap = 64 + n * 320, len = 0;
  char *buf = malloc(cap), what[4300];
  if (!buf) return felix_fail(err, FELIX_E_IO, "out of memory");
  len += (size_t)snprintf(buf + len, cap - len, "storage_id=%s\n", new_sid);
  for (size_t i = 0; i < n; i++)
    len += (size_t)snprintf(buf + len, cap - len, "copy=%s %s\n", e[i].dir, e[i].existed ? "existed" : "new");
  snprintf(what, sizeof what, "%.4200s/%s", shards_dir, JOURNAL);
  felix_status st = len > JOURNAL_MAX ? felix_fail(err, FELIX_E_INVAL, "%s: %zu copies are more than one restore can record; restore fewer with --shard", what, n)
                                      : felix_write_file_atomic(shards_fd, JOURNAL, buf, len, what, err);
  free(buf);
  return st;
}

typedef struct journal {
  char sid[33];
  felix_rp_journal_entry *e;
  size_t n;
} journal;

static felix_status parse_line(char *line, size_t at, const char *what, journal *j, felix_err *err) {
  char *sp;
  if (!strncmp(line, "storage_id=", 11) && !j->sid[0] && felix_hex_valid(line + 11, 32)) {
    snprintf(j->sid, sizeof j->sid, "%s", line + 11);
    return FELIX_OK;
  }
  char dir[300], stream[128], uuid16[17];
  uint32_t shard;
  bool shaped = !strncmp(line, "copy=", 5) && (sp = strrchr(line, ' ')) && (!strcmp(sp, " existed") || !strcmp(sp, " new")) &&
                sp - (line + 5) >= 1 && sp - (line + 5) < (long)sizeof dir;
  if (shaped) snprintf(dir, sizeof dir, "%.*s", (int)(sp - line - 5), line + 5);
  /* only a shard directory's name: never "..", ".", a path or a dot-name */
  if (!shaped || dir[0] == '.' || strchr(dir, '/') || !felix_shard_dir_parse(dir, stream, sizeof stream, &shard, uuid16))
    return felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: expected storage_id=HEX or copy=SHARD-DIR existed|new", what, at);
  felix_rp_journal_entry *ne = realloc(j->e, (j->n + 1) * sizeof *ne);
  if (!ne) return felix_fail(err, FELIX_E_IO, "out of memory");
  j->e = ne;
  snprintf(ne[j->n].dir, sizeof ne[j->n].dir, "%.*s", (int)(sp - line - 5), line + 5);
  ne[j->n++].existed = !strcmp(sp, " existed");
  return FELIX_OK;
}

/* *found false when there is no journal. */
static felix_status read_journal(int shards_fd, const char *shards_dir, journal *j, bool *found, felix_err *err) {
  char what[4300], *buf;
  size_t len;
  memset(j, 0, sizeof *j);
  snprintf(what, sizeof what, "%.4200s/%s", shards_dir, JOURNAL);
  felix_status st = felix_rp_read_small(shards_fd, JOURNAL, what, JOURNAL_MAX, &buf, &len, err);
  *found = st != FELIX_E_NOTFOUND;
  if (st) return st == FELIX_E_NOTFOUND ? FELIX_OK : st;
  for (size_t at = 0; !st && at < len;) {
    char *nl = memchr(buf + at, '\n', len - at);
    if (!nl) st = felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: the last line has no newline", what, at);
    else *nl = '\0', st = parse_line(buf + at, at, what, j, err), at = (size_t)(nl - buf) + 1;
  }
  if (!st && !j->sid[0]) st = felix_fail(err, FELIX_E_CORRUPT, "%s: byte 0: no storage_id line", what);
  free(buf);
  return st;
}

static bool present(int fd, const char *name) {
  struct stat sb;
  return fstatat(fd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0;
}

static felix_status remove_in(const char *shards_dir, const char *name, felix_err *err) {
  char p[4400];
  snprintf(p, sizeof p, "%.4000s/%.300s", shards_dir, name);
  return felix_rp_remove_tree(p, err);
}

static felix_status settle_copy(int fd, const char *shards_dir, const felix_rp_journal_entry *e, bool finished,
                                felix_err *err) {
  char old[320];
  snprintf(old, sizeof old, FELIX_RP_REPLACED "%s", e->dir);
  if (finished) return present(fd, old) ? remove_in(shards_dir, old, err) : FELIX_OK;
  if (!e->existed) return present(fd, e->dir) ? remove_in(shards_dir, e->dir, err) : FELIX_OK;
  if (!present(fd, old)) return FELIX_OK; /* never swapped: the old copy is still in place */
  felix_status st = present(fd, e->dir) ? remove_in(shards_dir, e->dir, err) : FELIX_OK;
  if (!st && renameat(fd, old, fd, e->dir) != 0)
    st = felix_fail_errno(err, FELIX_E_IO, errno, "rename %s/%s back to %s", shards_dir, old, e->dir);
  return st;
}

felix_status felix_rp_storage_id_is(const char *data_dir, const char *sid, bool *is, felix_err *err) {
  int fd;
  felix_storage_id cur;
  *is = false;
  felix_status st = felix_open_dir(AT_FDCWD, data_dir, &fd, err);
  if (st) return st;
  st = felix_storage_id_load(fd, data_dir, &cur, err);
  close(fd);
  if (st == FELIX_E_NOTFOUND) return FELIX_OK; /* a directory that never had one: not this restore's */
  if (st) return st; /* unreadable or malformed: nothing says which way, so no guess */
  *is = !strcmp(cur.hex, sid);
  return FELIX_OK;
}

static bool listed(const journal *j, const char *replaced) {
  for (size_t i = 0; i < j->n; i++)
    if (!strcmp(replaced + strlen(FELIX_RP_REPLACED), j->e[i].dir)) return true;
  return false;
}

/* A .replaced- copy that no journal entry (j, or none) accounts for. */
static felix_status refuse_orphans(const char *shards_dir, const journal *j, felix_err *err) {
  DIR *d = opendir(shards_dir);
  struct dirent *de;
  felix_status st = FELIX_OK;
  while (d && !st && (de = readdir(d)) != NULL)
    if (!strncmp(de->d_name, FELIX_RP_REPLACED, strlen(FELIX_RP_REPLACED)) && !(j && listed(j, de->d_name)))
      st = felix_fail(err, FELIX_E_CORRUPT, "%s/%s: a copy a restore moved aside, but no %s says whether that restore finished",
                      shards_dir, de->d_name, JOURNAL);
  if (d) closedir(d);
  return st;
}

felix_status felix_rp_journal_finish(int shards_fd, const char *shards_dir, const felix_rp_journal_entry *e,
                                     size_t n, felix_err *err) {
  felix_status first = FELIX_OK;
  for (size_t i = 0; i < n; i++) {
    felix_err one;
    felix_status st = settle_copy(shards_fd, shards_dir, &e[i], true, &one);
    if (st && !first) first = st, *err = one;
  }
  if (first) return first; /* the journal stays: the next settle removes the rest */
  if (fsync(shards_fd) != 0) return felix_fail_errno(err, FELIX_E_SYNC, errno, "fsync %s", shards_dir);
  if (unlinkat(shards_fd, JOURNAL, 0) != 0 && errno != ENOENT)
    return felix_fail_errno(err, FELIX_E_IO, errno, "remove %s/%s", shards_dir, JOURNAL);
  if (fsync(shards_fd) != 0) return felix_fail_errno(err, FELIX_E_SYNC, errno, "fsync %s", shards_dir);
  return FELIX_OK;
}

felix_status felix_rp_settle_leftovers(const char *data_dir, felix_err *err) {
  char shards_dir[4200];
  snprintf(shards_dir, sizeof shards_dir, "%.4100s/shards", data_dir);
  int fd;
  felix_status st = felix_open_dir(AT_FDCWD, shards_dir, &fd, err);
  if (st) return st == FELIX_E_NOTFOUND ? FELIX_OK : st;
  journal j;
  bool found;
  bool finished = false;
  st = read_journal(fd, shards_dir, &j, &found, err);
  if (!st) st = refuse_orphans(shards_dir, found ? &j : NULL, err);
  if (!st && found) st = felix_rp_storage_id_is(data_dir, j.sid, &finished, err);
  if (!st && found) {
    for (size_t i = 0; i < j.n; i++) {
      felix_err one;
      felix_status s1 = settle_copy(fd, shards_dir, &j.e[i], finished, &one);
      if (s1 && !st) st = s1, *err = one;
    }
    if (!st) st = felix_rp_journal_finish(fd, shards_dir, j.e, 0, err); /* fsync, then the journal goes */
  }
  free(j.e);
  close(fd);
  return st;
}
