/* cmd_stream.c — `felixctl stream create|list|describe|delete|adopt`
 * (POST/GET/DELETE /v1/streams[/{name}], POST /v1/streams/{name}/adopt).
 *
 * Deleting a stream removes every copy of its records on every broker, so
 * `stream delete` asks on a terminal and, without one, refuses (exit 4)
 * unless --yes says the caller means it: a script must not delete by
 * accident because its stdin happened to be empty. */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "felixctl.h"

static int stream_path(const char *name, const char *prefix, char *path, size_t cap) {
  char esc[3 * 128 + 1];
  if (!ctl_url_escape(name, esc, sizeof esc))
    return ctl_error(FELIX_EXIT_USAGE, "stream names are at most 64 characters", "stream name '%.40s...' is too long",
                     name);
  snprintf(path, cap, "%s%s", prefix, esc);
  return 0;
}

static void print_shard_states(const cJSON *shards) {
  static const char *const head[] = {"SHARD", "STATE", "GENERATION", "LEADER", "LEADER_ADDRESS", "HWM", "REPLICAS"};
  static const char *const keys[] = {"shard", "state", "generation", "leader", "leader_address", "hwm", NULL};
  enum { N = sizeof head / sizeof head[0] };
  ctl_table *t = ctl_table_new(N, head);
  const cJSON *s;
  cJSON_ArrayForEach(s, shards) {
    char buf[N][64], replicas[1024];
    const char *cells[N];
    for (int i = 0; i < N - 1; i++) cells[i] = ctl_field(s, keys[i], buf[i]);
    cells[N - 1] = ctl_replica_brokers(s, replicas, sizeof replicas);
    ctl_table_row(t, cells);
  }
  ctl_table_print(t);
}

/* The describe view; also what create prints. */
static void print_stream(const cJSON *st) {
  static const char *const labels[] = {"Name", "UUID", "Shards", "Replicas", "Acks", "Created at"};
  static const char *const keys[] = {"name", "uuid", "shard_count", "replication_factor", "acks", "created_at"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    char buf[64];
    ctl_kv(labels[i], ctl_field(st, keys[i], buf));
  }
  const cJSON *shards = cJSON_GetObjectItemCaseSensitive(st, "shards");
  if (!cJSON_IsArray(shards)) return;
  printf("\n");
  print_shard_states(shards);
}

/* POSTs req (consumed) to path and prints the stream the control plane
 * answers, as stream describe does, followed by `after` in table form. */
static int post_stream(const ctl_opts *o, const char *path, cJSON *req, const char *after) {
  char *body = cJSON_PrintUnformatted(req);
  cJSON_Delete(req);
  if (!body) return ctl_error(FELIX_EXIT_FAILURE, NULL, "out of memory");
  ctl_reply r;
  int rc = ctl_http(o, "POST", path, body, &r);
  cJSON_free(body);
  if (rc) return rc;
  if (CTL_DOCUMENT(o)) {
    ctl_print_reply(o, &r);
  } else {
    print_stream(r.json);
    if (after) fputs(after, stdout);
  }
  ctl_reply_free(&r);
  return FELIX_EXIT_OK;
}

static int stream_create(const ctl_opts *o) {
  cJSON *req = cJSON_CreateObject();
  cJSON_AddStringToObject(req, "name", o->args[0]);
  cJSON_AddNumberToObject(req, "shard_count", o->shards);
  cJSON_AddNumberToObject(req, "replication_factor", o->replicas);
  if (o->acks) cJSON_AddStringToObject(req, "acks", o->acks);
  return post_stream(o, "/v1/streams", req, NULL);
}

static int stream_list(const ctl_opts *o) {
  ctl_reply r;
  int rc = ctl_http(o, "GET", "/v1/streams", NULL, &r);
  if (rc) return rc;
  if (CTL_DOCUMENT(o)) {
    ctl_print_reply(o, &r);
    return ctl_reply_free(&r), FELIX_EXIT_OK;
  }
  static const char *const head[] = {"NAME", "SHARDS", "REPLICAS", "ACKS", "CREATED_AT", "UUID"};
  static const char *const keys[] = {"name", "shard_count", "replication_factor", "acks", "created_at", "uuid"};
  ctl_print_rows(r.json, head, keys, (int)(sizeof head / sizeof head[0]));
  ctl_reply_free(&r);
  return FELIX_EXIT_OK;
}

static int stream_describe(const ctl_opts *o) {
  char path[512];
  int rc = stream_path(o->args[0], "/v1/streams/", path, sizeof path);
  if (rc) return rc;
  ctl_reply r;
  if ((rc = ctl_http(o, "GET", path, NULL, &r))) return rc;
  if (CTL_DOCUMENT(o)) ctl_print_reply(o, &r);
  else print_stream(r.json);
  ctl_reply_free(&r);
  return FELIX_EXIT_OK;
}

/* Asks on the terminal; 0 only for y or yes. The lookup comes first so an
 * unknown name exits 3 before any question is asked. */
static int confirm_delete(const ctl_opts *o, const char *path) {
  ctl_reply r;
  int rc = ctl_http(o, "GET", path, NULL, &r);
  if (rc) return rc;
  char buf[64];
  fprintf(stderr, "Delete stream %s (%s shards) and every copy of its records on every broker? [y/N] ", o->args[0],
          ctl_field(r.json, "shard_count", buf));
  ctl_reply_free(&r);
  char answer[16] = "";
  if (!fgets(answer, sizeof answer, stdin)) fputc('\n', stderr);
  answer[strcspn(answer, "\r\n")] = '\0';
  if (!strcasecmp(answer, "y") || !strcasecmp(answer, "yes")) return 0;
  return ctl_error(FELIX_EXIT_REFUSED, NULL, "stream %s was not deleted (not confirmed)", o->args[0]);
}

