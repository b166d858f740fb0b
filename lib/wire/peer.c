/* wire/peer.c — the replication frames of wire_peer.h. Decoders bound every
 * count by the frame's bytes and by FELIX_PEER_MAX_GENS, and reject trailing
 * bytes. */
#include "felix/wire_peer.h"

#include <stdlib.h>
#include <string.h>

static void put_gens(felix_buf *b, const felix_generation *g, uint32_t n) {
  felix_buf_u32(b, n);
  for (uint32_t i = 0; i < n; i++) felix_buf_u64(b, g[i].generation), felix_buf_u64(b, g[i].start_offset);
}

static uint32_t get_gens(felix_reader *r, felix_generation *g) {
  uint32_t n = felix_rd_u32(r);
  if (n > FELIX_PEER_MAX_GENS) {
    r->bad = true;
    return 0;
  }
  for (uint32_t i = 0; i < n && !r->bad; i++) g[i].generation = felix_rd_u64(r), g[i].start_offset = felix_rd_u64(r);
  return n;
}

void felix_peer_hello_encode(felix_buf *b, uint32_t corr, const felix_peer_hello *h) {
  size_t s = felix_frame_begin(b, FELIX_WIRE_PEER_HELLO, corr);
  felix_buf_str(b, h->leader);
  felix_buf_str(b, h->leader_storage_id);
  felix_buf_str(b, h->leader_incarnation);
  felix_buf_str(b, h->leader_copy_id);
  felix_buf_str(b, h->stream);
  felix_buf_u32(b, h->shard);
  felix_buf_str(b, h->stream_uuid);
  felix_buf_u64(b, h->generation);
  felix_buf_str(b, h->cp_instance);
  felix_frame_end(b, s);
}

felix_status felix_peer_hello_decode(const uint8_t *body, size_t len, felix_peer_hello *out, felix_err *err) {
  felix_reader r = {body, len, 0, false};
  memset(out, 0, sizeof *out);
  felix_rd_str(&r, out->leader, sizeof out->leader);
  felix_rd_str(&r, out->leader_storage_id, sizeof out->leader_storage_id);
  felix_rd_str(&r, out->leader_incarnation, sizeof out->leader_incarnation);
  felix_rd_str(&r, out->leader_copy_id, sizeof out->leader_copy_id);
  felix_rd_str(&r, out->stream, sizeof out->stream);
  out->shard = felix_rd_u32(&r);
  felix_rd_str(&r, out->stream_uuid, sizeof out->stream_uuid);
  out->generation = felix_rd_u64(&r);
  felix_rd_str(&r, out->cp_instance, sizeof out->cp_instance);
  return felix_rd_finish(&r, "peer hello", err);
}

void felix_peer_hello_reply_encode(felix_buf *b, uint32_t corr, const felix_peer_hello_reply *x) {
  size_t s = felix_frame_begin(b, FELIX_WIRE_PEER_HELLO | FELIX_WIRE_REPLY, corr);
  felix_buf_u16(b, x->status);
  felix_buf_str(b, x->message);
  felix_buf_str(b, x->broker);
  felix_buf_str(b, x->storage_id);
  felix_buf_str(b, x->incarnation);
  felix_buf_str(b, x->copy_id);
  felix_buf_u64(b, x->generation);
  felix_buf_u64(b, x->log_start);
  felix_buf_u64(b, x->log_end);
  felix_buf_u64(b, x->held_end);
  put_gens(b, x->gens, x->ngens);
  felix_frame_end(b, s);
}

felix_status felix_peer_hello_reply_decode(const uint8_t *body, size_t len, felix_peer_hello_reply *out, felix_err *err) {
  felix_reader r = {body, len, 0, false};
  memset(out, 0, sizeof *out);
  out->status = felix_rd_u16(&r);
  felix_rd_str(&r, out->message, sizeof out->message);
  felix_rd_str(&r, out->broker, sizeof out->broker);
  felix_rd_str(&r, out->storage_id, sizeof out->storage_id);
  felix_rd_str(&r, out->incarnation, sizeof out->incarnation);
  felix_rd_str(&r, out->copy_id, sizeof out->copy_id);
  out->generation = felix_rd_u64(&r);
  out->log_start = felix_rd_u64(&r);
  out->log_end = felix_rd_u64(&r);
  out->held_end = felix_rd_u64(&r);
  out->ngens = get_gens(&r, out->gens);
  return felix_rd_finish(&r, "peer hello reply", err);
}

static void put_append_body(felix_buf *b, const felix_peer_append *a) {
  felix_buf_str(b, a->stream);
  felix_buf_u32(b, a->shard);
  felix_buf_u64(b, a->generation);
  felix_buf_u64(b, a->truncate_to);
  felix_buf_u64(b, a->leader_hwm);
  put_gens(b, a->gens, a->ngens);
  felix_buf_u64(b, a->first_offset);
  felix_buf_u32(b, a->count);
  for (uint32_t i = 0; i < a->count; i++) {
    felix_buf_u64(b, a->records[i].timestamp_micros);
    felix_buf_bytes(b, a->records[i].payload, a->records[i].len);
  }
}

