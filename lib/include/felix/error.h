/* error.h — how libfelix reports failure.
 *
 * Every fallible function returns a felix_status and fills a felix_err with a
 * human sentence. Errors about stored data name the file and byte position;
 * that sentence is what the programs print after "PROGRAM: error: ". */
#ifndef FELIX_ERROR_H
#define FELIX_ERROR_H

#include <stddef.h>

typedef enum felix_status {
  FELIX_OK = 0,
  FELIX_E_IO,        /* an operating-system call failed */
  FELIX_E_CORRUPT,   /* stored data is damaged or malformed */
  FELIX_E_NOTFOUND,  /* a file or directory does not exist */
  FELIX_E_BUSY,      /* held by someone else (the directory lock) */
  FELIX_E_INVAL,     /* the caller passed something unusable */
  FELIX_E_SYNC,      /* a sync failed: nothing unsynced may be trusted */
  FELIX_E_TRUNCATED, /* the entry a pending request was bound to is gone */
  FELIX_E_CLOSED,    /* the object was closed while the request waited */
  FELIX_E_UNREACHABLE, /* a broker or the control plane could not be reached */
  FELIX_E_UNAVAILABLE, /* reachable, but it refused for now (draining, not leader, ...) */
  FELIX_E_REFUSED,   /* refused as unsafe */
  FELIX_E_GONE,      /* the shard directory was deleted under an open log */
} felix_status;

typedef struct felix_err {
  felix_status status;
  int sys_errno;
  char msg[768];
} felix_err;

/* Sets err (may be NULL) and returns status, so callers can write
 * `return felix_fail(err, FELIX_E_IO, "open %s: %s", ...)`. */
felix_status felix_fail(felix_err *err, felix_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* As felix_fail, appending ": strerror(errno)" and recording errno. */
felix_status felix_fail_errno(felix_err *err, felix_status status, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

const char *felix_status_name(felix_status status);

#endif
