/* storage/segment.c — codecs and the read-only scanner of segment format v1.
 *
 * Invariant kept by the scanner: it reports the first damage and stops;
 * whether that damage is a repairable torn tail is decided here and only
 * here (DESIGN.md §3.1), so recovery and felix-inspect verify always agree. */
#include "felix/segment.h"

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "felix/bytes.h"

static uint32_t crc(uint32_t c, const void *p, size_t n) {
  return (uint32_t)crc32(c, (const Bytef *)p, (uInt)n);
}

void felix_seg_header_encode(uint8_t out[FELIX_SEG_HEADER_LEN], uint64_t base_offset,
                             uint64_t created_at_micros) {
  memcpy(out, FELIX_SEG_MAGIC, 4);
  felix_put_u16(out + 4, FELIX_SEG_VERSION);
  felix_put_u16(out + 6, 0);
  felix_put_u64(out + 8, base_offset);
  felix_put_u64(out + 16, created_at_micros);
  felix_put_u32(out + 24, crc(0, out, 24));
  felix_put_u32(out + 28, 0);
}

bool felix_seg_header_decode(const uint8_t in[FELIX_SEG_HEADER_LEN], felix_seg_header *out,
                             const char **kind) {
  if (memcmp(in, FELIX_SEG_MAGIC, 4) != 0) return *kind = "bad_magic", false;
  if (felix_get_u32(in + 24) != crc(0, in, 24)) return *kind = "bad_header_crc", false;
  out->version = felix_get_u16(in + 4);
  out->flags = felix_get_u16(in + 6);
  out->base_offset = felix_get_u64(in + 8);
  out->created_at_micros = felix_get_u64(in + 16);
  if (out->version != FELIX_SEG_VERSION) return *kind = "unknown_version", false;
  if (out->flags != 0) return *kind = "unknown_flags", false;
  return true;
}

uint32_t felix_record_checksum(const uint8_t hdr[20], const void *payload, uint32_t len) {
  return crc(crc(0, hdr, 20), payload, len);
}

void felix_record_header_encode(uint8_t out[FELIX_REC_HEADER_LEN], uint64_t offset,
                                uint64_t timestamp_micros, const void *payload, uint32_t len) {
  felix_put_u32(out, len);
  felix_put_u64(out + 4, offset);
  felix_put_u64(out + 12, timestamp_micros);
  felix_put_u32(out + 20, felix_record_checksum(out, payload, len));
}

void felix_idx_header_encode(uint8_t out[FELIX_IDX_HEADER_LEN], uint64_t base_offset) {
  memcpy(out, FELIX_IDX_MAGIC, 4);
  felix_put_u16(out + 4, FELIX_SEG_VERSION);
  felix_put_u16(out + 6, 0);
  felix_put_u64(out + 8, base_offset);
  felix_put_u64(out + 16, 0);
}

void felix_idx_entry_encode(uint8_t out[FELIX_IDX_ENTRY_LEN], uint64_t offset, uint64_t position) {
  felix_put_u64(out, offset);
  felix_put_u64(out + 8, position);
}

uint8_t *felix_idx_encode(uint64_t base_offset, const felix_idx_entry *e, size_t n, size_t *len) {
  *len = FELIX_IDX_HEADER_LEN + n * FELIX_IDX_ENTRY_LEN;
  uint8_t *buf = malloc(*len);
  if (!buf) return NULL;
  felix_idx_header_encode(buf, base_offset);
  for (size_t i = 0; i < n; i++)
    felix_idx_entry_encode(buf + FELIX_IDX_HEADER_LEN + i * FELIX_IDX_ENTRY_LEN, e[i].offset,
                           e[i].position);
  return buf;
}

