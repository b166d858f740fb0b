/* restorepoint.h — restore points: consistent copies of a broker's shard
 * logs (felix-broker restore-point, DESIGN.md §4.9, docs/durable-storage.md).
 *
 * A restore point is a directory:
 *   .felix-restore-point          empty, written first: only a directory
 *                                 with it may be cleared as an interrupted create
 *   manifest.json                 written last, atomically: the point is
 *                                 complete exactly when this file exists
 *   shards/<shard dir>/<file>     segments (.log), ballot, generations, stream
 * Index files are not kept (they are derived; recovery rebuilds them).
 * The manifest names, per shard, its generation history and offset range,
 * and per file its size and CRC-32 (IEEE, zlib's crc32). */
#ifndef FELIX_RESTOREPOINT_H
#define FELIX_RESTOREPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "felix/ballot.h"
#include "felix/error.h"

#define FELIX_RP_VERSION 1
#define FELIX_RP_MANIFEST "manifest.json"
#define FELIX_RP_MARKER ".felix-restore-point" /* written first: the directory is a create's */
/* In a data directory's shards/, what a restore leaves while it runs. */
#define FELIX_RP_JOURNAL ".restore-journal"
#define FELIX_RP_REPLACED ".replaced-" /* + <dir>: an old copy moved aside */

typedef struct felix_rp_file {
  char name[64];     /* a segment name, "ballot", "generations" or "stream" */
  uint64_t size;
  uint32_t crc32;
  bool linked;       /* hard-linked from the source at create time */
} felix_rp_file;

typedef struct felix_rp_shard {
  char dir[300];     /* the shard directory's name */
  char stream[128];
  uint32_t shard;
  char stream_uuid[FELIX_UUID_LEN + 1];
  uint64_t start_offset, end_offset; /* offsets held: [start, end) */
  uint64_t ballot_generation;        /* the generation the copy had promised */
  felix_generations gens;
  felix_rp_file *files;
  size_t nfiles;
} felix_rp_shard;

typedef struct felix_rp_manifest {
  int version;
  char created_at[32];   /* RFC 3339 UTC */
  uint64_t created_at_micros;
  char source_data_dir[4096];
  char broker_id[128];   /* "" when the source's run-state did not name one */
  char storage_id[33];
  bool broker_was_running;
  felix_rp_shard *shards;
  size_t nshards;
} felix_rp_manifest;

/* Totals over every file of a manifest. */
uint64_t felix_rp_manifest_bytes(const felix_rp_manifest *m);
size_t felix_rp_manifest_files(const felix_rp_manifest *m);
void felix_rp_manifest_free(felix_rp_manifest *m);

/* CRC-32 over a canonical text of every field of m (the manifest's "digest"). */
uint32_t felix_rp_manifest_digest(const felix_rp_manifest *m);
/* JSON text of a manifest (malloc'd), with its digest. */
char *felix_rp_manifest_encode(const felix_rp_manifest *m);
/* Parses manifest text; errors name `what` and the byte position. A version
 * other than FELIX_RP_VERSION is FELIX_E_IO (a clear failure, not damage);
 * any name that could leave the restore point, and a digest that does not
 * match the content, are FELIX_E_CORRUPT. */
felix_status felix_rp_manifest_parse(const char *buf, size_t len, const char *what, felix_rp_manifest *out,
                                     felix_err *err);
/* Reads PATH/manifest.json; FELIX_E_NOTFOUND when the point is incomplete. */
felix_status felix_rp_manifest_read(const char *path, felix_rp_manifest *out, felix_err *err);

/* Progress of a long copy: bytes done of total, for the terminal display. */
typedef void (*felix_rp_progress_fn)(void *ctx, uint64_t done, uint64_t total);

/* "STREAM/N" selections; an empty list selects every shard. */
typedef struct felix_rp_select {
  const char *const *items;
  size_t count;
} felix_rp_select;
/* Whether a shard (stream name, shard number) is selected. */
bool felix_rp_selected(const felix_rp_select *sel, const char *stream, uint32_t shard);
/* FELIX_E_NOTFOUND naming the first selection no shard of m matches. */
felix_status felix_rp_select_check(const felix_rp_select *sel, const felix_rp_manifest *m, const char *what,
                                   felix_err *err);

typedef struct felix_rp_create_opts {
  const char *data_dir;
  const char *to;
  felix_rp_select select;
  felix_rp_progress_fn progress;
  void *progress_ctx;
  /* a shard left out, and why (optional; called with progress_ctx) */
  void (*warn)(void *ctx, const char *shard_dir, const char *why);
} felix_rp_create_opts;

/* Makes a restore point of data_dir at `to` (the broker may be running).
 * Refuses (FELIX_E_REFUSED) a `to` that holds a complete restore point or
 * anything that is not an interrupted create; starts over after an
 * interrupted one. On success *out is the manifest that was written. */
felix_status felix_rp_create(const felix_rp_create_opts *o, felix_rp_manifest *out, felix_err *err);

/* One file that does not match its manifest entry. */
typedef struct felix_rp_mismatch {
  char file[4400];
  char kind[24];    /* missing | size | crc32 | unexpected | unreadable */
  char detail[256];
} felix_rp_mismatch;

