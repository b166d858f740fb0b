/* streammeta.h — a shard copy's `stream` file: the stream it belongs to as
 * the control plane last assigned it (name, uuid, shard count, replication
 * factor, ack policy). Inventories carry it, so that a control plane whose
 * restored database does not know the stream can adopt it back under its own
 * uuid (DESIGN.md §4.8, `felixctl stream adopt`). Written whole (temp,
 * fsync, rename, fsync directory); a malformed one is an error naming the
 * file and byte position. A copy made before this file existed has none. */
#ifndef FELIX_STREAMMETA_H
#define FELIX_STREAMMETA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "felix/ballot.h"
#include "felix/error.h"
#include "felix/placement.h"

typedef struct felix_stream_meta {
  char name[128];
  char uuid[FELIX_UUID_LEN + 1];
  uint32_t shards, replicas;
  char acks[16]; /* quorum | leader | all */
} felix_stream_meta;

felix_status felix_stream_meta_parse(const char *buf, size_t len, const char *what, felix_stream_meta *out,
                                     felix_err *err);
void felix_stream_meta_format(const felix_stream_meta *m, char *out, size_t cap);
/* *found false (and FELIX_OK) when the copy has no `stream` file. */
felix_status felix_stream_meta_read(int dirfd, const char *what, felix_stream_meta *out, bool *found, felix_err *err);
felix_status felix_stream_meta_write(int dirfd, const char *what, const felix_stream_meta *m, felix_err *err);
bool felix_stream_meta_equal(const felix_stream_meta *a, const felix_stream_meta *b);

#endif