static int stream_delete(const ctl_opts *o) {
  char path[512];
  int rc = stream_path(o->args[0], "/v1/streams/", path, sizeof path);
  if (rc) return rc;
  if (!o->yes && !isatty(STDIN_FILENO))
    return ctl_error(FELIX_EXIT_REFUSED, "add --yes to delete without a terminal to confirm on",
                     "refusing to delete stream %s without confirmation", o->args[0]);
  if (!o->yes && (rc = confirm_delete(o, path))) return rc;
  ctl_reply r;
  if ((rc = ctl_http(o, "DELETE", path, NULL, &r))) return rc;
  char buf[64];
  if (CTL_DOCUMENT(o)) ctl_print_reply(o, &r);
  else printf("deleted stream %s (uuid %s)\n", o->args[0], ctl_field(r.json, "uuid", buf));
  ctl_reply_free(&r);
  return FELIX_EXIT_OK;
}

static int stream_adopt(const ctl_opts *o) {
  char path[512];
  int rc = stream_path(o->args[0], "/v1/streams/", path, sizeof path);
  if (rc) return rc;
  strncat(path, "/adopt", sizeof path - strlen(path) - 1);
  cJSON *req = cJSON_CreateObject();
  if (o->uuid) cJSON_AddStringToObject(req, "uuid", o->uuid);
  return post_stream(o, path, req,
                     "\nA shard whose copies hold records waits at NoCaughtUpReplica: nothing of them was\n"
                     "measured. felixctl placement abandon STREAM/SHARD --dry-run shows the copy it keeps.\n");
}

const ctl_command ctl_cmd_stream_create = {
    .group = "stream",
    .verb = "create",
    .nargs = 1,
    .flags = CTL_F_SHARDS | CTL_F_REPLICAS | CTL_F_ACKS,
    .required = CTL_F_SHARDS | CTL_F_REPLICAS,
    .usage = "stream create NAME --shards N --replicas R [--acks quorum|leader|all]",
    .summary = "create a stream, place its shards",
    .help = "\n"
            "Options:\n"
            "  --shards N      number of shards, 1 to 1024\n"
            "  --replicas R    copies of each shard, odd, 1 to 7\n"
            "  --acks POLICY   when a publish is acknowledged: quorum (the default),\n"
            "                  leader or all\n"
            "\n"
            "NAME is 1 to 64 of A-Z a-z 0-9 . _ - and starts with neither . nor -.\n"
            "Each shard gets R distinct live brokers, the least loaded first. Exits 4\n"
            "when the stream exists or fewer than R brokers are alive, 2 when a value\n"
            "is out of range. Prints the new stream as stream describe does.\n",
    .run = stream_create,
};

const ctl_command ctl_cmd_stream_list = {
    .group = "stream",
    .verb = "list",
    .usage = "stream list",
    .summary = "every stream",
    .help = "\n"
            "With -o json, prints the control plane's array of {name, uuid,\n"
            "shard_count, replication_factor, acks, created_at}.\n",
    .run = stream_list,
};

const ctl_command ctl_cmd_stream_describe = {
    .group = "stream",
    .verb = "describe",
    .nargs = 1,
    .usage = "stream describe NAME",
    .summary = "one stream and each shard's state",
    .help = "\n"
            "Exits 3 when there is no such stream. With -o json, prints the control\n"
            "plane's object: the fields of stream list plus shards, an array of\n"
            "the objects shard describe prints.\n",
    .run = stream_describe,
};

const ctl_command ctl_cmd_stream_delete = {
    .group = "stream",
    .verb = "delete",
    .nargs = 1,
    .flags = CTL_F_YES,
    .usage = "stream delete NAME [--yes]",
    .summary = "delete a stream and all its records",
    .help = "\n"
            "Options:\n"
            "  --yes    delete without asking\n"
            "\n"
            "On a terminal (stdin is a tty) felixctl asks for confirmation first and\n"
            "deletes only on y or yes. Without a terminal, --yes is required: without\n"
            "it nothing is deleted and felixctl exits 4. Exits 3 when there is no such\n"
            "stream. Brokers remove their copies when they next hear from the control\n"
            "plane.\n"
            "\n"
            "With -o json, prints the control plane's answer {deleted, name, uuid}.\n",
    .run = stream_delete,
};

const ctl_command ctl_cmd_stream_adopt = {
    .group = "stream",
    .verb = "adopt",
    .nargs = 1,
    .flags = CTL_F_UUID,
    .usage = "stream adopt NAME [--uuid UUID]",
    .summary = "bring back a stream a restored control plane does not know",
    .help = "\n"
            "Options:\n"
            "  --uuid UUID    the stream to adopt when copies of several streams of\n"
            "                 that name are found\n"
            "\n"
            "After the control plane's database was restored from a backup older than\n"
            "the stream, the brokers still hold its copies. adopt rebuilds the stream\n"
            "under its own uuid from what the live brokers' inventories say of them\n"
            "(shard count, replication factor, ack policy, each copy and its rank). The\n"
            "control plane measured none of those copies, so a shard whose copies hold\n"
            "records is a set of strangers at NoCaughtUpReplica: re-place it with\n"
            "felixctl placement abandon, which keeps the live copy of highest rank.\n"
            "Every generation a copy promised is seen, so the next one goes above it.\n"
            "A replica whose copy no live broker lists goes to another live broker.\n"
            "\n"
            "Exits 3 when no live broker lists a copy of NAME, 4 when a stream of that\n"
            "name exists, the copies belong to several streams (give --uuid), their\n"
            "uuid is of a deleted stream, or too few brokers are alive. Prints the\n"
            "stream as stream describe does; with -o json, the control plane's object.\n",
    .run = stream_adopt,
};
