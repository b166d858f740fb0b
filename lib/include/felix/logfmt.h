/* logfmt.h — one line per event on stderr: ts= level= msg= key=value ... */
#ifndef FELIX_LOGFMT_H
#define FELIX_LOGFMT_H

/* felix_log_event("info", "broker started", "id", "b1", "listen", "127.0.0.1:7101", NULL);
 * Values with spaces, quotes or '=' are quoted. Thread-safe (one write per line). */
void felix_log_event(const char *level, const char *msg, ...) __attribute__((sentinel));

#endif
