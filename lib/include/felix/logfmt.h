/* logfmt.h — one line per event on stderr: ts= level= msg= key=value ... */
#ifndef FELIX_LOGFMT_H
#define FELIX_LOGFMT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum felix_log_level { FELIX_LOG_DEBUG, FELIX_LOG_INFO, FELIX_LOG_WARN, FELIX_LOG_ERROR } felix_log_level;

/* felix_log_event("info", "broker started", "id", "b1", "listen", "127.0.0.1:7101", NULL);
 * Values with spaces, quotes or '=' are quoted. Thread-safe (one write per line).
 * Lines below the level set are dropped. A line identical to one written in
 * the last FELIX_LOG_REPEAT_MS (same level, message and fields) is not
 * written again but counted: the next time it is written, or when
 * felix_log_flush_repeats finds its window over, it carries repeated=N, the
 * number of identical lines left out since the last one shown. */
void felix_log_event(const char *level, const char *msg, ...) __attribute__((sentinel));
void felix_log_eventv(const char *level, const char *msg, va_list ap);

#define FELIX_LOG_REPEAT_MS 10000

/* "debug", "info", "warn" or "error"; false for anything else. */
bool felix_log_level_parse(const char *name, felix_log_level *out);
void felix_log_set_level(felix_log_level level);
/* Sets the level from a --log-level value, else from FELIX_LOG_LEVEL, else
 * info. A bad value: false, and err names the flag (or the variable) and it. */
bool felix_log_configure(const char *flag_value, char *err, size_t cap);
/* Writes the count of every repeated line whose window has passed. Callers
 * run it from a timer, so that a burst that stopped is still reported. */
void felix_log_flush_repeats(void);
/* Tests: the clock the repeat windows are measured on (NULL: CLOCK_MONOTONIC). */
void felix_log_test_clock(uint64_t (*now_ms)(void));

#endif
