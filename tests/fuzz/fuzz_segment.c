/* fuzz_segment.c — libFuzzer target for the segment scanner and the index
 * decoder (DESIGN.md §3.1).
 *
 * The input is used twice: as the bytes of a segment file (scanned as the
 * newest segment and as a sealed one, then resumed from an index entry, then
 * repaired when the damage is repairable) and as the bytes of an index file.
 * Recovery and `felix-inspect verify` both trust what the scanner says, so
 * every property checked here is one they rely on:
 *   - positions it reports lie inside the file, and a clean scan ends at EOF;
 *   - only the newest segment's damage is ever repairable, and the damage
 *     found does not otherwise depend on which segment it is;
 *   - resuming from any derived index entry reaches the same verdict;
 *   - truncating at a repairable problem leaves a clean segment (idempotent);
 *   - the index it derives encodes and decodes back unchanged.
 *
 * Built with -DFELIX_FUZZ_SEEDS it is instead a small program that writes a
 * seed corpus built with the library's own encoders (tests/fuzz/run.sh). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "felix/bytes.h"
#include "felix/segment.h"
#include "fuzz_check.h"

/* Small spacing so that inputs of a few KiB already derive several entries. */
#define NEWEST_SPACING 64u

/* What the record callback saw; checked against the scan's own summary. */
typedef struct trace {
  uint64_t records;
  uint64_t next_pos;    /* where the next record must start */
  uint64_t next_offset; /* the offset it must carry */
  uint64_t last_ts;
  bool started;
} trace;

static void on_record(void *ctx, uint64_t offset, uint64_t ts, uint64_t position,
                      const uint8_t *payload, uint32_t len) {
  trace *t = ctx;
  (void)payload;
  CHECK(len <= FELIX_MAX_PAYLOAD);
  if (t->started) {
    CHECK(position == t->next_pos);
    CHECK(offset == t->next_offset);
  }
  t->started = true;
  t->next_pos = position + FELIX_REC_HEADER_LEN + len;
  t->next_offset = offset + 1;
  t->last_ts = ts;
  t->records++;
}

static int file_with(const uint8_t *data, size_t size) {
  /* memfd: a real descriptor for pread/fstat that leaves nothing on disk. */
  int fd = memfd_create("fuzz_segment", MFD_CLOEXEC);
  CHECK(fd >= 0);
  size_t done = 0;
  while (done < size) {
    ssize_t n = write(fd, data + done, size - done);
    CHECK(n > 0 || errno == EINTR);
    if (n > 0) done += (size_t)n;
  }
  return fd;
}

static void scan(int fd, felix_scan_opts o, felix_seg_scan *s, trace *t) {
  memset(t, 0, sizeof *t);
  o.on_record = on_record;
  o.ctx = t;
  felix_err err;
  /* A memfd never fails to read: any failing status is a scanner bug. */
  CHECK(felix_seg_scan_fd(fd, "fuzz.log", &o, s, &err) == FELIX_OK);
}

/* Header damage is reported at byte 0; record damage never is (>= 32). */
static bool header_rejected(const felix_seg_scan *s) {
  return s->has_problem && s->problem.position == 0;
}

static void check_entries(const felix_seg_scan *s, uint64_t start_pos) {
  CHECK(s->n_entries <= s->records);
  for (size_t i = 0; i < s->n_entries; i++) {
    CHECK(s->entries[i].position >= start_pos);
    CHECK(s->entries[i].position < s->valid_end);
    CHECK(s->entries[i].offset < s->next_offset);
    if (i > 0) {
      CHECK(s->entries[i].offset > s->entries[i - 1].offset);
      CHECK(s->entries[i].position > s->entries[i - 1].position);
    }
  }
}

