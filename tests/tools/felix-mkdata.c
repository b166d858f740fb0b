/* felix-mkdata — builds data directories for the felix-inspect tests, through
 * the same library calls a broker uses (never by hand-writing formats).
 *
 * usage: felix-mkdata DATADIR STREAM SHARD RECORDS [options]
 *   --uuid UUID            stream uuid (default 0000...0001 style from STREAM)
 *   --segment-bytes N      roll segments at N bytes (default 4096)
 *   --index-spacing N      index spacing (default 256)
 *   --payload-size N       payload bytes per record (default: "record-<i>")
 *   --generation G         ballot generation and a "G <start>" generations line (default 1)
 *   --leader ID            ballot leader (default none)
 *   --no-marker            do not start the generation with an empty marker record
 *   --run-state S          running | stopped | none (default stopped)
 *   --fsync-mode M         recorded in run-state (default periodic)
 *   --boot-id ID           recorded in run-state (default: the current boot id)
 *   --stream-file S/R/ACKS the copy's stream file: S shards, R replicas, acks (default none)
 * Prints the shard directory path. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "felix/ballot.h"
#include "felix/datadir.h"
#include "felix/fileutil.h"
#include "felix/log.h"
#include "felix/streammeta.h"

typedef struct mk_opts {
  const char *datadir, *stream, *uuid, *leader, *run_state, *boot_id, *stream_file;
  uint32_t shard;
  uint64_t records, segment_bytes, index_spacing, payload_size, generation;
  felix_fsync_mode mode;
  int marker;
} mk_opts;

static void die(const char *msg) {
  fprintf(stderr, "felix-mkdata: %s\n", msg);
  exit(1);
}

static void check(felix_status st, const felix_err *err) {
  if (st) die(err->msg);
}

static uint64_t num(const char *v) {
  char *end;
  unsigned long long x = strtoull(v, &end, 10);
  if (!*v || *end) die("bad number");
  return x;
}

static void parse(int argc, char **argv, mk_opts *o) {
  if (argc < 5) die("usage: felix-mkdata DATADIR STREAM SHARD RECORDS [options]");
  *o = (mk_opts){argv[1], argv[2], NULL, NULL, "stopped", NULL, NULL, (uint32_t)num(argv[3]), num(argv[4]), 4096, 256, 0, 1,
                 FELIX_FSYNC_PERIODIC, 1};
  for (int i = 5; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--no-marker")) { o->marker = 0; continue; }
    if (!v) die("option needs a value");
    i++;
    if (!strcmp(a, "--uuid")) o->uuid = v;
    else if (!strcmp(a, "--segment-bytes")) o->segment_bytes = num(v);
    else if (!strcmp(a, "--index-spacing")) o->index_spacing = num(v);
    else if (!strcmp(a, "--payload-size")) o->payload_size = num(v);
    else if (!strcmp(a, "--generation")) o->generation = num(v);
    else if (!strcmp(a, "--leader")) o->leader = v;
    else if (!strcmp(a, "--run-state")) o->run_state = v;
    else if (!strcmp(a, "--boot-id")) o->boot_id = v;
    else if (!strcmp(a, "--stream-file")) o->stream_file = v;
    else if (!strcmp(a, "--fsync-mode")) { if (!felix_fsync_mode_parse(v, &o->mode)) die("bad fsync mode"); }
    else die("unknown option");
  }
}

static void write_records(const char *path, const char *name, const mk_opts *o, uint64_t *start) {
  felix_log_config cfg = {o->segment_bytes, (uint32_t)o->index_spacing, FELIX_FSYNC_NONE, 250, NULL, NULL};
  felix_log *log;
  felix_err err;
  check(felix_log_open(path, name, &cfg, true, &log, NULL, &err), &err);
  felix_log_stats st;
  felix_log_get_stats(log, &st);
  *start = st.end_offset;
  if (o->marker) check(felix_log_append(log, "", 0, NULL, &err), &err);
  char *buf = malloc(o->payload_size + 64);
  for (uint64_t i = 0; i < o->records; i++) {
    uint32_t len;
    if (o->payload_size) {
      for (uint64_t k = 0; k < o->payload_size; k++) buf[k] = (char)('a' + (i + k) % 26);
      len = (uint32_t)o->payload_size;
    } else {
      len = (uint32_t)sprintf(buf, "record-%" PRIu64, i);
    }
    check(felix_log_append(log, buf, len, NULL, &err), &err);
  }
  free(buf);
  check(felix_log_close(log, &err), &err);
}

static void write_stream_file(int shardfd, const char *path, const char *uuid, const mk_opts *o) {
  felix_stream_meta m = {0};
  unsigned shards, replicas;
  if (sscanf(o->stream_file, "%u/%u/%15s", &shards, &replicas, m.acks) != 3) die("--stream-file: not SHARDS/REPLICAS/ACKS");
  m.shards = shards, m.replicas = replicas;
  snprintf(m.name, sizeof m.name, "%s", o->stream);
  snprintf(m.uuid, sizeof m.uuid, "%.36s", uuid);
  char what[4700];
  felix_err err;
  snprintf(what, sizeof what, "%s/stream", path);
  check(felix_stream_meta_write(shardfd, what, &m, &err), &err);
}

static void write_shard_state(int shardfd, const char *path, const felix_storage_id *sid, const char *uuid,
                              const mk_opts *o, uint64_t start) {
  felix_err err;
  felix_ballot b = {0};
  uint8_t raw[16];
  check(felix_random_bytes(raw, sizeof raw, &err), &err);
  felix_hex_encode(raw, sizeof raw, b.copy_id);
  snprintf(b.storage_id, sizeof b.storage_id, "%s", sid->hex);
  snprintf(b.stream_uuid, sizeof b.stream_uuid, "%.36s", uuid);
  b.generation = o->generation;
  b.has_shard = true, b.shard = o->shard; /* as the broker writes a new copy's */
  if (o->leader) {
    b.has_leader = true;
    snprintf(b.leader, sizeof b.leader, "%s", o->leader);
    snprintf(b.leader_copy_id, sizeof b.leader_copy_id, "%s", b.copy_id);
    snprintf(b.leader_incarnation, sizeof b.leader_incarnation, "00000000000000000000000000000001.1");
  }
  char what[4700];
  snprintf(what, sizeof what, "%s/ballot", path);
  check(felix_ballot_write(shardfd, what, &b, &err), &err);
  if (o->stream_file) write_stream_file(shardfd, path, uuid, o);
  felix_generation g = {o->generation, start};
  felix_generations gens = {&g, o->generation ? 1 : 0};
  snprintf(what, sizeof what, "%s/generations", path);
  check(felix_generations_write(shardfd, what, &gens, &err), &err);
}

