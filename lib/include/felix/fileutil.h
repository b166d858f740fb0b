/* fileutil.h — whole-file I/O relative to a directory descriptor.
 *
 * Small state files (storage-id, run-state, ballot, generations) are written
 * whole: temp file, fsync, rename, fsync the directory (DESIGN.md §3). Every
 * path here is relative to an open directory descriptor (openat), so a shard
 * directory that is deleted or replaced under us is noticed, never followed. */
#ifndef FELIX_FILEUTIL_H
#define FELIX_FILEUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "felix/error.h"

/* Writes data as dirfd/name atomically and durably. `what` names the file in
 * messages (e.g. the full path). */
felix_status felix_write_file_atomic(int dirfd, const char *name, const void *data, size_t len,
                                     const char *what, felix_err *err);

/* Reads dirfd/name whole into a NUL-terminated malloc'd buffer. Returns
 * FELIX_E_NOTFOUND (with a message) when the file does not exist. Files over
 * max_len are refused as corrupt. */
felix_status felix_read_file(int dirfd, const char *name, size_t max_len, char **out, size_t *len,
                             const char *what, felix_err *err);

felix_status felix_fsync_dir(int dirfd, const char *what, felix_err *err);

/* Opens a directory (O_DIRECTORY | O_CLOEXEC); FELIX_E_NOTFOUND if absent. */
felix_status felix_open_dir(int atfd, const char *path, int *out, felix_err *err);

/* Random bytes from getrandom(2). */
felix_status felix_random_bytes(void *buf, size_t len, felix_err *err);
void felix_hex_encode(const uint8_t *in, size_t len, char *out /* 2*len+1 */);
bool felix_hex_valid(const char *s, size_t len); /* lowercase hex of exactly len chars */

uint64_t felix_now_micros(void);
/* RFC 3339 UTC, e.g. 2026-11-29T21:18:10Z. */
void felix_format_rfc3339(char out[32], int64_t unix_seconds);

/* Joins a and b with '/' into out; false if it does not fit. */
bool felix_path_join(char *out, size_t cap, const char *a, const char *b);

#endif
