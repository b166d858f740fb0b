/* wire/data.c — frame codec of the data protocol (docs/wire.md). No I/O. */
#include "felix/wire.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "felix/bytes.h"

const char *felix_wire_status_name(uint16_t status) {
  static const char *names[] = {"OK", "NOT_LEADER", "UNKNOWN_SHARD", "INVALID_REQUEST", "OFFSET_OUT_OF_RANGE",
                                "UNAVAILABLE", "STORAGE_ERROR", "TOO_LARGE"};
  return status < sizeof names / sizeof names[0] ? names[status] : "UNKNOWN_STATUS";
}

static bool buf_reserve(felix_buf *b, size_t n) {
  if (b->oom) return false;
  if (b->len + n <= b->cap) return true;
  size_t nc = b->cap ? b->cap : 256;
  while (nc < b->len + n) nc *= 2;
  uint8_t *np = realloc(b->data, nc);
  if (!np) return !(b->oom = true);
  b->data = np;
  b->cap = nc;
  return true;
}

void felix_buf_free(felix_buf *b) {
  free(b->data);
  memset(b, 0, sizeof *b);
}

void felix_buf_u8(felix_buf *b, uint8_t v) {
  if (buf_reserve(b, 1)) b->data[b->len++] = v;
}
void felix_buf_u16(felix_buf *b, uint16_t v) {
  if (buf_reserve(b, 2)) felix_put_u16(b->data + b->len, v), b->len += 2;
}
void felix_buf_u32(felix_buf *b, uint32_t v) {
  if (buf_reserve(b, 4)) felix_put_u32(b->data + b->len, v), b->len += 4;
}
void felix_buf_u64(felix_buf *b, uint64_t v) {
  if (buf_reserve(b, 8)) felix_put_u64(b->data + b->len, v), b->len += 8;
}
void felix_buf_str(felix_buf *b, const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n > 65535) n = 65535;
  felix_buf_u16(b, (uint16_t)n);
  if (n && buf_reserve(b, n)) memcpy(b->data + b->len, s, n), b->len += n;
}
void felix_buf_bytes(felix_buf *b, const void *p, uint32_t n) {
  felix_buf_u32(b, n);
  if (n && buf_reserve(b, n)) memcpy(b->data + b->len, p, n), b->len += n;
}

size_t felix_frame_begin(felix_buf *b, uint16_t type, uint32_t correlation) {
  size_t start = b->len;
  felix_buf_u32(b, 0);
  felix_buf_u16(b, type);
  felix_buf_u32(b, correlation);
  return start;
}

void felix_frame_end(felix_buf *b, size_t start) {
  assert(b->oom || start + FELIX_WIRE_HEADER <= b->len); /* start came from felix_frame_begin on b */
  if (!b->oom) felix_put_u32(b->data + start, (uint32_t)(b->len - start - 4));
}

static bool need(felix_reader *r, size_t n) {
  assert(r->pos <= r->len); /* a reader never moves past its frame */
  if (r->bad || r->len - r->pos < n) return !(r->bad = true);
  return true;
}

uint8_t felix_rd_u8(felix_reader *r) { return need(r, 1) ? r->p[r->pos++] : 0; }
uint16_t felix_rd_u16(felix_reader *r) {
  if (!need(r, 2)) return 0;
  r->pos += 2;
  return felix_get_u16(r->p + r->pos - 2);
}
uint32_t felix_rd_u32(felix_reader *r) {
  if (!need(r, 4)) return 0;
  r->pos += 4;
  return felix_get_u32(r->p + r->pos - 4);
}
uint64_t felix_rd_u64(felix_reader *r) {
  if (!need(r, 8)) return 0;
  r->pos += 8;
  return felix_get_u64(r->p + r->pos - 8);
}
void felix_rd_str(felix_reader *r, char *out, size_t cap) {
  uint16_t n = felix_rd_u16(r);
  out[0] = '\0';
  if (!need(r, n)) return;
  if ((size_t)n >= cap || memchr(r->p + r->pos, '\0', n)) {
    r->bad = true;
    return;
  }
  memcpy(out, r->p + r->pos, n);
  out[n] = '\0';
  r->pos += n;
}
const uint8_t *felix_rd_bytes(felix_reader *r, uint32_t *len) {
  *len = felix_rd_u32(r);
  if (!need(r, *len)) return *len = 0, NULL;
  r->pos += *len;
  return r->p + r->pos - *len;
}
bool felix_rd_done(const felix_reader *r) { return !r->bad && r->pos == r->len; }

bool felix_frame_peek(const uint8_t *p, size_t avail, uint32_t *frame_len, uint16_t *type, uint32_t *correlation,
                      bool *bad) {
  *bad = false;
  if (avail < FELIX_WIRE_HEADER) return false;
  *frame_len = felix_get_u32(p);
  *type = felix_get_u16(p + 4);
  *correlation = felix_get_u32(p + 6);
  *bad = *frame_len < FELIX_WIRE_HEADER - 4 || *frame_len > FELIX_WIRE_MAX_FRAME;
  return true;
}

