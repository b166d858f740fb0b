/* survey.h — a read-only look at a shard directory or a data directory.
 *
 * Used by felix-inspect (summary, segments, verify). It never writes, locks
 * or repairs: every problem is reported with its file, byte position, kind
 * and whether broker recovery would repair it on the next start. */
#ifndef FELIX_SURVEY_H
#define FELIX_SURVEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "felix/ballot.h"
#include "felix/streammeta.h"
#include "felix/segment.h"

typedef struct felix_seg_info {
  char name[32];
  uint64_t base_offset;
  uint64_t next_offset;
  uint64_t records;
  uint64_t bytes;
  uint64_t created_at_micros;
  const char *index_state; /* "ok" | "missing" | "bad" */
} felix_seg_info;

typedef struct felix_problems {
  felix_problem *items;
  size_t count, cap;
} felix_problems;

typedef struct felix_shard_survey {
  char path[4096];
  char name[256];
  felix_seg_info *segs;
  size_t nsegs;
  uint64_t start_offset, end_offset, records, bytes;
  bool has_ballot;
  felix_ballot ballot;
  bool has_generations;
  felix_generations gens;
  bool has_stream;
  felix_stream_meta stream; /* the copy's `stream` file */
  felix_problems problems;
} felix_shard_survey;

/* Surveys one shard directory. Fails only when the directory cannot be read;
 * damage is reported in out->problems. */
felix_status felix_shard_survey_run(const char *path, felix_shard_survey *out, felix_err *err);
void felix_shard_survey_free(felix_shard_survey *s);

/* Adds a problem; the detail is formatted. */
void felix_problems_add(felix_problems *p, const char *file, uint64_t position, const char *kind,
                        bool repairable, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Adds a problem from a parser error (its "byte N", when the message has one). */
void felix_problems_add_err(felix_problems *p, const char *file, const char *kind, const felix_err *err);
void felix_problems_free(felix_problems *p);

/* Lists the shard directories under datadir/shards, sorted (malloc'd names). */
felix_status felix_list_shard_dirs(const char *datadir, char ***names, size_t *n, felix_err *err);
void felix_free_names(char **names, size_t n);

/* Whether path looks like a data directory (storage-id or shards/ inside). */
bool felix_is_data_dir(const char *path);

/* Standard base64 of in; out needs 4*((len+2)/3)+1 bytes. */
void felix_base64_encode(const uint8_t *in, size_t len, char *out);

#endif
