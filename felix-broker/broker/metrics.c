/* broker/metrics.c — the text of the broker's /metrics, rendered by the
 * loop (run.c's tick) into b->metrics_text, which http.c serves.
 *
 * Every family has HELP and TYPE and its samples together (promtool check
 * metrics; docs/metrics.md lists them): per-shard families loop over the
 * shards once each. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "broker.h"
#include "felix/cli.h"
#include "felix/metrics.h"
#include "felix/lease.h"

/* One shard copy's figures, read once per rendering. */
typedef struct shard_sample {
  const shard *s;
  felix_log_stats st;
  char labels[400];
} shard_sample;

typedef struct shard_family {
  const char *name, *type, *help;
  uint64_t (*get)(const shard_sample *x);
} shard_family;

static uint64_t end_offset(const shard_sample *x) { return x->st.end_offset; }
static uint64_t hwm(const shard_sample *x) { return x->s->hwm; }
static uint64_t leading(const shard_sample *x) { return x->s->leading; }
static uint64_t unsynced(const shard_sample *x) { return x->st.unsynced_bytes; }
static uint64_t syncs(const shard_sample *x) { return x->st.syncs; }

static const shard_family shard_families[] = {
    {"felix_log_end_offset", "gauge", "The offset after the last record of this copy's log.", end_offset},
    {"felix_hwm", "gauge", "The high-water mark this copy knows: records below it are committed.", hwm},
    {"felix_leading", "gauge", "1 while this broker leads the shard.", leading},
    {"felix_unsynced_bytes", "gauge", "Bytes written to this copy's log and not yet fsynced.", unsynced},
    {"felix_syncs_total", "counter", "fsyncs of this copy's log since the start.", syncs},
};

static void broker_families(broker *b, felix_metrics *m) {
  char lbl[64];
  felix_metrics_family(m, "felix_build_info", "gauge", "The version of felix-broker, as --version prints it.");
  felix_metrics_labels(lbl, sizeof lbl, "version", FELIX_VERSION, NULL);
  felix_metrics_u64(m, "felix_build_info", lbl, 1);
  felix_metrics_family(m, "felix_ready", "gauge", "1 once registered and serving (/ready answers 200).");
  felix_metrics_u64(m, "felix_ready", "", b->ready);
  felix_metrics_family(m, "felix_appends_total", "counter", "Records appended by this broker as a leader.");
  felix_metrics_u64(m, "felix_appends_total", "", b->appends_total);
  felix_metrics_family(m, "felix_append_errors_total", "counter", "Publishes refused or failed by this broker.");
  felix_metrics_u64(m, "felix_append_errors_total", "", b->append_errors);
  felix_metrics_family(m, "felix_publish_latency_seconds", "histogram",
                       "From a PUBLISH request's arrival to its answer (the acknowledgement or the error).");
  felix_metrics_histogram(m, "felix_publish_latency_seconds", "", &b->publish_latency);
  felix_metrics_family(m, "felix_received_bytes_total", "counter", "Bytes read from the data port's connections.");
  felix_metrics_u64(m, "felix_received_bytes_total", "", b->bytes_in);
  felix_metrics_family(m, "felix_sent_bytes_total", "counter", "Bytes of answers written to the data port's connections.");
  felix_metrics_u64(m, "felix_sent_bytes_total", "", b->bytes_out);
}

static void disk_families(broker *b, felix_metrics *m) {
  struct statvfs v;
  if (fstatvfs(b->dirfd, &v) != 0) return;
  felix_metrics_family(m, "felix_disk_free_bytes", "gauge", "Bytes free for this broker on the data directory's file system.");
  felix_metrics_u64(m, "felix_disk_free_bytes", "", (uint64_t)v.f_bavail * v.f_frsize);
  felix_metrics_family(m, "felix_disk_size_bytes", "gauge", "Size of the data directory's file system.");
  felix_metrics_u64(m, "felix_disk_size_bytes", "", (uint64_t)v.f_blocks * v.f_frsize);
}

