/* restore-point/manifest.c — a restore point's manifest.json: encoding, parsing and
 * selection of shards.
 *
 * The parser trusts nothing: a manifest names files that restore will copy
 * into a data directory, so every name must be a shard directory name or a
 * file name of a shard (a segment, ballot, generations, stream) and can
 * never leave the restore point. */
#include "felix/restorepoint.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "felix/fileutil.h"
#include "felix/jsonnum.h"
#include "felix/segment.h"

uint64_t felix_rp_manifest_bytes(const felix_rp_manifest *m) {
  uint64_t n = 0;
  for (size_t i = 0; i < m->nshards; i++)
    for (size_t j = 0; j < m->shards[i].nfiles; j++) n += m->shards[i].files[j].size;
  return n;
}

size_t felix_rp_manifest_files(const felix_rp_manifest *m) {
  size_t n = 0;
  for (size_t i = 0; i < m->nshards; i++) n += m->shards[i].nfiles;
  return n;
}

void felix_rp_manifest_free(felix_rp_manifest *m) {
  for (size_t i = 0; i < m->nshards; i++) {
    felix_generations_free(&m->shards[i].gens);
    free(m->shards[i].files);
  }
  free(m->shards);
  memset(m, 0, sizeof *m);
}

/* 64-bit fields as exact integer text (felix_json_add_u64): cJSON's number
 * printer wrote 2^53 - 1 as 9.00719925474099e+15 (helper-31). */
static cJSON *shard_json(const felix_rp_shard *s) {
  cJSON *o = cJSON_CreateObject(), *gens = cJSON_CreateArray(), *files = cJSON_CreateArray();
  cJSON_AddStringToObject(o, "dir", s->dir);
  cJSON_AddStringToObject(o, "stream", s->stream);
  cJSON_AddNumberToObject(o, "shard", s->shard);
  cJSON_AddStringToObject(o, "stream_uuid", s->stream_uuid);
  felix_json_add_u64(o, "start_offset", s->start_offset);
  felix_json_add_u64(o, "end_offset", s->end_offset);
  felix_json_add_u64(o, "ballot_generation", s->ballot_generation);
  for (size_t i = 0; i < s->gens.count; i++) {
    cJSON *g = cJSON_CreateObject();
    felix_json_add_u64(g, "generation", s->gens.items[i].generation);
    felix_json_add_u64(g, "start_offset", s->gens.items[i].start_offset);
    cJSON_AddItemToArray(gens, g);
  }
  cJSON_AddItemToObject(o, "generations", gens);
  for (size_t i = 0; i < s->nfiles; i++) {
    cJSON *f = cJSON_CreateObject();
    cJSON_AddStringToObject(f, "name", s->files[i].name);
    felix_json_add_u64(f, "size", s->files[i].size);
    cJSON_AddNumberToObject(f, "crc32", s->files[i].crc32);
    cJSON_AddBoolToObject(f, "linked", s->files[i].linked);
    cJSON_AddItemToArray(files, f);
  }
  cJSON_AddItemToObject(o, "files", files);
  return o;
}

/* CRC-32 over a canonical text of every field, so an edited or damaged
 * manifest (an entry removed, a size changed) is refused rather than trusted. */
