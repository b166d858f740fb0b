/* fuzz_wire.c — libFuzzer target for the data protocol's frame decoders.
 *
 * Every decoder must reject or accept any byte string without reading out of
 * bounds, and anything a request decoder accepts must encode back to the same
 * bytes (the codec is a bijection on valid frames). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "felix/wire.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
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