static void check_scan(const felix_seg_scan *s, uint64_t size, const felix_scan_opts *o,
                       const trace *t) {
  CHECK(s->file_size == size);
  CHECK(s->valid_end <= size);
  CHECK(!s->has_problem || s->problem.position <= size);
  CHECK(!s->has_problem || s->problem.kind[0] != '\0');
  CHECK(!s->problem.repairable || (s->has_problem && o->is_newest));
  CHECK(t->records == s->records);
  if (header_rejected(s)) {
    CHECK(s->records == 0 && s->valid_end == 0 && s->n_entries == 0);
    CHECK(!s->problem.repairable);
    return;
  }
  bool full = o->start_position <= FELIX_SEG_HEADER_LEN;
  uint64_t start_pos = full ? FELIX_SEG_HEADER_LEN : o->start_position;
  uint64_t start_off = full ? s->header.base_offset : o->start_offset;
  CHECK(size >= FELIX_SEG_HEADER_LEN && s->valid_end >= start_pos);
  CHECK(s->has_problem ? s->problem.position == s->valid_end : s->valid_end == size);
  CHECK(s->next_offset == start_off + s->records);
  CHECK(s->records == 0 || (t->next_pos == s->valid_end && t->last_ts == s->last_timestamp_micros));
  check_entries(s, start_pos);
  if (full) {
    CHECK((s->records > 0) == (s->n_entries > 0));
    CHECK(s->n_entries == 0 ||
          (s->entries[0].offset == start_off && s->entries[0].position == FELIX_SEG_HEADER_LEN));
  }
  if (o->index_spacing <= 1) CHECK(s->n_entries == s->records);
}

/* Newest and sealed, full and resumed: the scan ends at the same place with
 * the same damage; only whether it may be repaired and how many records the
 * scan itself saw can differ. */
static void check_same_verdict(const felix_seg_scan *a, const felix_seg_scan *b) {
  CHECK(a->has_problem == b->has_problem);
  CHECK(a->valid_end == b->valid_end);
  CHECK(a->next_offset == b->next_offset);
  if (a->has_problem) {
    CHECK(a->problem.position == b->problem.position);
    CHECK(strcmp(a->problem.kind, b->problem.kind) == 0);
  }
}

static bool same_entries(const felix_idx_entry *a, size_t na, const felix_idx_entry *b, size_t nb) {
  if (na != nb) return false;
  for (size_t i = 0; i < na; i++)
    if (a[i].offset != b[i].offset || a[i].position != b[i].position) return false;
  return true;
}

/* The index a scan derives must be one the decoder accepts, unchanged. */
static void check_index_round_trip(const felix_seg_scan *s) {
  size_t len;
  uint8_t *buf = felix_idx_encode(s->header.base_offset, s->entries, s->n_entries, &len);
  CHECK(buf != NULL);
  felix_idx_entry *back;
  size_t n;
  const char *kind = NULL;
  uint64_t pos;
  CHECK(felix_idx_decode(buf, len, s->header.base_offset, &back, &n, &kind, &pos));
  CHECK(same_entries(s->entries, s->n_entries, back, n));
  free(back);
  free(buf);
}

/* Recovery resumes from the last index entry of a segment: it must reach the
 * verdict a full scan reaches. */
static void check_resume(int fd, uint64_t size, const felix_seg_scan *full) {
  if (header_rejected(full) || full->n_entries == 0) return;
  size_t k = full->n_entries - 1;
  felix_idx_entry e = full->entries[k];
  felix_scan_opts o = {.start_position = e.position, .start_offset = e.offset,
                       .last_entry_position = e.position, .index_spacing = NEWEST_SPACING,
                       .is_newest = true};
  felix_seg_scan part;
  trace t;
  scan(fd, o, &part, &t);
  check_scan(&part, size, &o, &t);
  check_same_verdict(&part, full);
  CHECK(part.problem.repairable == full->problem.repairable);
  /* The header entry restarts a full scan; any later one resumes after it. */
  bool restarted = e.position <= FELIX_SEG_HEADER_LEN;
  CHECK(part.records == full->records - (restarted ? 0 : e.offset - full->header.base_offset));
  const felix_idx_entry *rest = full->entries + (restarted ? 0 : k + 1);
  CHECK(same_entries(part.entries, part.n_entries, rest, full->n_entries - (size_t)(rest - full->entries)));
  felix_seg_scan_free(&part);
}