uint32_t felix_rp_manifest_digest(const felix_rp_manifest *m) {
  char buf[1024];
  uLong c = crc32(0L, Z_NULL, 0);
  int n = snprintf(buf, sizeof buf, "v%d|%" PRIu64 "|%s|%s|%s|%d|", m->version, m->created_at_micros, m->created_at,
                   m->broker_id, m->storage_id, m->broker_was_running);
  c = crc32(c, (const Bytef *)buf, (uInt)n);
  for (size_t i = 0; i < m->nshards; i++) {
    const felix_rp_shard *s = &m->shards[i];
    n = snprintf(buf, sizeof buf, "S%s|%s|%u|%s|%" PRIu64 "|%" PRIu64 "|%" PRIu64 "|", s->dir, s->stream, s->shard,
                 s->stream_uuid, s->start_offset, s->end_offset, s->ballot_generation);
    c = crc32(c, (const Bytef *)buf, (uInt)n);
    for (size_t g = 0; g < s->gens.count; g++) {
      n = snprintf(buf, sizeof buf, "G%" PRIu64 ":%" PRIu64 "|", s->gens.items[g].generation, s->gens.items[g].start_offset);
      c = crc32(c, (const Bytef *)buf, (uInt)n);
    }
    for (size_t f = 0; f < s->nfiles; f++) {
      n = snprintf(buf, sizeof buf, "F%s:%" PRIu64 ":%u:%d|", s->files[f].name, s->files[f].size, s->files[f].crc32,
                   s->files[f].linked);
      c = crc32(c, (const Bytef *)buf, (uInt)n);
    }
  }
  return (uint32_t)c;
}

char *felix_rp_manifest_encode(const felix_rp_manifest *m) {
  cJSON *o = cJSON_CreateObject(), *src = cJSON_CreateObject(), *shards = cJSON_CreateArray();
  cJSON_AddStringToObject(o, "format", "felix-restore-point");
  cJSON_AddNumberToObject(o, "version", m->version);
  cJSON_AddStringToObject(o, "created_at", m->created_at);
  felix_json_add_u64(o, "created_at_micros", m->created_at_micros);
  cJSON_AddStringToObject(src, "data_dir", m->source_data_dir);
  if (m->broker_id[0]) cJSON_AddStringToObject(src, "broker_id", m->broker_id);
  else cJSON_AddNullToObject(src, "broker_id");
  cJSON_AddStringToObject(src, "storage_id", m->storage_id);
  cJSON_AddBoolToObject(src, "broker_was_running", m->broker_was_running);
  cJSON_AddItemToObject(o, "source", src);
  for (size_t i = 0; i < m->nshards; i++) cJSON_AddItemToArray(shards, shard_json(&m->shards[i]));
  cJSON_AddItemToObject(o, "shards", shards);
  cJSON_AddNumberToObject(o, "files", (double)felix_rp_manifest_files(m));
  cJSON_AddNumberToObject(o, "bytes", (double)felix_rp_manifest_bytes(m));
  char digest[9];
  snprintf(digest, sizeof digest, "%08x", felix_rp_manifest_digest(m));
  cJSON_AddStringToObject(o, "digest", digest);
  char *text = cJSON_Print(o);
  cJSON_Delete(o);
  return text;
}

/* --- parsing ------------------------------------------------------------ */

typedef struct parse_ctx {
  const char *what;
  felix_err *err;
} parse_ctx;

static felix_status bad(parse_ctx *c, const char *field, const char *expected) {
  return felix_fail(c->err, FELIX_E_CORRUPT, "%s: %s: expected %s", c->what, field, expected);
}

static felix_status get_string(parse_ctx *c, const cJSON *o, const char *key, const char *field, char *out,
                               size_t cap, bool nullable) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (nullable && cJSON_IsNull(v)) return (out[0] = '\0'), FELIX_OK;
  if (!cJSON_IsString(v) || strlen(v->valuestring) >= cap) return bad(c, field, "a string of fitting length");
  snprintf(out, cap, "%s", v->valuestring);
  return FELIX_OK;
}

/* Integers below 2^53, the checked reader's: 2^53 + 1 reads as 2^53, so
 * that one is refused too, never taken rounded (helper-30). */
static felix_status get_u64(parse_ctx *c, const cJSON *o, const char *key, const char *field, uint64_t max,
                            uint64_t *out) {
  uint64_t v;
  if (!felix_json_u64(cJSON_GetObjectItemCaseSensitive(o, key), &v) || v > max)
    return bad(c, field, "a non-negative integer below 2^53");
  *out = v;
  return FELIX_OK;
}