static void write_run_state(int dirfd, const mk_opts *o) {
  if (!strcmp(o->run_state, "none")) {
    unlinkat(dirfd, "run-state", 0);
    return;
  }
  felix_err err;
  felix_run_state rs = {0};
  rs.state = !strcmp(o->run_state, "running") ? FELIX_RUN_RUNNING : FELIX_RUN_STOPPED;
  rs.fsync_mode = o->mode;
  rs.has_boot_id = true;
  if (o->boot_id) {
    snprintf(rs.boot_id, sizeof rs.boot_id, "%s", o->boot_id);
    snprintf(rs.boot_id_source, sizeof rs.boot_id_source, "file");
  } else {
    check(felix_boot_id_read(rs.boot_id, rs.boot_id_source, &err), &err);
  }
  rs.pid = getpid();
  felix_format_rfc3339(rs.since, time(NULL));
  check(felix_run_state_write(dirfd, o->datadir, &rs, &err), &err);
}

int main(int argc, char **argv) {
  mk_opts o;
  parse(argc, argv, &o);
  char uuid[64], shards[4200], name[300], path[4600];
  if (o.uuid) snprintf(uuid, sizeof uuid, "%s", o.uuid);
  else snprintf(uuid, sizeof uuid, "%08x-0000-4000-8000-000000000001", (unsigned)strlen(o.stream) * 2654435761u);
  if (mkdir(o.datadir, 0755) != 0 && errno != EEXIST) die("cannot create the data directory");
  int dirfd;
  felix_err err;
  check(felix_open_dir(AT_FDCWD, o.datadir, &dirfd, &err), &err);
  felix_storage_id sid;
  bool created;
  check(felix_storage_id_load_or_create(dirfd, o.datadir, &sid, &created, &err), &err);
  snprintf(shards, sizeof shards, "%s/shards", o.datadir);
  mkdir(shards, 0755);
  if (!felix_shard_dir_name(name, sizeof name, o.stream, o.shard, uuid)) die("bad uuid");
  snprintf(path, sizeof path, "%s/%s", shards, name);
  uint64_t start;
  write_records(path, name, &o, &start);
  int shardfd;
  check(felix_open_dir(AT_FDCWD, path, &shardfd, &err), &err);
  write_shard_state(shardfd, path, &sid, uuid, &o, start);
  close(shardfd);
  write_run_state(dirfd, &o);
  close(dirfd);
  printf("%s\n", path);
  return 0;
}
