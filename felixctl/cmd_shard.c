/* cmd_shard.c — `felixctl shard list [--state STATE]` and
 * `shard describe STREAM/SHARD` (GET /v1/shards[...]), and the STREAM/SHARD
 * argument that placement, produce and consume share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "felixctl.h"

int ctl_shard_arg(const char *arg, char *stream, size_t cap, uint32_t *shard) {
  if (ctl_parse_stream_shard(arg, stream, cap, shard)) return 0;
  return ctl_error(FELIX_EXIT_USAGE, "name a shard as STREAM/SHARD, e.g. orders/0", "'%s' is not STREAM/SHARD", arg);
}

int ctl_shard_path(const char *stream, uint32_t shard, const char *suffix, char *path, size_t cap) {
  char esc[3 * 128 + 1];
  if (!ctl_url_escape(stream, esc, sizeof esc) ||
      snprintf(path, cap, "/v1/shards/%s/%u%s", esc, shard, suffix) >= (int)cap)
    return ctl_error(FELIX_EXIT_USAGE, "stream names are at most 64 characters", "stream name '%.40s...' is too long",
                     stream);
  return 0;
}

const char *ctl_replica_brokers(const cJSON *shard, char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = '\0';
  const cJSON *r;
  cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(shard, "replicas")) {
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(r, "broker");
    if (!cJSON_IsString(b) || n >= cap) continue;
    n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "," : "", b->valuestring);
  }
  return buf[0] ? buf : "-";
}

static int shard_list(const ctl_opts *o) {
  char path[96] = "/v1/shards";
  if (o->state) snprintf(path, sizeof path, "/v1/shards?state=%s", o->state); /* validated: plain letters */
  ctl_reply r;
  int rc = ctl_http(o, "GET", path, NULL, &r);
  if (rc) return rc;
  if (CTL_DOCUMENT(o)) {
    ctl_print_reply(o, &r);
    return ctl_reply_free(&r), FELIX_EXIT_OK;
  }
  static const char *const head[] = {"STREAM", "SHARD", "STATE",     "GENERATION", "LEADER",  "LEADER_ADDRESS", "HWM",
                                     "LAG",    "CAUGHT_UP", "REPLICAS", "MAX_HWM", "LEADER_COPY_ID", "DETAIL"};
  static const char *const keys[] = {"stream", "shard", "state", "generation", "leader", "leader_address", "hwm",
                                     "max_lag_records"};
  static const char *const wide_keys[] = {"max_hwm", "leader_copy_id", "detail"}; /* -o wide: after REPLICAS */
  enum { NKEYS = sizeof keys / sizeof keys[0], NWIDE = sizeof wide_keys / sizeof wide_keys[0] };
  int n = NKEYS + 2 + (o->format == CTL_WIDE ? NWIDE : 0);
  ctl_table *t = ctl_table_new(n, head);
  const cJSON *s;
  cJSON_ArrayForEach(s, r.json) {
    char buf[NKEYS + NWIDE][64], caught[64], replicas[1024];
    const char *cells[NKEYS + 2 + NWIDE];
    for (int i = 0; i < NKEYS; i++) cells[i] = ctl_field(s, keys[i], buf[i]);
    /* "2/3": caught-up copies of the replicas; the largest lag is LAG */
    const cJSON *cu = cJSON_GetObjectItemCaseSensitive(s, "caught_up_replicas");
    snprintf(caught, sizeof caught, "%d/%d", cJSON_IsNumber(cu) ? cu->valueint : 0,
             cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s, "replicas")));
    cells[NKEYS] = caught;
    cells[NKEYS + 1] = ctl_replica_brokers(s, replicas, sizeof replicas);
    for (int i = 0; i < NWIDE; i++) cells[NKEYS + 2 + i] = ctl_field(s, wide_keys[i], buf[NKEYS + i]);
    ctl_table_row(t, cells);
  }
  ctl_table_print(t);
  ctl_reply_free(&r);
  return FELIX_EXIT_OK;
}

static void print_replicas(const cJSON *replicas) {
  static const char *const head[] = {"BROKER",      "STORAGE_ID", "REGISTERED_STORAGE_ID", "COPY_ID",
                                     "INCARNATION", "CONFIRMED",  "CAUGHT_UP",             "STRANGER"};
  static const char *const keys[] = {"broker",      "storage_id", "registered_storage_id", "copy_id",
                                     "incarnation", "confirmed",  "caught_up",             "stranger"};
  ctl_print_rows(replicas, head, keys, (int)(sizeof head / sizeof head[0]));
}

