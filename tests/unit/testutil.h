/* testutil.h — small helpers shared by the cmocka suites. */
#ifndef FELIX_TESTUTIL_H
#define FELIX_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <sys/stat.h>

static int tu_rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb; (void)flag; (void)ftw;
  return remove(p);
}

/* A fresh empty directory under TMPDIR (or /tmp); free with tu_rmdir. */
static inline char *tu_mkdtemp(void) {
  const char *base = getenv("TMPDIR");
  char tmpl[4096];
  snprintf(tmpl, sizeof tmpl, "%s/felix-unit-XXXXXX", base && *base ? base : "/tmp");
  char *d = mkdtemp(tmpl);
  assert_non_null(d);
  return strdup(d);
}

static inline void tu_rmdir(char *dir) {
  if (dir) nftw(dir, tu_rm_one, 16, FTW_DEPTH | FTW_PHYS);
  free(dir);
}

/* Temp directories a test made and has not removed yet: a test that fails
 * midway (cmocka longjmps out) leaves its directory here, and the group
 * teardown tu_remove_tracked removes them all. */
#define TU_MAX_TRACKED 128
static char tu_tracked[TU_MAX_TRACKED][4096];

static inline void tu_track(const char *dir) {
  for (size_t i = 0; i < TU_MAX_TRACKED; i++)
    if (!tu_tracked[i][0]) {
      snprintf(tu_tracked[i], sizeof tu_tracked[i], "%s", dir);
      return;
    }
}

/* Removes dir (recursively) and forgets it. */
static inline void tu_untrack_rmdir(const char *dir) {
  for (size_t i = 0; i < TU_MAX_TRACKED; i++)
    if (strcmp(tu_tracked[i], dir) == 0) tu_tracked[i][0] = '\0';
  tu_rmdir(strdup(dir));
}

static inline void tu_remove_tracked(void) {
  for (size_t i = 0; i < TU_MAX_TRACKED; i++)
    if (tu_tracked[i][0]) {
      tu_rmdir(strdup(tu_tracked[i]));
      tu_tracked[i][0] = '\0';
    }
}

static inline char *tu_path(const char *dir, const char *name) {
  char *p = malloc(strlen(dir) + strlen(name) + 2);
  sprintf(p, "%s/%s", dir, name);
  return p;
}

/* Writes bytes to dir/name, replacing it. */
static inline void tu_write(const char *dir, const char *name, const void *data, size_t len) {
  char *p = tu_path(dir, name);
  FILE *f = fopen(p, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, len, f), len);
  fclose(f);
  free(p);
}

/* Reads dir/name whole; *len set; caller frees. NULL when absent. */
static inline unsigned char *tu_read(const char *dir, const char *name, size_t *len) {
  char *p = tu_path(dir, name);
  FILE *f = fopen(p, "rb");
  free(p);
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc((size_t)n + 1);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return buf;
}

/* How many times needle occurs in dir/name. */
static inline int tu_count_in(const char *dir, const char *name, const char *needle) {
  size_t len;
  char *text = (char *)tu_read(dir, name, &len);
  assert_non_null(text);
  text[len] = '\0';
  int n = 0;
  for (const char *at = text; (at = strstr(at, needle)) != NULL; at += strlen(needle)) n++;
  free(text);
  return n;
}

#endif
