/* segment.h — Felix durable segment and index format v1 (DESIGN.md §3.1).
 *
 * Pure codecs and a read-only scanner. The scanner is shared by log recovery
 * (which may then truncate a torn tail) and by felix-inspect verify (which
 * never writes), so both classify damage identically. */
#ifndef FELIX_SEGMENT_H
#define FELIX_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "felix/error.h"

#define FELIX_SEG_MAGIC "FLSG"
#define FELIX_IDX_MAGIC "FLSI"
#define FELIX_SEG_VERSION 1
#define FELIX_SEG_HEADER_LEN 32
#define FELIX_IDX_HEADER_LEN 24
#define FELIX_IDX_ENTRY_LEN 16
#define FELIX_REC_HEADER_LEN 24 /* len, offset, timestamp, checksum */
#define FELIX_MAX_PAYLOAD (64u * 1024 * 1024)
#define FELIX_SEG_NAME_LEN 20 /* decimal digits of the base offset */

typedef struct felix_seg_header {
  uint16_t version;
  uint16_t flags;
  uint64_t base_offset;
  uint64_t created_at_micros;
} felix_seg_header;

void felix_seg_header_encode(uint8_t out[FELIX_SEG_HEADER_LEN], uint64_t base_offset,
                             uint64_t created_at_micros);
/* Validates magic, crc, version, flags; *kind names the problem on failure. */
bool felix_seg_header_decode(const uint8_t in[FELIX_SEG_HEADER_LEN], felix_seg_header *out,
                             const char **kind);

/* Writes the 24-byte record header (checksum included) for payload. */
void felix_record_header_encode(uint8_t out[FELIX_REC_HEADER_LEN], uint64_t offset,
                                uint64_t timestamp_micros, const void *payload, uint32_t len);
/* CRC over the first 20 header bytes followed by the payload. */
uint32_t felix_record_checksum(const uint8_t hdr[20], const void *payload, uint32_t len);

void felix_idx_header_encode(uint8_t out[FELIX_IDX_HEADER_LEN], uint64_t base_offset);
void felix_idx_entry_encode(uint8_t out[FELIX_IDX_ENTRY_LEN], uint64_t offset, uint64_t position);

typedef struct felix_idx_entry {
  uint64_t offset;
  uint64_t position;
} felix_idx_entry;

/* Whether a record at `position` gets an index entry, given the position of
 * the previous entry (0 when none yet). One rule for appends and rebuilds, so
 * a rebuilt index is byte-identical. */
static inline bool felix_idx_wants_entry(uint64_t position, uint64_t last_entry_position,
                                         uint32_t spacing) {
  return last_entry_position == 0 || position - last_entry_position >= spacing;
}

/* One problem found in a segment or index file. */
typedef struct felix_problem {
  char file[512];
  uint64_t position;
  char kind[48];
  bool repairable;
  char detail[256];
} felix_problem;

/* Result of scanning the records of one segment file. */
typedef struct felix_seg_scan {
  felix_seg_header header;
  uint64_t file_size;
  uint64_t valid_end;    /* position just past the last intact record */
  uint64_t next_offset;  /* offset the next record would carry */
  uint64_t records;      /* intact records seen by this scan */
  uint64_t last_timestamp_micros;
  bool has_problem;
  felix_problem problem; /* the first problem; the scan stops there */
  felix_idx_entry *entries; /* index entries the scan derived (malloc'd) */
  size_t n_entries;
} felix_seg_scan;

/* Called for every intact record; payload points into a transient buffer. */
typedef void (*felix_record_fn)(void *ctx, uint64_t offset, uint64_t timestamp_micros,
                                uint64_t position, const uint8_t *payload, uint32_t len);

typedef struct felix_scan_opts {
  uint64_t start_position;  /* FELIX_SEG_HEADER_LEN for a full scan */
  uint64_t start_offset;    /* offset expected at start_position */
  uint64_t last_entry_position; /* index entry preceding start (0 = none) */
  uint32_t index_spacing;
  bool is_newest;           /* torn-tail damage is repairable only here */
  bool check_base;          /* the header's base offset must equal expect_base */
  uint64_t expect_base;     /* (the base the file name gives) */
  felix_record_fn on_record;  /* optional */
  void *ctx;
} felix_scan_opts;

/* Reads the header and scans records of the segment open at fd (read only).
 * Returns FELIX_OK when the file could be read; damage is reported through
 * scan->has_problem, never as a failing status. `path` is used for messages. */
felix_status felix_seg_scan_fd(int fd, const char *path, const felix_scan_opts *opts,
                               felix_seg_scan *scan, felix_err *err);
void felix_seg_scan_free(felix_seg_scan *scan);

/* Parses "00000000000000000042.log" style names; returns false otherwise. */
bool felix_seg_parse_name(const char *name, const char *suffix, uint64_t *base);
void felix_seg_format_name(char out[32], uint64_t base, const char *suffix);

/* Encodes a whole index file from entries (malloc'd buffer). */
uint8_t *felix_idx_encode(uint64_t base_offset, const felix_idx_entry *e, size_t n, size_t *len);
/* Decodes an index file; false with *kind and *pos on malformed content. */
bool felix_idx_decode(const uint8_t *buf, size_t len, uint64_t expect_base, felix_idx_entry **out,
                      size_t *n, const char **kind, uint64_t *pos);

#endif
