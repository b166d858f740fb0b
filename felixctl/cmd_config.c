/* cmd_config.c — `felixctl config get-contexts|use-context|set-context`:
 * the named contexts of the config file (config.c). They talk to nothing. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "felixctl.h"

static void print_document(const ctl_opts *o, cJSON *doc) {
  if (o->format == CTL_YAML) {
    ctl_print_yaml(doc);
  } else {
    char *s = cJSON_PrintUnformatted(doc);
    if (!s) abort();
    puts(s);
    free(s);
  }
}

static cJSON *string_or_null(const char *s) { return s && *s ? cJSON_CreateString(s) : cJSON_CreateNull(); }

static int get_contexts(const ctl_opts *o) {
  ctl_config c;
  int rc = ctl_config_load(&c);
  if (rc >= 0) return rc;
  if (CTL_DOCUMENT(o)) {
    cJSON *doc = cJSON_CreateObject(), *list = cJSON_CreateArray();
    cJSON_AddItemToObject(doc, "config_file", string_or_null(c.path));
    cJSON_AddItemToObject(doc, "current_context", string_or_null(c.current));
    for (int i = 0; i < c.n; i++) {
      cJSON *x = cJSON_CreateObject();
      cJSON_AddStringToObject(x, "name", c.ctx[i].name);
      cJSON_AddBoolToObject(x, "current", !strcmp(c.ctx[i].name, c.current));
      cJSON_AddStringToObject(x, "control_plane", c.ctx[i].control_plane);
      cJSON_AddItemToObject(x, "token_file", string_or_null(c.ctx[i].token_file));
      cJSON_AddItemToArray(list, x);
    }
    cJSON_AddItemToObject(doc, "contexts", list);
    print_document(o, doc);
    cJSON_Delete(doc);
    return FELIX_EXIT_OK;
  }
  static const char *const headers[] = {"CURRENT", "NAME", "CONTROL_PLANE", "TOKEN_FILE"};
  ctl_table *t = ctl_table_new(4, headers);
  for (int i = 0; i < c.n; i++) {
    const ctl_context *x = &c.ctx[i];
    const char *row[] = {strcmp(x->name, c.current) ? "" : "*", x->name, x->control_plane,
                         x->token_file[0] ? x->token_file : "-"};
    ctl_table_row(t, row);
  }
  ctl_table_print(t);
  if (c.n == 0 && isatty(STDERR_FILENO))
    fprintf(stderr, "felixctl: no contexts in %s; felixctl config set-context NAME --control-plane URL adds one\n",
            c.path[0] ? c.path : "(no config file: HOME is not set)");
  return FELIX_EXIT_OK;
}

/* -o json|yaml of use-context and set-context (created: set-context's
 * "created", NULL for use-context): what the file now says. */
static int print_change(const ctl_opts *o, const ctl_config *c, const char *name, const bool *created) {
  cJSON *doc = cJSON_CreateObject();
  cJSON_AddItemToObject(doc, "config_file", string_or_null(c->path));
  cJSON_AddStringToObject(doc, "context", name);
  if (created) cJSON_AddBoolToObject(doc, "created", *created);
  cJSON_AddItemToObject(doc, "current_context", string_or_null(c->current));
  print_document(o, doc);
  cJSON_Delete(doc);
  return FELIX_EXIT_OK;
}

static int unknown_context(const ctl_config *c, const char *name) {
  char known[512] = "";
  for (int i = 0; i < c->n; i++) {
    size_t n = strlen(known);
    snprintf(known + n, sizeof known - n, "%s%s", n ? ", " : "", c->ctx[i].name);
  }
  char hint[600];
  snprintf(hint, sizeof hint, "%s%s", c->n ? "known: " : "there are none yet: felixctl config set-context adds one",
           known);
  return ctl_error(FELIX_EXIT_NOT_FOUND, hint, "no context '%s' in %s", name, c->path[0] ? c->path : "the config");
}

static int use_context(const ctl_opts *o) {
  ctl_config c;
  int rc = ctl_config_load(&c);
  if (rc >= 0) return rc;
  const char *name = o->args[0];
  if (!ctl_config_find(&c, name)) return unknown_context(&c, name);
  snprintf(c.current, sizeof c.current, "%s", name);
  if ((rc = ctl_config_save(&c)) >= 0) return rc;
  if (CTL_DOCUMENT(o)) return print_change(o, &c, name, NULL);
  printf("Switched to context \"%s\".\n", name);
  return FELIX_EXIT_OK;
}

/* A token file as an absolute path: a relative one would change meaning
 * with the directory felixctl runs in. */
