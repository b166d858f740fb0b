/* fuzz_wire.c — libFuzzer target for the data protocol's frame decoders.
 *
 * Every decoder must reject or accept any byte string without reading out of
 * bounds, and anything a request decoder accepts must encode back to the same
 * bytes (the codec is a bijection on valid frames). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "felix/wire.h"
#include "felix/wire_peer.h"

static void check_publish(const uint8_t *d, size_t n) {
  felix_publish_req req;
  if (felix_wire_publish_req_decode(d, n, &req, NULL) != FELIX_OK) return;
  felix_buf b = {0};
  felix_wire_publish_req_encode(&b, 7, &req);
  if (b.len != n + FELIX_WIRE_HEADER || memcmp(b.data + FELIX_WIRE_HEADER, d, n) != 0) abort();
  felix_buf_free(&b);
  felix_publish_req_free(&req);
}

static void check_fetch(const uint8_t *d, size_t n) {
  felix_fetch_req req;
  if (felix_wire_fetch_req_decode(d, n, &req, NULL) != FELIX_OK) return;
  felix_buf b = {0};
  felix_wire_fetch_req_encode(&b, 7, &req);
  if (b.len != n + FELIX_WIRE_HEADER || memcmp(b.data + FELIX_WIRE_HEADER, d, n) != 0) abort();
  felix_buf_free(&b);
}

/* The replication frames (wire_peer.h): requests round-trip too. */
static void check_peer(const uint8_t *d, size_t n) {
  static felix_peer_hello h;
  static felix_peer_hello_reply hr;
  static felix_peer_append a;
  static felix_peer_append_reply ar;
  static felix_peer_read q;
  static felix_peer_read_reply qr;
  felix_buf b = {0};
  if (felix_peer_hello_decode(d, n, &h, NULL) == FELIX_OK) {
    felix_peer_hello_encode(&b, 7, &h);
    if (b.len != n + FELIX_WIRE_HEADER || memcmp(b.data + FELIX_WIRE_HEADER, d, n) != 0) abort();
    felix_buf_free(&b);
  }
  if (felix_peer_append_decode(d, n, &a, NULL) == FELIX_OK) {
    felix_peer_append_encode(&b, 7, &a);
    if (b.len != n + FELIX_WIRE_HEADER || memcmp(b.data + FELIX_WIRE_HEADER, d, n) != 0) abort();
    felix_buf_free(&b);
    felix_peer_append_free(&a);
  }
  if (felix_peer_read_decode(d, n, &q, NULL) == FELIX_OK) {
    felix_peer_read_encode(&b, 7, &q);
    if (b.len != n + FELIX_WIRE_HEADER || memcmp(b.data + FELIX_WIRE_HEADER, d, n) != 0) abort();
    felix_buf_free(&b);
  }
  (void)felix_peer_hello_reply_decode(d, n, &hr, NULL);
  (void)felix_peer_append_reply_decode(d, n, &ar, NULL);
  if (felix_peer_read_reply_decode(d, n, &qr, NULL) == FELIX_OK) felix_peer_append_free(&qr.body);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
  check_peer(d, n);
  check_publish(d, n);
  check_fetch(d, n);
  char stream[128];
  (void)felix_wire_metadata_req_decode(d, n, stream, NULL);
  felix_publish_reply pr;
  (void)felix_wire_publish_reply_decode(d, n, &pr, NULL);
  felix_fetch_reply fr;
  if (felix_wire_fetch_reply_decode(d, n, &fr, NULL) == FELIX_OK) felix_fetch_reply_free(&fr);
  felix_metadata_reply mr;
  if (felix_wire_metadata_reply_decode(d, n, &mr, NULL) == FELIX_OK) felix_metadata_reply_free(&mr);
  uint32_t len, corr;
  uint16_t type;
  bool bad;
  if (felix_frame_peek(d, n, &len, &type, &corr, &bad) && !bad && len > FELIX_WIRE_MAX_FRAME) abort();
  return 0;
}
