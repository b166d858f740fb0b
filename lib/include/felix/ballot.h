/* ballot.h — a shard copy's ballot and generations files (DESIGN.md §3.4),
 * and the naming of shard directories. */
#ifndef FELIX_BALLOT_H
#define FELIX_BALLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "felix/error.h"

#define FELIX_COPY_ID_HEX 32
#define FELIX_UUID_LEN 36

typedef struct felix_ballot {
  char copy_id[FELIX_COPY_ID_HEX + 1];
  char storage_id[FELIX_COPY_ID_HEX + 1];
  char stream_uuid[FELIX_UUID_LEN + 1];
  uint64_t generation;
  bool has_leader;
  char leader[128];                          /* broker id */
  char leader_copy_id[FELIX_COPY_ID_HEX + 1];
  char leader_incarnation[128];
  bool has_shard;        /* the shard index the copy was made for; absent in copies made before it was written */
  uint32_t shard;
} felix_ballot;

felix_status felix_ballot_parse(const char *buf, size_t len, const char *what, felix_ballot *out,
                                felix_err *err);
void felix_ballot_format(const felix_ballot *b, char *out, size_t cap);
felix_status felix_ballot_read(int dirfd, const char *what, felix_ballot *out, felix_err *err);
felix_status felix_ballot_write(int dirfd, const char *what, const felix_ballot *b, felix_err *err);

typedef struct felix_generation {
  uint64_t generation;
  uint64_t start_offset;
} felix_generation;

typedef struct felix_generations {
  felix_generation *items;
  size_t count;
} felix_generations;

/* Lines "<generation> <start offset>", generations strictly ascending and
 * start offsets non-decreasing. */
felix_status felix_generations_parse(const char *buf, size_t len, const char *what,
                                     felix_generations *out, felix_err *err);
/* Rendered text (malloc'd). */
char *felix_generations_format(const felix_generations *g);
felix_status felix_generations_read(int dirfd, const char *what, felix_generations *out, felix_err *err);
felix_status felix_generations_write(int dirfd, const char *what, const felix_generations *g, felix_err *err);
/* Drops lines whose start offset is at or beyond log_end (load rule of §3.4);
 * returns how many were dropped. */
size_t felix_generations_trim_to(felix_generations *g, uint64_t log_end);
void felix_generations_free(felix_generations *g);

/* "<stream>_<shard>-<first 16 hex of uuid without dashes>" */
bool felix_shard_dir_name(char *out, size_t cap, const char *stream, uint32_t shard, const char *uuid);
/* Splits a shard directory name; false if it is not one. */
bool felix_shard_dir_parse(const char *name, char *stream, size_t stream_cap, uint32_t *shard,
                           char uuid16[17]);

#endif
