/* cmd_placement.c — `felixctl placement history STREAM/SHARD`
 * (GET /v1/shards/{stream}/{shard}/history). `placement abandon` arrives
 * with replication. */
#include <stdio.h>

#include "felixctl.h"

static int placement_history(const ctl_opts *o) {
  char stream[128], path[512];
  uint32_t shard;
  int rc = ctl_shard_arg(o->args[0], stream, sizeof stream, &shard);
  if (rc || (rc = ctl_shard_path(stream, shard, "/history", path, sizeof path))) return rc;
  ctl_reply r;
  if ((rc = ctl_http(o, "GET", path, NULL, &r))) return rc;
  if (o->format == CTL_JSON) ctl_print_body(&r);
  else ctl_print_events(r.json);
  ctl_reply_free(&r);
  return FELIX_EXIT_OK;
}

const ctl_command ctl_cmd_placement_history = {
    .group = "placement",
    .verb = "history",
    .nargs = 1,
    .usage = "placement history STREAM/SHARD",
    .summary = "a shard's placement events, oldest first",
    .help = "\n"
            "Every event the control plane recorded for the shard: created,\n"
            "copy_created, generation, active, no_caught_up_replica, registered,\n"
            "new_storage_id, lease_lapsed, deleted. A NoCaughtUpReplica event names\n"
            "each copy and why it was not eligible. Exits 3 when there is no such\n"
            "shard.\n"
            "\n"
            "With -o json, prints the control plane's array of {id, ts, kind, stream,\n"
            "shard, generation, broker, message}.\n",
    .run = placement_history,
};
