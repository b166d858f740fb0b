/* util/logfmt.c — logfmt lines on stderr, each written with one write(2) so lines
 * from several threads never interleave; a level filter; and repeated lines
 * written once with a count (a peer link that resets five times a second
 * must not bury everything else). */
#include "felix/logfmt.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static felix_log_level min_level = FELIX_LOG_INFO;
static uint64_t (*test_clock)(void);
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* The last lines written, by their text after the timestamp. A small table:
 * the lines that repeat are few, and a line pushed out is merely written
 * again. */
enum { REPEAT_SLOTS = 32 };
typedef struct repeat_slot {
  char body[2048]; /* "level=... msg=... k=v" ("" when free) */
  uint64_t shown_ms; /* when it was last written */
  uint64_t left_out; /* identical lines since, not written */
} repeat_slot;
static repeat_slot slots[REPEAT_SLOTS];

bool felix_log_level_parse(const char *name, felix_log_level *out) {
  static const char *const names[] = {"debug", "info", "warn", "error"};
  for (int i = 0; name && i < 4; i++)
    if (!strcmp(name, names[i])) return *out = (felix_log_level)i, true;
  return false;
}

void felix_log_set_level(felix_log_level level) { min_level = level; }

bool felix_log_configure(const char *flag_value, char *err, size_t cap) {
  const char *env = getenv("FELIX_LOG_LEVEL");
  const char *v = flag_value ? flag_value : env && *env ? env : "info";
  felix_log_level l;
  if (!felix_log_level_parse(v, &l)) {
    snprintf(err, cap, "%s%s: '%s' is not debug, info, warn or error", flag_value ? "--log-level" : "environment ",
             flag_value ? "" : "FELIX_LOG_LEVEL", v);
    return false;
  }
  min_level = l;
  return true;
}
void felix_log_test_clock(uint64_t (*now_ms)(void)) { test_clock = now_ms; }

static uint64_t now_ms(void) {
  if (test_clock) return test_clock();
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

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

/* "level=L msg=M k=v ..." into body. */
static void format_body(char *body, size_t cap, const char *level, const char *msg, va_list ap) {
  size_t at = (size_t)snprintf(body, cap, "level=%s msg=", level);
  at = append_value(body, at, cap - 1, msg);
  const char *k;
  while ((k = va_arg(ap, const char *)) != NULL) {
    const char *v = va_arg(ap, const char *);
    if (at + strlen(k) + 4 >= cap - 1) break;
    at += (size_t)snprintf(body + at, cap - at, " %s=", k);
    at = append_value(body, at, cap - 1, v ? v : "");
  }
  body[at] = '\0';
}

static void write_line(const char *body, uint64_t repeated) {
  char buf[2200];
  struct timeval tv;
  gettimeofday(&tv, NULL);
  struct tm tm;
  gmtime_r(&tv.tv_sec, &tm);
  size_t at = strftime(buf, sizeof buf, "ts=%Y-%m-%dT%H:%M:%S", &tm);
  at += (size_t)snprintf(buf + at, sizeof buf - at, ".%03ldZ %s", (long)tv.tv_usec / 1000, body);
  if (at > sizeof buf - 32) at = sizeof buf - 32;
  if (repeated) at += (size_t)snprintf(buf + at, sizeof buf - at, " repeated=%llu", (unsigned long long)repeated);
  buf[at++] = '\n';
  (void)!write(2, buf, at);
}

/* Under mu: whether body is to be written now, and with which count. */
static bool admit(const char *body, uint64_t now, uint64_t *repeated) {
  repeat_slot *oldest = &slots[0];
  for (int i = 0; i < REPEAT_SLOTS; i++) {
    repeat_slot *s = &slots[i];
    if (s->body[0] && !strcmp(s->body, body)) {
      if (now - s->shown_ms < FELIX_LOG_REPEAT_MS) return s->left_out++, false;
      *repeated = s->left_out;
      s->left_out = 0;
      s->shown_ms = now;
      return true;
    }
    if (!s->body[0] || s->shown_ms < oldest->shown_ms) oldest = s;
  }
  if (oldest->body[0] && oldest->left_out) write_line(oldest->body, oldest->left_out); /* its count is not lost */
  snprintf(oldest->body, sizeof oldest->body, "%s", body);
  oldest->shown_ms = now;
  oldest->left_out = 0;
  *repeated = 0;
  return true;
}

void felix_log_eventv(const char *level, const char *msg, va_list ap) {
  felix_log_level l;
  if (felix_log_level_parse(level, &l) && l < min_level) return;
  char body[2048];
  format_body(body, sizeof body, level, msg, ap);
  uint64_t repeated = 0;
  pthread_mutex_lock(&mu);
  if (admit(body, now_ms(), &repeated)) write_line(body, repeated);
  pthread_mutex_unlock(&mu);
}

void felix_log_event(const char *level, const char *msg, ...) {
  va_list ap;
  va_start(ap, msg);
  felix_log_eventv(level, msg, ap);
  va_end(ap);
}

void felix_log_flush_repeats(void) {
  uint64_t now = now_ms();
  pthread_mutex_lock(&mu);
  for (int i = 0; i < REPEAT_SLOTS; i++) {
    repeat_slot *s = &slots[i];
    if (!s->body[0] || !s->left_out || now - s->shown_ms < FELIX_LOG_REPEAT_MS) continue;
    write_line(s->body, s->left_out);
    s->left_out = 0;
    s->shown_ms = now;
  }
  pthread_mutex_unlock(&mu);
}
