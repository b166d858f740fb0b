/* restore-point/commands.c — felix-broker restore-point create|list|verify|restore:
 * runs lib/restore-point/ and prints the result as text or JSON. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "felix/exitcode.h"
#include "felix/fileutil.h"
#include "felix/jsonnum.h"
#include "felix/restorepoint.h"
#include "cli.h"
#include "felix/cli.h"

static int fail(const felix_err *err, const char *hint) {
  fprintf(stderr, "felix-broker: error: %s\n", err->msg);
  if (hint) fprintf(stderr, "felix-broker: hint: %s\n", hint);
  return felix_exit_code_of(err->status);
}

static void print_json(cJSON *v) {
  char *s = cJSON_PrintUnformatted(v);
  if (s) puts(s);
  free(s);
  cJSON_Delete(v);
}

static felix_rp_select selection(const rp_args *a) { return (felix_rp_select){a->shards, a->nshards}; }

static uint64_t last_generation(const felix_rp_shard *s) {
  return s->gens.count ? s->gens.items[s->gens.count - 1].generation : 0;
}

static cJSON *shards_json(const felix_rp_manifest *m, const felix_rp_select *sel) {
  cJSON *arr = cJSON_CreateArray();
  for (size_t i = 0; i < m->nshards; i++) {
    const felix_rp_shard *s = &m->shards[i];
    if (!felix_rp_selected(sel, s->stream, s->shard)) continue;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "stream", s->stream);
    cJSON_AddNumberToObject(o, "shard", s->shard);
    cJSON_AddStringToObject(o, "dir", s->dir);
    cJSON_AddStringToObject(o, "stream_uuid", s->stream_uuid);
    felix_json_add_u64(o, "start_offset", s->start_offset);
    felix_json_add_u64(o, "end_offset", s->end_offset);
    felix_json_add_u64(o, "generation", last_generation(s));
    felix_json_add_u64(o, "files", s->nfiles);
    cJSON_AddItemToArray(arr, o);
  }
  return arr;
}

static cJSON *point_json(const char *path, const felix_rp_manifest *m) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "path", path);
  cJSON_AddNumberToObject(o, "manifest_version", m->version); /* "version" is felix's own, a string */
  if (m->created_at_micros) felix_json_add_time(o, "created_at", (int64_t)m->created_at_micros); /* µs, as every time */
  else cJSON_AddStringToObject(o, "created_at", m->created_at);
  if (m->broker_id[0]) cJSON_AddStringToObject(o, "broker_id", m->broker_id);
  else cJSON_AddNullToObject(o, "broker_id");
  cJSON_AddStringToObject(o, "storage_id", m->storage_id);
  cJSON_AddBoolToObject(o, "broker_was_running", m->broker_was_running);
  cJSON_AddItemToObject(o, "shards", shards_json(m, NULL));
  felix_json_add_u64(o, "files", felix_rp_manifest_files(m));
  felix_json_add_u64(o, "bytes", felix_rp_manifest_bytes(m));
  return o;
}

static void print_shards_text(const felix_rp_manifest *m, const felix_rp_select *sel) {
  for (size_t i = 0; i < m->nshards; i++) {
    const felix_rp_shard *s = &m->shards[i];
    if (!felix_rp_selected(sel, s->stream, s->shard)) continue;
    printf("  %s/%u  offsets [%" PRIu64 ", %" PRIu64 ")  generation %" PRIu64 "  %zu files\n", s->stream, s->shard,
           s->start_offset, s->end_offset, last_generation(s), s->nfiles);
  }
}

static void create_warning(void *ctx, const char *shard_dir, const char *why) {
  rp_progress_state *ps = ctx;
  if (ps->shown) fputc('\n', stderr), ps->shown = false;
  fprintf(stderr, "felix-broker: warning: %s: %s\n", shard_dir, why);
}

