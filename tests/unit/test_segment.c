/* test_segment.c — the segment and index codecs of format v1 (DESIGN.md §3.1):
 * golden vectors byte for byte, header and index rejections, segment file
 * names and the index spacing rule. */
#include "testutil.h"

#include <fcntl.h>
#include <stdint.h>

#include <zlib.h>

#include "felix/bytes.h"
#include "felix/log.h"
#include "felix/segment.h"

static const uint8_t golden_header[FELIX_SEG_HEADER_LEN] = {
    0x46, 0x4C, 0x53, 0x47, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0xD9, 0x5F, 0x63, 0x18, 0x00, 0x00, 0x00, 0x00};

static const uint8_t golden_record[FELIX_REC_HEADER_LEN + 2] = {
    0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, 0x63, 0x3D, 0xA1, 0x4E, 0x68, 0x69};

/* ---- golden vectors ---------------------------------------------------- */

static void header_encode_matches_golden_vector(void **s) {
  (void)s;
  uint8_t out[FELIX_SEG_HEADER_LEN];
  memset(out, 0xAA, sizeof out);
  felix_seg_header_encode(out, 1, 2);
  assert_memory_equal(out, golden_header, sizeof golden_header);
}

static void header_decode_of_golden_vector_gives_its_fields(void **s) {
  (void)s;
  felix_seg_header h;
  const char *kind = "untouched";
  assert_true(felix_seg_header_decode(golden_header, &h, &kind));
  assert_int_equal(h.version, 1);
  assert_int_equal(h.flags, 0);
  assert_int_equal(h.base_offset, 1);
  assert_int_equal(h.created_at_micros, 2);
}

static void record_encode_matches_golden_vector(void **s) {
  (void)s;
  uint8_t hdr[FELIX_REC_HEADER_LEN];
  memset(hdr, 0xAA, sizeof hdr);
  felix_record_header_encode(hdr, 7, 9, "hi", 2);
  assert_memory_equal(hdr, golden_record, FELIX_REC_HEADER_LEN);
  /* The payload follows the header unchanged. */
  assert_memory_equal(golden_record + FELIX_REC_HEADER_LEN, "hi", 2);
}

static void record_checksum_covers_first_20_bytes_then_payload(void **s) {
  (void)s;
  assert_int_equal(felix_record_checksum(golden_record, "hi", 2), 0x633DA14Eu);
  /* Changing the payload or any of the 20 covered header bytes changes it. */
  assert_int_not_equal(felix_record_checksum(golden_record, "hj", 2), 0x633DA14Eu);
  uint8_t h[20];
  memcpy(h, golden_record, 20);
  h[19] ^= 1;
  assert_int_not_equal(felix_record_checksum(h, "hi", 2), 0x633DA14Eu);
}

static void big_endian_codecs_round_trip(void **s) {
  (void)s;
  uint8_t b[8];
  felix_put_u16(b, 0x0102);
  assert_int_equal(b[0], 1);
  assert_int_equal(b[1], 2);
  assert_int_equal(felix_get_u16(b), 0x0102);
  felix_put_u32(b, 0xA1B2C3D4u);
  assert_int_equal(b[0], 0xA1);
  assert_int_equal(b[3], 0xD4);
  assert_int_equal(felix_get_u32(b), 0xA1B2C3D4u);
  felix_put_u64(b, 0x0102030405060708ull);
  assert_int_equal(b[0], 1);
  assert_int_equal(b[7], 8);
  assert_true(felix_get_u64(b) == 0x0102030405060708ull);
}

/* ---- header rejections -------------------------------------------------- */

/* Rewrites the header CRC so that only the intended field is wrong. */
static void reseal_header(uint8_t h[FELIX_SEG_HEADER_LEN]) {
  uLong c = crc32(0, h, 24);
  felix_put_u32(h + 24, (uint32_t)c);
}

