/* util/logfmt.c — logfmt lines on stderr, each written with one write(2) so lines
 * from several threads never interleave. */
#include "felix/logfmt.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static size_t append_value(char *buf, size_t at, size_t cap, const char *v) {
  bool quote = !*v || strpbrk(v, " \"=\t\n") != NULL;
  if (quote && at < cap) buf[at++] = '"';
  for (const char *p = v; *p && at + 2 < cap; p++) {
    if (*p == '"' || *p == '\\') buf[at++] = '\\';
    if (*p == '\n') {
      buf[at++] = '\\';
      buf[at++] = 'n';
      continue;
    }
    buf[at++] = *p;
  }
  if (quote && at < cap) buf[at++] = '"';
  return at;
}

void felix_log_event(const char *level, const char *msg, ...) {
  char buf[4096];
  struct timeval tv;
  gettimeofday(&tv, NULL);
  struct tm tm;
  gmtime_r(&tv.tv_sec, &tm);
  size_t at = strftime(buf, sizeof buf, "ts=%Y-%m-%dT%H:%M:%S", &tm);
  at += (size_t)snprintf(buf + at, sizeof buf - at, ".%03ldZ level=%s msg=", (long)tv.tv_usec / 1000, level);
  at = append_value(buf, at, sizeof buf - 2, msg);
  va_list ap;
  va_start(ap, msg);
  const char *k;
  while ((k = va_arg(ap, const char *)) != NULL) {
    const char *v = va_arg(ap, const char *);
    if (at + strlen(k) + 4 >= sizeof buf - 2) break;
    at += (size_t)snprintf(buf + at, sizeof buf - at, " %s=", k);
    at = append_value(buf, at, sizeof buf - 2, v ? v : "");
  }
  va_end(ap);
  buf[at++] = '\n';
  (void)!write(2, buf, at);
}
