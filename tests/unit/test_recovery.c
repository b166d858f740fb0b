/* test_recovery.c — the recovery matrix of DESIGN.md §3.1, through
 * felix_log_open on directories built with the log API and then damaged with
 * plain file I/O; plus rollover, reads across segments and truncation. */
#include "testutil.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdint.h>
#include <sys/stat.h>
#include <zlib.h>

#include "felix/bytes.h"
#include "felix/log.h"
#include "felix/segment.h"

#define SHARD "s1"
#define SEG_BYTES 4096u
#define SPACING 256u
/* Records of a multi-segment log: 4 segments, the newest holding 28 records. */
#define NREC 140

static const char *SEG0 = "00000000000000000000.log";
static const char *IDX0 = "00000000000000000000.index";

static felix_log_config cfg_mode(felix_fsync_mode mode) {
  felix_log_config c = {.segment_bytes = SEG_BYTES, .index_spacing_bytes = SPACING,
                        .fsync_mode = mode, .fsync_interval_ms = 5};
  return c;
}

static felix_log_config cfg(void) { return cfg_mode(FELIX_FSYNC_NONE); }

/* Payload of record i written by `gen` (so rewritten data is distinguishable). */
static uint32_t payload_len(uint64_t i) { return 40 + (uint32_t)((i * 37) % 90); }

static void make_payload(uint64_t i, int gen, uint8_t *out, uint32_t len) {
  for (uint32_t k = 0; k < len; k++) out[k] = (uint8_t)('a' + (i * 7 + (uint64_t)k + (uint64_t)gen * 13) % 26);
  int n = snprintf((char *)out, len, "g%d-r%" PRIu64 "-", gen, i);
  if (n > 0 && (uint32_t)n < len) out[n] = '.';
}

/* A log directory under a fresh temp root. Fixed buffers, so a failing
 * assertion leaks nothing; the group teardown removes roots a failed test
 * left behind. */
typedef struct tlog {
  char root[4096]; /* temp directory */
  char dir[4200];  /* root/shard: the log directory */
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

static void tlog_free(tlog *t) {
  tu_untrack_rmdir(t->root);
}

static int remove_leftover_roots(void **s) {
  (void)s;
  tu_remove_tracked();
  return 0;
}

static felix_log *open_ok(const tlog *t, const felix_log_config *c, felix_recovery_report *rep) {
  felix_log *log = NULL;
  felix_err err = {0};
  felix_recovery_report scratch;
  felix_status st = felix_log_open(t->dir, SHARD, c, true, &log, rep ? rep : &scratch, &err);
  if (st != FELIX_OK) fail_msg("felix_log_open failed (%d): %s", st, err.msg);
  assert_non_null(log);
  return log;
}

static felix_status open_expect_fail(const tlog *t, felix_err *err) {
  felix_log_config c = cfg();
  felix_log *log = (felix_log *)0x1;
  felix_recovery_report rep;
  memset(err, 0, sizeof *err);
  felix_status st = felix_log_open(t->dir, SHARD, &c, true, &log, &rep, err);
  if (st == FELIX_OK) {
    felix_log_close(log, NULL);
    fail_msg("felix_log_open succeeded on a damaged log");
  }
  assert_null(log);
  return st;
}

static void close_ok(felix_log *log) {
  felix_err err = {0};
  felix_status st = felix_log_close(log, &err);
  if (st != FELIX_OK) fail_msg("close: %s", err.msg);
}

static uint64_t append_one(felix_log *log, uint64_t i, int gen, uint32_t len) {
  uint8_t *p = malloc(len ? len : 1);
  make_payload(i, gen, p, len);
  uint64_t off = UINT64_MAX;
  felix_err err = {0};
  felix_status st = felix_log_append(log, p, len, &off, &err);
  free(p);
  if (st != FELIX_OK) fail_msg("append: %s", err.msg);
  return off;
}

/* Appends records [from, to) of generation gen, checking the offsets. */
static void append_range(felix_log *log, uint64_t from, uint64_t to, int gen) {
  for (uint64_t i = from; i < to; i++) assert_int_equal(append_one(log, i, gen, payload_len(i)), i);
}

static uint64_t end_offset(felix_log *log) {
  felix_log_stats st;
  felix_log_get_stats(log, &st);
  return st.end_offset;
}

/* Builds a log holding records [0, n) and closes it. */
static void build(const tlog *t, uint64_t n) {
  felix_log_config c = cfg();
  felix_log *log = open_ok(t, &c, NULL);
  append_range(log, 0, n, 0);
  assert_int_equal(end_offset(log), n);
  close_ok(log);
}

/* Reads the whole log and checks it is records [start, end) where record i
 * comes from generation gen_of(i). */
static void check_records(felix_log *log, uint64_t start, uint64_t end, int gen_lo, uint64_t gen_switch,
                          int gen_hi) {
  felix_log_stats s;
  felix_log_get_stats(log, &s);
  assert_int_equal(s.start_offset, start);
  assert_int_equal(s.end_offset, end);
  felix_record_batch b;
  felix_err err = {0};
  felix_status st = felix_log_read(log, start, SIZE_MAX, SIZE_MAX, &b, &err);
  if (st != FELIX_OK) fail_msg("read: %s", err.msg);
  assert_int_equal(b.count, end - start);
  for (size_t k = 0; k < b.count; k++) {
    uint64_t i = start + k;
    int gen = i < gen_switch ? gen_lo : gen_hi;
    uint32_t len = payload_len(i);
    uint8_t want[256];
    make_payload(i, gen, want, len);
    assert_int_equal(b.records[k].offset, i);
    assert_int_equal(b.records[k].len, len);
    assert_memory_equal(b.records[k].payload, want, len);
  }
  felix_record_batch_free(&b);
}

static void check_all(felix_log *log, uint64_t n) { check_records(log, 0, n, 0, UINT64_MAX, 0); }

/* Position of record `offset` in its segment, read through the log API. */
static uint64_t position_of(const tlog *t, uint64_t offset) {
  felix_log_config c = cfg();
  felix_log *log = open_ok(t, &c, NULL);
  felix_record_batch b;
  felix_err err = {0};
  assert_int_equal(felix_log_read(log, offset, 1, SIZE_MAX, &b, &err), FELIX_OK);
  assert_int_equal(b.count, 1);
  assert_int_equal(b.records[0].offset, offset);
  uint64_t pos = b.records[0].position;
  felix_record_batch_free(&b);
  close_ok(log);
  return pos;
}

/* ---- file helpers ------------------------------------------------------- */

static size_t file_size(const tlog *t, const char *name) {
  char *p = tu_path(t->dir, name);
  struct stat sb;
  int rc = stat(p, &sb);
  free(p);
  if (rc != 0) fail_msg("stat %s/%s failed", t->dir, name);
  return (size_t)sb.st_size;
}

static bool file_exists(const tlog *t, const char *name) {
  char *p = tu_path(t->dir, name);
  bool ok = access(p, F_OK) == 0;
  free(p);
  return ok;
}

static void truncate_file(const tlog *t, const char *name, size_t len) {
  char *p = tu_path(t->dir, name);
  assert_int_equal(truncate(p, (off_t)len), 0);
  free(p);
}

static void remove_file(const tlog *t, const char *name) {
  char *p = tu_path(t->dir, name);
  assert_int_equal(unlink(p), 0);
  free(p);
}

/* XORs `mask` into the byte at pos of a file. */
static void flip_byte(const tlog *t, const char *name, size_t pos, uint8_t mask) {
  size_t len;
  unsigned char *buf = tu_read(t->dir, name, &len);
  assert_non_null(buf);
  assert_true(pos < len);
  buf[pos] ^= mask;
  tu_write(t->dir, name, buf, len);
  free(buf);
}

static void append_bytes(const tlog *t, const char *name, const void *data, size_t n) {
  size_t len;
  unsigned char *buf = tu_read(t->dir, name, &len);
  assert_non_null(buf);
  buf = realloc(buf, len + n);
  memcpy(buf + len, data, n);
  tu_write(t->dir, name, buf, len + n);
  free(buf);
}

static void seg_name(char out[32], uint64_t base, const char *suffix) { felix_seg_format_name(out, base, suffix); }

/* Rewrites the segment header's version, flags and base with a valid CRC, so
 * that only the intended field is wrong. */
static void rewrite_header(const tlog *t, const char *name, uint16_t version, uint16_t flags, uint64_t base) {
  size_t len;
  unsigned char *buf = tu_read(t->dir, name, &len);
  assert_non_null(buf);
  assert_true(len >= FELIX_SEG_HEADER_LEN);
  felix_put_u16(buf + 4, version);
  felix_put_u16(buf + 6, flags);
  felix_put_u64(buf + 8, base);
  felix_put_u32(buf + 24, (uint32_t)crc32(0, buf, 24));
  tu_write(t->dir, name, buf, len);
  free(buf);
}

/* The bases of the .log files in the log directory, ascending. */
static size_t list_bases(const tlog *t, uint64_t *bases, size_t cap) {
  DIR *d = opendir(t->dir);
  assert_non_null(d);
  size_t n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    uint64_t b;
    if (!felix_seg_parse_name(de->d_name, ".log", &b)) continue;
    assert_true(n < cap);
    bases[n++] = b;
  }
  closedir(d);
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0 && bases[j - 1] > bases[j]; j--) {
      uint64_t x = bases[j];
      bases[j] = bases[j - 1];
      bases[j - 1] = x;
    }
  return n;
}

