/* identity/streammeta.c — the `stream` file of a shard copy (streammeta.h). */
#include "felix/streammeta.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "felix/fileutil.h"
#include "kv.h"

#define STREAM_FILE "stream"

static felix_status word(const kv_field *f, const char *what, char *out, size_t cap, felix_err *err) {
  if (!*f->value || strlen(f->value) >= cap || strpbrk(f->value, " \t"))
    return felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: %s must be 1 to %zu characters without spaces", what, f->at,
                      f->key, cap - 1);
  snprintf(out, cap, "%s", f->value);
  return FELIX_OK;
}

static felix_status count(const kv_field *f, const char *what, uint32_t lo, uint32_t hi, uint32_t *out,
                          felix_err *err) {
  uint64_t v;
  felix_status st = kv_u64(f, what, &v, err);
  if (st) return st;
  if (v < lo || v > hi)
    return felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: %s is %" PRIu64 ", must be %u to %u", what, f->at, f->key, v,
                      lo, hi);
  *out = (uint32_t)v;
  return FELIX_OK;
}

felix_status felix_stream_meta_parse(const char *buf, size_t len, const char *what, felix_stream_meta *out,
                                     felix_err *err) {
  kv_field f[] = {{"name", NULL, 0, 1}, {"uuid", NULL, 0, 1}, {"shards", NULL, 0, 1}, {"replicas", NULL, 0, 1},
                  {"acks", NULL, 0, 1}};
  size_t n = sizeof f / sizeof f[0];
  felix_status st = kv_parse(buf, len, what, f, n, err);
  if (st) return st;
  memset(out, 0, sizeof *out);
  st = word(&f[0], what, out->name, sizeof out->name, err);
  if (!st) st = word(&f[1], what, out->uuid, sizeof out->uuid, err);
  if (!st) st = count(&f[2], what, 1, 1024, &out->shards, err);
  if (!st) st = count(&f[3], what, 1, FELIX_MAX_REPLICAS, &out->replicas, err);
  if (!st) st = word(&f[4], what, out->acks, sizeof out->acks, err);
  if (!st && strcmp(out->acks, "quorum") && strcmp(out->acks, "leader") && strcmp(out->acks, "all"))
    st = felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: acks must be quorum, leader or all", what, f[4].at);
  kv_free(f, n);
  return st;
}

void felix_stream_meta_format(const felix_stream_meta *m, char *out, size_t cap) {
  snprintf(out, cap, "name=%s\nuuid=%s\nshards=%u\nreplicas=%u\nacks=%s\n", m->name, m->uuid, m->shards, m->replicas,
           m->acks);
}

felix_status felix_stream_meta_read(int dirfd, const char *what, felix_stream_meta *out, bool *found, felix_err *err) {
  char *buf;
  size_t len;
  *found = false;
  felix_status st = felix_read_file(dirfd, STREAM_FILE, 4096, &buf, &len, what, err);
  if (st == FELIX_E_NOTFOUND) return FELIX_OK;
  if (st) return st;
  st = felix_stream_meta_parse(buf, len, what, out, err);
  free(buf);
  *found = st == FELIX_OK;
  return st;
}

felix_status felix_stream_meta_write(int dirfd, const char *what, const felix_stream_meta *m, felix_err *err) {
  char buf[512];
  felix_stream_meta_format(m, buf, sizeof buf);
  return felix_write_file_atomic(dirfd, STREAM_FILE, buf, strlen(buf), what, err);
}

bool felix_stream_meta_equal(const felix_stream_meta *a, const felix_stream_meta *b) {
  return !strcmp(a->name, b->name) && !strcmp(a->uuid, b->uuid) && a->shards == b->shards &&
         a->replicas == b->replicas && !strcmp(a->acks, b->acks);
}