/* A file of a shard directory that a restore point may carry. */
static bool shard_file_name_ok(const char *name) {
  uint64_t base;
  return felix_seg_parse_name(name, ".log", &base) || !strcmp(name, "ballot") || !strcmp(name, "generations") ||
         !strcmp(name, "stream");
}

static felix_status parse_file(parse_ctx *c, const cJSON *o, const char *field, felix_rp_file *f) {
  char sub[400];
  uint64_t crc;
  snprintf(sub, sizeof sub, "%.200s.name", field);
  felix_status st = get_string(c, o, "name", sub, f->name, sizeof f->name, false);
  if (!st && !shard_file_name_ok(f->name)) return bad(c, sub, "a segment name, ballot, generations or stream");
  snprintf(sub, sizeof sub, "%.200s.size", field);
  if (!st) st = get_u64(c, o, "size", sub, UINT64_MAX, &f->size);
  snprintf(sub, sizeof sub, "%.200s.crc32", field);
  if (!st) st = get_u64(c, o, "crc32", sub, UINT32_MAX, &crc);
  f->crc32 = (uint32_t)crc;
  f->linked = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "linked"));
  return st;
}

static felix_status parse_gens(parse_ctx *c, const cJSON *a, const char *field, felix_generations *g) {
  if (!cJSON_IsArray(a)) return bad(c, field, "an array");
  size_t n = (size_t)cJSON_GetArraySize(a), i = 0;
  g->items = calloc(n ? n : 1, sizeof *g->items);
  if (!g->items) return felix_fail(c->err, FELIX_E_IO, "out of memory");
  felix_status st = FELIX_OK;
  for (const cJSON *e = a->child; e && !st; e = e->next, i++) {
    char sub[400];
    snprintf(sub, sizeof sub, "%.200s[%zu].generation", field, i);
    st = get_u64(c, e, "generation", sub, UINT64_MAX, &g->items[i].generation);
    snprintf(sub, sizeof sub, "%.200s[%zu].start_offset", field, i);
    if (!st) st = get_u64(c, e, "start_offset", sub, UINT64_MAX, &g->items[i].start_offset);
    g->count = i + 1;
  }
  return st;
}

/* The control plane's rule for stream names (so no name can hold a path). */
static bool stream_name_ok(const char *n) {
  size_t len = strlen(n);
  if (len < 1 || len > 64 || n[0] == '.' || n[0] == '-') return false;
  for (size_t i = 0; i < len; i++)
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", n[i])) return false;
  return true;
}

