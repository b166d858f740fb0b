/* cmd_summary.c — the one screen that answers "what is this directory?", and
 * the ballot subcommand. */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "felix/fileutil.h"
#include "felix/jsonnum.h"
#include "felix/restorepoint.h"
#include "felix/survey.h"
#include "inspect.h"

static cJSON *ballot_json(const felix_shard_survey *s) {
  if (!s->has_ballot) return cJSON_CreateNull();
  const felix_ballot *b = &s->ballot;
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "copy_id", b->copy_id);
  cJSON_AddStringToObject(j, "storage_id", b->storage_id);
  cJSON_AddStringToObject(j, "stream_uuid", b->stream_uuid);
  felix_json_add_u64(j, "generation", b->generation);
  cJSON_AddItemToObject(j, "leader", b->has_leader ? cJSON_CreateString(b->leader) : cJSON_CreateNull());
  cJSON_AddItemToObject(j, "leader_copy_id", b->has_leader ? cJSON_CreateString(b->leader_copy_id) : cJSON_CreateNull());
  cJSON_AddItemToObject(j, "leader_incarnation", b->has_leader ? cJSON_CreateString(b->leader_incarnation) : cJSON_CreateNull());
  cJSON_AddItemToObject(j, "shard", b->has_shard ? cJSON_CreateNumber(b->shard) : cJSON_CreateNull());
  return j;
}

static cJSON *generations_json(const felix_shard_survey *s) {
  cJSON *arr = cJSON_CreateArray();
  for (size_t i = 0; s->has_generations && i < s->gens.count; i++) {
    cJSON *x = cJSON_CreateObject();
    felix_json_add_u64(x, "generation", s->gens.items[i].generation);
    felix_json_add_u64(x, "start_offset", s->gens.items[i].start_offset);
    cJSON_AddItemToArray(arr, x);
  }
  return arr;
}

static cJSON *stream_json(const felix_shard_survey *s) {
  if (!s->has_stream) return cJSON_CreateNull();
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "name", s->stream.name);
  cJSON_AddStringToObject(j, "uuid", s->stream.uuid);
  cJSON_AddNumberToObject(j, "shard_count", s->stream.shards); /* the names felixctl stream list uses */
  cJSON_AddNumberToObject(j, "replication_factor", s->stream.replicas);
  cJSON_AddStringToObject(j, "acks", s->stream.acks);
  return j;
}

static cJSON *shard_json(const felix_shard_survey *s) {
  cJSON *j = cJSON_CreateObject();
  char stream[256], uuid16[17];
  uint32_t shard;
  cJSON_AddStringToObject(j, "dir", s->name);
  if (felix_shard_dir_parse(s->name, stream, sizeof stream, &shard, uuid16)) {
    cJSON_AddStringToObject(j, "stream", stream);
    cJSON_AddNumberToObject(j, "shard", shard);
  }
  cJSON_AddItemToObject(j, "ballot", ballot_json(s));
  cJSON_AddItemToObject(j, "generations", generations_json(s));
  cJSON_AddItemToObject(j, "stream_file", stream_json(s));
  felix_json_add_u64(j, "segment_count", s->nsegs);
  felix_json_add_u64(j, "start_offset", s->start_offset);
  felix_json_add_u64(j, "end_offset", s->end_offset);
  felix_json_add_u64(j, "records", s->records);
  felix_json_add_u64(j, "bytes", s->bytes);
  cJSON_AddItemToObject(j, "problems", inspect_problems_json(&s->problems));
  return j;
}

static void print_generations(const felix_shard_survey *s) {
  if (!s->has_generations) {
    printf("    generations: (no file)\n");
    return;
  }
  printf("    generations:");
  for (size_t i = 0; i < s->gens.count; i++)
    printf(" %" PRIu64 "@%" PRIu64, s->gens.items[i].generation, s->gens.items[i].start_offset);
  printf("%s\n", s->gens.count ? "" : " (none)");
}

static void print_ballot(const felix_shard_survey *s) {
  const felix_ballot *b = &s->ballot;
  if (!s->has_ballot) {
    printf("    ballot: (no file)\n");
    return;
  }
  printf("    copy id %s (made under storage id %s), stream uuid %s\n", b->copy_id, b->storage_id, b->stream_uuid);
  if (b->has_leader)
    printf("    ballot: generation %" PRIu64 ", leader %s (copy %s, incarnation %s)\n", b->generation, b->leader,
           b->leader_copy_id, b->leader_incarnation);
  else
    printf("    ballot: generation %" PRIu64 ", no leader\n", b->generation);
}

static void print_shard(const felix_shard_survey *s, const next_start *ns) {
  printf("  %s\n", s->name);
  print_ballot(s);
  if (s->has_ballot && ns && ns->have_storage_id && strcmp(s->ballot.storage_id, ns->sid.hex) != 0)
    printf("    note: the ballot's storage id differs from the directory's: the next start makes a new copy id\n");
  print_generations(s);
  if (s->has_stream)
    printf("    stream file: %s (uuid %s), %u shard(s), R=%u, acks %s\n", s->stream.name, s->stream.uuid, s->stream.shards,
           s->stream.replicas, s->stream.acks);
  printf("    %zu segment(s), offsets [%" PRIu64 ", %" PRIu64 "), %" PRIu64 " record(s), %" PRIu64 " bytes\n", s->nsegs,
         s->start_offset, s->end_offset, s->records, s->bytes);
  for (size_t i = 0; i < s->problems.count; i++)
    printf("    PROBLEM %s: byte %" PRIu64 ": %s (%s): %s\n", s->problems.items[i].file, s->problems.items[i].position,
           s->problems.items[i].kind, s->problems.items[i].repairable ? "repaired at next start" : "NOT repairable",
           s->problems.items[i].detail);
}

