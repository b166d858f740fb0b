/* cmd_segments.c — segments, dump and index: the files of one shard copy. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "felix/bytes.h"
#include "felix/fileutil.h"
#include "felix/log.h"
#include "felix/survey.h"
#include "felix/jsonnum.h"
#include "inspect.h"

/* Prints problems to stderr (human) and returns the exit code they imply. */
static int report_problems(const felix_problems *p) {
  for (size_t i = 0; i < p->count; i++)
    fprintf(stderr, "felix-inspect: problem: %s: byte %" PRIu64 ": %s: %s\n", p->items[i].file, p->items[i].position,
            p->items[i].kind, p->items[i].detail);
  return p->count ? FELIX_EXIT_CORRUPT : FELIX_EXIT_OK;
}

static cJSON *segment_json(const felix_seg_info *s) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "file", s->name);
  felix_json_add_u64(j, "base_offset", s->base_offset);
  felix_json_add_u64(j, "next_offset", s->next_offset);
  felix_json_add_u64(j, "records", s->records);
  felix_json_add_u64(j, "bytes", s->bytes);
  felix_json_add_time(j, "created_at", (int64_t)s->created_at_micros);
  cJSON_AddStringToObject(j, "index", s->index_state);
  return j;
}

int cmd_segments(const inspect_opts *o) {
  felix_shard_survey s;
  felix_err err;
  if (felix_shard_survey_run(o->args[0], &s, &err)) return inspect_fail(&err, NULL);
  if (o->json) {
    cJSON *j = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(j, "segments");
    for (size_t i = 0; i < s.nsegs; i++) cJSON_AddItemToArray(arr, segment_json(&s.segs[i]));
    cJSON_AddItemToObject(j, "problems", inspect_problems_json(&s.problems));
    inspect_print_json(j);
  } else {
    printf("%-28s %12s %12s %10s %12s  %-20s  %s\n", "FILE", "BASE", "NEXT", "RECORDS", "BYTES", "CREATED", "INDEX");
    for (size_t i = 0; i < s.nsegs; i++) {
      char t[40];
      inspect_time_text(s.segs[i].created_at_micros, t);
      printf("%-28s %12" PRIu64 " %12" PRIu64 " %10" PRIu64 " %12" PRIu64 "  %-20s  %s\n", s.segs[i].name, s.segs[i].base_offset,
             s.segs[i].next_offset, s.segs[i].records, s.segs[i].bytes, t, s.segs[i].index_state);
    }
    if (s.nsegs == 0) printf("(no segments)\n");
  }
  int rc = o->json ? (s.problems.count ? FELIX_EXIT_CORRUPT : 0) : report_problems(&s.problems);
  felix_shard_survey_free(&s);
  return rc;
}

typedef struct dump_ctx {
  const inspect_opts *o;
  uint64_t printed;
} dump_ctx;

static void print_payload_text(const uint8_t *p, uint32_t len) {
  for (uint32_t i = 0; i < len; i++) {
    if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\') putchar(p[i]);
    else if (p[i] == '\\') fputs("\\\\", stdout);
    else printf("\\x%02x", p[i]);
  }
}

static void dump_record(void *ctx, uint64_t offset, uint64_t ts, uint64_t position, const uint8_t *payload, uint32_t len) {
  dump_ctx *d = ctx;
  const inspect_opts *o = d->o;
  if (o->have_from && offset < o->from) return;
  if (o->have_limit && d->printed >= o->limit) return;
  d->printed++;
  if (o->json) {
    cJSON *j = cJSON_CreateObject();
    felix_json_add_u64(j, "offset", offset);
    felix_json_add_time(j, "timestamp", (int64_t)ts);
    felix_json_add_u64(j, "position", position);
    cJSON_AddNumberToObject(j, "payload_len", len);
    char *b64 = malloc(4 * ((len + 2) / 3) + 1);
    if (b64) {
      felix_base64_encode(payload, len, b64);
      cJSON_AddStringToObject(j, "payload_b64", b64);
      free(b64);
    }
    if (len == 0) cJSON_AddBoolToObject(j, "generation_start", 1);
    inspect_print_json(j);
    return;
  }
  char t[40];
  inspect_time_text(ts, t);
  printf("offset=%" PRIu64 " position=%" PRIu64 " time=%s len=%u", offset, position, t, len);
  if (len == 0) {
    printf(" (generation-start marker)\n");
    return;
  }
  if (!strcmp(o->payload, "none")) {
    putchar('\n');
    return;
  }
  fputs(" payload=", stdout);
  if (!strcmp(o->payload, "hex"))
    for (uint32_t i = 0; i < len; i++) printf("%02x", payload[i]);
  else
    print_payload_text(payload, len);
  putchar('\n');
}