/* A snapshot of every file in the log directory, for byte comparison. */
#define SNAP_MAX 64
typedef struct snap {
  size_t n;
  char names[SNAP_MAX][64];
  unsigned char *data[SNAP_MAX];
  size_t len[SNAP_MAX];
} snap;

static void snap_take(const tlog *t, snap *s) {
  memset(s, 0, sizeof *s);
  DIR *d = opendir(t->dir);
  assert_non_null(d);
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    assert_true(s->n < SNAP_MAX);
    assert_true(strlen(de->d_name) < sizeof s->names[0]);
    size_t i = s->n;
    for (; i > 0 && strcmp(s->names[i - 1], de->d_name) > 0; i--) {
      memcpy(s->names[i], s->names[i - 1], sizeof s->names[0]);
      s->data[i] = s->data[i - 1];
      s->len[i] = s->len[i - 1];
    }
    snprintf(s->names[i], sizeof s->names[0], "%s", de->d_name);
    s->data[i] = tu_read(t->dir, de->d_name, &s->len[i]);
    assert_non_null(s->data[i]);
    s->n++;
  }
  closedir(d);
}

static void snap_free(snap *s) {
  for (size_t i = 0; i < s->n; i++) free(s->data[i]);
  s->n = 0;
}

static void snap_assert_equal(const snap *a, const snap *b) {
  if (a->n != b->n) fail_msg("directory has %zu files, expected %zu", b->n, a->n);
  for (size_t i = 0; i < a->n; i++) {
    assert_string_equal(a->names[i], b->names[i]);
    if (a->len[i] != b->len[i]) fail_msg("%s: %zu bytes, expected %zu", a->names[i], b->len[i], a->len[i]);
    if (memcmp(a->data[i], b->data[i], a->len[i]) != 0) fail_msg("%s: contents differ", a->names[i]);
  }
}

/* Reopens and checks that nothing changes: no repair, no rebuild, same bytes,
 * `n` records. */
static void assert_reopen_idempotent(const tlog *t, uint64_t n) {
  snap before, after;
  snap_take(t, &before);
  felix_log_config c = cfg();
  felix_recovery_report rep;
  felix_log *log = open_ok(t, &c, &rep);
  assert_int_equal(rep.truncated_bytes, 0);
  assert_int_equal(rep.indexes_rebuilt, 0);
  assert_int_equal(end_offset(log), n);
  close_ok(log);
  snap_take(t, &after);
  snap_assert_equal(&before, &after);
  snap_free(&before);
  snap_free(&after);
}

static void assert_contains(const char *msg, const char *needle) {
  if (!strstr(msg, needle)) fail_msg("message \"%s\" does not contain \"%s\"", msg, needle);
}

/* ---- torn tails of the newest segment: repaired ------------------------- */

/* Opens after damage; expects the cut at `at` of `bytes` bytes of `kind`,
 * n records left, all intact; then reopening changes nothing. */
static void expect_repaired(const tlog *t, uint64_t at, uint64_t bytes, const char *kind, uint64_t n) {
  felix_log_config c = cfg();
  felix_recovery_report rep;
  felix_log *log = open_ok(t, &c, &rep);
  assert_int_equal(rep.truncated_bytes, bytes);
  assert_int_equal(rep.truncated_at, at);
  if (kind) assert_string_equal(rep.truncated_kind, kind);
  else assert_true(strlen(rep.truncated_kind) > 0);
  check_all(log, n);
  close_ok(log);
  assert_reopen_idempotent(t, n);
  /* The repaired log accepts the next offset. */
  log = open_ok(t, &c, NULL);
  assert_int_equal(append_one(log, n, 0, payload_len(n)), n);
  check_all(log, n + 1);
  close_ok(log);
}

