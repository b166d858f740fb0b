/* parse.c — pure helpers for the command line and URLs: numbers, the
 * STREAM/SHARD form, percent-encoding, control-plane URL normalisation and
 * the names of ack policies and shard states.
 *
 * No I/O and no globals, so tests/unit/test_felixctl_parse.c can include this
 * file directly. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "felix/wire.h"
#include "felixctl.h"

/* Digits only: strtoull alone would accept "-1", " 7" and "+7". */
bool ctl_parse_u64(const char *s, uint64_t max, uint64_t *out) {
  if (!s || !*s) return false;
  for (const char *p = s; *p; p++)
    if (!isdigit((unsigned char)*p)) return false;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || v > max) return false;
  *out = v;
  return true;
}

bool ctl_parse_duration_ms(const char *s, uint64_t *out) { return felix_parse_duration_ms(s, true, 3600000u, out); }

bool ctl_parse_stream_shard(const char *s, char *stream, size_t cap, uint32_t *shard) {
  const char *slash = s ? strrchr(s, '/') : NULL;
  if (!slash || slash == s) return false;
  size_t n = (size_t)(slash - s);
  uint64_t v;
  if (n >= cap || !ctl_parse_u64(slash + 1, UINT32_MAX, &v)) return false;
  memcpy(stream, s, n);
  stream[n] = '\0';
  *shard = (uint32_t)v;
  return true;
}

bool ctl_url_escape(const char *s, char *out, size_t cap) {
  static const char hex[] = "0123456789ABCDEF";
  size_t k = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    bool plain = isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~';
    if (k + (plain ? 1 : 3) >= cap) return false;
    if (plain) {
      out[k++] = (char)*p;
    } else {
      out[k++] = '%';
      out[k++] = hex[*p >> 4];
      out[k++] = hex[*p & 15];
    }
  }
  if (k >= cap) return false;
  out[k] = '\0';
  return true;
}

char *ctl_normalise_url(const char *url) {
  if (!url || !*url) return NULL;
  const char *scheme = strstr(url, "://");
  size_t n = strlen(url);
  char *out = malloc(n + sizeof "http://");
  if (!out) return NULL;
  if (!scheme) {
    strcpy(out, "http://");
    strcat(out, url);
  } else if (!strncmp(url, "http://", 7) || !strncmp(url, "https://", 8)) {
    strcpy(out, url);
  } else {
    free(out);
    return NULL;
  }
  /* The API paths start with '/', so a base ending in '/' would double it. */
  for (size_t len = strlen(out); len > 0 && out[len - 1] == '/'; len--) out[len - 1] = '\0';
  const char *sep = strstr(out, "://");
  if (!sep || !sep[3] || sep[3] == '/' || strpbrk(out, " \t\r\n")) {
    free(out);
    return NULL;
  }
  return out;
}

int ctl_acks_value(const char *name) {
  if (!name) return -1;
  if (!strcmp(name, "quorum")) return FELIX_ACKS_QUORUM;
  if (!strcmp(name, "leader")) return FELIX_ACKS_LEADER;
  if (!strcmp(name, "all")) return FELIX_ACKS_ALL;
  return -1;
}

bool ctl_is_shard_state(const char *name) {
  return name && (!strcmp(name, "Active") || !strcmp(name, "Fencing") || !strcmp(name, "NoCaughtUpReplica"));
}