/* Cutting a repairable torn tail must leave a clean segment holding the same
 * records: the repair is what recovery does, and it must be idempotent. */
static void check_repair(int fd, const felix_seg_scan *newest, const felix_scan_opts *o) {
  if (!newest->problem.repairable) return;
  CHECK(ftruncate(fd, (off_t)newest->valid_end) == 0);
  felix_seg_scan again;
  trace t;
  scan(fd, *o, &again, &t);
  check_scan(&again, newest->valid_end, o, &t);
  CHECK(!again.has_problem);
  CHECK(again.records == newest->records && again.next_offset == newest->next_offset);
  CHECK(same_entries(again.entries, again.n_entries, newest->entries, newest->n_entries));
  felix_seg_scan_free(&again);
}

static void fuzz_scan(const uint8_t *data, size_t size) {
  int fd = file_with(data, size);
  felix_scan_opts newest_o = {.start_position = FELIX_SEG_HEADER_LEN, .index_spacing = NEWEST_SPACING,
                              .is_newest = true};
  felix_scan_opts sealed_o = {.start_position = FELIX_SEG_HEADER_LEN, .index_spacing = 1};
  felix_seg_scan newest, sealed;
  trace t;
  scan(fd, newest_o, &newest, &t);
  check_scan(&newest, size, &newest_o, &t);
  scan(fd, sealed_o, &sealed, &t);
  check_scan(&sealed, size, &sealed_o, &t);
  check_same_verdict(&newest, &sealed);
  CHECK(newest.records == sealed.records && !sealed.problem.repairable);
  if (!header_rejected(&newest)) {
    check_index_round_trip(&newest);
    check_index_round_trip(&sealed);
  }
  check_resume(fd, size, &newest);
  check_repair(fd, &newest, &newest_o);
  felix_seg_scan_free(&newest);
  felix_seg_scan_free(&sealed);
  close(fd);
}

/* The index decoder on the raw input. Segment and index headers both carry
 * the base offset at byte 8, so taking it from there lets the fuzzer reach
 * past the base check. */
static void fuzz_index(const uint8_t *data, size_t size) {
  uint64_t base = size >= 16 ? felix_get_u64(data + 8) : 0;
  felix_idx_entry *e = (felix_idx_entry *)1; /* must be overwritten */
  size_t n = 1;
  const char *kind = NULL;
  uint64_t pos = UINT64_MAX;
  bool ok = felix_idx_decode(data, size, base, &e, &n, &kind, &pos);
  if (!ok) {
    CHECK(kind != NULL && e == NULL && n == 0 && pos <= size);
    return;
  }
  CHECK(size >= FELIX_IDX_HEADER_LEN);
  CHECK(n == (size - FELIX_IDX_HEADER_LEN) / FELIX_IDX_ENTRY_LEN);
  CHECK(n == 0 || (e[0].offset == base && e[0].position == FELIX_SEG_HEADER_LEN));
  size_t len;
  uint8_t *again = felix_idx_encode(base, e, n, &len);
  CHECK(again != NULL && len == size);
  /* Everything but the reserved field (bytes 16..24) is re-encoded exactly. */
  CHECK(memcmp(again, data, 16) == 0);
  CHECK(memcmp(again + FELIX_IDX_HEADER_LEN, data + FELIX_IDX_HEADER_LEN, size - FELIX_IDX_HEADER_LEN) == 0);
  free(again);
  free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_scan(data, size);
  fuzz_index(data, size);
  return 0;
}