static void torn_short_record_header_is_cut(void **s) {
  (void)s;
  tlog t = tlog_new();
  build(&t, 10);
  uint64_t last = position_of(&t, 9);
  truncate_file(&t, SEG0, last + 10); /* 10 of 24 header bytes */
  expect_repaired(&t, last, 10, "torn_record", 9);
  tlog_free(&t);
}

static void torn_payload_cut_short_is_cut(void **s) {
  (void)s;
  tlog t = tlog_new();
  build(&t, 10);
  uint64_t last = position_of(&t, 9);
  truncate_file(&t, SEG0, last + FELIX_REC_HEADER_LEN + 5); /* header whole, payload cut */
  expect_repaired(&t, last, FELIX_REC_HEADER_LEN + 5, "torn_record", 9);
  tlog_free(&t);
}

static void torn_payload_len_that_cannot_fit_is_cut(void **s) {
  (void)s;
  tlog t = tlog_new();
  build(&t, 10);
  uint64_t last = position_of(&t, 9);
  size_t size = file_size(&t, SEG0);
  /* payload_len (first byte of the record) made enormous. */
  flip_byte(&t, SEG0, last, 0x7F);
  expect_repaired(&t, last, size - last, "torn_record", 9);
  tlog_free(&t);
}

static void torn_bad_checksum_of_last_record_is_cut(void **s) {
  (void)s;
  tlog t = tlog_new();
  build(&t, 10);
  uint64_t last = position_of(&t, 9);
  size_t size = file_size(&t, SEG0);
  flip_byte(&t, SEG0, size - 1, 0x01); /* last payload byte */
  expect_repaired(&t, last, size - last, "bad_checksum", 9);
  tlog_free(&t);
}

static void torn_out_of_order_offset_in_last_record_is_cut(void **s) {
  (void)s;
  tlog t = tlog_new();
  build(&t, 10);
  uint64_t last = position_of(&t, 9);
  size_t size;
  unsigned char *buf = tu_read(t.dir, SEG0, &size);
  uint32_t len = felix_get_u32(buf + last);
  uint64_t ts = felix_get_u64(buf + last + 12);
  /* A well-formed record (valid checksum) that carries the wrong offset. */
  felix_record_header_encode(buf + last, 42, ts, buf + last + FELIX_REC_HEADER_LEN, len);
  tu_write(t.dir, SEG0, buf, size);
  free(buf);
  expect_repaired(&t, last, size - last, "offset_out_of_order", 9);
  tlog_free(&t);
}

static void torn_zero_filled_tail_after_records_is_cut(void **s) {
  (void)s;
  tlog t = tlog_new();
  build(&t, 10);
  size_t size = file_size(&t, SEG0);
  uint8_t zeros[1000] = {0};
  append_bytes(&t, SEG0, zeros, sizeof zeros);
  expect_repaired(&t, size, sizeof zeros, NULL, 10);
  tlog_free(&t);
}

static void torn_zero_filled_tail_shorter_than_a_header_is_cut(void **s) {
  (void)s;
  tlog t = tlog_new();
  build(&t, 10);
  size_t size = file_size(&t, SEG0);
  uint8_t zeros[7] = {0};
  append_bytes(&t, SEG0, zeros, sizeof zeros);
  expect_repaired(&t, size, sizeof zeros, "torn_record", 10);
  tlog_free(&t);
}

static void torn_last_records_zeroed_in_place_are_cut(void **s) {
  (void)s;
  tlog t = tlog_new();
  build(&t, 10);
  uint64_t from = position_of(&t, 7);
  size_t size;
  unsigned char *buf = tu_read(t.dir, SEG0, &size);
  memset(buf + from, 0, size - from); /* records 7, 8, 9: extended but never written */
  tu_write(t.dir, SEG0, buf, size);
  free(buf);
  expect_repaired(&t, from, size - from, NULL, 7);
  tlog_free(&t);
}

static void torn_tail_of_newest_of_several_segments_is_cut(void **s) {
  (void)s;
  tlog t = tlog_new();
  build(&t, NREC);
  uint64_t bases[16];
  size_t nb = list_bases(&t, bases, 16);
  assert_true(nb >= 3);
  char newest[32];
  seg_name(newest, bases[nb - 1], ".log");
  uint64_t last = position_of(&t, NREC - 1);
  size_t size = file_size(&t, newest);
  flip_byte(&t, newest, size - 1, 0x10);
  expect_repaired(&t, last, size - last, "bad_checksum", NREC - 1);
  tlog_free(&t);
}

static void torn_only_record_of_newest_segment_leaves_it_empty(void **s) {
  (void)s;
  tlog t = tlog_new();
  build(&t, NREC);
  uint64_t bases[16];
  size_t nb = list_bases(&t, bases, 16);
  uint64_t b = bases[nb - 1];
  /* Write exactly one record into a fresh newest segment. */
  felix_log_config c = cfg();
  felix_log *log = open_ok(&t, &c, NULL);
  uint64_t e = end_offset(log);
  while (list_bases(&t, bases, 16) == nb) {
    append_range(log, e, e + 1, 0);
    e++;
  }
  close_ok(log);
  nb = list_bases(&t, bases, 16);
  assert_int_equal(bases[nb - 1], e - 1);
  assert_true(bases[nb - 1] > b);
  char newest[32];
  seg_name(newest, bases[nb - 1], ".log");
  size_t size = file_size(&t, newest);
  truncate_file(&t, newest, size - 1);
  expect_repaired(&t, FELIX_SEG_HEADER_LEN, size - 1 - FELIX_SEG_HEADER_LEN, "torn_record", e - 1);
  assert_true(file_exists(&t, newest));
  tlog_free(&t);
}

/* ---- damage that is an error ------------------------------------------- */

static void interior_corruption_of_newest_segment_is_an_error_naming_the_byte(void **s) {
  (void)s;
  tlog t = tlog_new();
  build(&t, 10);
  uint64_t mid = position_of(&t, 5);
  flip_byte(&t, SEG0, mid + FELIX_REC_HEADER_LEN + 3, 0x20); /* a payload byte of record 5 */
  snap before, after;
  snap_take(&t, &before);
  felix_err err;
  assert_int_equal(open_expect_fail(&t, &err), FELIX_E_CORRUPT);
  assert_contains(err.msg, "shard " SHARD);
  assert_contains(err.msg, SEG0);
  char want[64];
  snprintf(want, sizeof want, "byte %" PRIu64 ":", mid);
  assert_contains(err.msg, want);
  assert_contains(err.msg, "bad_checksum");
  /* A refused open repairs nothing. */
  snap_take(&t, &after);
  snap_assert_equal(&before, &after);
  snap_free(&before);
  snap_free(&after);
  tlog_free(&t);
}

