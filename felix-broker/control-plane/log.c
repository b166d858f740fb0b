/* control-plane/log.c — logfmt writer (control-plane/log.h). One fputs per line under a lock, so
 * lines from the HTTP thread and the ticker never interleave. */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static bool info_quiet;

void cp_log_quiet(bool quiet) {
  info_quiet = quiet;
}

static size_t put_value(char *out, size_t cap, const char *v) {
  bool plain = v[0] != '\0' && strpbrk(v, " \"=\t\n\\") == NULL;
  if (plain) {
    int w = snprintf(out, cap, "%s", v);
    return w < 0 ? 0 : (size_t)w < cap ? (size_t)w : cap - 1;
  }
  size_t n = 0;
  if (n + 1 < cap) out[n++] = '"';
  for (; *v && n + 3 < cap; v++) {
    if (*v == '"' || *v == '\\') out[n++] = '\\';
    out[n++] = *v == '\n' ? ' ' : *v;
  }
  if (n + 1 < cap) out[n++] = '"';
  out[n] = '\0';
  return n;
}

static size_t put_ts(char *out, size_t cap) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  struct tm tm;
  gmtime_r(&tv.tv_sec, &tm);
  char base[32];
  strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
  int w = snprintf(out, cap, "ts=%s.%03dZ", base, (int)(tv.tv_usec / 1000));
  return w < 0 ? 0 : (size_t)w;
}

void cp_log(const char *level, const char *msg, ...) {
  if (info_quiet && !strcmp(level, "info")) return;
  char line[4096];
  size_t n = put_ts(line, sizeof line);
  n += (size_t)snprintf(line + n, sizeof line - n, " level=%s msg=", level);
  n += put_value(line + n, sizeof line - n, msg);
  va_list ap;
  va_start(ap, msg);
  for (const char *k; (k = va_arg(ap, const char *)) != NULL && n + 8 < sizeof line;) {
    const char *v = va_arg(ap, const char *);
    n += (size_t)snprintf(line + n, sizeof line - n, " %s=", k);
    if (n < sizeof line - 4) n += put_value(line + n, sizeof line - n, v ? v : "");
  }
  va_end(ap);
  if (n > sizeof line - 2) n = sizeof line - 2;
  line[n++] = '\n';
  line[n] = '\0';
  pthread_mutex_lock(&log_mu);
  fputs(line, stderr);
  fflush(stderr);
  pthread_mutex_unlock(&log_mu);
}