/* What an interrupted copy creation, deletion or restore left in shards/:
 * the next broker start settles each (a restore's, by its journal). */
static const char *leftover_kind(const char *name) {
  if (!strcmp(name, FELIX_RP_JOURNAL)) return "journal of a restore that stopped midway: the next start finishes or undoes it";
  if (!strncmp(name, FELIX_RP_REPLACED, strlen(FELIX_RP_REPLACED))) return "a copy a restore moved aside: the next start removes it or puts it back";
  if (!strncmp(name, ".new-", 5)) return "a copy half made (by a restore or a new copy): the next start removes it";
  if (!strncmp(name, ".deleting-", 10)) return "a deleted copy not yet removed: the next start removes it";
  return NULL;
}

static void add_leftovers(const char *dir, cJSON *j) {
  char p[4200];
  snprintf(p, sizeof p, "%.4100s/shards", dir);
  DIR *d = opendir(p);
  cJSON *arr = j ? cJSON_AddArrayToObject(j, "leftovers") : NULL;
  struct dirent *de;
  while (d && (de = readdir(d)) != NULL) {
    const char *kind = leftover_kind(de->d_name);
    if (!kind) continue;
    if (arr) cJSON_AddItemToArray(arr, cJSON_CreateString(de->d_name));
    else printf("leftover:     shards/%s: %s\n", de->d_name, kind);
  }
  if (d) closedir(d);
}

int cmd_summary(const inspect_opts *o) {
  const char *dir = o->args[0];
  next_start ns;
  felix_err err;
  if (inspect_next_start(dir, &ns, &err))
    return inspect_fail(&err, err.status == FELIX_E_CORRUPT ? "felix-inspect verify DATADIR lists every problem" : next_start_hint(&err));
  char **names;
  size_t n;
  if (felix_list_shard_dirs(dir, &names, &n, &err)) return inspect_fail(&err, NULL);
  pid_t holder = ns.holder;
  size_t problems = 0;
  cJSON *j = o->json ? inspect_next_start_json(&ns) : NULL, *arr = NULL;
  if (j) {
    add_leftovers(dir, j);
    arr = cJSON_AddArrayToObject(j, "shards");
  } else {
    printf("data directory %s\n", dir);
    inspect_next_start_print(&ns);
    if (!holder) printf("lock:         not held%s\n", ns.unseen_run ? " by any process this pid namespace sees" : "");
    else printf("lock:         held by %spid %ld (what you see may change under you)\n",
                ns.running ? "the broker running now, " : "", (long)holder);
    add_leftovers(dir, NULL);
    printf("shards:       %zu\n", n);
  }
  for (size_t i = 0; i < n; i++) {
    char path[4200];
    felix_shard_survey s;
    snprintf(path, sizeof path, "%s/shards/%s", dir, names[i]);
    if (felix_shard_survey_run(path, &s, &err)) {
      if (!j) printf("  %s\n    PROBLEM: %s\n", names[i], err.msg);
      problems++;
      continue;
    }
    problems += s.problems.count;
    if (j) cJSON_AddItemToArray(arr, shard_json(&s));
    else print_shard(&s, &ns);
    felix_shard_survey_free(&s);
  }
  felix_free_names(names, n);
  if (j) {
    felix_json_add_u64(j, "problem_count", problems);
    inspect_print_json(j);
  } else {
    printf("problems:     %zu%s\n", problems, problems ? " (felix-inspect verify shows each one)" : "");
  }
  return problems ? FELIX_EXIT_CORRUPT : FELIX_EXIT_OK;
}

int cmd_ballot(const inspect_opts *o) {
  felix_shard_survey s;
  felix_err err;
  if (felix_shard_survey_run(o->args[0], &s, &err)) return inspect_fail(&err, NULL);
  int rc = FELIX_EXIT_OK;
  for (size_t i = 0; i < s.problems.count; i++)
    if (!strcmp(s.problems.items[i].kind, "bad_ballot") || !strcmp(s.problems.items[i].kind, "bad_generations"))
      rc = inspect_error(FELIX_EXIT_CORRUPT, NULL, "%s", s.problems.items[i].detail);
  if (rc == FELIX_EXIT_OK && !s.has_ballot)
    rc = inspect_error(FELIX_EXIT_NOT_FOUND, "a copy gets its ballot when its broker first takes the shard", "%s has no ballot file", o->args[0]);
  if (rc == FELIX_EXIT_OK && o->json) {
    cJSON *j = ballot_json(&s);
    cJSON_AddItemToObject(j, "generations", generations_json(&s));
    inspect_print_json(j);
  } else if (rc == FELIX_EXIT_OK) {
    print_ballot(&s);
    print_generations(&s);
  }
  felix_shard_survey_free(&s);
  return rc;
}