void felix_peer_append_encode(felix_buf *b, uint32_t corr, const felix_peer_append *a) {
  size_t s = felix_frame_begin(b, FELIX_WIRE_PEER_APPEND, corr);
  put_append_body(b, a);
  felix_frame_end(b, s);
}

static felix_status get_append_body(felix_reader *rd, felix_peer_append *out, felix_err *err) {
  felix_reader r = *rd;
  memset(out, 0, sizeof *out);
  felix_rd_str(&r, out->stream, sizeof out->stream);
  out->shard = felix_rd_u32(&r);
  out->generation = felix_rd_u64(&r);
  out->truncate_to = felix_rd_u64(&r);
  out->leader_hwm = felix_rd_u64(&r);
  out->ngens = get_gens(&r, out->gens);
  out->first_offset = felix_rd_u64(&r);
  out->count = felix_rd_u32(&r);
  /* each record takes at least 12 bytes: a count the frame cannot hold is bad */
  if (!r.bad && (uint64_t)out->count * 12 > r.len - r.pos) r.bad = true;
  if (!r.bad && out->count) {
    out->records = calloc(out->count, sizeof *out->records);
    if (!out->records) return felix_fail(err, FELIX_E_IO, "out of memory decoding %u records", out->count);
  }
  for (uint32_t i = 0; i < out->count && !r.bad; i++) {
    out->records[i].offset = out->first_offset + i;
    out->records[i].timestamp_micros = felix_rd_u64(&r);
    out->records[i].payload = felix_rd_bytes(&r, &out->records[i].len);
  }
  *rd = r;
  return FELIX_OK;
}

felix_status felix_peer_append_decode(const uint8_t *body, size_t len, felix_peer_append *out, felix_err *err) {
  felix_reader r = {body, len, 0, false};
  felix_status st = get_append_body(&r, out, err);
  if (st == FELIX_OK) st = felix_rd_finish(&r, "peer append", err);
  if (st) felix_peer_append_free(out);
  return st;
}

void felix_peer_read_encode(felix_buf *b, uint32_t corr, const felix_peer_read *x) {
  size_t s = felix_frame_begin(b, FELIX_WIRE_PEER_READ, corr);
  felix_buf_str(b, x->stream);
  felix_buf_u32(b, x->shard);
  felix_buf_u64(b, x->generation);
  felix_buf_u64(b, x->from);
  felix_buf_u32(b, x->max_records);
  felix_frame_end(b, s);
}

felix_status felix_peer_read_decode(const uint8_t *body, size_t len, felix_peer_read *out, felix_err *err) {
  felix_reader r = {body, len, 0, false};
  memset(out, 0, sizeof *out);
  felix_rd_str(&r, out->stream, sizeof out->stream);
  out->shard = felix_rd_u32(&r);
  out->generation = felix_rd_u64(&r);
  out->from = felix_rd_u64(&r);
  out->max_records = felix_rd_u32(&r);
  return felix_rd_finish(&r, "peer read", err);
}

void felix_peer_read_reply_encode(felix_buf *b, uint32_t corr, const felix_peer_read_reply *x) {
  size_t s = felix_frame_begin(b, FELIX_WIRE_PEER_READ | FELIX_WIRE_REPLY, corr);
  felix_buf_u16(b, x->status);
  felix_buf_str(b, x->message);
  felix_buf_str(b, x->copy_id);
  felix_buf_u64(b, x->held_end);
  put_append_body(b, &x->body);
  felix_frame_end(b, s);
}

felix_status felix_peer_read_reply_decode(const uint8_t *body, size_t len, felix_peer_read_reply *out, felix_err *err) {
  felix_reader r = {body, len, 0, false};
  memset(out, 0, sizeof *out);
  out->status = felix_rd_u16(&r);
  felix_rd_str(&r, out->message, sizeof out->message);
  felix_rd_str(&r, out->copy_id, sizeof out->copy_id);
  out->held_end = felix_rd_u64(&r);
  felix_status st = r.bad ? FELIX_OK : get_append_body(&r, &out->body, err);
  if (st == FELIX_OK) st = felix_rd_finish(&r, "peer read reply", err);
  if (st) felix_peer_append_free(&out->body);
  return st;
}

void felix_peer_append_free(felix_peer_append *a) {
  free(a->records);
  a->records = NULL;
}

void felix_peer_append_reply_encode(felix_buf *b, uint32_t corr, const felix_peer_append_reply *x) {
  size_t s = felix_frame_begin(b, FELIX_WIRE_PEER_APPEND | FELIX_WIRE_REPLY, corr);
  felix_buf_u16(b, x->status);
  felix_buf_str(b, x->message);
  felix_buf_u64(b, x->generation);
  felix_buf_u64(b, x->held_end);
  felix_buf_u64(b, x->log_end);
  felix_frame_end(b, s);
}

felix_status felix_peer_append_reply_decode(const uint8_t *body, size_t len, felix_peer_append_reply *out,
                                            felix_err *err) {
  felix_reader r = {body, len, 0, false};
  memset(out, 0, sizeof *out);
  out->status = felix_rd_u16(&r);
  felix_rd_str(&r, out->message, sizeof out->message);
  out->generation = felix_rd_u64(&r);
  out->held_end = felix_rd_u64(&r);
  out->log_end = felix_rd_u64(&r);
  return felix_rd_finish(&r, "peer append reply", err);
}
