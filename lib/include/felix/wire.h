/* wire.h — frame codec of the data protocol (docs/wire.md).
 *
 * Pure encoding and decoding, no I/O: the broker's libuv loop and the
 * blocking client library share it. Decoders never read past the frame and
 * reject trailing bytes, so a malformed frame is an error, never a guess. */
#ifndef FELIX_WIRE_H
#define FELIX_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "felix/error.h"

#define FELIX_WIRE_MAX_FRAME (65u * 1024 * 1024 + 64 * 1024)
#define FELIX_WIRE_HEADER 10 /* length:u32 type:u16 correlation:u32 */

enum felix_wire_type {
  FELIX_WIRE_PUBLISH = 0x0001,
  FELIX_WIRE_FETCH = 0x0002,
  FELIX_WIRE_METADATA = 0x0003,
  FELIX_WIRE_REPLY = 0x8000,
};

enum felix_wire_status {
  FELIX_WS_OK = 0,
  FELIX_WS_NOT_LEADER = 1,
  FELIX_WS_UNKNOWN_SHARD = 2,
  FELIX_WS_INVALID_REQUEST = 3,
  FELIX_WS_OFFSET_OUT_OF_RANGE = 4,
  FELIX_WS_UNAVAILABLE = 5,
  FELIX_WS_STORAGE_ERROR = 6,
  FELIX_WS_TOO_LARGE = 7,
};

const char *felix_wire_status_name(uint16_t status);

enum felix_acks { FELIX_ACKS_DEFAULT = 0, FELIX_ACKS_QUORUM = 1, FELIX_ACKS_LEADER = 2, FELIX_ACKS_ALL = 3 };

/* A growable output buffer. */
typedef struct felix_buf {
  uint8_t *data;
  size_t len, cap;
  bool oom;
} felix_buf;

void felix_buf_free(felix_buf *b);
void felix_buf_u8(felix_buf *b, uint8_t v);
void felix_buf_u16(felix_buf *b, uint16_t v);
void felix_buf_u32(felix_buf *b, uint32_t v);
void felix_buf_u64(felix_buf *b, uint64_t v);
void felix_buf_str(felix_buf *b, const char *s);        /* u16 length + bytes */
void felix_buf_bytes(felix_buf *b, const void *p, uint32_t n); /* u32 length + bytes */
/* Starts a frame (reserves the length); felix_frame_end fills it in. */
size_t felix_frame_begin(felix_buf *b, uint16_t type, uint32_t correlation);
void felix_frame_end(felix_buf *b, size_t start);

/* A bounds-checked reader over one frame body. */
typedef struct felix_reader {
  const uint8_t *p;
  size_t len, pos;
  bool bad;
} felix_reader;

uint8_t felix_rd_u8(felix_reader *r);
uint16_t felix_rd_u16(felix_reader *r);
uint32_t felix_rd_u32(felix_reader *r);
uint64_t felix_rd_u64(felix_reader *r);
/* Strings are copied NUL-terminated into out (cap bytes); too long = bad. */
void felix_rd_str(felix_reader *r, char *out, size_t cap);
/* Points into the frame; valid while the frame buffer is. */
const uint8_t *felix_rd_bytes(felix_reader *r, uint32_t *len);
/* True when every byte was consumed and nothing was out of bounds. */
bool felix_rd_done(const felix_reader *r);
/* FELIX_OK when felix_rd_done, else FELIX_E_INVAL naming the frame and byte. */
felix_status felix_rd_finish(felix_reader *r, const char *what, felix_err *err);

/* Frame header: returns false if fewer than FELIX_WIRE_HEADER bytes are
 * available; sets *bad when the length is out of bounds. */
bool felix_frame_peek(const uint8_t *p, size_t avail, uint32_t *frame_len, uint16_t *type,
                      uint32_t *correlation, bool *bad);

/* Requests and replies. */
typedef struct felix_wire_record {
  uint64_t offset;           /* replies only */
  uint64_t timestamp_micros;
  const uint8_t *payload;
  uint32_t len;
} felix_wire_record;

typedef struct felix_publish_req {
  char stream[128];
  uint32_t shard;
  uint8_t acks;
  uint32_t count;
  felix_wire_record *records; /* malloc'd array; payloads point into the frame */
} felix_publish_req;

typedef struct felix_publish_reply {
  uint16_t status;
  char message[512];
  char leader_address[128];
  uint64_t first_offset;
  uint32_t count;
} felix_publish_reply;

typedef struct felix_fetch_req {
  char stream[128];
  uint32_t shard;
  uint64_t offset;
  uint32_t max_records, max_bytes, wait_ms;
} felix_fetch_req;

typedef struct felix_fetch_reply {
  uint16_t status;
  char message[512];
  char leader_address[128];
  uint64_t log_start, hwm, next_offset;
  uint32_t count;
  felix_wire_record *records; /* malloc'd; payloads point into the frame */
} felix_fetch_reply;

typedef struct felix_metadata_entry {
  char stream[128];
  uint32_t shard;
  uint64_t generation;
  char state[32];
  char leader[128];
  char address[128];
} felix_metadata_entry;

typedef struct felix_metadata_reply {
  uint16_t status;
  char message[512];
  uint32_t count;
  felix_metadata_entry *entries; /* malloc'd */
} felix_metadata_reply;

/* Encoders append one whole frame to b. */
void felix_wire_publish_req_encode(felix_buf *b, uint32_t corr, const felix_publish_req *r);
void felix_wire_publish_reply_encode(felix_buf *b, uint32_t corr, const felix_publish_reply *r);
void felix_wire_fetch_req_encode(felix_buf *b, uint32_t corr, const felix_fetch_req *r);
/* The fetch reply's records are appended by the caller between begin/end:
 * see felix_wire_fetch_reply_begin / _record / _end. */
size_t felix_wire_fetch_reply_begin(felix_buf *b, uint32_t corr, const felix_fetch_reply *r, size_t *count_at);
void felix_wire_fetch_reply_record(felix_buf *b, uint64_t offset, uint64_t ts, const void *payload, uint32_t len);
void felix_wire_fetch_reply_end(felix_buf *b, size_t start, size_t count_at, uint32_t count);
void felix_wire_metadata_req_encode(felix_buf *b, uint32_t corr, const char *stream);
void felix_wire_metadata_reply_encode(felix_buf *b, uint32_t corr, const felix_metadata_reply *r);

/* Decoders take the frame body (after the 10-byte header). On failure they
 * return FELIX_E_INVAL with a message naming the field and byte. */
felix_status felix_wire_publish_req_decode(const uint8_t *body, size_t len, felix_publish_req *out, felix_err *err);
felix_status felix_wire_publish_reply_decode(const uint8_t *body, size_t len, felix_publish_reply *out, felix_err *err);
felix_status felix_wire_fetch_req_decode(const uint8_t *body, size_t len, felix_fetch_req *out, felix_err *err);
felix_status felix_wire_fetch_reply_decode(const uint8_t *body, size_t len, felix_fetch_reply *out, felix_err *err);
felix_status felix_wire_metadata_req_decode(const uint8_t *body, size_t len, char stream[128], felix_err *err);
felix_status felix_wire_metadata_reply_decode(const uint8_t *body, size_t len, felix_metadata_reply *out, felix_err *err);

void felix_publish_req_free(felix_publish_req *r);
void felix_fetch_reply_free(felix_fetch_reply *r);
void felix_metadata_reply_free(felix_metadata_reply *r);

#endif