int rp_cmd_create(rp_args *a) {
  rp_progress_state ps;
  rp_progress_init(&ps, "create");
  felix_rp_create_opts o = {a->data_dir, a->to, selection(a), rp_progress, &ps, create_warning};
  felix_rp_manifest m;
  felix_err err;
  felix_status st = felix_rp_create(&o, &m, &err);
  rp_progress_end(&ps);
  if (st) return fail(&err, st == FELIX_E_REFUSED ? "restore points are never overwritten; give --to a new path" : NULL);
  size_t linked = 0;
  for (size_t i = 0; i < m.nshards; i++)
    for (size_t j = 0; j < m.shards[i].nfiles; j++) linked += m.shards[i].files[j].linked;
  if (a->json) {
    cJSON *j = point_json(a->to, &m);
    felix_json_add_u64(j, "linked_files", linked);
    print_json(j);
  } else {
    printf("restore point %s: %zu shard%s, %zu files (%zu hard-linked), %" PRIu64 " bytes, storage id %s%s%s\n", a->to,
           m.nshards, m.nshards == 1 ? "" : "s", felix_rp_manifest_files(&m), linked, felix_rp_manifest_bytes(&m),
           m.storage_id, m.broker_id[0] ? ", broker " : "", m.broker_id);
    print_shards_text(&m, NULL);
  }
  felix_rp_manifest_free(&m);
  return FELIX_EXIT_OK;
}

/* --- list ------------------------------------------------------------------ */

/* Called for each complete point found (a directory with a manifest). */
typedef void (*point_fn)(void *ctx, const char *path, const felix_rp_manifest *m);

typedef struct list_out {
  cJSON *arr;
  bool json, header, human;
} list_out;

static void list_one(void *ctx, const char *path, const felix_rp_manifest *m) {
  list_out *l = ctx;
  if (l->json) {
    cJSON_AddItemToArray(l->arr, point_json(path, m));
    return;
  }
  if (!l->header) printf("%-40s %-20s %-12s %-32s %6s %12s\n", "PATH", "CREATED", "BROKER", "STORAGE-ID", "SHARDS",
                         l->human ? "SIZE" : "BYTES");
  l->header = true;
  char size[24];
  if (l->human) felix_human_bytes((double)felix_rp_manifest_bytes(m), size); /* a person reads it: 1.5 GiB */
  else snprintf(size, sizeof size, "%" PRIu64, felix_rp_manifest_bytes(m)); /* a script does: bytes */
  printf("%-40s %-20s %-12s %-32s %6zu %12s\n", path, m->created_at, m->broker_id[0] ? m->broker_id : "-", m->storage_id,
         m->nshards, size);
}

/* One candidate; returns 0, or the exit code of a point that could not be read. */
static int visit_entry(const char *path, point_fn fn, void *ctx) {
  felix_rp_manifest m;
  felix_err err;
  felix_status st = felix_rp_manifest_read(path, &m, &err);
  if (st == FELIX_OK) {
    fn(ctx, path, &m);
    felix_rp_manifest_free(&m);
    return 0;
  }
  char shards[4200];
  struct stat sb;
  snprintf(shards, sizeof shards, "%.4100s/shards", path);
  if (st == FELIX_E_NOTFOUND && stat(shards, &sb) == 0)
    fprintf(stderr, "felix-broker: warning: %s: incomplete (no manifest.json; an interrupted create), left alone\n", path);
  else if (st != FELIX_E_NOTFOUND) {
    fprintf(stderr, "felix-broker: warning: %s: left alone: %s\n", path, err.msg);
    return felix_exit_code_of(st);
  }
  return 0;
}