felix_status felix_rd_finish(felix_reader *r, const char *what, felix_err *err) {
  if (felix_rd_done(r)) return FELIX_OK;
  return felix_fail(err, FELIX_E_INVAL, "malformed %s frame at body byte %zu of %zu", what, r->pos, r->len);
}

void felix_wire_publish_req_encode(felix_buf *b, uint32_t corr, const felix_publish_req *r) {
  size_t s = felix_frame_begin(b, FELIX_WIRE_PUBLISH, corr);
  felix_buf_str(b, r->stream);
  felix_buf_u32(b, r->shard);
  felix_buf_u8(b, r->acks);
  felix_buf_u32(b, r->count);
  for (uint32_t i = 0; i < r->count; i++) {
    felix_buf_u64(b, r->records[i].timestamp_micros);
    felix_buf_bytes(b, r->records[i].payload, r->records[i].len);
  }
  felix_frame_end(b, s);
}

felix_status felix_wire_publish_req_decode(const uint8_t *body, size_t len, felix_publish_req *out, felix_err *err) {
  felix_reader r = {body, len, 0, false};
  memset(out, 0, sizeof *out);
  felix_rd_str(&r, out->stream, sizeof out->stream);
  out->shard = felix_rd_u32(&r);
  out->acks = felix_rd_u8(&r);
  out->count = felix_rd_u32(&r);
  /* each record needs at least 12 bytes: bound the allocation by the frame */
  if (!r.bad && (uint64_t)out->count * 12 > len - r.pos) r.bad = true;
  if (!r.bad && out->count) out->records = calloc(out->count, sizeof *out->records);
  if (!r.bad && out->count && !out->records) return felix_fail(err, FELIX_E_IO, "out of memory");
  for (uint32_t i = 0; i < out->count && !r.bad; i++) {
    out->records[i].timestamp_micros = felix_rd_u64(&r);
    out->records[i].payload = felix_rd_bytes(&r, &out->records[i].len);
  }
  felix_status st = felix_rd_finish(&r, "publish", err);
  if (st) felix_publish_req_free(out);
  return st;
}

void felix_publish_req_free(felix_publish_req *r) {
  free(r->records);
  r->records = NULL;
}

void felix_wire_publish_reply_encode(felix_buf *b, uint32_t corr, const felix_publish_reply *r) {
  size_t s = felix_frame_begin(b, FELIX_WIRE_PUBLISH | FELIX_WIRE_REPLY, corr);
  felix_buf_u16(b, r->status);
  felix_buf_str(b, r->message);
  felix_buf_str(b, r->leader_address);
  felix_buf_u64(b, r->first_offset);
  felix_buf_u32(b, r->count);
  felix_frame_end(b, s);
}

felix_status felix_wire_publish_reply_decode(const uint8_t *body, size_t len, felix_publish_reply *out, felix_err *err) {
  felix_reader r = {body, len, 0, false};
  memset(out, 0, sizeof *out);
  out->status = felix_rd_u16(&r);
  felix_rd_str(&r, out->message, sizeof out->message);
  felix_rd_str(&r, out->leader_address, sizeof out->leader_address);
  out->first_offset = felix_rd_u64(&r);
  out->count = felix_rd_u32(&r);
  return felix_rd_finish(&r, "publish reply", err);
}

void felix_wire_fetch_req_encode(felix_buf *b, uint32_t corr, const felix_fetch_req *r) {
  size_t s = felix_frame_begin(b, FELIX_WIRE_FETCH, corr);
  felix_buf_str(b, r->stream);
  felix_buf_u32(b, r->shard);
  felix_buf_u64(b, r->offset);
  felix_buf_u32(b, r->max_records);
  felix_buf_u32(b, r->max_bytes);
  felix_buf_u32(b, r->wait_ms);
  felix_frame_end(b, s);
}

felix_status felix_wire_fetch_req_decode(const uint8_t *body, size_t len, felix_fetch_req *out, felix_err *err) {
  felix_reader r = {body, len, 0, false};
  memset(out, 0, sizeof *out);
  felix_rd_str(&r, out->stream, sizeof out->stream);
  out->shard = felix_rd_u32(&r);
  out->offset = felix_rd_u64(&r);
  out->max_records = felix_rd_u32(&r);
  out->max_bytes = felix_rd_u32(&r);
  out->wait_ms = felix_rd_u32(&r);
  return felix_rd_finish(&r, "fetch", err);
}

size_t felix_wire_fetch_reply_begin(felix_buf *b, uint32_t corr, const felix_fetch_reply *r, size_t *count_at) {
  size_t s = felix_frame_begin(b, FELIX_WIRE_FETCH | FELIX_WIRE_REPLY, corr);
  felix_buf_u16(b, r->status);
  felix_buf_str(b, r->message);
  felix_buf_str(b, r->leader_address);
  felix_buf_u64(b, r->log_start);
  felix_buf_u64(b, r->hwm);
  felix_buf_u64(b, r->next_offset);
  *count_at = b->len;
  felix_buf_u32(b, 0);
  return s;
}

