/* cmd_cluster.c — `felixctl cluster status`: the one-screen health view
 * (GET /v1/cluster). */
#include <stdio.h>

#include "felixctl.h"

static int cluster_status(const ctl_opts *o) {
  ctl_reply r;
  int rc = ctl_http(o, "GET", "/v1/cluster", NULL, &r);
  if (rc) return rc;
  if (CTL_DOCUMENT(o)) {
    ctl_print_reply(o, &r);
    return ctl_reply_free(&r), FELIX_EXIT_OK;
  }
  char b1[64], b2[64], b3[64], b4[64], line[256];
  const cJSON *brokers = cJSON_GetObjectItemCaseSensitive(r.json, "brokers");
  const cJSON *shards = cJSON_GetObjectItemCaseSensitive(r.json, "shards");
  if (o->context) ctl_kv("Context", o->context);
  ctl_kv("Control plane", o->control_plane);
  ctl_kv("Instance", ctl_field(r.json, "instance_id", b1));
  ctl_kv("Started", ctl_field(r.json, "started_at", b1));
  snprintf(line, sizeof line, "%s ms", ctl_field(r.json, "lease_ms", b1));
  ctl_kv("Lease", line);
  snprintf(line, sizeof line, "%s alive of %s", ctl_field(brokers, "alive", b1), ctl_field(brokers, "total", b2));
  ctl_kv("Brokers", line);
  ctl_kv("Streams", ctl_field(r.json, "streams", b1));
  snprintf(line, sizeof line, "%s (Active %s, Fencing %s, NoCaughtUpReplica %s)", ctl_field(shards, "total", b1),
           ctl_field(shards, "Active", b2), ctl_field(shards, "Fencing", b3),
           ctl_field(shards, "NoCaughtUpReplica", b4));
  ctl_kv("Shards", line);
  snprintf(line, sizeof line, "%s shard(s) with fewer caught-up copies than replicas",
           ctl_field(shards, "under_replicated", b1));
  ctl_kv("Under-replicated", line);
  const cJSON *w = cJSON_GetObjectItemCaseSensitive(shards, "waiting_for_inventories");
  if (cJSON_IsNumber(w) && w->valueint > 0) {
    snprintf(line, sizeof line, "%d shard(s) wait for their copies' inventories after the control plane's start",
             w->valueint);
    ctl_kv("Waiting", line);
  }
  ctl_reply_free(&r);
  return FELIX_EXIT_OK;
}

const ctl_command ctl_cmd_cluster_status = {
    .group = "cluster",
    .verb = "status",
    .flags = CTL_F_WATCH,
    .usage = "cluster status [--watch]",
    .summary = "brokers alive, streams, shards by state",
    .help = "\n"
            "Options:\n"
            "  --watch         run again every 2 s until Ctrl-C: on a terminal the\n"
            "                  screen is redrawn; in a pipe an output is printed only\n"
            "                  when it changed\n"
            "\n"
            "Asks the control plane for a summary of the cluster: its instance and\n"
            "start time, the broker lease, how many brokers are alive, how many\n"
            "streams exist and how many shards are Active, Fencing or\n"
            "NoCaughtUpReplica, how many are under-replicated (fewer caught-up\n"
            "copies than replicas), and how many still wait for their copies'\n"
            "inventories after the control plane's start.\n"
            "\n"
            "With -o json, prints the control plane's object: instance_id, started_at,\n"
            "lease_ms, brokers {total, alive}, streams, shards {total, Active, Fencing,\n"
            "NoCaughtUpReplica, waiting_for_inventories, under_replicated}, waiting_for_inventories (during\n"
            "the first lease), schema_version.\n",
    .run = cluster_status,
};