static bool absolute_path(const char *p, char *out, size_t cap) {
  if (p[0] == '/') return (size_t)snprintf(out, cap, "%s", p) < cap;
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return false;
  return (size_t)snprintf(out, cap, "%s/%s", cwd, p) < cap;
}

static int set_context(const ctl_opts *o) {
  const char *name = o->args[0];
  if (!ctl_context_name_ok(name))
    return ctl_error(FELIX_EXIT_USAGE, "letters, digits, '.', '_' and '-', at most 63", "'%s' is not a context name", name);
  ctl_config c;
  int rc = ctl_config_load(&c);
  if (rc >= 0) return rc;
  ctl_context *x = ctl_config_find(&c, name);
  bool created = !x;
  if (created && !o->control_plane_flag)
    return ctl_error(FELIX_EXIT_USAGE, "felixctl config set-context NAME --control-plane URL [--token-file FILE]",
                     "a new context needs --control-plane");
  if (created && c.n == CTL_MAX_CONTEXTS)
    return ctl_error(FELIX_EXIT_FAILURE, NULL, "%s already holds %d contexts", c.path, CTL_MAX_CONTEXTS);
  if (created) {
    x = &c.ctx[c.n++];
    *x = (ctl_context){0};
    snprintf(x->name, sizeof x->name, "%s", name);
  }
  /* main.c checked the URL; o->control_plane is its normal form */
  if (o->control_plane_flag) snprintf(x->control_plane, sizeof x->control_plane, "%s", o->control_plane);
  if (o->token_file_flag && !absolute_path(o->token_file_flag, x->token_file, sizeof x->token_file))
    return ctl_error(FELIX_EXIT_USAGE, NULL, "--token-file: '%s' is too long a path", o->token_file_flag);
  if ((rc = ctl_config_save(&c)) >= 0) return rc;
  if (CTL_DOCUMENT(o)) return print_change(o, &c, name, &created);
  printf("Context \"%s\" %s in %s.\n", name, created ? "created" : "modified", c.path);
  if (strcmp(c.current, name)) printf("felixctl config use-context %s makes it the current one.\n", name);
  return FELIX_EXIT_OK;
}

#define CONFIG_HELP_TAIL                                                                                     \
  "\n"                                                                                                       \
  "The config file is $FELIX_CONFIG, else $XDG_CONFIG_HOME/felix/config, else\n"                           \
  "~/.config/felix/config. A context names a control plane URL and a token\n"                             \
  "file; the current one (or --context NAME for one command) supplies them to\n"                         \
  "every command. --control-plane, --token-file and FELIX_CONTROL_PLANE,\n"                                \
  "FELIX_TOKEN_FILE still win over it.\n"

const ctl_command ctl_cmd_config_get_contexts = {
    .group = "config",
    .verb = "get-contexts",
    .usage = "config get-contexts",
    .summary = "list the contexts of the config file",
    .help = "\n"
            "Lists every context: CURRENT (* for the current one), NAME, CONTROL_PLANE\n"
            "and TOKEN_FILE. With -o json: {\"config_file\", \"current_context\",\n"
            "\"contexts\": [{\"name\", \"current\", \"control_plane\", \"token_file\"}]}\n"
            "(null where there is none). No config file: no contexts, exit 0.\n" CONFIG_HELP_TAIL,
    .run = get_contexts,
};

const ctl_command ctl_cmd_config_use_context = {
    .group = "config",
    .verb = "use-context",
    .nargs = 1,
    .usage = "config use-context NAME",
    .summary = "make a context the current one",
    .help = "\n"
            "Makes NAME the current context (exit 3 when the file has no such\n"
            "context, naming those it has). With -o json: {\"config_file\",\n"
            "\"context\", \"current_context\"}.\n" CONFIG_HELP_TAIL,
    .run = use_context,
};

const ctl_command ctl_cmd_config_set_context = {
    .group = "config",
    .verb = "set-context",
    .nargs = 1,
    .usage = "config set-context NAME [--control-plane URL] [--token-file FILE]",
    .summary = "create or change a context",
    .help = "\n"
            "Creates the context NAME (--control-plane is needed then) or changes the\n"
            "settings given. The URL is checked and stored in its normal form; a\n"
            "relative token file is stored as an absolute path. The file is\n"
            "rewritten whole (comments are not kept) and atomically. With -o json:\n"
            "{\"config_file\", \"context\", \"created\", \"current_context\"} (null where\n"
            "there is none).\n" CONFIG_HELP_TAIL,
    .run = set_context,
};
