/* metrics.h — the Prometheus text exposition format (version 0.0.4), for
 * the broker's and the control plane's /metrics.
 *
 * A family is declared once (HELP and TYPE), then its samples follow it, so
 * every family is grouped as `promtool check metrics` requires: a caller
 * that has one sample per shard loops over its shards once per family. */
#ifndef FELIX_METRICS_H
#define FELIX_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct felix_metrics {
  char *text;
  size_t len, cap;
  bool oom; /* an allocation failed: felix_metrics_take returns NULL */
} felix_metrics;

/* "# HELP name help" and "# TYPE name type" (counter, gauge or histogram). */
void felix_metrics_family(felix_metrics *m, const char *name, const char *type, const char *help);
/* One sample: name{labels} value. labels is "" or `k="v",k2="v2"` built
 * with felix_metrics_labels; integers are printed exactly. */
void felix_metrics_u64(felix_metrics *m, const char *name, const char *labels, uint64_t v);
void felix_metrics_double(felix_metrics *m, const char *name, const char *labels, double v);
/* The text so far (malloc'd, NUL-terminated; the builder is reset), or NULL
 * after an allocation failure. */
char *felix_metrics_take(felix_metrics *m);

/* k1="v1",k2="v2" from NULL-terminated key/value pairs, values escaped
 * (backslash, quote, newline); false if it does not fit in cap. */
bool felix_metrics_labels(char *out, size_t cap, ...) __attribute__((sentinel));

/* A latency histogram in seconds, on the buckets of felix_latency_bounds. */
#define FELIX_LATENCY_BUCKETS 14
extern const double felix_latency_bounds[FELIX_LATENCY_BUCKETS];
typedef struct felix_histogram {
  uint64_t bucket[FELIX_LATENCY_BUCKETS]; /* observations <= bound i (not cumulative) */
  uint64_t count;                         /* every observation, also those above the last bound */
  double sum;
} felix_histogram;
void felix_histogram_observe(felix_histogram *h, double seconds);
/* name_bucket{labels,le="…"} (cumulative, ending with +Inf), name_sum, name_count. */
void felix_metrics_histogram(felix_metrics *m, const char *name, const char *labels, const felix_histogram *h);

#endif