static int cmp_names(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

/* The point FROM itself, or each directory in it (by name; dot names, such
 * as a prune's .pruning-*, skipped). *bad: the exit code of an unreadable one. */
static int visit_points(const char *from, point_fn fn, void *ctx, int *bad) {
  char manifest[4200];
  struct stat sb;
  snprintf(manifest, sizeof manifest, "%.4000s/manifest.json", from);
  if (stat(manifest, &sb) == 0) return *bad = visit_entry(from, fn, ctx), 0;
  DIR *d = opendir(from);
  if (!d) {
    felix_err err;
    felix_fail_errno(&err, FELIX_E_NOTFOUND, errno, "--from %s", from);
    return fail(&err, NULL);
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 16;
      char **nn = realloc(names, cap * sizeof *nn);
      if (!nn) break;
      names = nn;
    }
    names[n++] = strdup(de->d_name);
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, cmp_names);
  for (size_t i = 0; i < n; i++) {
    char p[4200];
    snprintf(p, sizeof p, "%.4000s/%s", from, names[i]);
    int rc = stat(p, &sb) == 0 && S_ISDIR(sb.st_mode) ? visit_entry(p, fn, ctx) : 0;
    if (rc && !*bad) *bad = rc;
    free(names[i]);
  }
  free(names);
  return 0;
}

int rp_cmd_list(rp_args *a) {
  list_out l = {.arr = cJSON_CreateArray(), .json = a->json, .human = isatty(STDOUT_FILENO)};
  int bad = 0, rc = visit_points(a->from, list_one, &l, &bad);
  if (rc) {
    cJSON_Delete(l.arr);
    return rc;
  }
  if (a->json) print_json(l.arr);
  else {
    cJSON_Delete(l.arr);
    if (!l.header) puts("no complete restore points");
  }
  return bad;
}

/* --- prune ------------------------------------------------------------------- */

typedef struct prune_point {
  char *path;
  char created_at[32];
  uint64_t created_micros, bytes;
} prune_point;

typedef struct prune_list {
  prune_point *items;
  size_t n, cap;
} prune_list;

static void collect(void *ctx, const char *path, const felix_rp_manifest *m) {
  prune_list *l = ctx;
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    prune_point *ni = realloc(l->items, cap * sizeof *ni);
    if (!ni) return;
    l->items = ni;
    l->cap = cap;
  }
  prune_point *p = &l->items[l->n++];
  *p = (prune_point){.path = strdup(path), .created_micros = m->created_at_micros, .bytes = felix_rp_manifest_bytes(m)};
  snprintf(p->created_at, sizeof p->created_at, "%s", m->created_at);
}

static int newest_first(const void *x, const void *y) {
  const prune_point *a = x, *b = y;
  return a->created_micros < b->created_micros ? 1 : a->created_micros > b->created_micros ? -1 : strcmp(a->path, b->path);
}

/* "90s", "30m", "12h", "7d" into seconds (a unit is required; at most a century). */
static bool parse_age(const char *v, uint64_t *secs) {
  uint64_t ms;
  if (!felix_parse_duration_ms(v, false, 36500ull * 86400000, &ms) || ms % 1000) return false;
  *secs = ms / 1000;
  return true;
}

/* Renamed out of the listing first (.pruning-NAME), so that a removal cut
 * short never leaves a directory that looks like an interrupted create. */
static felix_status remove_point(const char *path, felix_err *err) {
  char aside[4300];
  const char *slash = strrchr(path, '/');
  snprintf(aside, sizeof aside, "%.*s.pruning-%s", slash ? (int)(slash - path + 1) : 0, path, slash ? slash + 1 : path);
  if (rename(path, aside) != 0) return felix_fail_errno(err, FELIX_E_IO, errno, "rename %s to %s", path, aside);
  return felix_rp_remove_tree(aside, err);
}

static int prune_args(const rp_args *a, uint64_t *keep, uint64_t *age, bool *aged) {
  char *end;
  unsigned long long k = strtoull(a->keep, &end, 10);
  if (a->keep[0] < '1' || a->keep[0] > '9' || *end || k > 1000000) {
    fprintf(stderr, "felix-broker: error: --keep: '%s' is not a number of points, 1 or more\n", a->keep);
    return FELIX_EXIT_USAGE;
  }
  *keep = k;
  *aged = a->older_than != NULL;
  if (*aged && !parse_age(a->older_than, age)) {
    fprintf(stderr, "felix-broker: error: --older-than: '%s' is not an age (90s, 30m, 12h, 7d)\n", a->older_than);
    return FELIX_EXIT_USAGE;
  }
  return 0;
}

