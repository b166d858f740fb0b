/* config.c — felixctl's configuration file: named contexts, as kubectl's
 * kubeconfig and rpk's profiles have them.
 *
 * The file is $FELIX_CONFIG, else $XDG_CONFIG_HOME/felix/config, else
 * ~/.config/felix/config. Its format is line-based, so that a person can
 * write it by hand and a script can grep it:
 *
 *   current-context = prod
 *   [context prod]
 *   control-plane = https://cp.example:7070
 *   token-file = /etc/felix/admin.token
 *
 * '#' starts a comment line; unknown keys and malformed lines are errors
 * naming the file and line, never ignored (a typo in a key would otherwise
 * send commands to the default control plane). The commands that change the
 * file rewrite it whole, atomically (temp file, fsync, rename). */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "felix/fileutil.h"
#include "felixctl.h"

#define CONFIG_MAX_BYTES (256 * 1024)

bool ctl_context_name_ok(const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n >= CTL_CONTEXT_NAME_MAX) return false;
  return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

ctl_context *ctl_config_find(ctl_config *c, const char *name) {
  for (int i = 0; i < c->n; i++)
    if (!strcmp(c->ctx[i].name, name)) return &c->ctx[i];
  return NULL;
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t') s++;
  char *e = s + strlen(s);
  while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) *--e = '\0';
  return s;
}

static bool set_field(char *dst, size_t cap, const char *v) {
  if (strlen(v) >= cap) return false;
  strcpy(dst, v);
  return true;
}

/* One "key = value" line, in the context cur (NULL: before any section). */
static const char *parse_setting(ctl_config *c, ctl_context *cur, char *line) {
  char *eq = strchr(line, '=');
  if (!eq) return "expected 'key = value' or '[context NAME]'";
  *eq = '\0';
  char *key = trim(line), *value = trim(eq + 1);
  if (!*value) return "a key without a value";
  if (!cur) {
    if (strcmp(key, "current-context")) return "unknown key before any [context NAME] (known: current-context)";
    if (!ctl_context_name_ok(value)) return "current-context is not a context name (letters, digits, . _ -)";
    return set_field(c->current, sizeof c->current, value), NULL;
  }
  if (!strcmp(key, "control-plane")) {
    char *url = ctl_normalise_url(value);
    bool fits = url && set_field(cur->control_plane, sizeof cur->control_plane, url);
    free(url);
    return fits ? NULL : "control-plane is not an http:// or https:// URL";
  }
  if (!strcmp(key, "token-file"))
    return set_field(cur->token_file, sizeof cur->token_file, value) ? NULL : "token-file is too long";
  return "unknown key in a context (known: control-plane, token-file)";
}

int ctl_config_parse(char *text, ctl_config *c, char *err, size_t cap) {
  c->n = 0;
  c->current[0] = '\0';
  ctl_context *cur = NULL;
  int lineno = 0;
  for (char *line = text, *next; line; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = '\0';
    lineno++;
    char *s = trim(line);
    if (!*s || *s == '#') continue;
    const char *why = NULL;
    if (*s == '[') {
      char name[CTL_CONTEXT_NAME_MAX + 2];
      size_t n = strlen(s);
      if (n < 2 || s[n - 1] != ']' || strncmp(s, "[context ", 9) || n - 10 >= sizeof name) {
        why = "a section is '[context NAME]'";
      } else {
        memcpy(name, s + 9, n - 10);
        name[n - 10] = '\0';
        char *nm = trim(name);
        if (!ctl_context_name_ok(nm)) why = "not a context name (letters, digits, . _ -)";
        else if (ctl_config_find(c, nm)) why = "a second [context] of this name";
        else if (c->n == CTL_MAX_CONTEXTS) why = "too many contexts";
        else {
          cur = &c->ctx[c->n++];
          *cur = (ctl_context){0};
          strcpy(cur->name, nm);
        }
      }
    } else {
      why = parse_setting(c, cur, s);
    }
    if (why) return snprintf(err, cap, "line %d: %s", lineno, why), lineno;
  }
  for (int i = 0; i < c->n; i++)
    if (!c->ctx[i].control_plane[0])
      return snprintf(err, cap, "context '%s' has no control-plane", c->ctx[i].name), lineno;
  return 0;
}

