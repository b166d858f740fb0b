/* cmd_broker.c — `felixctl broker list` and `broker describe ID`
 * (GET /v1/brokers, GET /v1/brokers/{id}). */
#include <stdio.h>
#include <string.h>

#include "felixctl.h"

static int broker_list(const ctl_opts *o) {
  ctl_reply r;
  int rc = ctl_http(o, "GET", "/v1/brokers", NULL, &r);
  if (rc) return rc;
  if (CTL_DOCUMENT(o)) {
    ctl_print_reply(o, &r);
    return ctl_reply_free(&r), FELIX_EXIT_OK;
  }
  static const char *const head[] = {"ID",           "ALIVE",   "ADDRESS",       "STORAGE_ID", "INCARNATION", "FSYNC_MODE",
                                     "LEASE_AGE_MS", "HTTP_ADDRESS", "BOOT_ID", "REGISTERED_AT", "ROTATED"};
  static const char *const keys[] = {"id",           "alive",        "address", "storage_id",    "incarnation", "fsync_mode",
                                     "lease_age_ms", "http_address", "boot_id", "registered_at", "rotated"};
  ctl_print_rows(r.json, head, keys, o->format == CTL_WIDE ? 11 : 7); /* -o wide: the last four too */
  ctl_reply_free(&r);
  return FELIX_EXIT_OK;
}

static void print_copies(const cJSON *copies) {
  static const char *const head[] = {"STREAM", "SHARD", "ROLE", "GENERATION", "COPY_ID"};
  static const char *const keys[] = {"stream", "shard", "role", "generation", "copy_id"};
  ctl_print_rows(copies, head, keys, (int)(sizeof head / sizeof head[0]));
}

void ctl_print_events(const cJSON *events) {
  static const char *const head[] = {"ID", "OCCURRED_AT", "KIND", "STREAM", "SHARD", "GENERATION", "BROKER", "MESSAGE"};
  static const char *const keys[] = {"event_id", "occurred_at", "kind", "stream", "shard", "generation", "broker", "message"};
  ctl_print_rows(events, head, keys, (int)(sizeof head / sizeof head[0]));
}

static int broker_describe(const ctl_opts *o) {
  char id[3 * 256 + 1], path[sizeof id + 32];
  if (!ctl_url_escape(o->args[0], id, sizeof id))
    return ctl_error(FELIX_EXIT_USAGE, NULL, "broker id '%.40s...' is too long", o->args[0]);
  snprintf(path, sizeof path, "/v1/brokers/%s", id);
  ctl_reply r;
  int rc = ctl_http(o, "GET", path, NULL, &r);
  if (rc) return rc;
  if (CTL_DOCUMENT(o)) {
    ctl_print_reply(o, &r);
    return ctl_reply_free(&r), FELIX_EXIT_OK;
  }
  static const char *const labels[] = {"ID", "Alive", "Address", "HTTP address", "Storage id", "Incarnation",
                                       "Fsync mode", "Boot id", "Lease age ms", "Registered at", "Rotated"};
  static const char *const keys[] = {"id", "alive", "address", "http_address", "storage_id", "incarnation",
                                     "fsync_mode", "boot_id", "lease_age_ms", "registered_at", "rotated"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    char buf[64];
    ctl_kv(labels[i], ctl_field(r.json, keys[i], buf));
  }
  printf("\nCopies:\n");
  print_copies(cJSON_GetObjectItemCaseSensitive(r.json, "copies"));
  printf("\nHistory:\n");
  ctl_print_events(cJSON_GetObjectItemCaseSensitive(r.json, "history"));
  ctl_reply_free(&r);
  return FELIX_EXIT_OK;
}

const ctl_command ctl_cmd_broker_list = {
    .group = "broker",
    .verb = "list",
    .flags = CTL_F_WATCH,
    .usage = "broker list [--watch]",
    .summary = "every broker: address, storage id, lease",
    .help = "\n"
            "Options:\n"
            "  --watch         run again every 2 s until Ctrl-C: on a terminal the\n"
            "                  screen is redrawn; in a pipe an output is printed only\n"
            "                  when it changed (lease ages aside)\n"
            "\n"
            "One row per broker the control plane knows, alive or not. ALIVE is yes\n"
            "while the broker's lease holds. STORAGE_ID is the identity of its data\n"
            "directory; a broker that comes back under a new storage id is a new copy\n"
            "of every shard it held.\n"
            "\n"
            "With -o json, prints the control plane's array; each object has at least\n"
            "id, storage_id, incarnation, address, alive, fsync_mode (and\n"
            "http_address, boot_id, lease_age_ms, registered_at, rotated).\n",
    .run = broker_list,
};

const ctl_command ctl_cmd_broker_describe = {
    .group = "broker",
    .verb = "describe",
    .nargs = 1,
    .usage = "broker describe ID",
    .summary = "one broker, its shard copies and history",
    .help = "\n"
            "Prints the broker's registration (address, storage id, incarnation, fsync\n"
            "mode, boot id, lease age), the shard copies placed on it with their role\n"
            "and generation, and its events, oldest first. Exits 3 when the control\n"
            "plane does not know the broker.\n"
            "\n"
            "With -o json, prints the control plane's object: the fields of broker\n"
            "list plus copies [{stream, shard, copy_id, role, generation}] and\n"
            "history [{event_id, occurred_at, kind, stream, shard, generation, broker,\n"
            "message}].\n",
    .run = broker_describe,
};