static void prune_report(const prune_point *p, const char *what, cJSON *arr, bool json) {
  char size[24];
  felix_human_bytes((double)p->bytes, size);
  if (json) cJSON_AddItemToArray(arr, cJSON_CreateString(p->path));
  else printf("%s %s (created %s, %s)\n", what, p->path, p->created_at, size);
}

int rp_cmd_prune(rp_args *a) {
  uint64_t keep, age = 0;
  bool aged;
  int rc = prune_args(a, &keep, &age, &aged);
  prune_list l = {0};
  int bad = 0;
  if (!rc) rc = visit_points(a->from, collect, &l, &bad);
  if (l.n) qsort(l.items, l.n, sizeof *l.items, newest_first);
  uint64_t now = felix_now_micros(); /* the points' own clock, to the microsecond: a point made this second is not young at --older-than 0s */
  cJSON *j = cJSON_CreateObject(), *kept = cJSON_AddArrayToObject(j, "kept"), *gone = cJSON_AddArrayToObject(j, "removed");
  cJSON_AddBoolToObject(j, "dry_run", a->dry_run);
  for (size_t i = 0; !rc && i < l.n; i++) {
    prune_point *p = &l.items[i];
    bool young = aged && p->created_micros + age * 1000000u > now;
    if (i < keep || young) {
      prune_report(p, "kept", kept, a->json);
      continue;
    }
    felix_err err;
    if (!a->dry_run && remove_point(p->path, &err)) rc = fail(&err, "the points after it were not pruned; run prune again");
    else prune_report(p, a->dry_run ? "would remove" : "removed", gone, a->json);
  }
  if (a->json && !rc) print_json(j);
  else cJSON_Delete(j);
  for (size_t i = 0; i < l.n; i++) free(l.items[i].path);
  free(l.items);
  return rc ? rc : bad;
}

/* --- verify ------------------------------------------------------------------ */

static cJSON *mismatches_json(const felix_rp_mismatches *p) {
  cJSON *arr = cJSON_CreateArray();
  for (size_t i = 0; i < p->count; i++) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", p->items[i].file);
    cJSON_AddStringToObject(o, "kind", p->items[i].kind);
    cJSON_AddStringToObject(o, "detail", p->items[i].detail);
    cJSON_AddItemToArray(arr, o);
  }
  return arr;
}

static void print_mismatches(const felix_rp_mismatches *p) {
  for (size_t i = 0; i < p->count; i++)
    printf("%s: %s: %s\n", p->items[i].file, p->items[i].kind, p->items[i].detail);
}

int rp_cmd_verify(rp_args *a) {
  felix_rp_manifest m;
  felix_rp_mismatches bad = {0};
  felix_rp_select sel = selection(a);
  felix_err err;
  rp_progress_state ps;
  rp_progress_init(&ps, "verify");
  felix_status st = felix_rp_manifest_read(a->from, &m, &err);
  if (st) return fail(&err, st == FELIX_E_NOTFOUND ? "felix-broker restore-point list --from DIR shows the complete ones" : NULL);
  st = felix_rp_verify(a->from, &m, &sel, &bad, rp_progress, &ps, &err);
  rp_progress_end(&ps);
  if (st) {
    felix_rp_manifest_free(&m);
    return fail(&err, NULL);
  }
  if (a->json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", a->from);
    cJSON_AddBoolToObject(o, "ok", bad.count == 0);
    cJSON_AddItemToObject(o, "shards", shards_json(&m, &sel));
    cJSON_AddItemToObject(o, "problems", mismatches_json(&bad));
    print_json(o);
  } else if (bad.count == 0) {
    printf("restore point %s: ok, every file matches its manifest\n", a->from);
    print_shards_text(&m, &sel);
  } else {
    print_mismatches(&bad);
  }
  int rc = FELIX_EXIT_OK;
  if (bad.count) {
    fprintf(stderr, "felix-broker: error: restore point %s does not match its manifest: %zu problem%s, first %s (%s)\n",
            a->from, bad.count, bad.count == 1 ? "" : "s", bad.items[0].file, bad.items[0].kind);
    rc = FELIX_EXIT_CORRUPT;
  }
  felix_rp_mismatches_free(&bad);
  felix_rp_manifest_free(&m);
  return rc;
}

