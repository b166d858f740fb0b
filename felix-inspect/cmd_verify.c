/* cmd_verify.c — verify a data directory or one shard directory. Exit 6 when
 * anything is damaged; each problem names file, byte, kind and whether the
 * next broker start would repair it. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "felix/fileutil.h"
#include "felix/jsonnum.h"
#include "felix/survey.h"
#include "inspect.h"

cJSON *inspect_problems_json(const felix_problems *p) {
  cJSON *arr = cJSON_CreateArray();
  for (size_t i = 0; i < p->count; i++) {
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "file", p->items[i].file);
    felix_json_add_u64(x, "position", p->items[i].position);
    cJSON_AddStringToObject(x, "kind", p->items[i].kind);
    cJSON_AddBoolToObject(x, "repairable", p->items[i].repairable);
    cJSON_AddStringToObject(x, "detail", p->items[i].detail);
    cJSON_AddItemToArray(arr, x);
  }
  return arr;
}

typedef struct totals {
  uint64_t shards, segments, records;
} totals;

static void merge_shard(const char *path, felix_problems *all, totals *t) {
  felix_shard_survey s;
  felix_err err;
  if (felix_shard_survey_run(path, &s, &err)) {
    felix_problems_add(all, path, 0, "unreadable", false, "%s", err.msg);
    return;
  }
  t->shards++;
  t->segments += s.nsegs;
  t->records += s.records;
  for (size_t i = 0; i < s.problems.count; i++) {
    const felix_problem *p = &s.problems.items[i];
    felix_problems_add(all, p->file, p->position, p->kind, p->repairable, "%s", p->detail);
  }
  felix_shard_survey_free(&s);
}

static void verify_datadir_files(const char *dir, bool has_shards, felix_problems *all) {
  int fd;
  felix_err err;
  if (felix_open_dir(AT_FDCWD, dir, &fd, &err)) {
    felix_problems_add(all, dir, 0, "unreadable", false, "%s", err.msg);
    return;
  }
  char what[4200];
  felix_storage_id sid;
  felix_status st = felix_storage_id_load(fd, dir, &sid, &err);
  snprintf(what, sizeof what, "%s/storage-id", dir);
  if (st == FELIX_E_NOTFOUND && has_shards)
    felix_problems_add(all, what, 0, "missing_storage_id", false,
                       "shards exist but storage-id is missing: the next start gives this directory a new identity");
  else if (st && st != FELIX_E_NOTFOUND)
    felix_problems_add_err(all, what, "bad_storage_id", &err);
  felix_run_state rs;
  bool present;
  snprintf(what, sizeof what, "%s/run-state", dir);
  if (felix_run_state_read(fd, dir, &rs, &present, &err)) felix_problems_add_err(all, what, "bad_run_state", &err);
  close(fd);
}

int cmd_verify(const inspect_opts *o) {
  const char *target = o->args[0];
  int fd;
  felix_err err;
  if (felix_open_dir(AT_FDCWD, target, &fd, &err)) return inspect_fail(&err, NULL);
  close(fd);
  felix_problems all = {0};
  totals t = {0};
  bool datadir = felix_is_data_dir(target);
  if (datadir) {
    char **names;
    size_t n;
    if (felix_list_shard_dirs(target, &names, &n, &err)) return inspect_fail(&err, NULL);
    verify_datadir_files(target, n > 0, &all);
    for (size_t i = 0; i < n; i++) {
      char path[4200];
      snprintf(path, sizeof path, "%s/shards/%s", target, names[i]);
      merge_shard(path, &all, &t);
    }
    felix_free_names(names, n);
  } else {
    merge_shard(target, &all, &t);
  }
  if (o->json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddBoolToObject(j, "ok", all.count == 0);
    cJSON_AddStringToObject(j, "target", target);
    cJSON_AddStringToObject(j, "kind", datadir ? "data_dir" : "shard_dir");
    felix_json_add_u64(j, "shard_count", t.shards); /* "shards" and "segments" are lists elsewhere */
    felix_json_add_u64(j, "segment_count", t.segments);
    felix_json_add_u64(j, "records", t.records);
    cJSON_AddItemToObject(j, "problems", inspect_problems_json(&all));
    inspect_print_json(j);
  } else {
    for (size_t i = 0; i < all.count; i++)
      printf("%s: byte %" PRIu64 ": %s (%s): %s\n", all.items[i].file, all.items[i].position, all.items[i].kind,
             all.items[i].repairable ? "repaired at next start" : "NOT repairable", all.items[i].detail);
    if (all.count == 0)
      printf("verify: ok: %" PRIu64 " shard(s), %" PRIu64 " segment(s), %" PRIu64 " record(s), every checksum good\n",
             t.shards, t.segments, t.records);
    else
      printf("verify: %zu problem(s) found in %s\n", all.count, target);
  }
  int rc = all.count ? FELIX_EXIT_CORRUPT : FELIX_EXIT_OK;
  felix_problems_free(&all);
  return rc;
}