bool felix_idx_decode(const uint8_t *buf, size_t len, uint64_t expect_base, felix_idx_entry **out,
                      size_t *n, const char **kind, uint64_t *pos) {
  *out = NULL;
  *n = 0;
  *pos = 0;
  if (len < FELIX_IDX_HEADER_LEN) return *kind = "short_index_header", false;
  if (memcmp(buf, FELIX_IDX_MAGIC, 4) != 0) return *kind = "bad_index_magic", false;
  if (felix_get_u16(buf + 4) != FELIX_SEG_VERSION) return *kind = "unknown_version", false;
  if (felix_get_u16(buf + 6) != 0) return *kind = "unknown_flags", false;
  if (felix_get_u64(buf + 8) != expect_base) return *pos = 8, *kind = "index_base_mismatch", false;
  if ((len - FELIX_IDX_HEADER_LEN) % FELIX_IDX_ENTRY_LEN != 0) {
    *pos = len - (len - FELIX_IDX_HEADER_LEN) % FELIX_IDX_ENTRY_LEN;
    return *kind = "torn_index_entry", false;
  }
  size_t count = (len - FELIX_IDX_HEADER_LEN) / FELIX_IDX_ENTRY_LEN;
  felix_idx_entry *e = count ? calloc(count, sizeof *e) : NULL;
  if (count && !e) return *kind = "out_of_memory", false;
  for (size_t i = 0; i < count; i++) {
    const uint8_t *p = buf + FELIX_IDX_HEADER_LEN + i * FELIX_IDX_ENTRY_LEN;
    e[i].offset = felix_get_u64(p);
    e[i].position = felix_get_u64(p + 8);
    bool first_ok = i > 0 || (e[i].offset == expect_base && e[i].position == FELIX_SEG_HEADER_LEN);
    bool ascending = i == 0 || (e[i].offset > e[i - 1].offset && e[i].position > e[i - 1].position);
    if (!first_ok || !ascending) {
      free(e);
      *pos = (uint64_t)(p - buf);
      return *kind = "index_entry_out_of_order", false;
    }
  }
  *out = e;
  *n = count;
  return true;
}