/* Whether path is the newest segment of its directory (only there can
 * damage be a repairable torn tail). */
static bool is_newest_segment(const char *path) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  const char *name = slash ? path + (slash - dir) + 1 : path;
  uint64_t mine, other;
  if (!felix_seg_parse_name(name, ".log", &mine)) return true;
  if (slash) *slash = '\0';
  DIR *d = opendir(slash ? (dir[0] ? dir : "/") : ".");
  if (!d) return true;
  bool newest = true;
  struct dirent *de;
  while ((de = readdir(d)) != NULL)
    if (felix_seg_parse_name(de->d_name, ".log", &other) && other > mine) newest = false;
  closedir(d);
  return newest;
}

int cmd_dump(const inspect_opts *o) {
  const char *path = o->args[0];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return inspect_error(errno == ENOENT ? FELIX_EXIT_NOT_FOUND : FELIX_EXIT_FAILURE, NULL, "open %s: %s", path, strerror(errno));
  dump_ctx d = {o, 0};
  felix_scan_opts so = {.index_spacing = FELIX_DEFAULT_INDEX_SPACING, .is_newest = is_newest_segment(path),
                        .on_record = dump_record, .ctx = &d};
  felix_seg_scan sc;
  felix_err err;
  felix_status st = felix_seg_scan_fd(fd, path, &so, &sc, &err);
  close(fd);
  if (st) return inspect_fail(&err, NULL);
  int rc = FELIX_EXIT_OK;
  if (sc.has_problem) {
    rc = inspect_error(FELIX_EXIT_CORRUPT, sc.problem.repairable ? "a torn tail: the next broker start cuts it" : "run felix-inspect verify on the shard",
                       "%s: byte %" PRIu64 ": %s: %s", path, sc.problem.position, sc.problem.kind, sc.problem.detail);
  }
  felix_seg_scan_free(&sc);
  return rc;
}

int cmd_index(const inspect_opts *o) {
  const char *path = o->args[0];
  char *buf;
  size_t len;
  felix_err err;
  felix_status st = felix_read_file(AT_FDCWD, path, SIZE_MAX / 2, &buf, &len, path, &err);
  if (st) return inspect_fail(&err, NULL);
  const char *slash = strrchr(path, '/');
  uint64_t base = 0;
  if (!felix_seg_parse_name(slash ? slash + 1 : path, ".index", &base) && len >= 16) base = felix_get_u64((uint8_t *)buf + 8);
  felix_idx_entry *e;
  size_t n;
  const char *kind;
  uint64_t pos;
  bool ok = felix_idx_decode((uint8_t *)buf, len, base, &e, &n, &kind, &pos);
  free(buf);
  if (!ok) return inspect_error(FELIX_EXIT_CORRUPT, "index files are derived: the next broker start rebuilds it",
                                "%s: byte %" PRIu64 ": %s", path, pos, kind);
  if (o->json) {
    cJSON *j = cJSON_CreateObject(), *arr;
    felix_json_add_u64(j, "base_offset", base);
    arr = cJSON_AddArrayToObject(j, "entries");
    for (size_t i = 0; i < n; i++) {
      cJSON *x = cJSON_CreateObject();
      felix_json_add_u64(x, "offset", e[i].offset);
      felix_json_add_u64(x, "position", e[i].position);
      cJSON_AddItemToArray(arr, x);
    }
    inspect_print_json(j);
  } else {
    printf("index %s: base offset %" PRIu64 ", %zu entries\n", path, base, n);
    printf("%12s %14s\n", "OFFSET", "POSITION");
    for (size_t i = 0; i < n; i++) printf("%12" PRIu64 " %14" PRIu64 "\n", e[i].offset, e[i].position);
  }
  free(e);
  return FELIX_EXIT_OK;
}
