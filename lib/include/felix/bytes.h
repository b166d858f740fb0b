/* bytes.h — big-endian integer codecs used by every on-disk format. */
#ifndef FELIX_BYTES_H
#define FELIX_BYTES_H

#include <stdint.h>

static inline void felix_put_u16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}
static inline void felix_put_u32(uint8_t *p, uint32_t v) {
  for (int i = 3; i >= 0; i--, v >>= 8) p[i] = (uint8_t)v;
}
static inline void felix_put_u64(uint8_t *p, uint64_t v) {
  for (int i = 7; i >= 0; i--, v >>= 8) p[i] = (uint8_t)v;
}
static inline uint16_t felix_get_u16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static inline uint32_t felix_get_u32(const uint8_t *p) {
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t felix_get_u64(const uint8_t *p) {
  return ((uint64_t)felix_get_u32(p) << 32) | felix_get_u32(p + 4);
}

#endif