static felix_status parse_shard(parse_ctx *c, const cJSON *o, size_t idx, felix_rp_shard *s) {
  char f[64], sub[400], stream[128], uuid16[17];
  uint64_t shard = 0;
  uint32_t dir_shard = 0;
  snprintf(f, sizeof f, "shards[%zu]", idx);
  if (!cJSON_IsObject(o)) return bad(c, f, "an object");
  snprintf(sub, sizeof sub, "%.200s.dir", f);
  felix_status st = get_string(c, o, "dir", sub, s->dir, sizeof s->dir, false);
  if (!st && !felix_shard_dir_parse(s->dir, stream, sizeof stream, &dir_shard, uuid16))
    return bad(c, sub, "a shard directory name (STREAM_N-UUID16)");
  snprintf(sub, sizeof sub, "%.200s.stream", f);
  if (!st) st = get_string(c, o, "stream", sub, s->stream, sizeof s->stream, false);
  snprintf(sub, sizeof sub, "%.200s.shard", f);
  if (!st) st = get_u64(c, o, "shard", sub, UINT32_MAX, &shard);
  s->shard = (uint32_t)shard;
  snprintf(sub, sizeof sub, "%.200s.stream", f);
  if (!st && !stream_name_ok(s->stream)) st = bad(c, sub, "a stream name (1 to 64 of A-Z a-z 0-9 . _ -, not starting with . or -)");
  snprintf(sub, sizeof sub, "%.200s.stream_uuid", f);
  if (!st) st = get_string(c, o, "stream_uuid", sub, s->stream_uuid, sizeof s->stream_uuid, false);
  char canonical[300];
  if (!st && (!felix_shard_dir_name(canonical, sizeof canonical, s->stream, s->shard, s->stream_uuid) ||
              strcmp(canonical, s->dir)))
    st = bad(c, f, "a dir named by its stream, shard and stream_uuid");
  (void)stream, (void)dir_shard, (void)uuid16;
  snprintf(sub, sizeof sub, "%.200s.start_offset", f);
  if (!st) st = get_u64(c, o, "start_offset", sub, UINT64_MAX, &s->start_offset);
  snprintf(sub, sizeof sub, "%.200s.end_offset", f);
  if (!st) st = get_u64(c, o, "end_offset", sub, UINT64_MAX, &s->end_offset);
  snprintf(sub, sizeof sub, "%.200s.ballot_generation", f);
  if (!st) st = get_u64(c, o, "ballot_generation", sub, UINT64_MAX, &s->ballot_generation);
  snprintf(sub, sizeof sub, "%.200s.generations", f);
  if (!st) st = parse_gens(c, cJSON_GetObjectItemCaseSensitive(o, "generations"), sub, &s->gens);
  const cJSON *files = cJSON_GetObjectItemCaseSensitive(o, "files");
  snprintf(sub, sizeof sub, "%.200s.files", f);
  if (!st && !cJSON_IsArray(files)) return bad(c, sub, "an array");
  if (st) return st;
  s->files = calloc((size_t)cJSON_GetArraySize(files) + 1, sizeof *s->files);
  if (!s->files) return felix_fail(c->err, FELIX_E_IO, "out of memory");
  for (const cJSON *e = files->child; e && !st; e = e->next) {
    snprintf(sub, sizeof sub, "%.200s.files[%zu]", f, s->nfiles);
    st = parse_file(c, e, sub, &s->files[s->nfiles++]);
    for (size_t j = 0; !st && j + 1 < s->nfiles; j++)
      if (!strcmp(s->files[j].name, s->files[s->nfiles - 1].name)) st = bad(c, sub, "each file named once");
  }
  return st;
}

static felix_status parse_top(parse_ctx *c, const cJSON *o, felix_rp_manifest *m) {
  uint64_t v = 0;
  const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(o, "format");
  if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "felix-restore-point"))
    return bad(c, "format", "\"felix-restore-point\"");
  felix_status st = get_u64(c, o, "version", "version", UINT32_MAX, &v);
  if (st) return st;
  if (v != FELIX_RP_VERSION)
    return felix_fail(c->err, FELIX_E_IO, "%s: version %" PRIu64 " is not one this felix-broker reads (it reads %d)",
                      c->what, v, FELIX_RP_VERSION);
  m->version = (int)v;
  const cJSON *src = cJSON_GetObjectItemCaseSensitive(o, "source");
  if (!cJSON_IsObject(src)) return bad(c, "source", "an object");
  st = get_string(c, o, "created_at", "created_at", m->created_at, sizeof m->created_at, false);
  if (!st) st = get_u64(c, o, "created_at_micros", "created_at_micros", UINT64_MAX, &m->created_at_micros);
  if (!st) st = get_string(c, src, "data_dir", "source.data_dir", m->source_data_dir, sizeof m->source_data_dir, false);
  if (!st) st = get_string(c, src, "broker_id", "source.broker_id", m->broker_id, sizeof m->broker_id, true);
  if (!st) st = get_string(c, src, "storage_id", "source.storage_id", m->storage_id, sizeof m->storage_id, false);
  m->broker_was_running = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(src, "broker_was_running"));
  return st;
}