/* --- restore ------------------------------------------------------------------ */

/* The command as run-state's restored_by records it (truncated to fit). */
static void restore_command(const rp_args *a, char *out, size_t cap) {
  size_t n = (size_t)snprintf(out, cap, "felix-broker restore-point restore --from %s --data-dir %s", a->from, a->data_dir);
  for (size_t i = 0; i < a->nshards && n < cap; i++) n += (size_t)snprintf(out + n, cap - n, " --shard %s", a->shards[i]);
}

int rp_cmd_restore(rp_args *a) {
  rp_progress_state ps;
  rp_progress_init(&ps, "restore");
  char command[8192]; /* whole: run-state's field cuts it, marked with "..." */
  restore_command(a, command, sizeof command);
  felix_rp_restore_opts o = {a->from, a->data_dir, selection(a), rp_progress, &ps, command};
  felix_rp_manifest m;
  felix_rp_mismatches bad;
  felix_rp_restore_result res;
  felix_err err;
  felix_status st = felix_rp_restore(&o, &m, &bad, &res, &err);
  rp_progress_end(&ps);
  if (bad.count && !a->json) print_mismatches(&bad);
  felix_rp_mismatches_free(&bad);
  if (st) {
    felix_rp_manifest_free(&m);
    const char *hint = st == FELIX_E_BUSY ? "stop the broker first (SIGTERM drains it); restore writes only into a directory no broker holds"
                       : res.outcome_unknown ? "storage-id could not be read back: the next broker start decides from it whether this restore finished; check felix-inspect run-state first"
                       : res.finished ? "the restore is complete (its storage id is on disk); the next broker start removes what it left"
                       : res.run_state_removed ? "the restore did not finish: the next broker start (or restore) puts every old copy back, and the directory gets a new storage id; run restore again once the cause is fixed"
                                               : NULL;
    return fail(&err, hint);
  }
  felix_rp_select sel = selection(a);
  if (a->json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "from", a->from);
    cJSON_AddStringToObject(j, "data_dir", a->data_dir);
    if (res.previous_storage_id[0]) cJSON_AddStringToObject(j, "previous_storage_id", res.previous_storage_id);
    else cJSON_AddNullToObject(j, "previous_storage_id");
    cJSON_AddStringToObject(j, "storage_id", res.storage_id);
    cJSON_AddItemToObject(j, "shards", shards_json(&m, &sel));
    felix_json_add_u64(j, "files", res.files);
    felix_json_add_u64(j, "bytes", res.bytes);
    print_json(j);
  } else {
    printf("restored %zu shard%s (%zu files, %" PRIu64 " bytes) from %s into %s; storage id %s (was %s)\n", res.shards,
           res.shards == 1 ? "" : "s", res.files, res.bytes, a->from, a->data_dir, res.storage_id,
           res.previous_storage_id[0] ? res.previous_storage_id : "none");
    print_shards_text(&m, &sel);
    puts("Start the broker: its copies join as strangers and are measured before they are trusted.\n"
         "A shard with no other live copy waits at NoCaughtUpReplica until `felixctl placement abandon`.");
  }
  felix_rp_manifest_free(&m);
  return FELIX_EXIT_OK;
}
