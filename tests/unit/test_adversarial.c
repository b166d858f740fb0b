/* test_adversarial.c — interleavings that try to break the storage engine
 * (DESIGN.md §3.1–3.2). Each test here failed on the code it was written
 * against; the comment above each says what it breaks and why it matters. */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "felix/bytes.h"
#include "felix/log.h"
#include "felix/segment.h"

/* Appending a batch whose buffer cannot be allocated must be possible to
 * provoke: make allocations over 20 MiB fail (return NULL) instead of
 * aborting. Nothing else in this file allocates that much. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1:max_allocation_size_mb=20"; }

/* ---- a recorder of directory fsyncs ------------------------------------
 * The log fsyncs its directory with fsync(2) directly; counting those calls
 * tells which directory changes (creates, unlinks) were durable at any moment. */
static atomic_int dir_fsyncs;

int fsync(int fd);
int fsync(int fd) {
  struct stat sb;
  if (fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode)) atomic_fetch_add(&dir_fsyncs, 1);
  return (int)syscall(SYS_fsync, fd);
}

/* The log's sync primitive: records how many directory fsyncs had happened
 * when the first sync after `watch` was set ran. */
static atomic_bool watch;
static atomic_int dir_fsyncs_at_watched_sync = -1;

static int watching_sync(int fd, void *ctx) {
  (void)ctx;
  if (atomic_exchange(&watch, false)) atomic_store(&dir_fsyncs_at_watched_sync, atomic_load(&dir_fsyncs));
  return fdatasync(fd) == 0 ? 0 : errno;
}

static felix_log_config cfg_of(felix_fsync_mode mode, uint64_t segment_bytes) {
  felix_log_config c = {.segment_bytes = segment_bytes, .index_spacing_bytes = 256, .fsync_mode = mode,
                        .fsync_interval_ms = 20, .sync_fn = watching_sync};
  return c;
}

static felix_log *open_ok(const char *dir, const felix_log_config *c, bool create, felix_recovery_report *rep) {
  felix_log *log = NULL;
  felix_err err = {0};
  felix_recovery_report scratch;
  felix_status st = felix_log_open(dir, "adv_0", c, create, &log, rep ? rep : &scratch, &err);
  if (st != FELIX_OK) fail_msg("open %s: %s", dir, err.msg);
  return log;
}

static void close_ok(felix_log *log) {
  felix_err err = {0};
  if (felix_log_close(log, &err) != FELIX_OK) fail_msg("close: %s", err.msg);
}

static uint64_t append_str(felix_log *log, const char *s) {
  uint64_t off = UINT64_MAX;
  felix_err err = {0};
  if (felix_log_append(log, s, (uint32_t)strlen(s), &off, &err) != FELIX_OK) fail_msg("append: %s", err.msg);
  return off;
}

static void payload_of(uint64_t i, char *out, size_t cap) {
  snprintf(out, cap, "record-%03" PRIu64 "-................................................................", i);
}

static uint64_t position_of(felix_log *log, uint64_t off) {
  felix_record_batch b;
  felix_err err = {0};
  assert_int_equal(felix_log_read(log, off, 1, 1 << 20, &b, &err), FELIX_OK);
  assert_int_equal(b.count, 1);
  uint64_t pos = b.records[0].position;
  felix_record_batch_free(&b);
  return pos;
}

/* Bases of the .log files in dir, ascending; returns how many. */
static size_t list_bases(const char *dir, uint64_t *bases, size_t cap) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  size_t n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    uint64_t b;
    if (felix_seg_parse_name(de->d_name, ".log", &b) && n < cap) bases[n++] = b;
  }
  closedir(d);
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0 && bases[j - 1] > bases[j]; j--) {
      uint64_t t = bases[j];
      bases[j] = bases[j - 1];
      bases[j - 1] = t;
    }
  return n;
}

static felix_log_stats stats_of(felix_log *log) {
  felix_log_stats st;
  felix_log_get_stats(log, &st);
  return st;
}