static void header_decode_rejects_bad_magic(void **s) {
  (void)s;
  uint8_t h[FELIX_SEG_HEADER_LEN];
  memcpy(h, golden_header, sizeof h);
  h[0] = 'X';
  reseal_header(h);
  felix_seg_header out;
  const char *kind = NULL;
  assert_false(felix_seg_header_decode(h, &out, &kind));
  assert_string_equal(kind, "bad_magic");
}

static void header_decode_rejects_bad_crc(void **s) {
  (void)s;
  uint8_t h[FELIX_SEG_HEADER_LEN];
  memcpy(h, golden_header, sizeof h);
  h[17] ^= 0x40; /* created_at changed, CRC left stale */
  felix_seg_header out;
  const char *kind = NULL;
  assert_false(felix_seg_header_decode(h, &out, &kind));
  assert_string_equal(kind, "bad_header_crc");
  /* A damaged CRC field itself is rejected the same way. */
  memcpy(h, golden_header, sizeof h);
  h[27] ^= 1;
  kind = NULL;
  assert_false(felix_seg_header_decode(h, &out, &kind));
  assert_string_equal(kind, "bad_header_crc");
}

static void header_decode_rejects_unknown_version(void **s) {
  (void)s;
  uint8_t h[FELIX_SEG_HEADER_LEN];
  memcpy(h, golden_header, sizeof h);
  felix_put_u16(h + 4, 2);
  reseal_header(h);
  felix_seg_header out;
  const char *kind = NULL;
  assert_false(felix_seg_header_decode(h, &out, &kind));
  assert_string_equal(kind, "unknown_version");
  felix_put_u16(h + 4, 0);
  reseal_header(h);
  kind = NULL;
  assert_false(felix_seg_header_decode(h, &out, &kind));
  assert_string_equal(kind, "unknown_version");
}

static void header_decode_rejects_unknown_flags(void **s) {
  (void)s;
  uint8_t h[FELIX_SEG_HEADER_LEN];
  memcpy(h, golden_header, sizeof h);
  felix_put_u16(h + 6, 0x0001);
  reseal_header(h);
  felix_seg_header out;
  const char *kind = NULL;
  assert_false(felix_seg_header_decode(h, &out, &kind));
  assert_string_equal(kind, "unknown_flags");
  felix_put_u16(h + 6, 0x8000);
  reseal_header(h);
  kind = NULL;
  assert_false(felix_seg_header_decode(h, &out, &kind));
  assert_string_equal(kind, "unknown_flags");
}

/* ---- index codec -------------------------------------------------------- */

static void index_header_encode_has_documented_layout(void **s) {
  (void)s;
  uint8_t h[FELIX_IDX_HEADER_LEN];
  memset(h, 0xAA, sizeof h);
  felix_idx_header_encode(h, 1);
  static const uint8_t want[FELIX_IDX_HEADER_LEN] = {
      'F', 'L', 'S', 'I', 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0};
  assert_memory_equal(h, want, sizeof want);
  uint8_t e[FELIX_IDX_ENTRY_LEN];
  felix_idx_entry_encode(e, 7, 32);
  static const uint8_t want_e[FELIX_IDX_ENTRY_LEN] = {0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 32};
  assert_memory_equal(e, want_e, sizeof want_e);
}

static const felix_idx_entry sample_entries[] = {{100, 32}, {105, 300}, {111, 700}, {200, 5000}};
#define N_SAMPLE (sizeof sample_entries / sizeof sample_entries[0])

static void index_encode_decode_round_trips(void **s) {
  (void)s;
  size_t len = 0;
  uint8_t *buf = felix_idx_encode(100, sample_entries, N_SAMPLE, &len);
  assert_non_null(buf);
  assert_int_equal(len, FELIX_IDX_HEADER_LEN + N_SAMPLE * FELIX_IDX_ENTRY_LEN);
  assert_memory_equal(buf, "FLSI", 4);
  assert_true(felix_get_u64(buf + 8) == 100);
  assert_true(felix_get_u64(buf + FELIX_IDX_HEADER_LEN + FELIX_IDX_ENTRY_LEN) == 105);
  assert_true(felix_get_u64(buf + FELIX_IDX_HEADER_LEN + FELIX_IDX_ENTRY_LEN + 8) == 300);
  felix_idx_entry *e = NULL;
  size_t n = 0;
  const char *kind = NULL;
  uint64_t pos = 99;
  assert_true(felix_idx_decode(buf, len, 100, &e, &n, &kind, &pos));
  assert_int_equal(n, N_SAMPLE);
  for (size_t i = 0; i < n; i++) {
    assert_true(e[i].offset == sample_entries[i].offset);
    assert_true(e[i].position == sample_entries[i].position);
  }
  free(e);
  free(buf);
}

