/* control-plane/auth.c — token files and bearer checks (control-plane/auth.h). Invariant: a token
 * is never logged; only the paths of token files are. */
#include "auth.h"

#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "felix/fileutil.h"

static felix_status token_read(const char *path, char out[CP_TOKEN_MAX], felix_err *err) {
  char *buf = NULL;
  size_t len = 0;
  felix_status st = felix_read_file(AT_FDCWD, path, 4096, &buf, &len, path, err);
  if (st != FELIX_OK) return st;
  char *nl = strchr(buf, '\n');
  if (nl) *nl = '\0';
  len = strlen(buf);
  if (len > 0 && buf[len - 1] == '\r') buf[--len] = '\0';
  if (len == 0 || len >= CP_TOKEN_MAX) {
    free(buf);
    return felix_fail(err, FELIX_E_INVAL, "token file %s %s", path,
                      len == 0 ? "is empty" : "holds a token longer than 255 characters");
  }
  memcpy(out, buf, len + 1);
  free(buf);
  return FELIX_OK;
}

static felix_status token_create(const char *path, char out[CP_TOKEN_MAX], felix_err *err) {
  unsigned char raw[16];
  felix_status st = felix_random_bytes(raw, sizeof raw, err);
  if (st != FELIX_OK) return st;
  felix_hex_encode(raw, sizeof raw, out);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return felix_fail_errno(err, FELIX_E_IO, errno, "create token file %s", path);
  char line[CP_TOKEN_MAX + 1];
  int n = snprintf(line, sizeof line, "%s\n", out);
  bool ok = write(fd, line, (size_t)n) == n && fsync(fd) == 0;
  int saved = errno;
  close(fd);
  if (!ok) return felix_fail_errno(err, FELIX_E_IO, saved, "write token file %s", path);
  return FELIX_OK;
}

felix_status cp_token_load_or_create(const char *path, bool create, char out[CP_TOKEN_MAX], bool *created,
                                     felix_err *err) {
  *created = false;
  if (access(path, F_OK) != 0 && errno == ENOENT && create) {
    *created = true;
    return token_create(path, out, err);
  }
  return token_read(path, out, err);
}

bool cp_token_equal(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  unsigned char diff = la != lb;
  /* Walk the expected token whole whatever the input, so timing says nothing. */
  for (size_t i = 0; i < la; i++) diff |= (unsigned char)(a[i] ^ (i < lb ? b[i] : 0));
  return diff == 0 && la > 0;
}

bool cp_auth_wants_broker(const char *url) {
  return strncmp(url, "/v1/broker/", 11) == 0;
}

bool cp_auth_check(const cp_tokens *t, const char *url, const char *authorization) {
  if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0) return false;
  const char *given = authorization + 7;
  while (*given == ' ') given++;
  return cp_token_equal(cp_auth_wants_broker(url) ? t->broker : t->admin, given);
}