/* 1. Truncation across a segment boundary is not crash-ordered.
 *
 * felix_log_truncate unlinks the newer segments, then cuts the older one and
 * syncs that cut, and only then fsyncs the directory. A power cut after the
 * cut is durable but before the directory fsync keeps the unlinked segment
 * (its unlink was never made durable) next to an older segment that now ends
 * below its base: an offset gap, which recovery (rightly) refuses. The shard
 * is lost to a crash in the middle of an ordinary replication truncation,
 * although drop_segments_from promises "a crash midway leaves a prefix and
 * never a gap". The power cut is simulated at the moment the cut is synced:
 * if no directory fsync happened since the unlink, the segment comes back. */
static void truncate_across_segments_then_power_cut_never_leaves_a_gap(void **s) {
  (void)s;
  char *dir = tu_mkdtemp();
  felix_log_config c = cfg_of(FELIX_FSYNC_NONE, 4096);
  felix_log *log = open_ok(dir, &c, true, NULL);
  char p[128];
  for (uint64_t i = 0; i < 60; i++) {
    payload_of(i, p, sizeof p);
    assert_int_equal(append_str(log, p), i);
  }
  felix_err err = {0};
  assert_int_equal(felix_log_sync(log, &err), FELIX_OK); /* everything durable before the truncation */
  uint64_t bases[16];
  size_t nb = list_bases(dir, bases, 16);
  assert_true(nb >= 2);
  uint64_t newest = bases[nb - 1], prev = bases[nb - 2];
  assert_true(newest - prev >= 6);
  char name[32];
  felix_seg_format_name(name, newest, ".log");
  size_t saved_len;
  unsigned char *saved = tu_read(dir, name, &saved_len);
  assert_non_null(saved);

  uint64_t to = newest - 5; /* inside the older segment: the newest is dropped, the older cut */
  int before = atomic_load(&dir_fsyncs);
  atomic_store(&watch, true);
  assert_int_equal(felix_log_truncate(log, to, &err), FELIX_OK);
  atomic_store(&watch, false);
  int at_cut = atomic_load(&dir_fsyncs_at_watched_sync);
  close_ok(log);

  /* Power cut right after the cut was synced: an unlink not yet followed by a
   * directory fsync is not durable, so the dropped segment is still there. */
  if (at_cut == before) tu_write(dir, name, saved, saved_len);
  free(saved);

  felix_log *re = NULL;
  felix_recovery_report rep;
  felix_status st = felix_log_open(dir, "adv_0", &c, false, &re, &rep, &err);
  if (st != FELIX_OK) {
    tu_rmdir(dir);
    fail_msg("power cut during truncate(%" PRIu64 ") left a log recovery refuses: %s", to, err.msg);
  }
  assert_int_equal(stats_of(re).end_offset, to);
  close_ok(re);
  tu_rmdir(dir);
}

/* 2. A batch whose buffer cannot be allocated leaves the log claiming records
 * it never wrote, with no sticky error.
 *
 * append_locked advances the active segment's next_offset (and adds an index
 * entry) for each record as it is buffered; when a later record of the batch
 * cannot be buffered it returns "out of memory" without flushing, without
 * undoing next_offset and without making the error sticky. The next append
 * succeeds and is acknowledged, but is written with an offset one past where
 * the file actually is. Reading it fails; at the next open, recovery sees an
 * out-of-order offset in the last record and cuts it as a torn tail: an
 * acknowledged record silently lost. */
