/* control-plane/log.h — logfmt lines to stderr for the control plane:
 * ts=2026-11-29T21:00:00.123Z level=info msg="..." key=value */
#ifndef FELIX_CP_LOG_H
#define FELIX_CP_LOG_H

#include <stdbool.h>

/* Key/value pairs follow msg as const char * arguments, ended by NULL.
 * Values with spaces, quotes or '=' are quoted. */
void cp_log(const char *level, const char *msg, ...) __attribute__((sentinel));

/* Drops info lines (unit tests); warnings and errors still print. */
void cp_log_quiet(bool quiet);

#endif