static void index_with_no_entries_round_trips(void **s) {
  (void)s;
  size_t len = 0;
  uint8_t *buf = felix_idx_encode(42, NULL, 0, &len);
  assert_non_null(buf);
  assert_int_equal(len, FELIX_IDX_HEADER_LEN);
  felix_idx_entry *e = (felix_idx_entry *)buf; /* must be overwritten */
  size_t n = 7;
  const char *kind = NULL;
  uint64_t pos;
  assert_true(felix_idx_decode(buf, len, 42, &e, &n, &kind, &pos));
  assert_int_equal(n, 0);
  assert_null(e);
  free(buf);
}

/* Decodes buf expecting rejection; checks kind and position. */
static void expect_idx_reject(const uint8_t *buf, size_t len, uint64_t base, const char *want_kind,
                              uint64_t want_pos) {
  felix_idx_entry *e = (felix_idx_entry *)1;
  size_t n = 99;
  const char *kind = NULL;
  uint64_t pos = 12345;
  assert_false(felix_idx_decode(buf, len, base, &e, &n, &kind, &pos));
  assert_non_null(kind);
  assert_string_equal(kind, want_kind);
  assert_int_equal(pos, want_pos);
  assert_null(e);
  assert_int_equal(n, 0);
}

static void index_decode_rejects_short_header(void **s) {
  (void)s;
  size_t len;
  uint8_t *buf = felix_idx_encode(100, sample_entries, N_SAMPLE, &len);
  expect_idx_reject(buf, FELIX_IDX_HEADER_LEN - 1, 100, "short_index_header", 0);
  expect_idx_reject(buf, 0, 100, "short_index_header", 0);
  free(buf);
}

static void index_decode_rejects_bad_magic(void **s) {
  (void)s;
  size_t len;
  uint8_t *buf = felix_idx_encode(100, sample_entries, N_SAMPLE, &len);
  memcpy(buf, "FLSG", 4); /* a segment magic is not an index magic */
  expect_idx_reject(buf, len, 100, "bad_index_magic", 0);
  free(buf);
}

static void index_decode_rejects_unknown_version_and_flags(void **s) {
  (void)s;
  size_t len;
  uint8_t *buf = felix_idx_encode(100, sample_entries, N_SAMPLE, &len);
  felix_put_u16(buf + 4, 2);
  expect_idx_reject(buf, len, 100, "unknown_version", 0);
  felix_put_u16(buf + 4, 1);
  felix_put_u16(buf + 6, 4);
  expect_idx_reject(buf, len, 100, "unknown_flags", 0);
  free(buf);
}

static void index_decode_rejects_base_mismatch_at_byte_8(void **s) {
  (void)s;
  size_t len;
  uint8_t *buf = felix_idx_encode(100, sample_entries, N_SAMPLE, &len);
  expect_idx_reject(buf, len, 101, "index_base_mismatch", 8);
  free(buf);
}

static void index_decode_rejects_torn_entry_at_its_start(void **s) {
  (void)s;
  size_t len;
  uint8_t *buf = felix_idx_encode(100, sample_entries, N_SAMPLE, &len);
  /* Cut 5 bytes off the last entry: the torn entry starts at len - 16. */
  expect_idx_reject(buf, len - 5, 100, "torn_index_entry", len - FELIX_IDX_ENTRY_LEN);
  /* One byte past the header. */
  expect_idx_reject(buf, FELIX_IDX_HEADER_LEN + 1, 100, "torn_index_entry", FELIX_IDX_HEADER_LEN);
  free(buf);
}