static void interior_out_of_order_offset_of_newest_segment_is_an_error(void **s) {
  (void)s;
  tlog t = tlog_new();
  build(&t, 10);
  uint64_t mid = position_of(&t, 4);
  size_t size;
  unsigned char *buf = tu_read(t.dir, SEG0, &size);
  uint32_t len = felix_get_u32(buf + mid);
  felix_record_header_encode(buf + mid, 77, 1, buf + mid + FELIX_REC_HEADER_LEN, len);
  tu_write(t.dir, SEG0, buf, size);
  free(buf);
  felix_err err;
  assert_int_equal(open_expect_fail(&t, &err), FELIX_E_CORRUPT);
  char want[64];
  snprintf(want, sizeof want, "byte %" PRIu64 ":", mid);
  assert_contains(err.msg, want);
  assert_contains(err.msg, "offset_out_of_order");
  assert_int_equal(file_size(&t, SEG0), size);
  tlog_free(&t);
}

static void bad_checksum_before_a_nonzero_tail_is_an_error(void **s) {
  (void)s;
  /* Damage in the last record followed by junk that is not zeros: not a torn tail. */
  tlog t = tlog_new();
  build(&t, 10);
  uint64_t last = position_of(&t, 9);
  size_t size = file_size(&t, SEG0);
  flip_byte(&t, SEG0, size - 1, 0x01);
  uint8_t junk[40];
  memset(junk, 0, sizeof junk);
  junk[30] = 0x55;
  append_bytes(&t, SEG0, junk, sizeof junk);
  felix_err err;
  assert_int_equal(open_expect_fail(&t, &err), FELIX_E_CORRUPT);
  char want[64];
  snprintf(want, sizeof want, "byte %" PRIu64 ":", last);
  assert_contains(err.msg, want);
  tlog_free(&t);
}

/* A log of several segments; returns how many, and fills bases. */
static size_t build_segments(const tlog *t, uint64_t n, uint64_t *bases, size_t cap) {
  build(t, n);
  size_t nb = list_bases(t, bases, cap);
  assert_true(nb >= 3);
  assert_true(n - bases[nb - 1] >= 8); /* the newest segment holds several records */
  return nb;
}

static void damage_at_end_of_sealed_segment_is_an_error(void **s) {
  (void)s;
  tlog t = tlog_new();
  uint64_t bases[16];
  build_segments(&t, NREC, bases, 16);
  uint64_t last = position_of(&t, bases[1] - 1); /* last record of segment 0 */
  size_t size = file_size(&t, SEG0);
  flip_byte(&t, SEG0, size - 1, 0x01);
  snap before, after;
  snap_take(&t, &before);
  felix_err err;
  assert_int_equal(open_expect_fail(&t, &err), FELIX_E_CORRUPT);
  assert_contains(err.msg, "shard " SHARD);
  assert_contains(err.msg, SEG0);
  char want[64];
  snprintf(want, sizeof want, "byte %" PRIu64 ":", last);
  assert_contains(err.msg, want);
  snap_take(&t, &after);
  snap_assert_equal(&before, &after);
  snap_free(&before);
  snap_free(&after);
  tlog_free(&t);
}

static void torn_end_of_sealed_segment_is_an_error(void **s) {
  (void)s;
  tlog t = tlog_new();
  uint64_t bases[16];
  build_segments(&t, NREC, bases, 16);
  char seg1[32];
  seg_name(seg1, bases[1], ".log");
  uint64_t last = position_of(&t, bases[2] - 1); /* last record of segment 1 */
  size_t size = file_size(&t, seg1);
  truncate_file(&t, seg1, size - 3);
  felix_err err;
  assert_int_equal(open_expect_fail(&t, &err), FELIX_E_CORRUPT);
  assert_contains(err.msg, seg1);
  char want[64];
  snprintf(want, sizeof want, "byte %" PRIu64 ":", last);
  assert_contains(err.msg, want);
  assert_int_equal(file_size(&t, seg1), size - 3); /* not repaired */
  tlog_free(&t);
}

static void zero_tail_on_sealed_segment_is_an_error(void **s) {
  (void)s;
  tlog t = tlog_new();
  uint64_t bases[16];
  build_segments(&t, NREC, bases, 16);
  size_t size = file_size(&t, SEG0);
  uint8_t zeros[64] = {0};
  append_bytes(&t, SEG0, zeros, sizeof zeros);
  felix_err err;
  assert_int_equal(open_expect_fail(&t, &err), FELIX_E_CORRUPT);
  assert_contains(err.msg, SEG0);
  char want[64];
  snprintf(want, sizeof want, "byte %zu:", size);
  assert_contains(err.msg, want);
  tlog_free(&t);
}

static void expect_header_error(const tlog *t, const char *seg, const char *kind) {
  felix_err err;
  assert_int_equal(open_expect_fail(t, &err), FELIX_E_CORRUPT);
  assert_contains(err.msg, "shard " SHARD);
  assert_contains(err.msg, seg);
  assert_contains(err.msg, "byte 0:");
  assert_contains(err.msg, kind);
}

static void bad_header_magic_is_an_error_naming_byte_0(void **s) {
  (void)s;
  tlog t = tlog_new();
  build(&t, 10);
  flip_byte(&t, SEG0, 1, 0x01);
  expect_header_error(&t, SEG0, "bad_magic");
  tlog_free(&t);
}

static void bad_header_crc_is_an_error_naming_byte_0(void **s) {
  (void)s;
  tlog t = tlog_new();
  build(&t, 10);
  flip_byte(&t, SEG0, 20, 0x01); /* created_at, crc now stale */
  expect_header_error(&t, SEG0, "bad_header_crc");
  tlog_free(&t);
}

static void unknown_version_is_an_error_naming_byte_0(void **s) {
  (void)s;
  tlog t = tlog_new();
  build(&t, 10);
  rewrite_header(&t, SEG0, 2, 0, 0);
  expect_header_error(&t, SEG0, "unknown_version");
  tlog_free(&t);
}

static void unknown_flags_are_an_error_naming_byte_0(void **s) {
  (void)s;
  tlog t = tlog_new();
  build(&t, 10);
  rewrite_header(&t, SEG0, 1, 0x0004, 0);
  expect_header_error(&t, SEG0, "unknown_flags");
  tlog_free(&t);
}

static void unknown_version_of_a_sealed_segment_is_an_error(void **s) {
  (void)s;
  tlog t = tlog_new();
  uint64_t bases[16];
  build_segments(&t, NREC, bases, 16);
  char seg1[32];
  seg_name(seg1, bases[1], ".log");
  rewrite_header(&t, seg1, 3, 0, bases[1]);
  expect_header_error(&t, seg1, "unknown_version");
  tlog_free(&t);
}

