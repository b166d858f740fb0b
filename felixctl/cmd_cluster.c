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
  if (o->context) ctl_kv("Context", o->context);
  ctl_kv("Control plane", o->control_plane);
  ctl_kv("Instance", ctl_field(r.json, "instance_id", b1));
  ctl_kv("Started", ctl_field(r.json, "started_at", b1));
  snprintf(line, sizeof line, "%s ms", ctl_field(r.json, "lease_ms", b1));
  ctl_kv("Lease", line);
  const cJSON *j = r.json;
  snprintf(line, sizeof line, "%s alive of %s", ctl_field(j, "brokers_alive", b1), ctl_field(j, "brokers_total", b2));
  ctl_kv("Brokers", line);
  ctl_kv("Streams", ctl_field(j, "streams_total", b1));
  snprintf(line, sizeof line, "%s (Active %s, Fencing %s, NoCaughtUpReplica %s)", ctl_field(j, "shards_total", b1),
           ctl_field(j, "shards_active", b2), ctl_field(j, "shards_fencing", b3),
           ctl_field(j, "shards_no_caught_up_replica", b4));
  ctl_kv("Shards", line);
  snprintf(line, sizeof line, "%s shard(s) with fewer caught-up copies than replicas",
           ctl_field(j, "shards_under_replicated", b1));
  ctl_kv("Under-replicated", line);
  const cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "shards_waiting_for_inventories");
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
            "                  when it changed (lease ages aside)\n"
            "\n"
            "Asks the control plane for a summary of the cluster: its instance and\n"
            "start time, the broker lease, how many brokers are alive, how many\n"
            "streams exist and how many shards are Active, Fencing or\n"
            "NoCaughtUpReplica, how many are under-replicated (fewer caught-up\n"
            "copies than replicas), and how many still wait for their copies'\n"
            "inventories after the control plane's start.\n"
            "\n"
            "With -o json, prints the control plane's object (docs/json/cluster-status.json):\n"
            "instance_id, started_at, lease_ms, brokers_total, brokers_alive,\n"
            "streams_total, shards_total, shards_active, shards_fencing,\n"
            "shards_no_caught_up_replica, shards_waiting_for_inventories,\n"
            "shards_under_replicated, start_up_wait_open (true while some shard waits\n"
            "during the first lease), schema_version.\n",
    .run = cluster_status,
};