char *ctl_config_format(const ctl_config *c) {
  size_t cap = 256 + (size_t)c->n * (sizeof(ctl_context) + 64);
  char *out = malloc(cap);
  if (!out) return NULL;
  int n = snprintf(out, cap, "# felixctl contexts (felixctl(1), CONTEXTS); felixctl config rewrites this file\n");
  if (c->current[0]) n += snprintf(out + n, cap - (size_t)n, "current-context = %s\n", c->current);
  for (int i = 0; i < c->n; i++) {
    const ctl_context *x = &c->ctx[i];
    n += snprintf(out + n, cap - (size_t)n, "\n[context %s]\ncontrol-plane = %s\n", x->name, x->control_plane);
    if (x->token_file[0]) n += snprintf(out + n, cap - (size_t)n, "token-file = %s\n", x->token_file);
  }
  assert((size_t)n < cap);
  return out;
}

bool ctl_config_path(char *out, size_t cap) {
  const char *env = getenv("FELIX_CONFIG");
  if (env && *env) return (size_t)snprintf(out, cap, "%s", env) < cap;
  const char *xdg = getenv("XDG_CONFIG_HOME");
  if (xdg && *xdg == '/') return (size_t)snprintf(out, cap, "%s/felix/config", xdg) < cap;
  const char *home = getenv("HOME");
  if (!home || !*home) return false;
  return (size_t)snprintf(out, cap, "%s/.config/felix/config", home) < cap;
}

int ctl_config_load(ctl_config *c) {
  *c = (ctl_config){0};
  if (!ctl_config_path(c->path, sizeof c->path)) return -1; /* no HOME: no file, no contexts */
  char *text = NULL;
  size_t len;
  felix_err e = {0};
  felix_status st = felix_read_file(AT_FDCWD, c->path, CONFIG_MAX_BYTES, &text, &len, c->path, &e);
  if (st == FELIX_E_NOTFOUND) return -1;
  if (st != FELIX_OK)
    return ctl_error(FELIX_EXIT_USAGE, "FELIX_CONFIG names another file", "cannot read the felixctl config: %s", e.msg);
  c->exists = true;
  char why[160];
  int bad = ctl_config_parse(text, c, why, sizeof why);
  free(text);
  if (bad)
    return ctl_error(FELIX_EXIT_USAGE, "fix the file by hand or remove it (felixctl config set-context rewrites it)",
                     "%s: %s", c->path, why);
  return -1;
}

/* mkdir -p of path's directory part (0700: it may name token files). */
static bool make_parent(const char *path) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash || slash == dir) return true;
  *slash = '\0';
  for (char *p = dir + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) return false;
    *p = '/';
  }
  return mkdir(dir, 0700) == 0 || errno == EEXIST;
}

int ctl_config_save(const ctl_config *c) {
  if (!c->path[0])
    return ctl_error(FELIX_EXIT_FAILURE, "set HOME or FELIX_CONFIG", "no place for the felixctl config: HOME is not set");
  if (!make_parent(c->path))
    return ctl_error(FELIX_EXIT_FAILURE, NULL, "cannot create the directory of %s: %s", c->path, strerror(errno));
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", c->path);
  char *slash = strrchr(dir, '/');
  const char *name = slash ? slash + 1 : dir;
  if (slash == dir) dir[1] = '\0';
  else if (slash) *slash = '\0';
  int dirfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) return ctl_error(FELIX_EXIT_FAILURE, NULL, "cannot open the directory of %s: %s", c->path, strerror(errno));
  char *text = ctl_config_format(c);
  if (!text) abort();
  felix_err e = {0};
  felix_status st = felix_write_file_atomic(dirfd, name, text, strlen(text), c->path, &e);
  free(text);
  close(dirfd);
  if (st != FELIX_OK) return ctl_error(FELIX_EXIT_FAILURE, NULL, "cannot write the felixctl config: %s", e.msg);
  return -1;
}