bool felix_seg_parse_name(const char *name, const char *suffix, uint64_t *base) {
  size_t sl = strlen(suffix);
  if (strlen(name) != FELIX_SEG_NAME_LEN + sl || strcmp(name + FELIX_SEG_NAME_LEN, suffix) != 0)
    return false;
  uint64_t v = 0;
  for (int i = 0; i < FELIX_SEG_NAME_LEN; i++) {
    if (name[i] < '0' || name[i] > '9') return false;
    uint64_t d = (uint64_t)(name[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *base = v;
  return true;
}

void felix_seg_format_name(char out[32], uint64_t base, const char *suffix) {
  snprintf(out, 32, "%020" PRIu64 "%s", base, suffix);
}

/* A buffered window over a file read with pread. */
typedef struct window {
  int fd;
  uint8_t *buf;
  size_t cap;
  uint64_t start; /* file position of buf[0] */
  size_t len;
} window;

static felix_status window_ensure(window *w, uint64_t pos, size_t n, const uint8_t **out,
                                  const char *path, felix_err *err) {
  if (pos >= w->start && pos + n <= w->start + w->len) {
    *out = w->buf + (pos - w->start);
    return FELIX_OK;
  }
  size_t want = n > (1u << 20) ? n : (1u << 20);
  if (want > w->cap) {
    uint8_t *nb = realloc(w->buf, want);
    if (!nb) return felix_fail(err, FELIX_E_IO, "%s: out of memory reading %zu bytes", path, n);
    w->buf = nb;
    w->cap = want;
  }
  ssize_t got = pread(w->fd, w->buf, want, (off_t)pos);
  if (got < 0) return felix_fail_errno(err, FELIX_E_IO, errno, "read %s at byte %" PRIu64, path, pos);
  w->start = pos;
  w->len = (size_t)got;
  if ((size_t)got < n)
    return felix_fail(err, FELIX_E_IO, "%s: file shrank while reading at byte %" PRIu64, path, pos);
  *out = w->buf;
  return FELIX_OK;
}

static bool rest_is_zero(window *w, uint64_t pos, uint64_t size, const char *path) {
  while (pos < size) {
    size_t n = size - pos > (1u << 20) ? (1u << 20) : (size_t)(size - pos);
    const uint8_t *p;
    if (window_ensure(w, pos, n, &p, path, NULL) != FELIX_OK) return false;
    for (size_t i = 0; i < n; i++)
      if (p[i]) return false;
    pos += n;
  }
  return true;
}

static void set_problem(felix_seg_scan *s, const char *path, uint64_t pos, const char *kind,
                        bool repairable, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static void set_problem(felix_seg_scan *s, const char *path, uint64_t pos, const char *kind,
                        bool repairable, const char *fmt, ...) {
  s->has_problem = true;
  snprintf(s->problem.file, sizeof s->problem.file, "%s", path);
  s->problem.position = pos;
  snprintf(s->problem.kind, sizeof s->problem.kind, "%s", kind);
  s->problem.repairable = repairable;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->problem.detail, sizeof s->problem.detail, fmt, ap);
  va_end(ap);
}

static felix_status add_entry(felix_seg_scan *s, size_t *cap, uint64_t off, uint64_t pos) {
  if (s->n_entries == *cap) {
    size_t nc = *cap ? *cap * 2 : 16;
    felix_idx_entry *ne = realloc(s->entries, nc * sizeof *ne);
    if (!ne) return FELIX_E_IO;
    s->entries = ne;
    *cap = nc;
  }
  s->entries[s->n_entries++] = (felix_idx_entry){off, pos};
  return FELIX_OK;
}

static felix_status scan_header(window *w, const char *path, felix_seg_scan *s, felix_err *err) {
  if (s->file_size < FELIX_SEG_HEADER_LEN) {
    set_problem(s, path, 0, "short_header", false, "segment is %" PRIu64 " bytes, shorter than its %d-byte header",
                s->file_size, FELIX_SEG_HEADER_LEN);
    return FELIX_OK;
  }
  const uint8_t *p;
  felix_status st = window_ensure(w, 0, FELIX_SEG_HEADER_LEN, &p, path, err);
  if (st) return st;
  const char *kind;
  if (!felix_seg_header_decode(p, &s->header, &kind))
    set_problem(s, path, 0, kind, false, "segment header rejected (%s)", kind);
  return FELIX_OK;
}

/* Whether an intact record with a higher offset starts anywhere in
 * [from, size): damage with intact records after it is never a torn tail. */
static bool intact_record_after(window *w, uint64_t from, uint64_t size, uint64_t expect, const char *path) {
  for (uint64_t p = from; p + FELIX_REC_HEADER_LEN <= size; p++) {
    const uint8_t *h;
    if (window_ensure(w, p, FELIX_REC_HEADER_LEN, &h, path, NULL) != FELIX_OK) return false;
    uint32_t len = felix_get_u32(h);
    uint64_t off = felix_get_u64(h + 4);
    if (off <= expect || off - expect > (size - from) / FELIX_REC_HEADER_LEN + 1 || len > FELIX_MAX_PAYLOAD ||
        p + FELIX_REC_HEADER_LEN + len > size)
      continue;
    uint8_t hdr[20];
    uint32_t want = felix_get_u32(h + 20);
    memcpy(hdr, h, 20);
    if (window_ensure(w, p, FELIX_REC_HEADER_LEN + len, &h, path, NULL) != FELIX_OK) return false;
    if (felix_record_checksum(hdr, h + FELIX_REC_HEADER_LEN, len) == want) return true;
  }
  return false;
}

/* Damage that ends the newest segment is a torn tail: repairable. */
static bool tail_damage(window *w, const char *path, const felix_seg_scan *s, bool newest,
                        uint64_t rec_end) {
  return newest && (rec_end == s->file_size || rest_is_zero(w, rec_end, s->file_size, path));
}

static felix_status scan_records(window *w, const char *path, const felix_scan_opts *o,
                                 felix_seg_scan *s, felix_err *err) {
  uint64_t pos = o->start_position, expect = o->start_offset, last = o->last_entry_position;
  size_t cap = 0;
  const uint8_t *p;
  while (pos < s->file_size) {
    uint64_t remaining = s->file_size - pos;
    if (remaining < FELIX_REC_HEADER_LEN) {
      set_problem(s, path, pos, "torn_record", o->is_newest,
                  "record header cut short: %" PRIu64 " of %d bytes", remaining, FELIX_REC_HEADER_LEN);
      break;
    }
    felix_status st = window_ensure(w, pos, FELIX_REC_HEADER_LEN, &p, path, err);
    if (st) return st;
    uint32_t len = felix_get_u32(p);
    uint64_t off = felix_get_u64(p + 4), ts = felix_get_u64(p + 12);
    uint32_t want_crc = felix_get_u32(p + 20);
    uint64_t rec_end = pos + FELIX_REC_HEADER_LEN + len;
    if (rec_end > s->file_size) {
      set_problem(s, path, pos, "torn_record", o->is_newest && !intact_record_after(w, pos + 1, s->file_size, expect, path),
                  "payload_len %u does not fit in the file (%" PRIu64 " bytes left)", len,
                  remaining - FELIX_REC_HEADER_LEN);
      break;
    }
    if (len > FELIX_MAX_PAYLOAD) {
      set_problem(s, path, pos, "payload_too_large", tail_damage(w, path, s, o->is_newest, rec_end),
                  "payload_len %u exceeds the %u-byte limit", len, FELIX_MAX_PAYLOAD);
      break;
    }
    uint8_t hdr[20];
    memcpy(hdr, p, 20);
    st = window_ensure(w, pos, FELIX_REC_HEADER_LEN + len, &p, path, err);
    if (st) return st;
    const uint8_t *payload = p + FELIX_REC_HEADER_LEN;
    if (felix_record_checksum(hdr, payload, len) != want_crc) {
      set_problem(s, path, pos, "bad_checksum", tail_damage(w, path, s, o->is_newest, rec_end),
                  "record checksum mismatch (offset field %" PRIu64 ")", off);
      break;
    }
    if (off != expect) {
      set_problem(s, path, pos, "offset_out_of_order", tail_damage(w, path, s, o->is_newest, rec_end),
                  "record carries offset %" PRIu64 ", expected %" PRIu64, off, expect);
      break;
    }
    if (felix_idx_wants_entry(pos, last, o->index_spacing)) {
      if (add_entry(s, &cap, off, pos)) return felix_fail(err, FELIX_E_IO, "out of memory");
      last = pos;
    }
    if (o->on_record) o->on_record(o->ctx, off, ts, pos, payload, len);
    s->last_timestamp_micros = ts;
    s->records++;
    expect++;
    pos = rec_end;
  }
  s->valid_end = pos;
  s->next_offset = expect;
  return FELIX_OK;
}

felix_status felix_seg_scan_fd(int fd, const char *path, const felix_scan_opts *opts,
                               felix_seg_scan *scan, felix_err *err) {
  memset(scan, 0, sizeof *scan);
  struct stat sb;
  if (fstat(fd, &sb) != 0) return felix_fail_errno(err, FELIX_E_IO, errno, "stat %s", path);
  scan->file_size = (uint64_t)sb.st_size;
  window w = {.fd = fd};
  felix_status st = scan_header(&w, path, scan, err);
  if (st == FELIX_OK && !scan->has_problem && opts->check_base && scan->header.base_offset != opts->expect_base)
    set_problem(scan, path, 8, "base_offset_mismatch", false, "header says base offset %" PRIu64 ", file name says %" PRIu64,
                scan->header.base_offset, opts->expect_base);
  if (st == FELIX_OK && !scan->has_problem) {
    felix_scan_opts o = *opts;
    if (o.start_position <= FELIX_SEG_HEADER_LEN) {
      o.start_position = FELIX_SEG_HEADER_LEN;
      o.start_offset = scan->header.base_offset;
      o.last_entry_position = 0;
    }
    st = scan_records(&w, path, &o, scan, err);
  }
  free(w.buf);
  return st;
}

void felix_seg_scan_free(felix_seg_scan *scan) {
  free(scan->entries);
  scan->entries = NULL;
  scan->n_entries = 0;
}