typedef struct felix_rp_mismatches {
  felix_rp_mismatch *items;
  size_t count;
} felix_rp_mismatches;
void felix_rp_mismatches_free(felix_rp_mismatches *p);

/* Checks every file of the selected shards of the point at `path` against
 * its manifest. FELIX_OK with p->count == 0 when all match. */
felix_status felix_rp_verify(const char *path, const felix_rp_manifest *m, const felix_rp_select *sel,
                             felix_rp_mismatches *p, felix_rp_progress_fn progress, void *ctx, felix_err *err);

typedef struct felix_rp_restore_opts {
  const char *from;
  const char *data_dir;
  felix_rp_select select;
  felix_rp_progress_fn progress;
  void *progress_ctx;
  const char *command; /* what run-state's restored_by records (NULL: nothing) */
} felix_rp_restore_opts;

typedef struct felix_rp_restore_result {
  char previous_storage_id[33]; /* "" when the directory had none */
  char storage_id[33];          /* the new one */
  size_t shards, files;
  uint64_t bytes;
  bool run_state_removed; /* on failure: the next start rotates the storage id */
  bool finished;          /* on failure: the new storage id was on disk (settling keeps the restore) */
  bool outcome_unknown;   /* on failure: storage-id could not be read back */
} felix_rp_restore_result;

/* Writes the selected shards of a verified point into a data directory no
 * broker holds (FELIX_E_BUSY naming the pid otherwise), under new copy ids
 * with every ballot at leader=none, then gives the directory a new storage
 * id and writes run-state restored (restored_from, restored_by; no run is
 * named, for none happened). A point that fails
 * verification is FELIX_E_CORRUPT and the directory is left as it was. */
felix_status felix_rp_restore(const felix_rp_restore_opts *o, felix_rp_manifest *m, felix_rp_mismatches *bad,
                              felix_rp_restore_result *res, felix_err *err);

/* After a restore that stopped midway (restore-point/journal.c): finishes it when its
 * journal's storage id is the directory's, undoes it otherwise; refuses
 * .replaced- copies without a journal. Settles every copy it can and returns
 * the first failure. The broker runs it at start, under the lock, before it
 * lists its copies, and refuses to start when it fails. */
felix_status felix_rp_settle_leftovers(const char *data_dir, felix_err *err);

/* One copy a restore swaps in: whether an old copy was there (and is moved
 * to .replaced-<dir>). */
typedef struct felix_rp_journal_entry {
  char dir[300];
  bool existed;
} felix_rp_journal_entry;
/* Writes shards/.restore-journal, durably, before the first swap. */
felix_status felix_rp_journal_write(int shards_fd, const char *shards_dir, const char *new_sid,
                                    const felix_rp_journal_entry *e, size_t n, felix_err *err);
/* After the new storage id is on disk: removes the .replaced- copies of the
 * entries, fsyncs, then removes the journal and fsyncs. */
felix_status felix_rp_journal_finish(int shards_fd, const char *shards_dir, const felix_rp_journal_entry *e,
                                     size_t n, felix_err *err);
/* *is: data_dir/storage-id holds sid (false when it has none). An
 * unreadable or malformed storage-id is an error, never a "no". */
felix_status felix_rp_storage_id_is(const char *data_dir, const char *sid, bool *is, felix_err *err);
/* Reads a small regular file whole (no link, no FIFO; at most max bytes). */
felix_status felix_rp_read_small(int dirfd, const char *name, const char *what, size_t max, char **out,
                                 size_t *len, felix_err *err);

/* Internal helpers shared by the files of lib/restore-point/. */
/* Copies (or, when link_ok and the file systems allow, hard-links) from_dirfd/name
 * to to_dirfd/name; *crc and *size describe what the destination holds,
 * which is the first `limit` bytes of the source (UINT64_MAX: all of it).
 * The destination is synced. *linked says which happened. `what` and
 * `dst_what` name the source and the destination in messages. */
felix_status felix_rp_copy_file(int from_dirfd, int to_dirfd, const char *name, uint64_t limit, bool link_ok,
                                const char *what, const char *dst_what, uint32_t *crc, uint64_t *size, bool *linked,
                                felix_rp_progress_fn progress, void *ctx, uint64_t *done, uint64_t total,
                                felix_err *err);
/* Opens dirfd/name for reading only if it is a regular file (never through
 * a symlink, never waiting on a FIFO); FELIX_E_CORRUPT otherwise. */
felix_status felix_rp_open_regular(int dirfd, const char *name, const char *what, int *out, felix_err *err);
/* Opens dirfd/name only if it is a directory and not a symlink. */
felix_status felix_rp_open_subdir(int dirfd, const char *name, const char *what, int *out, felix_err *err);
/* CRC-32 and size of the first `limit` bytes of the regular file dirfd/name. */
felix_status felix_rp_file_crc(int dirfd, const char *name, const char *what, uint64_t limit, uint32_t *crc,
                               uint64_t *size, felix_rp_progress_fn progress, void *ctx, uint64_t *done,
                               uint64_t total, felix_err *err);
/* Removes a directory tree (no error when absent). */
felix_status felix_rp_remove_tree(const char *path, felix_err *err);

#endif
