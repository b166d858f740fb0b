/* identity/kv.c — strict parser for key=value files: malformed means an error, never a guess. */
#include "kv.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static kv_field *find(kv_field *fields, size_t n, const char *key, size_t klen) {
  for (size_t i = 0; i < n; i++)
    if (strlen(fields[i].key) == klen && memcmp(fields[i].key, key, klen) == 0) return &fields[i];
  return NULL;
}

felix_status kv_parse(const char *buf, size_t len, const char *what, kv_field *fields, size_t n,
                      felix_err *err) {
  for (size_t i = 0; i < n; i++) fields[i].value = NULL;
  size_t pos = 0;
  int line = 1;
  felix_status st = FELIX_OK;
  while (pos < len && !st) {
    const char *nl = memchr(buf + pos, '\n', len - pos);
    if (!nl) {
      st = felix_fail(err, FELIX_E_CORRUPT, "%s: line %d (byte %zu): line does not end with a newline (truncated file?)", what, line, pos);
      break;
    }
    size_t llen = (size_t)(nl - (buf + pos));
    const char *eq = memchr(buf + pos, '=', llen);
    if (memchr(buf + pos, '\0', llen)) {
      st = felix_fail(err, FELIX_E_CORRUPT, "%s: line %d (byte %zu): NUL byte in line", what, line, pos);
    } else if (!eq || eq == buf + pos) {
      st = felix_fail(err, FELIX_E_CORRUPT, "%s: line %d (byte %zu): expected key=value", what, line, pos);
    } else {
      kv_field *f = find(fields, n, buf + pos, (size_t)(eq - (buf + pos)));
      size_t vlen = llen - (size_t)(eq - (buf + pos)) - 1;
      if (!f) {
        st = felix_fail(err, FELIX_E_CORRUPT, "%s: line %d (byte %zu): unknown key '%.*s'", what, line, pos,
                        (int)(eq - (buf + pos)), buf + pos);
      } else if (f->value) {
        st = felix_fail(err, FELIX_E_CORRUPT, "%s: line %d (byte %zu): key '%s' repeated", what, line, pos, f->key);
      } else if (!(f->value = strndup(eq + 1, vlen))) {
        st = felix_fail(err, FELIX_E_IO, "out of memory");
      } else {
        f->at = pos;
      }
    }
    pos += llen + 1;
    line++;
  }
  for (size_t i = 0; i < n && !st; i++)
    if (fields[i].required && !fields[i].value)
      st = felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: required key '%s' missing", what, len, fields[i].key);
  if (st) kv_free(fields, n);
  return st;
}

void kv_free(kv_field *fields, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(fields[i].value);
    fields[i].value = NULL;
  }
}

felix_status kv_u64(const kv_field *f, const char *what, uint64_t *out, felix_err *err) {
  const char *v = f->value;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  /* strtoull skips leading whitespace and takes a sign: only a digit may
   * start the value, or "\t-1" would read as 18446744073709551615. */
  if (v[0] < '0' || v[0] > '9' || *end || errno)
    return felix_fail(err, FELIX_E_CORRUPT, "%s: byte %zu: %s=%s is not a decimal number", what, f->at, f->key, v);
  *out = x;
  return FELIX_OK;
}