#ifdef FELIX_FUZZ_SEEDS
/* Seed corpus: segments and an index written with the library's encoders. */
typedef struct seed {
  uint8_t *p;
  size_t len;
} seed;

static void seed_put(seed *s, const void *data, size_t n) {
  s->p = realloc(s->p, s->len + n);
  CHECK(s->p != NULL);
  if (n) memcpy(s->p + s->len, data, n);
  s->len += n;
}

static void seed_record(seed *s, uint64_t offset, uint32_t len) {
  uint8_t hdr[FELIX_REC_HEADER_LEN], payload[512];
  CHECK(len <= sizeof payload);
  for (uint32_t i = 0; i < len; i++) payload[i] = (uint8_t)('a' + (offset + i) % 26);
  felix_record_header_encode(hdr, offset, 1000000 + offset, payload, len);
  seed_put(s, hdr, sizeof hdr);
  seed_put(s, payload, len);
}

/* A segment of `n` records from `base`, lengths cycling through 0..max_len. */
static seed seed_segment(uint64_t base, unsigned n, uint32_t max_len) {
  seed s = {0};
  uint8_t hdr[FELIX_SEG_HEADER_LEN];
  felix_seg_header_encode(hdr, base, 1700000000000000ull);
  seed_put(&s, hdr, sizeof hdr);
  for (unsigned i = 0; i < n; i++) seed_record(&s, base + i, (uint32_t)(i * 37) % (max_len + 1));
  return s;
}

static void seed_write(const char *dir, const char *name, const seed *s) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  CHECK(fwrite(s->p, 1, s->len, f) == s->len);
  CHECK(fclose(f) == 0);
}

static void seed_index_of(const char *dir, const char *name, const seed *seg) {
  int fd = file_with(seg->p, seg->len);
  felix_scan_opts o = {.start_position = FELIX_SEG_HEADER_LEN, .index_spacing = NEWEST_SPACING};
  felix_seg_scan sc;
  felix_err err;
  CHECK(felix_seg_scan_fd(fd, name, &o, &sc, &err) == FELIX_OK && !sc.has_problem);
  seed idx = {0};
  idx.p = felix_idx_encode(sc.header.base_offset, sc.entries, sc.n_entries, &idx.len);
  seed_write(dir, name, &idx);
  free(idx.p);
  felix_seg_scan_free(&sc);
  close(fd);
}

int main(int argc, char **argv) {
  if (argc != 2) return fprintf(stderr, "usage: %s OUTDIR\n", argv[0]), 2;
  const char *dir = argv[1];
  seed empty = seed_segment(0, 0, 0), small = seed_segment(0, 5, 40), many = seed_segment(1000, 40, 120);
  seed_write(dir, "seg-empty", &empty);
  seed_write(dir, "seg-small", &small);
  seed_write(dir, "seg-many", &many);
  seed torn = seed_segment(7, 3, 30);
  seed_record(&torn, 10, 50);
  torn.len -= 20; /* a record cut short by a crash */
  seed_write(dir, "seg-torn", &torn);
  seed zeros = seed_segment(7, 3, 30);
  seed_put(&zeros, (uint8_t[64]){0}, 64); /* preallocated, never written */
  seed_write(dir, "seg-zero-tail", &zeros);
  seed badcrc = seed_segment(3, 4, 30);
  badcrc.p[badcrc.len - 1] ^= 0x5a; /* last payload byte flipped */
  seed_write(dir, "seg-bad-crc-tail", &badcrc);
  seed gap = seed_segment(3, 2, 30);
  seed_record(&gap, 9, 10);
  seed_record(&gap, 10, 10); /* out of order with intact records after it */
  seed_write(dir, "seg-offset-gap", &gap);
  seed_index_of(dir, "idx-many", &many);
  seed *all[] = {&empty, &small, &many, &torn, &zeros, &badcrc, &gap};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]->p);
  return 0;
}
#endif