void felix_wire_fetch_reply_record(felix_buf *b, uint64_t offset, uint64_t ts, const void *payload, uint32_t len) {
  felix_buf_u64(b, offset);
  felix_buf_u64(b, ts);
  felix_buf_bytes(b, payload, len);
}

void felix_wire_fetch_reply_end(felix_buf *b, size_t start, size_t count_at, uint32_t count) {
  if (!b->oom) felix_put_u32(b->data + count_at, count);
  felix_frame_end(b, start);
}

felix_status felix_wire_fetch_reply_decode(const uint8_t *body, size_t len, felix_fetch_reply *out, felix_err *err) {
  felix_reader r = {body, len, 0, false};
  memset(out, 0, sizeof *out);
  out->status = felix_rd_u16(&r);
  felix_rd_str(&r, out->message, sizeof out->message);
  felix_rd_str(&r, out->leader_address, sizeof out->leader_address);
  out->log_start = felix_rd_u64(&r);
  out->hwm = felix_rd_u64(&r);
  out->next_offset = felix_rd_u64(&r);
  out->count = felix_rd_u32(&r);
  if (!r.bad && (uint64_t)out->count * 20 > len - r.pos) r.bad = true;
  if (!r.bad && out->count) out->records = calloc(out->count, sizeof *out->records);
  if (!r.bad && out->count && !out->records) return felix_fail(err, FELIX_E_IO, "out of memory");
  for (uint32_t i = 0; i < out->count && !r.bad; i++) {
    out->records[i].offset = felix_rd_u64(&r);
    out->records[i].timestamp_micros = felix_rd_u64(&r);
    out->records[i].payload = felix_rd_bytes(&r, &out->records[i].len);
  }
  felix_status st = felix_rd_finish(&r, "fetch reply", err);
  if (st) felix_fetch_reply_free(out);
  return st;
}

void felix_fetch_reply_free(felix_fetch_reply *r) {
  free(r->records);
  r->records = NULL;
  r->count = 0;
}

void felix_wire_metadata_req_encode(felix_buf *b, uint32_t corr, const char *stream) {
  size_t s = felix_frame_begin(b, FELIX_WIRE_METADATA, corr);
  felix_buf_str(b, stream);
  felix_frame_end(b, s);
}

felix_status felix_wire_metadata_req_decode(const uint8_t *body, size_t len, char stream[128], felix_err *err) {
  felix_reader r = {body, len, 0, false};
  felix_rd_str(&r, stream, 128);
  return felix_rd_finish(&r, "metadata", err);
}

void felix_wire_metadata_reply_encode(felix_buf *b, uint32_t corr, const felix_metadata_reply *r) {
  size_t s = felix_frame_begin(b, FELIX_WIRE_METADATA | FELIX_WIRE_REPLY, corr);
  felix_buf_u16(b, r->status);
  felix_buf_str(b, r->message);
  felix_buf_u32(b, r->count);
  for (uint32_t i = 0; i < r->count; i++) {
    const felix_metadata_entry *e = &r->entries[i];
    felix_buf_str(b, e->stream);
    felix_buf_u32(b, e->shard);
    felix_buf_u64(b, e->generation);
    felix_buf_str(b, e->state);
    felix_buf_str(b, e->leader);
    felix_buf_str(b, e->address);
  }
  felix_frame_end(b, s);
}

felix_status felix_wire_metadata_reply_decode(const uint8_t *body, size_t len, felix_metadata_reply *out, felix_err *err) {
  felix_reader r = {body, len, 0, false};
  memset(out, 0, sizeof *out);
  out->status = felix_rd_u16(&r);
  felix_rd_str(&r, out->message, sizeof out->message);
  out->count = felix_rd_u32(&r);
  if (!r.bad && (uint64_t)out->count * 22 > len - r.pos) r.bad = true;
  if (!r.bad && out->count) out->entries = calloc(out->count, sizeof *out->entries);
  if (!r.bad && out->count && !out->entries) return felix_fail(err, FELIX_E_IO, "out of memory");
  for (uint32_t i = 0; i < out->count && !r.bad; i++) {
    felix_metadata_entry *e = &out->entries[i];
    felix_rd_str(&r, e->stream, sizeof e->stream);
    e->shard = felix_rd_u32(&r);
    e->generation = felix_rd_u64(&r);
    felix_rd_str(&r, e->state, sizeof e->state);
    felix_rd_str(&r, e->leader, sizeof e->leader);
    felix_rd_str(&r, e->address, sizeof e->address);
  }
  felix_status st = felix_rd_finish(&r, "metadata reply", err);
  if (st) felix_metadata_reply_free(out);
  return st;
}

void felix_metadata_reply_free(felix_metadata_reply *r) {
  free(r->entries);
  r->entries = NULL;
  r->count = 0;
}
