/* identity/ballot.c — ballot and generations codecs, shard directory names.
 *
 * Both files are written whole (temp, fsync, rename, fsync directory). A
 * reader that finds either malformed stops with the file and byte position. */
#include "felix/ballot.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "felix/fileutil.h"
#include "kv.h"

static felix_status hex_field(const kv_field *f, const char *what, char *out, felix_err *err) {
  if (!felix_hex_valid(f->value, FELIX_COPY_ID_HEX))
    return felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: %s must be 32 lowercase hex characters", what, f->at, f->key);
  memcpy(out, f->value, FELIX_COPY_ID_HEX + 1);
  return FELIX_OK;
}

static felix_status text_field(const kv_field *f, const char *what, char *out, size_t cap, felix_err *err) {
  if (!*f->value || strlen(f->value) >= cap || strpbrk(f->value, " \t"))
    return felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: %s must be 1 to %zu characters without spaces", what, f->at, f->key, cap - 1);
  snprintf(out, cap, "%s", f->value);
  return FELIX_OK;
}

felix_status felix_ballot_parse(const char *buf, size_t len, const char *what, felix_ballot *out,
                                felix_err *err) {
  kv_field f[] = {{"copy_id", NULL, 0, 1}, {"storage_id", NULL, 0, 1}, {"stream_uuid", NULL, 0, 1},
                  {"generation", NULL, 0, 1}, {"leader", NULL, 0, 1}, {"leader_copy_id", NULL, 0, 1},
                  {"leader_incarnation", NULL, 0, 1}, {"shard", NULL, 0, 0}};
  size_t n = sizeof f / sizeof f[0];
  felix_status st = kv_parse(buf, len, what, f, n, err);
  if (st) return st;
  memset(out, 0, sizeof *out);
  st = hex_field(&f[0], what, out->copy_id, err);
  if (!st) st = hex_field(&f[1], what, out->storage_id, err);
  if (!st) st = text_field(&f[2], what, out->stream_uuid, sizeof out->stream_uuid, err);
  if (!st) st = kv_u64(&f[3], what, &out->generation, err);
  if (!st) {
    int nones = !strcmp(f[4].value, "none") + !strcmp(f[5].value, "none") + !strcmp(f[6].value, "none");
    if (nones != 0 && nones != 3)
      st = felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: leader, leader_copy_id and leader_incarnation must all be 'none' or all be set",
                      what, f[4].at);
    out->has_leader = nones == 0;
  }
  if (!st && out->has_leader) {
    st = text_field(&f[4], what, out->leader, sizeof out->leader, err);
    if (!st) st = hex_field(&f[5], what, out->leader_copy_id, err);
    if (!st) st = text_field(&f[6], what, out->leader_incarnation, sizeof out->leader_incarnation, err);
  }
  uint64_t shard = 0;
  if (!st && f[7].value && !(st = kv_u64(&f[7], what, &shard, err)) && shard > UINT32_MAX)
    st = felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: shard must be at most %u", what, f[7].at, UINT32_MAX);
  if (!st && f[7].value) out->has_shard = true, out->shard = (uint32_t)shard;
  kv_free(f, n);
  return st;
}

void felix_ballot_format(const felix_ballot *b, char *out, size_t cap) {
  int n = snprintf(out, cap,
                   "copy_id=%s\nstorage_id=%s\nstream_uuid=%s\ngeneration=%" PRIu64
                   "\nleader=%s\nleader_copy_id=%s\nleader_incarnation=%s\n",
                   b->copy_id, b->storage_id, b->stream_uuid, b->generation, b->has_leader ? b->leader : "none",
                   b->has_leader ? b->leader_copy_id : "none", b->has_leader ? b->leader_incarnation : "none");
  if (b->has_shard && n > 0 && (size_t)n < cap) snprintf(out + n, cap - (size_t)n, "shard=%u\n", b->shard);
}

felix_status felix_ballot_read(int dirfd, const char *what, felix_ballot *out, felix_err *err) {
  char *buf;
  size_t len;
  felix_status st = felix_read_file(dirfd, "ballot", 8192, &buf, &len, what, err);
  if (st) return st;
  st = felix_ballot_parse(buf, len, what, out, err);
  free(buf);
  return st;
}

felix_status felix_ballot_write(int dirfd, const char *what, const felix_ballot *b, felix_err *err) {
  char buf[1024];
  felix_ballot_format(b, buf, sizeof buf);
  return felix_write_file_atomic(dirfd, "ballot", buf, strlen(buf), what, err);
}

static felix_status parse_line(const char *p, size_t llen, size_t at, const char *what, felix_generation *g,
                               felix_err *err) {
  char tmp[64];
  if (llen == 0 || llen >= sizeof tmp)
    return felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: expected \"<generation> <start offset>\"", what, at);
  /* strtoull below would stop at a NUL and skip tabs or signs: only digits
   * and spaces may reach it, so a damaged line is never half-read. */
  for (size_t i = 0; i < llen; i++)
    if ((p[i] < '0' || p[i] > '9') && p[i] != ' ')
      return felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: expected two decimal numbers", what, at + i);
  memcpy(tmp, p, llen);
  tmp[llen] = '\0';
  char *sp = strchr(tmp, ' '), *end1, *end2;
  if (!sp || sp == tmp || sp[1] == '\0' || sp[1] == '-' || tmp[0] == '-')
    return felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: expected \"<generation> <start offset>\"", what, at);
  *sp = '\0';
  errno = 0;
  g->generation = strtoull(tmp, &end1, 10);
  g->start_offset = strtoull(sp + 1, &end2, 10);
  if (errno || *end1 || *end2 || sp[1] == ' ' || sp[1] == '+' || tmp[0] == '+')
    return felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: expected two decimal numbers", what, at);
  return FELIX_OK;
}