felix_status felix_rp_manifest_parse(const char *buf, size_t len, const char *what, felix_rp_manifest *out,
                                     felix_err *err) {
  memset(out, 0, sizeof *out);
  const char *end = NULL;
  cJSON *o = cJSON_ParseWithLengthOpts(buf, len, &end, false);
  if (!o || !cJSON_IsObject(o)) {
    size_t at = end && end >= buf ? (size_t)(end - buf) : 0;
    cJSON_Delete(o);
    return felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: not a JSON object", what, at);
  }
  parse_ctx c = {what, err};
  felix_status st = parse_top(&c, o, out);
  const cJSON *shards = cJSON_GetObjectItemCaseSensitive(o, "shards");
  if (!st && !cJSON_IsArray(shards)) st = bad(&c, "shards", "an array");
  if (!st) out->shards = calloc((size_t)cJSON_GetArraySize(shards) + 1, sizeof *out->shards);
  if (!st && !out->shards) st = felix_fail(err, FELIX_E_IO, "out of memory");
  for (const cJSON *e = st ? NULL : shards->child; e && !st; e = e->next) {
    st = parse_shard(&c, e, out->nshards, &out->shards[out->nshards]);
    out->nshards++;
    for (size_t j = 0; !st && j + 1 < out->nshards; j++)
      if (!strcmp(out->shards[j].dir, out->shards[out->nshards - 1].dir)) st = bad(&c, "shards", "each shard once");
  }
  const cJSON *dg = cJSON_GetObjectItemCaseSensitive(o, "digest");
  char want[9];
  if (!st) snprintf(want, sizeof want, "%08x", felix_rp_manifest_digest(out));
  if (!st && (!cJSON_IsString(dg) || strcmp(dg->valuestring, want)))
    st = felix_fail(err, FELIX_E_CORRUPT, "%s: digest %s does not match its content (%s): the manifest was edited or damaged",
                    what, cJSON_IsString(dg) ? dg->valuestring : "(missing)", want);
  cJSON_Delete(o);
  if (st) felix_rp_manifest_free(out);
  return st;
}

felix_status felix_rp_manifest_read(const char *path, felix_rp_manifest *out, felix_err *err) {
  char what[4400], *buf;
  size_t len;
  int dirfd;
  memset(out, 0, sizeof *out);
  snprintf(what, sizeof what, "%.4300s/%s", path, FELIX_RP_MANIFEST);
  felix_status st = felix_open_dir(AT_FDCWD, path, &dirfd, err);
  if (st) return st;
  st = felix_rp_read_small(dirfd, FELIX_RP_MANIFEST, what, 64u << 20, &buf, &len, err); /* no link, no FIFO */
  close(dirfd);
  if (st == FELIX_E_NOTFOUND)
    return felix_fail(err, FELIX_E_NOTFOUND, "%s: no %s: not a restore point, or one whose create was interrupted",
                      path, FELIX_RP_MANIFEST);
  if (st) return st;
  st = felix_rp_manifest_parse(buf, len, what, out, err);
  free(buf);
  return st;
}

/* --- selection ----------------------------------------------------------- */

static bool select_matches(const char *item, const char *stream, uint32_t shard) {
  const char *slash = strrchr(item, '/');
  if (!slash) return false;
  size_t n = (size_t)(slash - item);
  char num[16];
  snprintf(num, sizeof num, "%u", shard);
  return strlen(stream) == n && !strncmp(item, stream, n) && !strcmp(slash + 1, num);
}

bool felix_rp_selected(const felix_rp_select *sel, const char *stream, uint32_t shard) {
  if (!sel || sel->count == 0) return true;
  for (size_t i = 0; i < sel->count; i++)
    if (select_matches(sel->items[i], stream, shard)) return true;
  return false;
}

felix_status felix_rp_select_check(const felix_rp_select *sel, const felix_rp_manifest *m, const char *what,
                                   felix_err *err) {
  for (size_t i = 0; sel && i < sel->count; i++) {
    bool found = false;
    for (size_t j = 0; j < m->nshards && !found; j++)
      found = select_matches(sel->items[i], m->shards[j].stream, m->shards[j].shard);
    if (!found) return felix_fail(err, FELIX_E_NOTFOUND, "--shard %s: %s holds no such shard", sel->items[i], what);
  }
  return FELIX_OK;
}