static void failed_batch_allocation_never_loses_a_later_acknowledged_record(void **s) {
  (void)s;
  char *dir = tu_mkdtemp();
  felix_log_config c = cfg_of(FELIX_FSYNC_NONE, 1ull << 30);
  felix_log *log = open_ok(dir, &c, true, NULL);
  uint32_t big = 9u << 20; /* two of these do not fit in a buffer under 20 MiB */
  char *payload = calloc(1, big);
  assert_non_null(payload);
  felix_record_in recs[2] = {{payload, big, 1}, {payload, big, 2}};
  felix_appended a;
  felix_err err = {0};
  felix_status st = felix_log_append_batch(log, recs, 2, &a, &err);
  free(payload);
  assert_int_not_equal(st, FELIX_OK); /* the batch could not be buffered */

  uint64_t off = UINT64_MAX;
  st = felix_log_append(log, "acked", 5, &off, &err);
  if (st != FELIX_OK) { /* refused: nothing acknowledged, nothing to lose */
    felix_log_close(log, NULL);
    tu_rmdir(dir);
    return;
  }
  /* Acknowledged: it must be readable now and after a restart. */
  felix_record_batch b;
  felix_err rerr = {0};
  felix_status read_now = felix_log_read(log, off, 1, 1 << 20, &b, &rerr);
  if (read_now == FELIX_OK) felix_record_batch_free(&b);
  close_ok(log);
  felix_recovery_report rep;
  log = open_ok(dir, &c, false, &rep);
  uint64_t end = stats_of(log).end_offset;
  felix_log_close(log, NULL);
  tu_rmdir(dir);
  if (read_now != FELIX_OK || end <= off || rep.truncated_bytes)
    fail_msg("record acknowledged at offset %" PRIu64 ": read before restart: %s; after restart recovery cut %" PRIu64
             " bytes (%s) and the log ends at %" PRIu64,
             off, read_now == FELIX_OK ? "ok" : rerr.msg, rep.truncated_bytes, rep.truncated_kind, end);
}

/* 3. A failed segment write counts the records it never wrote as held.
 *
 * append_locked advances next_offset before flush_wbuf writes; when the write
 * fails (ENOSPC, EFBIG, EIO…) the error is sticky, but next_offset is not
 * brought back, so end_offset — and, in a relaxed mode, held_end, "offsets
 * below this are held" — include records that are not in the file. A copy
 * that reports held_end (rank, confirmations) would claim records it does not
 * have; reads of them fail as "corrupt" instead. */
static void failed_segment_write_never_counts_unwritten_records_as_held(void **s) {
  (void)s;
  char *dir = tu_mkdtemp();
  felix_log_config c = cfg_of(FELIX_FSYNC_NONE, 1ull << 20);
  felix_log *log = open_ok(dir, &c, true, NULL);
  assert_int_equal(append_str(log, "first"), 0);
  char name[32];
  felix_seg_format_name(name, 0, ".log");
  char *path = tu_path(dir, name);
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  free(path);

  /* A disk that fills up 40 bytes further on: the batch is written in part. */
  struct rlimit old, lim;
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
  void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
  lim = old;
  lim.rlim_cur = (rlim_t)sb.st_size + 40;
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
  char p[128];
  payload_of(1, p, sizeof p);
  felix_record_in recs[3] = {{p, 100, 0}, {p, 100, 0}, {p, 100, 0}};
  felix_appended a;
  felix_err err = {0};
  felix_status st = felix_log_append_batch(log, recs, 3, &a, &err);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
  signal(SIGXFSZ, old_handler);
  assert_int_not_equal(st, FELIX_OK);

  felix_log_stats stats = stats_of(log);
  felix_log_close(log, NULL);
  tu_rmdir(dir);
  assert_true(stats.sync_error != 0);
  if (stats.held_end > 1)
    fail_msg("after a failed write held_end=%" PRIu64 " (end_offset=%" PRIu64 "), but only offset 0 is in the file",
             stats.held_end, stats.end_offset);
}

/* 4. A corrupted payload_len in the middle of the newest segment silently
 * cuts every intact record after it.
 *
 * The scanner classifies "payload_len does not fit in the file" as a torn
 * tail before looking at anything else, wherever the record is. DESIGN.md
 * §3.1 makes "damage with intact records after it" an error: one flipped byte
 * in record 5's length field must not make recovery drop records 5..9, which
 * were acknowledged (and, under on_commit, synced). */
