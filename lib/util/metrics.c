/* metrics.c — the Prometheus text exposition format (metrics.h). */
#include "felix/metrics.h"

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 0.5 ms to 10 s: a publish acknowledged from the page cache takes well
 * under a millisecond, one that waits for an fsync and two followers a few,
 * one that waits out a failover seconds. */
const double felix_latency_bounds[FELIX_LATENCY_BUCKETS] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                            0.1,    0.25,  0.5,    1,     2.5,  5,     10};

static void add(felix_metrics *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(felix_metrics *m, const char *fmt, ...) {
  if (m->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = m->cap - m->len;
    int n = vsnprintf(m->text ? m->text + m->len : NULL, room, fmt, ap);
    va_end(ap);
    assert(n >= 0);
    if ((size_t)n < room) {
      m->len += (size_t)n;
      return;
    }
    size_t nc = m->cap ? m->cap * 2 : 8192;
    while (nc - m->len <= (size_t)n) nc *= 2;
    char *p = realloc(m->text, nc);
    if (!p) {
      m->oom = true;
      return;
    }
    m->text = p;
    m->cap = nc;
  }
}

void felix_metrics_family(felix_metrics *m, const char *name, const char *type, const char *help) {
  assert(!strcmp(type, "counter") || !strcmp(type, "gauge") || !strcmp(type, "histogram"));
  add(m, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample_head(felix_metrics *m, const char *name, const char *labels) {
  if (labels && *labels) add(m, "%s{%s} ", name, labels);
  else add(m, "%s ", name);
}

void felix_metrics_u64(felix_metrics *m, const char *name, const char *labels, uint64_t v) {
  sample_head(m, name, labels);
  add(m, "%" PRIu64 "\n", v);
}

void felix_metrics_double(felix_metrics *m, const char *name, const char *labels, double v) {
  sample_head(m, name, labels);
  add(m, "%.9g\n", v);
}

char *felix_metrics_take(felix_metrics *m) {
  char *t = m->oom ? NULL : m->text;
  if (m->oom) free(m->text);
  if (t == NULL && !m->oom) t = calloc(1, 1);
  *m = (felix_metrics){0};
  return t;
}

bool felix_metrics_labels(char *out, size_t cap, ...) {
  va_list ap;
  va_start(ap, cap);
  size_t n = 0;
  bool ok = cap > 0;
  if (ok) out[0] = '\0';
  for (const char *k; ok && (k = va_arg(ap, const char *));) {
    const char *v = va_arg(ap, const char *);
    int w = snprintf(out + n, cap - n, "%s%s=\"", n ? "," : "", k);
    ok = w >= 0 && (size_t)w < cap - n;
    if (ok) n += (size_t)w;
    for (; ok && *v; v++) {
      const char *esc = *v == '\\' ? "\\\\" : *v == '"' ? "\\\"" : *v == '\n' ? "\\n" : NULL;
      size_t need = esc ? 2 : 1;
      ok = n + need < cap;
      if (ok) memcpy(out + n, esc ? esc : v, need), n += need;
    }
    ok = ok && n + 1 < cap;
    if (ok) out[n++] = '"', out[n] = '\0';
  }
  va_end(ap);
  return ok;
}

void felix_histogram_observe(felix_histogram *h, double seconds) {
  h->count++;
  h->sum += seconds;
  for (int i = 0; i < FELIX_LATENCY_BUCKETS; i++)
    if (seconds <= felix_latency_bounds[i]) {
      h->bucket[i]++;
      return;
    }
}

void felix_metrics_histogram(felix_metrics *m, const char *name, const char *labels, const felix_histogram *h) {
  const char *sep = labels && *labels ? "," : "";
  uint64_t cumulative = 0;
  for (int i = 0; i < FELIX_LATENCY_BUCKETS; i++) {
    cumulative += h->bucket[i];
    add(m, "%s_bucket{%s%sle=\"%g\"} %" PRIu64 "\n", name, labels ? labels : "", sep, felix_latency_bounds[i], cumulative);
  }
  add(m, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name, labels ? labels : "", sep, h->count);
  char sub[160];
  snprintf(sub, sizeof sub, "%s_sum", name);
  felix_metrics_double(m, sub, labels, h->sum);
  snprintf(sub, sizeof sub, "%s_count", name);
  felix_metrics_u64(m, sub, labels, h->count);
}