static void index_decode_rejects_out_of_order_entries(void **s) {
  (void)s;
  size_t len;
  /* Offsets going down between entries 1 and 2. */
  felix_idx_entry bad_off[] = {{100, 32}, {110, 300}, {109, 700}};
  uint8_t *buf = felix_idx_encode(100, bad_off, 3, &len);
  expect_idx_reject(buf, len, 100, "index_entry_out_of_order", FELIX_IDX_HEADER_LEN + 2 * FELIX_IDX_ENTRY_LEN);
  free(buf);
  /* Positions not ascending. */
  felix_idx_entry bad_pos[] = {{100, 32}, {110, 300}, {120, 300}};
  buf = felix_idx_encode(100, bad_pos, 3, &len);
  expect_idx_reject(buf, len, 100, "index_entry_out_of_order", FELIX_IDX_HEADER_LEN + 2 * FELIX_IDX_ENTRY_LEN);
  free(buf);
  /* Repeated offset. */
  felix_idx_entry dup_off[] = {{100, 32}, {100, 300}};
  buf = felix_idx_encode(100, dup_off, 2, &len);
  expect_idx_reject(buf, len, 100, "index_entry_out_of_order", FELIX_IDX_HEADER_LEN + FELIX_IDX_ENTRY_LEN);
  free(buf);
}

static void index_decode_rejects_first_entry_not_at_first_record(void **s) {
  (void)s;
  size_t len;
  felix_idx_entry wrong_off[] = {{101, 32}};
  uint8_t *buf = felix_idx_encode(100, wrong_off, 1, &len);
  expect_idx_reject(buf, len, 100, "index_entry_out_of_order", FELIX_IDX_HEADER_LEN);
  free(buf);
  felix_idx_entry wrong_pos[] = {{100, 56}};
  buf = felix_idx_encode(100, wrong_pos, 1, &len);
  expect_idx_reject(buf, len, 100, "index_entry_out_of_order", FELIX_IDX_HEADER_LEN);
  free(buf);
}

/* ---- segment file names ------------------------------------------------- */

static void seg_format_name_is_20_zero_padded_digits(void **s) {
  (void)s;
  char out[32];
  felix_seg_format_name(out, 0, ".log");
  assert_string_equal(out, "00000000000000000000.log");
  felix_seg_format_name(out, 42, ".index");
  assert_string_equal(out, "00000000000000000042.index");
  felix_seg_format_name(out, UINT64_MAX, ".log");
  assert_string_equal(out, "18446744073709551615.log");
}

static void seg_parse_name_accepts_formatted_names(void **s) {
  (void)s;
  const uint64_t bases[] = {0, 1, 42, 1234567890123ull, UINT64_MAX};
  for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++) {
    char name[32];
    felix_seg_format_name(name, bases[i], ".log");
    uint64_t got = 7;
    assert_true(felix_seg_parse_name(name, ".log", &got));
    assert_true(got == bases[i]);
    felix_seg_format_name(name, bases[i], ".index");
    got = 7;
    assert_true(felix_seg_parse_name(name, ".index", &got));
    assert_true(got == bases[i]);
  }
}

static void seg_parse_name_rejects_bad_names(void **s) {
  (void)s;
  const char *bad[] = {
      "",
      ".log",
      "0000000000000000042.log",     /* 19 digits */
      "000000000000000000042.log",   /* 21 digits */
      "00000000000000000042.index",  /* other suffix */
      "00000000000000000042.log.tmp",
      ".00000000000000000042.log.tmp",
      "0000000000000000004a.log",    /* not a digit */
      "-0000000000000000042.log",
      " 0000000000000000042.log",
      "18446744073709551616.log",    /* UINT64_MAX + 1 overflows */
      "99999999999999999999.log",
      "00000000000000000042.LOG",
      "00000000000000000042log",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    uint64_t got = 777;
    if (felix_seg_parse_name(bad[i], ".log", &got)) fail_msg("accepted bad segment name '%s'", bad[i]);
    assert_int_equal(got, 777); /* untouched on failure */
  }
}