static void segment_shorter_than_its_header_is_an_error(void **s) {
  (void)s;
  tlog t = tlog_new();
  build(&t, 10);
  truncate_file(&t, SEG0, 20);
  expect_header_error(&t, SEG0, "short_header");
  tlog_free(&t);
}

static void gap_between_segments_is_an_error(void **s) {
  (void)s;
  tlog t = tlog_new();
  uint64_t bases[16];
  size_t nb = build_segments(&t, NREC, bases, 16);
  char seg1[32], idx1[32], seg2[32];
  seg_name(seg1, bases[1], ".log");
  seg_name(idx1, bases[1], ".index");
  seg_name(seg2, bases[2], ".log");
  remove_file(&t, seg1);
  remove_file(&t, idx1);
  felix_err err;
  assert_int_equal(open_expect_fail(&t, &err), FELIX_E_CORRUPT);
  assert_contains(err.msg, "offset_gap");
  assert_contains(err.msg, "shard " SHARD);
  assert_contains(err.msg, seg2);
  assert_int_equal(list_bases(&t, bases, 16), nb - 1); /* nothing deleted */
  tlog_free(&t);
}

static void header_base_differing_from_file_name_is_an_error(void **s) {
  (void)s;
  tlog t = tlog_new();
  build(&t, 10);
  rewrite_header(&t, SEG0, 1, 0, 5);
  size_t size = file_size(&t, SEG0);
  felix_err err;
  assert_int_equal(open_expect_fail(&t, &err), FELIX_E_CORRUPT);
  assert_contains(err.msg, SEG0);
  assert_contains(err.msg, "base_offset_mismatch");
  assert_int_equal(file_size(&t, SEG0), size);
  tlog_free(&t);
}

static void header_base_differing_from_name_with_one_record_is_an_error_not_a_repair(void **s) {
  (void)s;
  /* With a single record, the mismatch must not be mistaken for a torn tail
   * (the record "carries the wrong offset" only because the header lies). */
  tlog t = tlog_new();
  build(&t, 1);
  rewrite_header(&t, SEG0, 1, 0, 5);
  size_t size = file_size(&t, SEG0);
  felix_err err;
  felix_status st = open_expect_fail(&t, &err);
  assert_int_equal(st, FELIX_E_CORRUPT);
  assert_contains(err.msg, "base_offset_mismatch");
  assert_int_equal(file_size(&t, SEG0), size); /* the record was not cut */
  tlog_free(&t);
}

static void header_base_differing_from_name_in_sealed_segment_is_an_error(void **s) {
  (void)s;
  tlog t = tlog_new();
  uint64_t bases[16];
  build_segments(&t, NREC, bases, 16);
  char seg1[32];
  seg_name(seg1, bases[1], ".log");
  rewrite_header(&t, seg1, 1, 0, bases[1] + 1);
  felix_err err;
  assert_int_equal(open_expect_fail(&t, &err), FELIX_E_CORRUPT);
  assert_contains(err.msg, seg1);
  assert_contains(err.msg, "base_offset_mismatch");
  tlog_free(&t);
}

/* ---- indexes: derived, rebuilt byte-identical --------------------------- */

static void missing_indexes_are_rebuilt_byte_identical(void **s) {
  (void)s;
  tlog t = tlog_new();
  uint64_t bases[16];
  size_t nb = build_segments(&t, NREC, bases, 16);
  snap orig;
  snap_take(&t, &orig);
  for (size_t i = 0; i < nb; i++) {
    char idx[32];
    seg_name(idx, bases[i], ".index");
    size_t len;
    unsigned char *b = tu_read(t.dir, idx, &len);
    assert_non_null(b);
    assert_true(len > FELIX_IDX_HEADER_LEN); /* the appends wrote entries */
    free(b);
    remove_file(&t, idx);
  }
  felix_log_config c = cfg();
  felix_recovery_report rep;
  felix_log *log = open_ok(&t, &c, &rep);
  assert_int_equal(rep.indexes_rebuilt, nb);
  assert_int_equal(rep.truncated_bytes, 0);
  check_all(log, NREC);
  close_ok(log);
  snap now;
  snap_take(&t, &now);
  snap_assert_equal(&orig, &now);
  snap_free(&orig);
  snap_free(&now);
  assert_reopen_idempotent(&t, NREC);
  tlog_free(&t);
}

static void garbage_indexes_are_rebuilt_byte_identical(void **s) {
  (void)s;
  tlog t = tlog_new();
  uint64_t bases[16];
  size_t nb = build_segments(&t, NREC, bases, 16);
  snap orig;
  snap_take(&t, &orig);
  /* A different kind of garbage for each segment. */
  for (size_t i = 0; i < nb; i++) {
    char idx[32];
    seg_name(idx, bases[i], ".index");
    size_t len;
    unsigned char *b = tu_read(t.dir, idx, &len);
    switch (i % 4) {
    case 0: memset(b, 0xEE, len); break;                          /* bad magic */
    case 1: len -= 3; break;                                       /* torn entry */
    case 2: felix_put_u64(b + FELIX_IDX_HEADER_LEN, 999); break;  /* first entry wrong */
    case 3: felix_put_u64(b + 8, bases[i] + 1); break;            /* base mismatch */
    }
    tu_write(t.dir, idx, b, len);
    free(b);
  }
  felix_log_config c = cfg();
  felix_recovery_report rep;
  felix_log *log = open_ok(&t, &c, &rep);
  assert_int_equal(rep.indexes_rebuilt, nb);
  check_all(log, NREC);
  close_ok(log);
  snap now;
  snap_take(&t, &now);
  snap_assert_equal(&orig, &now);
  snap_free(&orig);
  snap_free(&now);
  tlog_free(&t);
}

static void truncated_index_of_sealed_segment_is_rebuilt(void **s) {
  (void)s;
  /* Well-formed but missing its last entries: found incomplete, rebuilt. */
  tlog t = tlog_new();
  uint64_t bases[16];
  build_segments(&t, NREC, bases, 16);
  char idx1[32];
  seg_name(idx1, bases[1], ".index");
  size_t len;
  unsigned char *orig = tu_read(t.dir, idx1, &len);
  assert_true(len >= FELIX_IDX_HEADER_LEN + 3 * FELIX_IDX_ENTRY_LEN);
  truncate_file(&t, idx1, FELIX_IDX_HEADER_LEN + FELIX_IDX_ENTRY_LEN);
  felix_log_config c = cfg();
  felix_recovery_report rep;
  felix_log *log = open_ok(&t, &c, &rep);
  assert_int_equal(rep.indexes_rebuilt, 1);
  check_all(log, NREC);
  close_ok(log);
  size_t len2;
  unsigned char *now = tu_read(t.dir, idx1, &len2);
  assert_int_equal(len2, len);
  assert_memory_equal(now, orig, len);
  free(orig);
  free(now);
  tlog_free(&t);
}

