/* test_log_retention.c — felix_log_trim (issue 16): only whole sealed
 * segments below the asked offset go, oldest first; the log start is the
 * oldest segment's base, after a reopen and after a power cut midway. */
#include "testutil.h"

#include <dirent.h>
#include <inttypes.h>

#include "felix/log.h"

#define SHARD "s/0"
#define REC_LEN 100u
/* header 32 + 3 records of 24 + 100 bytes: a segment rolls after 3 records */
#define SEG_BYTES (32u + 3u * 124u)

typedef struct tlog {
  char root[4096];
  char dir[4200];
} tlog;

static tlog tlog_new(void) {
  tlog t;
  char *r = tu_mkdtemp();
  snprintf(t.root, sizeof t.root, "%s", r);
  free(r);
  snprintf(t.dir, sizeof t.dir, "%s/shard", t.root);
  tu_track(t.root);
  return t;
}

static felix_log_config cfg(void) {
  return (felix_log_config){.segment_bytes = SEG_BYTES, .index_spacing_bytes = 128,
                            .fsync_mode = FELIX_FSYNC_PERIODIC, .fsync_interval_ms = 50};
}

static felix_log *open_ok(const tlog *t) {
  felix_log_config c = cfg();
  felix_log *log = NULL;
  felix_err err = {0};
  felix_recovery_report rep;
  if (felix_log_open(t->dir, SHARD, &c, true, &log, &rep, &err)) fail_msg("open: %s", err.msg);
  return log;
}

static void close_ok(felix_log *log) {
  felix_err err = {0};
  if (felix_log_close(log, &err)) fail_msg("close: %s", err.msg);
}

static void payload(uint64_t i, uint8_t out[REC_LEN]) {
  memset(out, 'a' + (int)(i % 26), REC_LEN);
  snprintf((char *)out, REC_LEN, "record-%" PRIu64, i);
}

static void append_n(felix_log *log, uint64_t from, uint64_t n) {
  for (uint64_t i = from; i < from + n; i++) {
    uint8_t p[REC_LEN];
    payload(i, p);
    uint64_t off = 0;
    felix_err err = {0};
    if (felix_log_append(log, p, REC_LEN, &off, &err)) fail_msg("append: %s", err.msg);
    assert_int_equal(off, i);
  }
}

static felix_log_stats stats(felix_log *log) {
  felix_log_stats st;
  felix_log_get_stats(log, &st);
  return st;
}

/* Every record of [from, end) reads back with its own content. */
static void check_from(felix_log *log, uint64_t from) {
  uint64_t end = stats(log).end_offset;
  for (uint64_t at = from; at < end;) {
    felix_record_batch b;
    felix_err err = {0};
    if (felix_log_read(log, at, 64, 1 << 20, &b, &err)) fail_msg("read at %" PRIu64 ": %s", at, err.msg);
    assert_true(b.count > 0);
    for (size_t i = 0; i < b.count; i++, at++) {
      uint8_t p[REC_LEN];
      payload(at, p);
      assert_int_equal(b.records[i].offset, at);
      assert_memory_equal(b.records[i].payload, p, REC_LEN);
    }
    felix_record_batch_free(&b);
  }
}

