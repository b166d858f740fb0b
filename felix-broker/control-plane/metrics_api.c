/* control-plane/metrics_api.c — GET /metrics: the control plane's view in
 * the Prometheus text format (docs/metrics.md). Like a broker's /metrics it
 * needs no token: it names brokers and streams, never a secret. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "felix/cli.h"
#include "felix/metrics.h"
#include "state.h"

static const char *const states[] = {"Active", "Fencing", "NoCaughtUpReplica"};

static void broker_families(cp_state *cp, felix_metrics *m, const cp_broker_row *bs, size_t nb) {
  char lbl[256];
  size_t alive = 0;
  for (size_t i = 0; i < nb; i++) alive += cp_broker_alive(cp, bs[i].id);
  felix_metrics_family(m, "felix_cp_brokers", "gauge", "Registered brokers, by whether their lease is alive.");
  felix_metrics_u64(m, "felix_cp_brokers", "state=\"alive\"", alive);
  felix_metrics_u64(m, "felix_cp_brokers", "state=\"lapsed\"", nb - alive);
  felix_metrics_family(m, "felix_cp_broker_lease_age_seconds", "gauge",
                       "Seconds since the broker's lease was last renewed by a heartbeat (a lease lapses at lease_ms).");
  for (size_t i = 0; i < nb; i++) {
    felix_metrics_labels(lbl, sizeof lbl, "broker", bs[i].id, NULL);
    felix_metrics_double(m, "felix_cp_broker_lease_age_seconds", lbl, (double)cp_broker_lease_age(cp, bs[i].id) / 1000);
  }
}

static void shard_totals(cp_state *cp, felix_metrics *m, const cp_shard_row *sh, size_t nsh) {
  size_t by_state[3] = {0}, under = 0, waiting = 0;
  uint64_t lag;
  for (size_t i = 0; i < nsh; i++) {
    for (int k = 0; k < 3; k++) by_state[k] += !strcmp(sh[i].state, states[k]);
    under += cp_caught_up_replicas(&sh[i], &lag) < sh[i].nslots;
    waiting += cp_shard_waiting(cp, &sh[i]);
  }
  felix_metrics_family(m, "felix_cp_shards", "gauge", "Shards by state.");
  for (int k = 0; k < 3; k++) {
    char lbl[64];
    felix_metrics_labels(lbl, sizeof lbl, "state", states[k], NULL);
    felix_metrics_u64(m, "felix_cp_shards", lbl, by_state[k]);
  }
  felix_metrics_family(m, "felix_cp_under_replicated_shards", "gauge",
                       "Shards with fewer caught-up copies than replicas.");
  felix_metrics_u64(m, "felix_cp_under_replicated_shards", "", under);
  felix_metrics_family(m, "felix_cp_shards_waiting_for_inventories", "gauge",
                       "Shards that wait for their copies' inventories after the control plane's start.");
  felix_metrics_u64(m, "felix_cp_shards_waiting_for_inventories", "", waiting);
}

typedef struct shard_family {
  const char *name, *help;
} shard_family;

enum { F_GENERATION, F_HWM, F_CAUGHT_UP, F_REPLICAS, F_MAX_LAG, F_N };
static const shard_family shard_families[F_N] = {
    [F_GENERATION] = {"felix_cp_shard_generation", "The shard's generation: it grows at each change of leader."},
    [F_HWM] = {"felix_cp_shard_hwm", "The shard's high-water mark as its leader last reported it."},
    [F_CAUGHT_UP] = {"felix_cp_shard_caught_up_replicas", "Copies that hold every record the shard committed."},
    [F_REPLICAS] = {"felix_cp_shard_replicas", "Copies the shard has (its replication factor)."},
    [F_MAX_LAG] = {"felix_cp_shard_max_lag_records", "Records the furthest-behind copy lacks of what was committed."},
};

static uint64_t shard_value(int f, const cp_shard_row *sh) {
  uint64_t lag;
  switch (f) {
  case F_GENERATION: return (uint64_t)sh->generation;
  case F_HWM: return (uint64_t)sh->hwm;
  case F_CAUGHT_UP: return (uint64_t)cp_caught_up_replicas(sh, &lag);
  case F_REPLICAS: return (uint64_t)sh->nslots;
  default: return cp_caught_up_replicas(sh, &lag), lag;
  }
}

static void shard_families_out(felix_metrics *m, const cp_shard_row *sh, size_t nsh) {
  for (int f = 0; f < F_N; f++) {
    felix_metrics_family(m, shard_families[f].name, "gauge", shard_families[f].help);
    for (size_t i = 0; i < nsh; i++) {
      char lbl[256], idx[16];
      snprintf(idx, sizeof idx, "%d", sh[i].shard);
      felix_metrics_labels(lbl, sizeof lbl, "stream", sh[i].stream, "shard", idx, NULL);
      felix_metrics_u64(m, shard_families[f].name, lbl, shard_value(f, &sh[i]));
    }
  }
}

char *cp_metrics_text(cp_state *cp) {
  felix_err err;
  cp_broker_row *bs = NULL;
  cp_stream_row *ss = NULL;
  cp_shard_row *sh = NULL;
  size_t nb = 0, ns = 0, nsh = 0;
  felix_metrics m = {0};
  char lbl[64];
  felix_metrics_family(&m, "felix_cp_build_info", "gauge", "The version of the control plane, as --version prints it.");
  felix_metrics_labels(lbl, sizeof lbl, "version", FELIX_VERSION, NULL);
  felix_metrics_u64(&m, "felix_cp_build_info", lbl, 1);
  bool ok = !cp_store_brokers_list(cp->store, &bs, &nb, &err) && !cp_store_streams_list(cp->store, &ss, &ns, &err) &&
            !cp_store_shards_list(cp->store, NULL, &sh, &nsh, &err);
  felix_metrics_family(&m, "felix_cp_store_up", "gauge", "1 when the control plane's database answered this scrape.");
  felix_metrics_u64(&m, "felix_cp_store_up", "", ok);
  if (ok) {
    broker_families(cp, &m, bs, nb);
    felix_metrics_family(&m, "felix_cp_streams", "gauge", "Streams.");
    felix_metrics_u64(&m, "felix_cp_streams", "", ns);
    shard_totals(cp, &m, sh, nsh);
    shard_families_out(&m, sh, nsh);
  }
  free(bs);
  free(ss);
  free(sh);
  return felix_metrics_take(&m);
}