/* ---- index spacing rule ------------------------------------------------- */

static void idx_wants_entry_for_first_record_and_every_spacing_bytes(void **s) {
  (void)s;
  /* No entry yet: always. */
  assert_true(felix_idx_wants_entry(FELIX_SEG_HEADER_LEN, 0, 256));
  assert_true(felix_idx_wants_entry(100000, 0, 256));
  /* After an entry at 32: only once the distance reaches the spacing. */
  assert_false(felix_idx_wants_entry(32, 32, 256));
  assert_false(felix_idx_wants_entry(32 + 255, 32, 256));
  assert_true(felix_idx_wants_entry(32 + 256, 32, 256));
  assert_true(felix_idx_wants_entry(32 + 257, 32, 256));
  /* Spacing 1: every record. */
  assert_true(felix_idx_wants_entry(33, 32, 1));
  /* Default spacing. */
  assert_false(felix_idx_wants_entry(4000, 32, FELIX_DEFAULT_INDEX_SPACING));
  assert_true(felix_idx_wants_entry(32 + 4096, 32, FELIX_DEFAULT_INDEX_SPACING));
}

/* The entries that appending a sequence of records produces. */
static void idx_spacing_rule_on_a_record_sequence(void **s) {
  (void)s;
  /* 10 records of 100 bytes each (24 header + 76 payload), spacing 256. */
  uint64_t pos = FELIX_SEG_HEADER_LEN, last = 0;
  uint64_t want[] = {32, 332, 632, 932};
  size_t got = 0;
  for (int i = 0; i < 10; i++) {
    if (felix_idx_wants_entry(pos, last, 256)) {
      assert_true(got < sizeof want / sizeof want[0]);
      assert_int_equal(pos, want[got]);
      got++;
      last = pos;
    }
    pos += 100;
  }
  assert_int_equal(got, 4);
}

/* ---- the read-only scanner ---------------------------------------------- */

/* A segment file: header(base 7) followed by the golden record (offset 7). */
static int golden_segment_fd(char **dir, size_t cut) {
  uint8_t file[FELIX_SEG_HEADER_LEN + sizeof golden_record];
  felix_seg_header_encode(file, 7, 2);
  memcpy(file + FELIX_SEG_HEADER_LEN, golden_record, sizeof golden_record);
  *dir = tu_mkdtemp();
  tu_write(*dir, "00000000000000000007.log", file, sizeof file - cut);
  char *p = tu_path(*dir, "00000000000000000007.log");
  int fd = open(p, O_RDONLY);
  free(p);
  assert_true(fd >= 0);
  return fd;
}

typedef struct seen {
  int n;
  uint64_t offset, ts, pos;
  char payload[8];
} seen;

static void on_record(void *ctx, uint64_t offset, uint64_t ts, uint64_t pos, const uint8_t *payload,
                      uint32_t len) {
  seen *s = ctx;
  s->n++;
  s->offset = offset;
  s->ts = ts;
  s->pos = pos;
  assert_true(len < sizeof s->payload);
  memcpy(s->payload, payload, len);
  s->payload[len] = '\0';
}

static void scan_of_golden_segment_yields_the_golden_record(void **s) {
  (void)s;
  char *dir;
  int fd = golden_segment_fd(&dir, 0);
  seen got = {0};
  felix_scan_opts o = {.start_position = FELIX_SEG_HEADER_LEN, .index_spacing = 256, .is_newest = true,
                       .on_record = on_record, .ctx = &got};
  felix_seg_scan sc;
  felix_err err = {0};
  assert_int_equal(felix_seg_scan_fd(fd, "golden.log", &o, &sc, &err), FELIX_OK);
  assert_false(sc.has_problem);
  assert_int_equal(sc.header.base_offset, 7);
  assert_int_equal(sc.records, 1);
  assert_int_equal(sc.next_offset, 8);
  assert_int_equal(sc.valid_end, FELIX_SEG_HEADER_LEN + sizeof golden_record);
  assert_int_equal(sc.file_size, sc.valid_end);
  assert_int_equal(sc.last_timestamp_micros, 9);
  assert_int_equal(sc.n_entries, 1);
  assert_int_equal(sc.entries[0].offset, 7);
  assert_int_equal(sc.entries[0].position, FELIX_SEG_HEADER_LEN);
  assert_int_equal(got.n, 1);
  assert_int_equal(got.offset, 7);
  assert_int_equal(got.ts, 9);
  assert_int_equal(got.pos, FELIX_SEG_HEADER_LEN);
  assert_string_equal(got.payload, "hi");
  felix_seg_scan_free(&sc);
  assert_null(sc.entries);
  close(fd);
  tu_rmdir(dir);
}