/* §4.8: what the control plane still waits for before it decides anything
 * for the shard, and a generation a copy promised above the stored one. */
static void print_unsure(const cJSON *j) {
  const cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "waiting_for");
  if (cJSON_GetArraySize(w) > 0) {
    char line[512] = "inventories from";
    const cJSON *x;
    cJSON_ArrayForEach(x, w) {
      size_t n = strlen(line);
      snprintf(line + n, sizeof line - n, " %s", cJSON_IsString(x) ? x->valuestring : "?");
    }
    ctl_kv("Waiting for", line);
  }
  char g[64], seen[64];
  ctl_field(j, "generation", g);
  ctl_field(j, "seen_generation", seen);
  if (strtoll(seen, NULL, 10) > strtoll(g, NULL, 10)) {
    char line[200];
    snprintf(line, sizeof line, "%s (a copy promised it: the shard fails over above it)", seen);
    ctl_kv("Seen generation", line);
  }
}

static int shard_describe(const ctl_opts *o) {
  char stream[128], path[512];
  uint32_t shard;
  int rc = ctl_shard_arg(o->args[0], stream, sizeof stream, &shard);
  if (rc || (rc = ctl_shard_path(stream, shard, "", path, sizeof path))) return rc;
  ctl_reply r;
  if ((rc = ctl_http(o, "GET", path, NULL, &r))) return rc;
  if (CTL_DOCUMENT(o)) {
    ctl_print_reply(o, &r);
    return ctl_reply_free(&r), FELIX_EXIT_OK;
  }
  static const char *const labels[] = {"Stream", "Shard", "Generation", "State",   "Leader",
                                       "Leader address", "HWM", "Max HWM", "Detail"};
  static const char *const keys[] = {"stream", "shard", "generation", "state", "leader",
                                     "leader_address", "hwm", "max_hwm", "detail"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    char buf[64];
    ctl_kv(labels[i], ctl_field(r.json, keys[i], buf));
  }
  print_unsure(r.json);
  printf("\n");
  print_replicas(cJSON_GetObjectItemCaseSensitive(r.json, "replicas"));
  ctl_reply_free(&r);
  return FELIX_EXIT_OK;
}

const ctl_command ctl_cmd_shard_list = {
    .group = "shard",
    .verb = "list",
    .flags = CTL_F_STATE | CTL_F_WATCH,
    .usage = "shard list [--state STATE] [--watch]",
    .summary = "every shard, or those in one state",
    .help = "\n"
            "Options:\n"
            "  --state STATE   only shards in STATE: Active, Fencing or\n"
            "                  NoCaughtUpReplica\n"
            "  --watch         run again every 2 s until Ctrl-C: on a terminal the\n"
            "                  screen is redrawn; in a pipe an output is printed only\n"
            "                  when it changed (lease ages aside)\n"
            "\n"
            "Shards are sorted by stream, then shard. REPLICAS lists the brokers\n"
            "placed to hold a copy. With -o json, prints the control plane's array of\n"
            "the objects shard describe prints.\n",
    .run = shard_list,
};

const ctl_command ctl_cmd_shard_describe = {
    .group = "shard",
    .verb = "describe",
    .nargs = 1,
    .usage = "shard describe STREAM/SHARD",
    .summary = "one shard: generation, leader, HWM, replicas",
    .help = "\n"
            "STREAM/SHARD names a shard by stream name and shard number, e.g.\n"
            "orders/0. Exits 3 when there is no such shard.\n"
            "\n"
            "States: Fencing (a generation was issued and its leader has not yet\n"
            "reported past its start), Active, NoCaughtUpReplica (no copy is eligible\n"
            "to lead; nothing changes until one is or an operator acts).\n"
            "After a control-plane start, \"Waiting for\" names the replicas whose\n"
            "inventories it still needs before it decides anything for the shard, and\n"
            "\"Seen generation\" a generation a copy promised above the stored one.\n"
            "\n"
            "With -o json, prints the control plane's object: stream, shard,\n"
            "generation, state, leader (null when no generation is led),\n"
            "leader_address, hwm, max_hwm, log_bytes (the leader's segment bytes,\n"
            "null until it reports), detail, and replicas [{broker, storage_id,\n"
            "registered_storage_id, copy_id, incarnation, confirmed, caught_up,\n"
            "stranger}].\n",
    .run = shard_describe,
};