static void index_rebuilt_after_torn_tail_matches_a_fresh_rebuild(void **s) {
  (void)s;
  tlog t = tlog_new();
  build(&t, 20);
  uint64_t last = position_of(&t, 19);
  truncate_file(&t, SEG0, last + 3);
  felix_log_config c = cfg();
  felix_log *log = open_ok(&t, &c, NULL);
  close_ok(log);
  size_t len;
  unsigned char *after_repair = tu_read(t.dir, IDX0, &len);
  remove_file(&t, IDX0);
  felix_recovery_report rep;
  log = open_ok(&t, &c, &rep);
  assert_int_equal(rep.indexes_rebuilt, 1);
  close_ok(log);
  size_t len2;
  unsigned char *rebuilt = tu_read(t.dir, IDX0, &len2);
  assert_int_equal(len2, len);
  assert_memory_equal(rebuilt, after_repair, len);
  free(after_repair);
  free(rebuilt);
  tlog_free(&t);
}

static void leftover_temp_files_are_removed(void **s) {
  (void)s;
  tlog t = tlog_new();
  build(&t, 5);
  tu_write(t.dir, ".00000000000000000005.log.tmp", "FLSG", 4);
  felix_log_config c = cfg();
  felix_recovery_report rep;
  felix_log *log = open_ok(&t, &c, &rep);
  assert_int_equal(rep.temp_files_removed, 1);
  check_all(log, 5);
  close_ok(log);
  assert_false(file_exists(&t, ".00000000000000000005.log.tmp"));
  tlog_free(&t);
}

/* ---- rollover and reads across segments -------------------------------- */

static void check_segments_obey_size_limit(const tlog *t, uint64_t oversized_at) {
  uint64_t bases[64];
  size_t nb = list_bases(t, bases, 64);
  assert_true(nb >= 3);
  for (size_t i = 0; i < nb; i++) {
    char name[32];
    seg_name(name, bases[i], ".log");
    size_t size = file_size(t, name);
    uint64_t next = i + 1 < nb ? bases[i + 1] : UINT64_MAX;
    if (bases[i] == oversized_at) {
      /* The oversized record alone in its own segment. */
      assert_true(size > SEG_BYTES);
      assert_true(next == oversized_at + 1);
      continue;
    }
    if (size > SEG_BYTES) fail_msg("%s is %zu bytes, over segment_bytes %u", name, size, SEG_BYTES);
    if (i + 1 < nb && bases[i + 1] != oversized_at) {
      /* Rolled only because the next record would not have fit. */
      uint64_t first_next = FELIX_REC_HEADER_LEN + payload_len(bases[i + 1]);
      assert_true(size + first_next > SEG_BYTES);
    }
  }
}

static void rollover_keeps_segments_within_segment_bytes(void **s) {
  (void)s;
  tlog t = tlog_new();
  build(&t, 200);
  check_segments_obey_size_limit(&t, UINT64_MAX);
  felix_log_config c = cfg();
  felix_recovery_report rep;
  felix_log *log = open_ok(&t, &c, &rep);
  uint64_t bases[64];
  assert_int_equal(rep.segments, list_bases(&t, bases, 64));
  check_all(log, 200);
  close_ok(log);
  tlog_free(&t);
}

static void oversized_record_goes_alone_into_its_own_segment(void **s) {
  (void)s;
  tlog t = tlog_new();
  felix_log_config c = cfg();
  felix_log *log = open_ok(&t, &c, NULL);
  append_range(log, 0, 50, 0);
  uint32_t big = SEG_BYTES + 1000;
  uint8_t *p = malloc(big);
  memset(p, 'Z', big);
  uint64_t off = 0;
  felix_err err = {0};
  assert_int_equal(felix_log_append(log, p, big, &off, &err), FELIX_OK);
  assert_int_equal(off, 50);
  /* Records after it go to the next segment; use payloads of generation 0. */
  for (uint64_t i = 51; i < 100; i++) assert_int_equal(append_one(log, i, 0, payload_len(i)), i);
  close_ok(log);
  check_segments_obey_size_limit(&t, 50);
  char name[32];
  seg_name(name, 50, ".log");
  assert_int_equal(file_size(&t, name), FELIX_SEG_HEADER_LEN + FELIX_REC_HEADER_LEN + big);
  /* Read across every boundary, including the big one. */
  log = open_ok(&t, &c, NULL);
  felix_record_batch b;
  assert_int_equal(felix_log_read(log, 0, SIZE_MAX, SIZE_MAX, &b, &err), FELIX_OK);
  assert_int_equal(b.count, 100);
  for (size_t k = 0; k < b.count; k++) {
    assert_int_equal(b.records[k].offset, k);
    if (k == 50) {
      assert_int_equal(b.records[k].len, big);
      assert_memory_equal(b.records[k].payload, p, big);
      assert_int_equal(b.records[k].position, FELIX_SEG_HEADER_LEN);
    } else {
      uint8_t want[256];
      make_payload(k, 0, want, payload_len(k));
      assert_int_equal(b.records[k].len, payload_len(k));
      assert_memory_equal(b.records[k].payload, want, payload_len(k));
    }
  }
  felix_record_batch_free(&b);
  close_ok(log);
  free(p);
  tlog_free(&t);
}