static void scan_of_cut_record_is_repairable_only_in_newest_segment(void **s) {
  (void)s;
  char *dir;
  int fd = golden_segment_fd(&dir, 1); /* last payload byte missing */
  felix_scan_opts o = {.start_position = FELIX_SEG_HEADER_LEN, .index_spacing = 256, .is_newest = true};
  felix_seg_scan sc;
  felix_err err = {0};
  assert_int_equal(felix_seg_scan_fd(fd, "golden.log", &o, &sc, &err), FELIX_OK);
  assert_true(sc.has_problem);
  assert_string_equal(sc.problem.kind, "torn_record");
  assert_int_equal(sc.problem.position, FELIX_SEG_HEADER_LEN);
  assert_string_equal(sc.problem.file, "golden.log");
  assert_true(sc.problem.repairable);
  assert_int_equal(sc.valid_end, FELIX_SEG_HEADER_LEN);
  assert_int_equal(sc.records, 0);
  assert_int_equal(sc.next_offset, 7);
  felix_seg_scan_free(&sc);
  o.is_newest = false;
  assert_int_equal(felix_seg_scan_fd(fd, "golden.log", &o, &sc, &err), FELIX_OK);
  assert_true(sc.has_problem);
  assert_string_equal(sc.problem.kind, "torn_record");
  assert_false(sc.problem.repairable);
  felix_seg_scan_free(&sc);
  close(fd);
  tu_rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(header_encode_matches_golden_vector),
      cmocka_unit_test(header_decode_of_golden_vector_gives_its_fields),
      cmocka_unit_test(record_encode_matches_golden_vector),
      cmocka_unit_test(record_checksum_covers_first_20_bytes_then_payload),
      cmocka_unit_test(big_endian_codecs_round_trip),
      cmocka_unit_test(header_decode_rejects_bad_magic),
      cmocka_unit_test(header_decode_rejects_bad_crc),
      cmocka_unit_test(header_decode_rejects_unknown_version),
      cmocka_unit_test(header_decode_rejects_unknown_flags),
      cmocka_unit_test(index_header_encode_has_documented_layout),
      cmocka_unit_test(index_encode_decode_round_trips),
      cmocka_unit_test(index_with_no_entries_round_trips),
      cmocka_unit_test(index_decode_rejects_short_header),
      cmocka_unit_test(index_decode_rejects_bad_magic),
      cmocka_unit_test(index_decode_rejects_unknown_version_and_flags),
      cmocka_unit_test(index_decode_rejects_base_mismatch_at_byte_8),
      cmocka_unit_test(index_decode_rejects_torn_entry_at_its_start),
      cmocka_unit_test(index_decode_rejects_out_of_order_entries),
      cmocka_unit_test(index_decode_rejects_first_entry_not_at_first_record),
      cmocka_unit_test(seg_format_name_is_20_zero_padded_digits),
      cmocka_unit_test(seg_parse_name_accepts_formatted_names),
      cmocka_unit_test(seg_parse_name_rejects_bad_names),
      cmocka_unit_test(idx_wants_entry_for_first_record_and_every_spacing_bytes),
      cmocka_unit_test(idx_spacing_rule_on_a_record_sequence),
      cmocka_unit_test(scan_of_golden_segment_yields_the_golden_record),
      cmocka_unit_test(scan_of_cut_record_is_repairable_only_in_newest_segment),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
