/* main.c — felixctl: global flags, the shared option parser and dispatch.
 *
 * The whole command line is parsed in one pass before any command runs:
 * flags (global or of a command) may come before, between or after the
 * command words, as `--flag VALUE` or `--flag=VALUE` (`-oVALUE` for -o);
 * `--` ends the flags (getopt_long, whole names only: lib/util/cli.c). Only then is the command resolved, so a flag that
 * belongs to another command is a usage error naming both, and no request is
 * made for a command line with any mistake in it. Flags win over the
 * environment (FELIX_CONTROL_PLANE, FELIX_TOKEN_FILE), and both over the
 * context (--context NAME, else the config file's current one: config.c). */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "felixctl.h"

static const ctl_command *const commands[] = {
    &ctl_cmd_cluster_status,  &ctl_cmd_broker_list,    &ctl_cmd_broker_describe, &ctl_cmd_stream_create,
    &ctl_cmd_stream_list,     &ctl_cmd_stream_describe, &ctl_cmd_stream_delete,  &ctl_cmd_stream_adopt,     &ctl_cmd_shard_list,
    &ctl_cmd_shard_describe,  &ctl_cmd_placement_history, &ctl_cmd_placement_abandon, &ctl_cmd_produce,
    &ctl_cmd_consume,         &ctl_cmd_top,
    &ctl_cmd_config_get_contexts, &ctl_cmd_config_use_context, &ctl_cmd_config_set_context,
    &ctl_cmd_completion,      &ctl_cmd_version,
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

enum flag_id {
  FL_CONTROL_PLANE, FL_TOKEN_FILE, FL_CONTEXT, FL_OUTPUT, FL_TIMEOUT, FL_HELP, FL_VERSION,
  FL_SHARDS, FL_REPLICAS, FL_ACKS, FL_YES, FL_STATE, FL_SHARD, FL_FROM, FL_COUNT, FL_FOLLOW,
  FL_DRY_RUN, FL_EXPECT_GENERATION, FL_EXPECT_COPY, FL_EXPECT_DIGEST, FL_UUID, FL_ABOVE_GENERATION,
  FL_WAIT, FL_WATCH, FL_N
};

typedef struct flag_def {
  const char *name;  /* long form; -h and -o are the short ones (scan) */
  bool takes_value;
  unsigned bit; /* CTL_F_* for command flags, 0 for global ones */
} flag_def;

static const flag_def flags[FL_N] = {
    [FL_CONTROL_PLANE] = {"--control-plane", true, 0},
    [FL_TOKEN_FILE] = {"--token-file", true, 0},
    [FL_CONTEXT] = {"--context", true, 0},
    [FL_OUTPUT] = {"--output", true, 0},
    [FL_TIMEOUT] = {"--timeout-ms", true, 0},
    [FL_HELP] = {"--help", false, 0},
    [FL_VERSION] = {"--version", false, 0},
    [FL_SHARDS] = {"--shards", true, CTL_F_SHARDS},
    [FL_REPLICAS] = {"--replicas", true, CTL_F_REPLICAS},
    [FL_ACKS] = {"--acks", true, CTL_F_ACKS},
    [FL_YES] = {"--yes", false, CTL_F_YES},
    [FL_STATE] = {"--state", true, CTL_F_STATE},
    [FL_SHARD] = {"--shard", true, CTL_F_SHARD},
    [FL_FROM] = {"--from", true, CTL_F_FROM},
    [FL_COUNT] = {"--count", true, CTL_F_COUNT},
    [FL_FOLLOW] = {"--follow", false, CTL_F_FOLLOW},
    [FL_DRY_RUN] = {"--dry-run", false, CTL_F_DRY_RUN},
    [FL_EXPECT_GENERATION] = {"--expect-generation", true, CTL_F_EXPECT_GENERATION},
    [FL_EXPECT_COPY] = {"--expect-copy", true, CTL_F_EXPECT_COPY},
    [FL_EXPECT_DIGEST] = {"--expect-digest", true, CTL_F_EXPECT_DIGEST},
    [FL_UUID] = {"--uuid", true, CTL_F_UUID},
    [FL_ABOVE_GENERATION] = {"--above-generation", true, CTL_F_ABOVE_GENERATION},
    [FL_WAIT] = {"--wait", true, CTL_F_WAIT},
    [FL_WATCH] = {"--watch", false, CTL_F_WATCH},
};

/* What the scan of argv found, before anything is interpreted. */
typedef struct scanned {
  const char *words[CTL_MAX_ARGS + 2];
  int nwords;
  const char *value[FL_N]; /* last value given; "" for switches */
  bool seen[FL_N];
} scanned;

/* Where ctl_error writes while a full-screen view owns the terminal. */
static char *error_sink;
static size_t error_sink_cap;

void ctl_error_capture(char *buf, size_t cap) {
  error_sink = buf;
  error_sink_cap = cap;
  if (buf && cap) buf[0] = '\0';
}

int ctl_error(int code, const char *hint, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (error_sink) {
    int n = vsnprintf(error_sink, error_sink_cap, fmt, ap);
    va_end(ap);
    if (hint && n >= 0 && (size_t)n < error_sink_cap) snprintf(error_sink + n, error_sink_cap - (size_t)n, " (%s)", hint);
    return code;
  }
  fputs("felixctl: error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  if (hint) fprintf(stderr, "felixctl: hint: %s\n", hint);
  return code;
}

static void global_usage(FILE *f) {
  fputs("usage: felixctl [GLOBAL OPTIONS] COMMAND [ARGS] [OPTIONS]\n"
        "\n"
        "Operate a Felix cluster through its control plane, and produce or consume\n"
        "records through its brokers.\n"
        "\n"
        "Commands:\n",
        f);
  for (size_t i = 0; i < NCOMMANDS; i++) {
    const char *u = commands[i]->usage;
    if (strlen(u) <= 30) fprintf(f, "  %-30s %s\n", u, commands[i]->summary);
    else fprintf(f, "  %s\n  %-30s %s\n", u, "", commands[i]->summary);
  }
  fputs("\n"
        "Global options (before or after the command):\n"
        "  --control-plane URL   control plane base URL (env FELIX_CONTROL_PLANE;\n"
        "                        default " CTL_DEFAULT_CONTROL_PLANE ")\n"
        "  --token-file FILE     file holding the control plane's admin token (env\n"
        "                        FELIX_TOKEN_FILE); needed by every command that talks\n"
        "                        to the control plane, including produce and consume\n"
        "  --context NAME        the control plane and token file of this context of\n"
        "                        the config file instead of the current one (felixctl\n"
        "                        config get-contexts)\n"
        "  -o, --output FORMAT   table (the default, aligned columns), wide (more\n"
        "                        columns: broker list, shard list), json or yaml\n"
        "  --timeout-ms N        give up on a request after N ms (default 5000)\n"
        "  -h, --help            this help; felixctl COMMAND --help for one command\n"
        "  --version             print the version\n"
        "\n"
        "Flags win over the environment, and both over the context. Environment:\n"
        "FELIX_CONTROL_PLANE, FELIX_TOKEN_FILE, FELIX_CONFIG (the config file;\n"
        "default $XDG_CONFIG_HOME/felix/config, else ~/.config/felix/config).\n"
        "Exit codes: 0 ok, 1 failure, 2 usage, 3 not found, 4 refused,\n"
        "5 control plane or broker unreachable.\n"
        "See felixctl(1).\n",
        f);
}

static void command_help(const ctl_command *c) {
  printf("usage: felixctl %s\n\n%s\n%s", c->usage, c->summary, c->help);
  printf("\nGlobal options: --control-plane URL, --token-file FILE, --context NAME,\n"
         "-o table|wide|json|yaml, --timeout-ms N (see felixctl --help).\n");
}

static bool is_group(const char *word) {
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (!strcmp(commands[i]->group, word)) return true;
  return false;
}

/* "felixctl stream" alone: the group's subcommands. */
static void group_usage(FILE *f, const char *group) {
  fprintf(f, "usage:\n");
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (!strcmp(commands[i]->group, group)) fprintf(f, "  felixctl %s\n", commands[i]->usage);
  fprintf(f, "Run felixctl %s SUBCOMMAND --help for details.\n", group);
}

static const char *group_verbs(const char *group, char *buf, size_t cap) {
  buf[0] = '\0';
  for (size_t i = 0; i < NCOMMANDS; i++) {
    if (strcmp(commands[i]->group, group) || !commands[i]->verb) continue;
    size_t n = strlen(buf);
    snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", commands[i]->verb);
  }
  return buf;
}

/* flags[] as getopt_long's table: val is FL_* + 256, clear of -h and -o. */
enum { LONG_VAL = 256 };

static void long_options(struct option *out) {
  for (int i = 0; i < FL_N; i++)
    out[i] = (struct option){flags[i].name + 2, flags[i].takes_value ? required_argument : no_argument, NULL, LONG_VAL + i};
  out[FL_N] = (struct option){0, 0, 0, 0};
}

/* Every option through getopt_long (before, between or after the command
 * words; "--" ends them), then the words. Returns -1 or an exit code. */
static int scan(int argc, char **argv, scanned *s) {
  struct option longopts[FL_N + 1];
  long_options(longopts);
  felix_opts p = {.argc = argc, .argv = argv, .shortopts = "ho:", .longopts = longopts};
  const char *v;
  for (int c; (c = felix_opts_next(&p, &v)) != -1;) {
    if (c == '?')
      return ctl_error(FELIX_EXIT_USAGE, strncmp(p.error, "unknown", 7) ? NULL : "felixctl --help lists every option", "%s", p.error);
    int id = c == 'h' ? FL_HELP : c == 'o' ? FL_OUTPUT : c - LONG_VAL;
    s->seen[id] = true;
    s->value[id] = v ? v : "";
  }
  for (int i = optind; i < argc; i++) {
    if (s->nwords == (int)(sizeof s->words / sizeof s->words[0]))
      return ctl_error(FELIX_EXIT_USAGE, "felixctl --help", "too many arguments (from '%s' on)", argv[i]);
    s->words[s->nwords++] = argv[i];
  }
  return -1;
}

/* The command named by the first words; *used is how many words it took.
 * Returns NULL after printing the usage error. */
static const ctl_command *resolve(const scanned *s, int *used, bool help, int *rc) {
  const char *group = s->words[0];
  if (!is_group(group)) {
    *rc = ctl_error(FELIX_EXIT_USAGE, "felixctl --help lists the commands", "unknown command '%s'", group);
    return NULL;
  }
  for (size_t i = 0; i < NCOMMANDS; i++) {
    const ctl_command *c = commands[i];
    if (strcmp(c->group, group)) continue;
    if (!c->verb) return *used = 1, c;
    if (s->nwords >= 2 && !strcmp(c->verb, s->words[1])) return *used = 2, c;
  }
  if (help && s->nwords == 1) {
    group_usage(stdout, group);
    *rc = FELIX_EXIT_OK;
    return NULL;
  }
  char verbs[128];
  group_verbs(group, verbs, sizeof verbs);
  if (s->nwords == 1) *rc = ctl_error(FELIX_EXIT_USAGE, NULL, "%s needs a subcommand: %s", group, verbs);
  else *rc = ctl_error(FELIX_EXIT_USAGE, NULL, "unknown subcommand '%s %s' (known: %s)", group, s->words[1], verbs);
  group_usage(stderr, group);
  return NULL;
}

/* 8-4-4-4-12 lowercase hex, as the control plane makes stream uuids. */
static bool uuid_value(const char *v) {
  if (strlen(v) != 36) return false;
  for (int i = 0; i < 36; i++) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? v[i] != '-' : !((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f'))) return false;
  }
  return true;
}

static int value_error(const ctl_command *c, const char *flag, const char *value, const char *want) {
  char hint[160];
  snprintf(hint, sizeof hint, "see felixctl %s%s%s --help", c->group, c->verb ? " " : "", c->verb ? c->verb : "");
  return ctl_error(FELIX_EXIT_USAGE, hint, "%s: '%s' is not %s", flag, value, want);
}

static bool u32_value(const char *v, uint32_t *out) {
  uint64_t x;
  if (!ctl_parse_u64(v, UINT32_MAX, &x)) return false;
  *out = (uint32_t)x;
  return true;
}

/* Interprets the command flags in s into o; returns -1 or an exit code. */
static int command_flags(const ctl_command *c, const scanned *s, ctl_opts *o) {
  const char *const *v = s->value;
  for (int id = FL_SHARDS; id < FL_N; id++) {
    if (!s->seen[id]) continue;
    if (!(c->flags & flags[id].bit)) {
      char hint[160];
      snprintf(hint, sizeof hint, "see felixctl %s%s%s --help", c->group, c->verb ? " " : "", c->verb ? c->verb : "");
      return ctl_error(FELIX_EXIT_USAGE, hint, "%s is not an option of '%s%s%s'", flags[id].name, c->group,
                       c->verb ? " " : "", c->verb ? c->verb : "");
    }
    o->given |= flags[id].bit;
  }
  if (s->seen[FL_SHARDS] && !u32_value(v[FL_SHARDS], &o->shards))
    return value_error(c, "--shards", v[FL_SHARDS], "a shard count");
  if (s->seen[FL_REPLICAS] && !u32_value(v[FL_REPLICAS], &o->replicas))
    return value_error(c, "--replicas", v[FL_REPLICAS], "a replica count");
  if (s->seen[FL_SHARD] && !u32_value(v[FL_SHARD], &o->shard))
    return value_error(c, "--shard", v[FL_SHARD], "a shard number");
  if (s->seen[FL_ACKS] && ctl_acks_value(v[FL_ACKS]) < 0)
    return value_error(c, "--acks", v[FL_ACKS], "an ack policy (quorum, leader or all)");
  if (s->seen[FL_STATE] && !ctl_is_shard_state(v[FL_STATE]))
    return value_error(c, "--state", v[FL_STATE], "a shard state (Active, Fencing or NoCaughtUpReplica)");
  if (s->seen[FL_FROM] && !ctl_parse_u64(v[FL_FROM], UINT64_MAX, &o->from))
    return value_error(c, "--from", v[FL_FROM], "an offset");
  if (s->seen[FL_COUNT] && (!ctl_parse_u64(v[FL_COUNT], UINT64_MAX, &o->count) || o->count == 0))
    return value_error(c, "--count", v[FL_COUNT], "a positive number of records");
  o->acks = v[FL_ACKS];
  o->state = v[FL_STATE];
  o->yes = s->seen[FL_YES];
  o->follow = s->seen[FL_FOLLOW];
  o->dry_run = s->seen[FL_DRY_RUN];
  o->watch = s->seen[FL_WATCH];
  if (s->seen[FL_EXPECT_GENERATION] && !ctl_parse_u64(v[FL_EXPECT_GENERATION], INT64_MAX, &o->expect_generation))
    return value_error(c, "--expect-generation", v[FL_EXPECT_GENERATION], "a generation number");
  if (s->seen[FL_EXPECT_COPY] && (!strchr(v[FL_EXPECT_COPY], ':') || strlen(v[FL_EXPECT_COPY]) > 160))
    return value_error(c, "--expect-copy", v[FL_EXPECT_COPY], "BROKER:COPY_ID as the dry run prints it");
  if (s->seen[FL_EXPECT_DIGEST] && strlen(v[FL_EXPECT_DIGEST]) != 16)
    return value_error(c, "--expect-digest", v[FL_EXPECT_DIGEST], "the 16-character digest the dry run prints");
  o->expect_copy = v[FL_EXPECT_COPY];
  o->expect_digest = v[FL_EXPECT_DIGEST];
  if (s->seen[FL_UUID] && !uuid_value(v[FL_UUID]))
    return value_error(c, "--uuid", v[FL_UUID], "a stream uuid (8-4-4-4-12 lowercase hex)");
  o->uuid = v[FL_UUID];
  o->wait_ms = CTL_DEFAULT_WAIT_MS;
  if (s->seen[FL_WAIT] && !ctl_parse_duration_ms(v[FL_WAIT], &o->wait_ms))
    return value_error(c, "--wait", v[FL_WAIT], "a duration of at most an hour (10, 10s, 500ms, 2m)");
  if (s->seen[FL_ABOVE_GENERATION] &&
      (!ctl_parse_u64(v[FL_ABOVE_GENERATION], INT64_MAX, &o->above_generation) || o->above_generation == 0))
    return value_error(c, "--above-generation", v[FL_ABOVE_GENERATION], "a generation number, 1 or more");
  for (int id = FL_SHARDS; id < FL_N; id++) {
    if ((c->required & flags[id].bit) && !s->seen[id]) {
      char hint[160];
      snprintf(hint, sizeof hint, "usage: felixctl %s", c->usage);
      return ctl_error(FELIX_EXIT_USAGE, hint, "%s%s%s needs %s", c->group, c->verb ? " " : "", c->verb ? c->verb : "",
                       flags[id].name);
    }
  }
  return -1;
}

static int positional(const ctl_command *c, const scanned *s, int used, ctl_opts *o) {
  o->nargs = s->nwords - used;
  for (int i = 0; i < o->nargs && i < CTL_MAX_ARGS; i++) o->args[i] = s->words[used + i];
  if (o->nargs == c->nargs) return -1;
  char hint[160];
  snprintf(hint, sizeof hint, "usage: felixctl %s", c->usage);
  if (o->nargs > c->nargs)
    return ctl_error(FELIX_EXIT_USAGE, hint, "unexpected argument '%s'", s->words[used + c->nargs]);
  /* The missing argument's name is the usage's word after the command words. */
  const char *name = c->usage + strlen(c->group) + (c->verb ? strlen(c->verb) + 1 : 0);
  while (*name == ' ') name++;
  return ctl_error(FELIX_EXIT_USAGE, hint, "%s%s%s needs %.*s", c->group, c->verb ? " " : "", c->verb ? c->verb : "",
                   (int)strcspn(name, " "), name);
}

/* The context whose settings are the fallbacks: --context NAME, else the
 * config file's current one; NULL for none. The config lives as long as
 * the process (o points into it). */
static int pick_context(const ctl_command *c, const scanned *s, const ctl_context **out) {
  static ctl_config cfg;
  *out = NULL;
  if (!strcmp(c->group, "config")) {
    if (s->seen[FL_CONTEXT])
      return ctl_error(FELIX_EXIT_USAGE, "name the context as the argument: felixctl config set-context NAME",
                       "--context is not an option of 'config %s'", c->verb);
    return -1;
  }
  if (!strcmp(c->group, "version") || !strcmp(c->group, "completion")) return -1;
  int rc = ctl_config_load(&cfg);
  if (rc >= 0) return rc;
  const char *name = s->seen[FL_CONTEXT] ? s->value[FL_CONTEXT] : cfg.current;
  if (!*name) return -1;
  *out = ctl_config_find(&cfg, name);
  if (*out) return -1;
  if (s->seen[FL_CONTEXT])
    return ctl_error(FELIX_EXIT_USAGE, "felixctl config get-contexts lists them", "--context: no context '%s' in %s", name,
                     cfg.path[0] ? cfg.path : "the config (HOME is not set)");
  return ctl_error(FELIX_EXIT_USAGE, "felixctl config use-context NAME picks another; set-context NAME adds it",
                   "%s: current-context '%s' is not a [context] of the file", cfg.path, name);
}

/* Global flags, their environment fallbacks, then the context's settings. */
static int global_flags(const scanned *s, const ctl_context *ctx, ctl_opts *o) {
  o->context = ctx ? ctx->name : NULL;
  o->control_plane_flag = s->seen[FL_CONTROL_PLANE] ? s->value[FL_CONTROL_PLANE] : NULL;
  o->token_file_flag = s->seen[FL_TOKEN_FILE] ? s->value[FL_TOKEN_FILE] : NULL;
  static char from_ctx[64 + CTL_CONTEXT_NAME_MAX];
  if (ctx) snprintf(from_ctx, sizeof from_ctx, "context '%s'", ctx->name);
  const char *cp = s->seen[FL_CONTROL_PLANE] ? s->value[FL_CONTROL_PLANE] : getenv("FELIX_CONTROL_PLANE");
  o->control_plane_from = s->seen[FL_CONTROL_PLANE] ? "--control-plane" : "FELIX_CONTROL_PLANE";
  if ((!cp || !*cp) && ctx) cp = ctx->control_plane, o->control_plane_from = from_ctx;
  if (!cp || !*cp) cp = CTL_DEFAULT_CONTROL_PLANE, o->control_plane_from = "the default";
  o->control_plane = ctl_normalise_url(cp);
  if (!o->control_plane)
    return ctl_error(FELIX_EXIT_USAGE, "give an http:// or https:// URL, e.g. " CTL_DEFAULT_CONTROL_PLANE,
                     "--control-plane: '%s' is not a control plane URL", cp);
  const char *tf = s->seen[FL_TOKEN_FILE] ? s->value[FL_TOKEN_FILE] : getenv("FELIX_TOKEN_FILE");
  o->token_file_from = s->seen[FL_TOKEN_FILE] ? "--token-file" : "FELIX_TOKEN_FILE";
  if ((!tf || !*tf) && ctx && ctx->token_file[0]) tf = ctx->token_file, o->token_file_from = from_ctx;
  o->token_file = tf && *tf ? tf : NULL;
  if (s->seen[FL_OUTPUT]) {
    const char *f = s->value[FL_OUTPUT];
    if (!strcmp(f, "json")) o->format = CTL_JSON;
    else if (!strcmp(f, "yaml")) o->format = CTL_YAML;
    else if (!strcmp(f, "wide")) o->format = CTL_WIDE;
    else if (strcmp(f, "table"))
      return ctl_error(FELIX_EXIT_USAGE, "use -o table, -o wide, -o json or -o yaml", "-o: '%s' is not an output format", f);
  }
  o->timeout_ms = CTL_DEFAULT_TIMEOUT_MS;
  uint64_t t;
  if (s->seen[FL_TIMEOUT]) {
    if (!ctl_parse_u64(s->value[FL_TIMEOUT], 3600000, &t) || t == 0)
      return ctl_error(FELIX_EXIT_USAGE, "give milliseconds between 1 and 3600000",
                       "--timeout-ms: '%s' is not a timeout", s->value[FL_TIMEOUT]);
    o->timeout_ms = (int)t;
  }
  return -1;
}

/* Everything but running the command; returns -1 with *cmd set, or an exit code. */
static int parse(int argc, char **argv, ctl_opts *o, const ctl_command **cmd) {
  scanned s = {0};
  int rc = scan(argc, argv, &s);
  if (rc >= 0) return rc;
  if (s.seen[FL_VERSION]) return printf("felixctl %s\n", FELIX_VERSION), FELIX_EXIT_OK;
  bool help = s.seen[FL_HELP];
  if (s.nwords == 0) {
    global_usage(help ? stdout : stderr);
    return help ? FELIX_EXIT_OK : FELIX_EXIT_USAGE;
  }
  int used = 0;
  *cmd = resolve(&s, &used, help, &rc);
  if (!*cmd) return rc;
  if (help) return command_help(*cmd), FELIX_EXIT_OK;
  if ((rc = command_flags(*cmd, &s, o)) >= 0) return rc;
  if ((rc = positional(*cmd, &s, used, o)) >= 0) return rc;
  const ctl_context *ctx;
  if ((rc = pick_context(*cmd, &s, &ctx)) >= 0) return rc;
  if ((rc = global_flags(&s, ctx, o)) >= 0) return rc;
  /* produce, consume and top stream records or screens: JSON lines or a table only */
  const char *g = (*cmd)->group;
  if (o->format == CTL_YAML && (!strcmp(g, "produce") || !strcmp(g, "consume") || !strcmp(g, "top")))
    return ctl_error(FELIX_EXIT_USAGE, "use -o json: one object per line", "-o yaml is not an output of '%s'", g);
  return -1;
}

int main(int argc, char **argv) {
  ctl_opts o = {0};
  const ctl_command *cmd = NULL;
  int rc = parse(argc, argv, &o, &cmd);
  if (rc < 0) {
    ctl_http_global_init();
    rc = o.watch ? ctl_watch(cmd, &o) : cmd->run(&o);
    ctl_http_global_cleanup();
  }
  free((char *)o.control_plane);
  if (fflush(stdout) != 0 && rc == FELIX_EXIT_OK) rc = ctl_error(FELIX_EXIT_FAILURE, NULL, "cannot write to stdout");
  return rc;
}