static void reads_across_segment_boundaries_return_every_record(void **s) {
  (void)s;
  tlog t = tlog_new();
  build(&t, 200);
  uint64_t bases[64];
  size_t nb = list_bases(&t, bases, 64);
  felix_log_config c = cfg();
  felix_log *log = open_ok(&t, &c, NULL);
  felix_err err = {0};
  /* From each base minus 2 (spanning the boundary) read 5 records. */
  for (size_t i = 1; i < nb; i++) {
    uint64_t from = bases[i] - 2;
    felix_record_batch b;
    assert_int_equal(felix_log_read(log, from, 5, SIZE_MAX, &b, &err), FELIX_OK);
    size_t want_n = from + 5 <= 200 ? 5 : (size_t)(200 - from);
    assert_int_equal(b.count, want_n);
    for (size_t k = 0; k < b.count; k++) {
      uint64_t o = from + k;
      uint8_t want[256];
      make_payload(o, 0, want, payload_len(o));
      assert_int_equal(b.records[k].offset, o);
      assert_memory_equal(b.records[k].payload, want, payload_len(o));
      /* A segment's first record sits right after its header. */
      if (o == bases[i]) assert_int_equal(b.records[k].position, FELIX_SEG_HEADER_LEN);
    }
    felix_record_batch_free(&b);
  }
  /* Reading from every offset gives that offset first. */
  for (uint64_t o = 0; o < 200; o += 13) {
    felix_record_batch b;
    assert_int_equal(felix_log_read(log, o, SIZE_MAX, SIZE_MAX, &b, &err), FELIX_OK);
    assert_int_equal(b.count, 200 - o);
    assert_int_equal(b.records[0].offset, o);
    assert_int_equal(b.records[b.count - 1].offset, 199);
    felix_record_batch_free(&b);
  }
  /* At the end: nothing; beyond: invalid. */
  felix_record_batch b;
  assert_int_equal(felix_log_read(log, 200, 10, SIZE_MAX, &b, &err), FELIX_OK);
  assert_int_equal(b.count, 0);
  felix_record_batch_free(&b);
  assert_int_equal(felix_log_read(log, 201, 10, SIZE_MAX, &b, &err), FELIX_E_INVAL);
  close_ok(log);
  tlog_free(&t);
}

static void periodic_mode_rolls_and_recovers_the_same(void **s) {
  (void)s;
  tlog t = tlog_new();
  felix_log_config c = cfg_mode(FELIX_FSYNC_PERIODIC);
  felix_log *log = open_ok(&t, &c, NULL);
  assert_int_equal(felix_log_mode(log), FELIX_FSYNC_PERIODIC);
  append_range(log, 0, 120, 0);
  felix_err err = {0};
  assert_int_equal(felix_log_sync(log, &err), FELIX_OK);
  felix_log_stats st;
  felix_log_get_stats(log, &st);
  assert_int_equal(st.held_end, 120);
  assert_int_equal(st.synced_end, 120);
  assert_true(st.segments >= 3);
  close_ok(log);
  check_segments_obey_size_limit(&t, UINT64_MAX);
  felix_recovery_report rep;
  log = open_ok(&t, &c, &rep);
  assert_int_equal(rep.truncated_bytes, 0);
  assert_int_equal(rep.indexes_rebuilt, 0);
  check_all(log, 120);
  close_ok(log);
  tlog_free(&t);
}

/* ---- truncation --------------------------------------------------------- */

static void truncate_then_rewrite(const tlog *t, uint64_t n, uint64_t to) {
  felix_log_config c = cfg();
  felix_log *log = open_ok(t, &c, NULL);
  felix_err err = {0};
  assert_int_equal(felix_log_truncate(log, to, &err), FELIX_OK);
  assert_int_equal(end_offset(log), to);
  check_records(log, 0, to, 0, UINT64_MAX, 0);
  /* Different data (generation 1) at the truncated offsets. */
  append_range(log, to, n + 5, 1);
  check_records(log, 0, n + 5, 0, to, 1);
  close_ok(log);
  felix_recovery_report rep;
  log = open_ok(t, &c, &rep);
  assert_int_equal(rep.truncated_bytes, 0);
  assert_int_equal(rep.indexes_rebuilt, 0); /* indexes kept exact through truncation */
  check_records(log, 0, n + 5, 0, to, 1);
  close_ok(log);
  /* The index files equal fresh rebuilds. */
  snap orig, now;
  snap_take(t, &orig);
  uint64_t bases[64];
  size_t nb = list_bases(t, bases, 64);
  for (size_t i = 0; i < nb; i++) {
    char idx[32];
    seg_name(idx, bases[i], ".index");
    remove_file(t, idx);
  }
  log = open_ok(t, &c, &rep);
  assert_int_equal(rep.indexes_rebuilt, nb);
  close_ok(log);
  snap_take(t, &now);
  snap_assert_equal(&orig, &now);
  snap_free(&orig);
  snap_free(&now);
  check_segments_obey_size_limit(t, UINT64_MAX);
}

static void truncate_to_middle_of_newest_segment_then_rewrite_survives_reopen(void **s) {
  (void)s;
  tlog t = tlog_new();
  uint64_t bases[16];
  size_t nb = build_segments(&t, NREC, bases, 16);
  uint64_t to = bases[nb - 1] + (NREC - bases[nb - 1]) / 2;
  assert_true(to > bases[nb - 1]);
  truncate_then_rewrite(&t, NREC, to);
  assert_int_equal(list_bases(&t, bases, 16), nb);
  tlog_free(&t);
}

static void truncate_to_middle_of_newest_segment_cuts_at_that_record(void **s) {
  (void)s;
  tlog t = tlog_new();
  uint64_t bases[16];
  size_t nb = build_segments(&t, NREC, bases, 16);
  uint64_t to = bases[nb - 1] + 3;
  uint64_t pos = position_of(&t, to);
  char newest[32];
  seg_name(newest, bases[nb - 1], ".log");
  felix_log_config c = cfg();
  felix_log *log = open_ok(&t, &c, NULL);
  felix_err err = {0};
  assert_int_equal(felix_log_truncate(log, to, &err), FELIX_OK);
  assert_int_equal(file_size(&t, newest), pos);
  close_ok(log);
  assert_reopen_idempotent(&t, to);
  tlog_free(&t);
}

static void truncate_to_segment_boundary_deletes_later_segments(void **s) {
  (void)s;
  tlog t = tlog_new();
  uint64_t bases[16];
  size_t nb = build_segments(&t, NREC, bases, 16);
  uint64_t to = bases[1];
  felix_log_config c = cfg();
  felix_log *log = open_ok(&t, &c, NULL);
  felix_err err = {0};
  assert_int_equal(felix_log_truncate(log, to, &err), FELIX_OK);
  felix_log_stats st;
  felix_log_get_stats(log, &st);
  assert_int_equal(st.end_offset, to);
  assert_int_equal(st.segments, 1);
  close_ok(log);
  uint64_t now[16];
  assert_int_equal(list_bases(&t, now, 16), 1);
  assert_int_equal(now[0], 0);
  for (size_t i = 1; i < nb; i++) {
    char idx[32];
    seg_name(idx, bases[i], ".index");
    assert_false(file_exists(&t, idx));
  }
  truncate_then_rewrite(&t, NREC, to);
  /* The rewritten records start a segment at the same base as before. */
  assert_int_equal(list_bases(&t, now, 16), nb);
  assert_int_equal(now[1], bases[1]);
  tlog_free(&t);
}