felix_status felix_generations_parse(const char *buf, size_t len, const char *what,
                                     felix_generations *out, felix_err *err) {
  memset(out, 0, sizeof *out);
  size_t pos = 0, cap = 0;
  felix_status st = FELIX_OK;
  while (pos < len && !st) {
    const char *nl = memchr(buf + pos, '\n', len - pos);
    if (!nl) {
      st = felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: last line does not end with a newline (truncated file?)", what, pos);
      break;
    }
    felix_generation g;
    size_t llen = (size_t)(nl - (buf + pos));
    st = parse_line(buf + pos, llen, pos, what, &g, err);
    if (!st && out->count > 0) {
      felix_generation prev = out->items[out->count - 1];
      if (g.generation <= prev.generation || g.start_offset < prev.start_offset)
        st = felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: generation %" PRIu64 " at %" PRIu64 " does not follow generation %" PRIu64 " at %" PRIu64,
                        what, pos, g.generation, g.start_offset, prev.generation, prev.start_offset);
    }
    if (!st && out->count == cap) {
      cap = cap ? cap * 2 : 8;
      felix_generation *ni = realloc(out->items, cap * sizeof *ni);
      if (!ni) st = felix_fail(err, FELIX_E_IO, "out of memory");
      else out->items = ni;
    }
    if (!st) out->items[out->count++] = g;
    pos += llen + 1;
  }
  if (st) felix_generations_free(out);
  return st;
}

char *felix_generations_format(const felix_generations *g) {
  size_t cap = g->count * 44 + 1;
  char *out = malloc(cap), *p = out;
  if (!out) return NULL;
  *p = '\0';
  for (size_t i = 0; i < g->count; i++)
    p += snprintf(p, cap - (size_t)(p - out), "%" PRIu64 " %" PRIu64 "\n", g->items[i].generation, g->items[i].start_offset);
  return out;
}

felix_status felix_generations_read(int dirfd, const char *what, felix_generations *out, felix_err *err) {
  char *buf;
  size_t len;
  memset(out, 0, sizeof *out);
  felix_status st = felix_read_file(dirfd, "generations", 1u << 24, &buf, &len, what, err);
  if (st) return st;
  st = felix_generations_parse(buf, len, what, out, err);
  free(buf);
  return st;
}

felix_status felix_generations_write(int dirfd, const char *what, const felix_generations *g, felix_err *err) {
  char *buf = felix_generations_format(g);
  if (!buf) return felix_fail(err, FELIX_E_IO, "out of memory");
  felix_status st = felix_write_file_atomic(dirfd, "generations", buf, strlen(buf), what, err);
  free(buf);
  return st;
}

size_t felix_generations_trim_to(felix_generations *g, uint64_t log_end) {
  size_t before = g->count;
  while (g->count > 0 && g->items[g->count - 1].start_offset >= log_end) g->count--;
  return before - g->count;
}

void felix_generations_free(felix_generations *g) {
  free(g->items);
  memset(g, 0, sizeof *g);
}

bool felix_shard_dir_name(char *out, size_t cap, const char *stream, uint32_t shard, const char *uuid) {
  char hex[17];
  size_t k = 0;
  for (const char *p = uuid; *p && k < 16; p++) {
    if (*p == '-') continue;
    char c = (char)(*p >= 'A' && *p <= 'F' ? *p - 'A' + 'a' : *p);
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    hex[k++] = c;
  }
  hex[k] = '\0';
  if (k < 16) return false;
  int n = snprintf(out, cap, "%s_%u-%s", stream, shard, hex);
  return n > 0 && (size_t)n < cap;
}

bool felix_shard_dir_parse(const char *name, char *stream, size_t stream_cap, uint32_t *shard, char uuid16[17]) {
  size_t len = strlen(name);
  if (len < 20 || name[len - 17] != '-' || !felix_hex_valid(name + len - 16, 16)) return false;
  const char *us = NULL;
  for (const char *p = name; p < name + len - 17; p++)
    if (*p == '_') us = p;
  if (!us || us == name) return false;
  size_t digits = (size_t)(name + len - 17 - (us + 1));
  if (digits == 0 || digits > 10) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < digits; i++) {
    char c = us[1 + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (uint64_t)(c - '0');
  }
  if (v > UINT32_MAX) return false;
  size_t sl = (size_t)(us - name);
  if (sl >= stream_cap) return false;
  memcpy(stream, name, sl);
  stream[sl] = '\0';
  *shard = (uint32_t)v;
  memcpy(uuid16, name + len - 16, 17);
  return true;
}