static void bad_length_with_intact_records_after_it_is_an_error_not_a_cut(void **s) {
  (void)s;
  char *dir = tu_mkdtemp();
  felix_log_config c = cfg_of(FELIX_FSYNC_ON_COMMIT, 1ull << 20);
  felix_log *log = open_ok(dir, &c, true, NULL);
  char p[128];
  for (uint64_t i = 0; i < 10; i++) {
    payload_of(i, p, sizeof p);
    assert_int_equal(append_str(log, p), i);
  }
  uint64_t pos = position_of(log, 5);
  close_ok(log);
  char name[32];
  felix_seg_format_name(name, 0, ".log");
  size_t len;
  unsigned char *buf = tu_read(dir, name, &len);
  buf[pos] ^= 0x7F; /* high byte of record 5's payload_len */
  tu_write(dir, name, buf, len);
  free(buf);

  felix_log *re = NULL;
  felix_recovery_report rep;
  felix_err err = {0};
  felix_status st = felix_log_open(dir, "adv_0", &c, false, &re, &rep, &err);
  if (st == FELIX_OK) {
    uint64_t end = stats_of(re).end_offset;
    felix_log_close(re, NULL);
    tu_rmdir(dir);
    fail_msg("recovery cut %" PRIu64 " bytes at byte %" PRIu64 " (%s): log now ends at %" PRIu64
             " although records 6..9 after the damage are intact",
             rep.truncated_bytes, rep.truncated_at, rep.truncated_kind, end);
  }
  assert_int_equal(st, FELIX_E_CORRUPT);
  tu_rmdir(dir);
}

/* 5. open(create=false) on a shard whose segment files are gone silently
 * makes a new, empty log at offset 0.
 *
 * log_recover ignores `create` ((void)create) and creates segment 0 whenever
 * it finds no segment. log.h promises to create only "when `create` and
 * absent"; a copy whose records vanished must be refused and reported, not
 * reopened empty under the same copy id. */
static void open_without_create_refuses_a_log_whose_segments_vanished(void **s) {
  (void)s;
  char *dir = tu_mkdtemp();
  felix_log_config c = cfg_of(FELIX_FSYNC_NONE, 1ull << 20);
  felix_log *log = open_ok(dir, &c, true, NULL);
  assert_int_equal(append_str(log, "precious"), 0);
  close_ok(log);
  char name[32];
  felix_seg_format_name(name, 0, ".log");
  char *p = tu_path(dir, name);
  assert_int_equal(unlink(p), 0);
  free(p);

  felix_log *re = NULL;
  felix_err err = {0};
  felix_status st = felix_log_open(dir, "adv_0", &c, false, &re, NULL, &err);
  if (st == FELIX_OK) {
    uint64_t end = stats_of(re).end_offset;
    felix_log_close(re, NULL);
    tu_rmdir(dir);
    fail_msg("open without create made a new empty log (end %" PRIu64 ") where the records were lost", end);
  }
  tu_rmdir(dir);
}

/* 6. A shard whose directory was removed keeps acknowledging under on_commit.
 *
 * DESIGN.md §3.2: if the shard directory disappears (ENOENT, link count 0)
 * the shard is refused. The log keeps its descriptors and never looks at the
 * directory's link count, so every on_commit append after `rm -r` of the
 * shard directory is synced into unlinked files and acknowledged as held. */
static void on_commit_append_after_shard_directory_removed_is_refused(void **s) {
  (void)s;
  char *root = tu_mkdtemp();
  char *dir = tu_path(root, "shard");
  felix_log_config c = cfg_of(FELIX_FSYNC_ON_COMMIT, 1ull << 20);
  felix_log *log = open_ok(dir, &c, true, NULL);
  assert_int_equal(append_str(log, "before"), 0);
  tu_rmdir(dir); /* frees dir */
  struct stat sb;
  char *gone = tu_path(root, "shard");
  assert_int_not_equal(stat(gone, &sb), 0);
  free(gone);
  uint64_t off;
  felix_err err = {0};
  felix_status st = felix_log_append(log, "into the void", 13, &off, &err);
  felix_log_close(log, NULL);
  tu_rmdir(root);
  if (st == FELIX_OK) fail_msg("append acknowledged (offset %" PRIu64 ") into a shard directory that no longer exists", off);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(truncate_across_segments_then_power_cut_never_leaves_a_gap),
      cmocka_unit_test(failed_batch_allocation_never_loses_a_later_acknowledged_record),
      cmocka_unit_test(failed_segment_write_never_counts_unwritten_records_as_held),
      cmocka_unit_test(bad_length_with_intact_records_after_it_is_an_error_not_a_cut),
      cmocka_unit_test(open_without_create_refuses_a_log_whose_segments_vanished),
      cmocka_unit_test(on_commit_append_after_shard_directory_removed_is_refused),
  };
  return cmocka_run_group_tests_name("adversarial", tests, NULL, NULL);
}