static void truncate_to_middle_of_sealed_segment_then_rewrite_survives_reopen(void **s) {
  (void)s;
  tlog t = tlog_new();
  uint64_t bases[16];
  build_segments(&t, NREC, bases, 16);
  uint64_t to = bases[1] + 5;
  truncate_then_rewrite(&t, NREC, to);
  tlog_free(&t);
}

static void truncate_to_log_start_empties_the_log(void **s) {
  (void)s;
  tlog t = tlog_new();
  uint64_t bases[16];
  build_segments(&t, NREC, bases, 16);
  felix_log_config c = cfg();
  felix_log *log = open_ok(&t, &c, NULL);
  felix_err err = {0};
  assert_int_equal(felix_log_truncate(log, 0, &err), FELIX_OK);
  assert_int_equal(end_offset(log), 0);
  felix_record_batch b;
  assert_int_equal(felix_log_read(log, 0, 10, SIZE_MAX, &b, &err), FELIX_OK);
  assert_int_equal(b.count, 0);
  felix_record_batch_free(&b);
  close_ok(log);
  assert_int_equal(list_bases(&t, bases, 16), 1);
  assert_int_equal(file_size(&t, SEG0), FELIX_SEG_HEADER_LEN);
  assert_int_equal(file_size(&t, IDX0), FELIX_IDX_HEADER_LEN);
  assert_reopen_idempotent(&t, 0);
  truncate_then_rewrite(&t, NREC, 0);
  tlog_free(&t);
}

static void truncate_outside_the_log_is_refused(void **s) {
  (void)s;
  tlog t = tlog_new();
  build(&t, 10);
  felix_log_config c = cfg();
  felix_log *log = open_ok(&t, &c, NULL);
  felix_err err = {0};
  assert_int_equal(felix_log_truncate(log, 11, &err), FELIX_E_INVAL);
  assert_contains(err.msg, "shard " SHARD);
  assert_int_equal(felix_log_truncate(log, 10, &err), FELIX_OK); /* at the end: no-op */
  check_all(log, 10);
  close_ok(log);
  tlog_free(&t);
}

static void truncate_fails_pending_work_bound_to_cut_offsets(void **s) {
  (void)s;
  tlog t = tlog_new();
  felix_log_config c = cfg();
  felix_log *log = open_ok(&t, &c, NULL);
  append_range(log, 0, 5, 0);
  uint8_t p[8] = "payload";
  felix_record_in r = {p, sizeof p, 0};
  felix_appended a;
  felix_err err = {0};
  assert_int_equal(felix_log_append_batch(log, &r, 1, &a, &err), FELIX_OK);
  assert_int_equal(a.first_offset, 5);
  assert_int_equal(felix_log_truncate(log, 5, &err), FELIX_OK);
  /* A different record now sits at offset 5; the old append still fails. */
  assert_int_equal(append_one(log, 5, 1, payload_len(5)), 5);
  assert_int_equal(felix_log_wait_held(log, &a, &err), FELIX_E_TRUNCATED);
  close_ok(log);
  tlog_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(torn_short_record_header_is_cut),
      cmocka_unit_test(torn_payload_cut_short_is_cut),
      cmocka_unit_test(torn_payload_len_that_cannot_fit_is_cut),
      cmocka_unit_test(torn_bad_checksum_of_last_record_is_cut),
      cmocka_unit_test(torn_out_of_order_offset_in_last_record_is_cut),
      cmocka_unit_test(torn_zero_filled_tail_after_records_is_cut),
      cmocka_unit_test(torn_zero_filled_tail_shorter_than_a_header_is_cut),
      cmocka_unit_test(torn_last_records_zeroed_in_place_are_cut),
      cmocka_unit_test(torn_tail_of_newest_of_several_segments_is_cut),
      cmocka_unit_test(torn_only_record_of_newest_segment_leaves_it_empty),
      cmocka_unit_test(interior_corruption_of_newest_segment_is_an_error_naming_the_byte),
      cmocka_unit_test(interior_out_of_order_offset_of_newest_segment_is_an_error),
      cmocka_unit_test(bad_checksum_before_a_nonzero_tail_is_an_error),
      cmocka_unit_test(damage_at_end_of_sealed_segment_is_an_error),
      cmocka_unit_test(torn_end_of_sealed_segment_is_an_error),
      cmocka_unit_test(zero_tail_on_sealed_segment_is_an_error),
      cmocka_unit_test(bad_header_magic_is_an_error_naming_byte_0),
      cmocka_unit_test(bad_header_crc_is_an_error_naming_byte_0),
      cmocka_unit_test(unknown_version_is_an_error_naming_byte_0),
      cmocka_unit_test(unknown_flags_are_an_error_naming_byte_0),
      cmocka_unit_test(unknown_version_of_a_sealed_segment_is_an_error),
      cmocka_unit_test(segment_shorter_than_its_header_is_an_error),
      cmocka_unit_test(gap_between_segments_is_an_error),
      cmocka_unit_test(header_base_differing_from_file_name_is_an_error),
      cmocka_unit_test(header_base_differing_from_name_with_one_record_is_an_error_not_a_repair),
      cmocka_unit_test(header_base_differing_from_name_in_sealed_segment_is_an_error),
      cmocka_unit_test(missing_indexes_are_rebuilt_byte_identical),
      cmocka_unit_test(garbage_indexes_are_rebuilt_byte_identical),
      cmocka_unit_test(truncated_index_of_sealed_segment_is_rebuilt),
      cmocka_unit_test(index_rebuilt_after_torn_tail_matches_a_fresh_rebuild),
      cmocka_unit_test(leftover_temp_files_are_removed),
      cmocka_unit_test(rollover_keeps_segments_within_segment_bytes),
      cmocka_unit_test(oversized_record_goes_alone_into_its_own_segment),
      cmocka_unit_test(reads_across_segment_boundaries_return_every_record),
      cmocka_unit_test(periodic_mode_rolls_and_recovers_the_same),
      cmocka_unit_test(truncate_to_middle_of_newest_segment_then_rewrite_survives_reopen),
      cmocka_unit_test(truncate_to_middle_of_newest_segment_cuts_at_that_record),
      cmocka_unit_test(truncate_to_segment_boundary_deletes_later_segments),
      cmocka_unit_test(truncate_to_middle_of_sealed_segment_then_rewrite_survives_reopen),
      cmocka_unit_test(truncate_to_log_start_empties_the_log),
      cmocka_unit_test(truncate_outside_the_log_is_refused),
      cmocka_unit_test(truncate_fails_pending_work_bound_to_cut_offsets),
  };
  return cmocka_run_group_tests(tests, NULL, remove_leftover_roots);
}