static int count_files(const tlog *t, const char *suffix) {
  DIR *d = opendir(t->dir);
  assert_non_null(d);
  int n = 0;
  size_t sl = strlen(suffix);
  for (struct dirent *e; (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    n += l > sl && e->d_name[0] != '.' && strcmp(e->d_name + l - sl, suffix) == 0;
  }
  closedir(d);
  return n;
}

static void trim_ok(felix_log *log, uint64_t below, uint64_t want_start) {
  uint64_t start = UINT64_MAX;
  felix_err err = {0};
  if (felix_log_trim(log, below, &start, &err)) fail_msg("trim below %" PRIu64 ": %s", below, err.msg);
  assert_int_equal(start, want_start);
  assert_int_equal(stats(log).start_offset, want_start);
}

static void only_whole_sealed_segments_below_the_offset_go(void **s) {
  (void)s;
  tlog t = tlog_new();
  felix_log *log = open_ok(&t);
  append_n(log, 0, 10); /* segments at 0, 3, 6, 9 */
  assert_int_equal(stats(log).segments, 4);
  trim_ok(log, 2, 0);   /* 2 lies inside the first segment: nothing goes */
  assert_int_equal(count_files(&t, ".log"), 4);
  trim_ok(log, 7, 6);   /* [0,3) and [3,6) go; [6,9) holds 7 */
  assert_int_equal(stats(log).segments, 2);
  assert_int_equal(count_files(&t, ".log"), 2);
  assert_int_equal(count_files(&t, ".index"), 2);
  check_from(log, 6);
  felix_record_batch b;
  felix_err err = {0};
  assert_int_equal(felix_log_read(log, 5, 1, 1 << 20, &b, &err), FELIX_E_INVAL);
  assert_non_null(strstr(err.msg, "outside the log [6, 10)"));
  close_ok(log);
  tu_untrack_rmdir(t.root);
}

static void the_active_segment_never_goes(void **s) {
  (void)s;
  tlog t = tlog_new();
  felix_log *log = open_ok(&t);
  append_n(log, 0, 7); /* segments at 0, 3, 6 (active, one record) */
  trim_ok(log, UINT64_MAX, 6);
  assert_int_equal(stats(log).segments, 1);
  assert_int_equal(stats(log).end_offset, 7);
  check_from(log, 6);
  append_n(log, 7, 4); /* appends go on after it */
  check_from(log, 6);
  close_ok(log);
  tu_untrack_rmdir(t.root);
}

static void the_log_start_survives_a_reopen(void **s) {
  (void)s;
  tlog t = tlog_new();
  felix_log *log = open_ok(&t);
  append_n(log, 0, 12);
  trim_ok(log, 9, 9);
  close_ok(log);
  log = open_ok(&t);
  assert_int_equal(stats(log).start_offset, 9);
  assert_int_equal(stats(log).end_offset, 12);
  check_from(log, 9);
  close_ok(log);
  tu_untrack_rmdir(t.root);
}

/* A power cut after the first unlinks: what is left is the newest segments,
 * contiguous, perhaps with the index of a segment whose .log already went. */
static void a_cut_midway_leaves_a_contiguous_suffix(void **s) {
  (void)s;
  tlog t = tlog_new();
  felix_log *log = open_ok(&t);
  append_n(log, 0, 12);
  close_ok(log);
  char name[32], path[4300];
  felix_seg_format_name(name, 0, ".log"); /* what drop_oldest removes first */
  snprintf(path, sizeof path, "%s/%s", t.dir, name);
  assert_int_equal(unlink(path), 0);
  log = open_ok(&t);
  assert_int_equal(stats(log).start_offset, 3);
  assert_int_equal(count_files(&t, ".index"), count_files(&t, ".log")); /* the orphan index went */
  check_from(log, 3);
  trim_ok(log, 9, 9); /* and the trim finishes */
  check_from(log, 9);
  close_ok(log);
  tu_untrack_rmdir(t.root);
}

static void a_trim_needs_a_live_directory(void **s) {
  (void)s;
  tlog t = tlog_new();
  felix_log *log = open_ok(&t);
  append_n(log, 0, 7);
  tu_rmdir(strdup(t.dir)); /* rm -rf under the open log */
  assert_true(felix_log_dir_deleted(log));
  felix_err err = {0};
  assert_int_equal(felix_log_trim(log, 6, NULL, &err), FELIX_E_GONE);
  assert_int_equal(stats(log).start_offset, 0); /* nothing moved */
  felix_log_close(log, NULL);
  tu_untrack_rmdir(t.root);
}

static int remove_leftover_roots(void **s) {
  (void)s;
  tu_remove_tracked();
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(only_whole_sealed_segments_below_the_offset_go),
      cmocka_unit_test(the_active_segment_never_goes),
      cmocka_unit_test(the_log_start_survives_a_reopen),
      cmocka_unit_test(a_cut_midway_leaves_a_contiguous_suffix),
      cmocka_unit_test(a_trim_needs_a_live_directory),
  };
  return cmocka_run_group_tests_name("log_retention", tests, NULL, remove_leftover_roots);
}