static void heartbeat_family(broker *b, felix_metrics *m) {
  pthread_mutex_lock(&b->mb.mu);
  uint64_t last = b->mb.heartbeat_ok_ms;
  pthread_mutex_unlock(&b->mb.mu);
  felix_metrics_family(m, "felix_heartbeat_age_seconds", "gauge",
                       "Seconds since the control plane last accepted a heartbeat or registration (none before the first).");
  if (last) felix_metrics_double(m, "felix_heartbeat_age_seconds", "", (double)(felix_boottime_ms() - last) / 1000);
}

static void shard_samples(felix_metrics *m, const shard_sample *xs, size_t n) {
  for (size_t f = 0; f < sizeof shard_families / sizeof shard_families[0]; f++) {
    const shard_family *fam = &shard_families[f];
    felix_metrics_family(m, fam->name, fam->type, fam->help);
    for (size_t i = 0; i < n; i++) felix_metrics_u64(m, fam->name, xs[i].labels, fam->get(&xs[i]));
  }
  felix_metrics_family(m, "felix_sync_seconds_total", "counter", "Seconds spent in fsyncs of this copy's log.");
  for (size_t i = 0; i < n; i++)
    felix_metrics_double(m, "felix_sync_seconds_total", xs[i].labels, (double)xs[i].st.sync_nanos / 1e9);
  felix_metrics_family(m, "felix_sync_batch_appends", "gauge", "Appends per fsync of this copy's log, on average.");
  for (size_t i = 0; i < n; i++)
    felix_metrics_double(m, "felix_sync_batch_appends", xs[i].labels,
                         xs[i].st.syncs ? (double)xs[i].st.append_seq / (double)xs[i].st.syncs : 0.0);
}

/* Leader only: how far each follower's copy is behind this one. */
static void follower_samples(felix_metrics *m, const shard_sample *xs, size_t n) {
  felix_metrics_family(m, "felix_follower_lag_records", "gauge",
                       "On the leader: records of its log a connected follower's copy does not hold yet.");
  peer_follower fs[BROKER_MAX_MEMBERS];
  char lbl[600];
  for (size_t i = 0; i < n; i++) {
    int nf = xs[i].s->leading ? peer_followers(xs[i].s, fs, BROKER_MAX_MEMBERS) : 0;
    for (int k = 0; k < nf; k++) {
      if (!fs[k].connected) continue;
      snprintf(lbl, sizeof lbl, "%s,follower=\"%s\"", xs[i].labels, fs[k].broker);
      uint64_t end = xs[i].st.end_offset;
      felix_metrics_u64(m, "felix_follower_lag_records", lbl, end > fs[k].held ? end - fs[k].held : 0);
    }
  }
  felix_metrics_family(m, "felix_follower_connected", "gauge", "On the leader: 1 while its link to a follower is up.");
  for (size_t i = 0; i < n; i++) {
    int nf = xs[i].s->leading ? peer_followers(xs[i].s, fs, BROKER_MAX_MEMBERS) : 0;
    for (int k = 0; k < nf; k++) {
      snprintf(lbl, sizeof lbl, "%s,follower=\"%s\"", xs[i].labels, fs[k].broker);
      felix_metrics_u64(m, "felix_follower_connected", lbl, fs[k].connected);
    }
  }
}

void broker_update_metrics(broker *b) {
  felix_metrics m = {0};
  broker_families(b, &m);
  disk_families(b, &m);
  heartbeat_family(b, &m);
  size_t n = 0;
  for (shard *s = b->shards; s; s = s->next) n += s->log != NULL;
  shard_sample *xs = calloc(n ? n : 1, sizeof *xs);
  if (xs) {
    size_t i = 0;
    for (shard *s = b->shards; s; s = s->next) {
      if (!s->log) continue;
      char idx[16];
      snprintf(idx, sizeof idx, "%u", s->index);
      xs[i].s = s;
      felix_log_get_stats(s->log, &xs[i].st);
      felix_metrics_labels(xs[i].labels, sizeof xs[i].labels, "stream", s->stream, "shard", idx, NULL);
      i++;
    }
    shard_samples(&m, xs, n);
    follower_samples(&m, xs, n);
    free(xs);
  }
  char *t = felix_metrics_take(&m);
  if (!t) return; /* out of memory: the last snapshot stays */
  pthread_mutex_lock(&b->stats_mu);
  free(b->metrics_text);
  b->metrics_text = t;
  pthread_mutex_unlock(&b->stats_mu);
}
