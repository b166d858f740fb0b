/* main.c — felix-inspect: argument parsing and dispatch. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "felix/cli.h"
#include "inspect.h"

typedef struct subcommand {
  const char *name;
  int (*run)(const inspect_opts *);
  const char *args;     /* positional arguments, for usage */
  const char *options;  /* accepted options, space separated */
  const char *summary;
} subcommand;

static const subcommand subcommands[] = {
    {"storage-id", cmd_storage_id, "DATADIR", "", "print the data directory's storage id"},
    {"run-state", cmd_run_state, "DATADIR", "", "print the last run and what the next start will decide about the identity"},
    {"segments", cmd_segments, "SHARDDIR", "", "list a shard's segments with offset ranges, sizes and index state"},
    {"dump", cmd_dump, "SEGMENT", "--from --limit --payload", "print the records of one segment file"},
    {"index", cmd_index, "INDEX", "", "print and check one sparse index file"},
    {"verify", cmd_verify, "DATADIR|SHARDDIR", "", "check every file; exit 6 when anything is damaged"},
    {"ballot", cmd_ballot, "SHARDDIR", "", "print a shard copy's ballot and generation history"},
};
#define NSUB (sizeof subcommands / sizeof subcommands[0])

int inspect_error(int code, const char *hint, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("felix-inspect: error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  if (hint) fprintf(stderr, "felix-inspect: hint: %s\n", hint);
  return code;
}

int inspect_fail(const felix_err *err, const char *hint) {
  return inspect_error(felix_exit_code_of(err->status), hint, "%s", err->msg);
}

void inspect_print_json(cJSON *v) {
  char *s = cJSON_PrintUnformatted(v);
  if (s) puts(s);
  free(s);
  cJSON_Delete(v);
}

void inspect_time_text(uint64_t micros, char out[40]) {
  time_t t = (time_t)(micros / 1000000u);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 40, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void usage(FILE *f) {
  fprintf(f, "usage: felix-inspect [--json] DATADIR\n");
  for (size_t i = 0; i < NSUB; i++)
    fprintf(f, "       felix-inspect [--json] %s %s%s%s\n", subcommands[i].name, subcommands[i].args,
            subcommands[i].options[0] ? " " : "",
            strcmp(subcommands[i].name, "dump") == 0 ? "[--from OFFSET] [--limit N] [--payload text|hex|none]" : "");
  fprintf(f, "       felix-inspect --help | --version\n\n"
             "Offline, read-only inspection of a Felix data directory. It never repairs,\n"
             "rotates or locks anything; it may note that a running broker holds the lock.\n\n"
             "  (no subcommand)  one screen: storage id, last run, next-start verdict, shards, problems\n");
  for (size_t i = 0; i < NSUB; i++) fprintf(f, "  %-16s %s\n", subcommands[i].name, subcommands[i].summary);
  fprintf(f, "\nOptions:\n"
             "  --json            machine-readable output (JSON; dump prints one object per line)\n"
             "  --from OFFSET     dump: start at this record offset\n"
             "  --limit N         dump: print at most N records\n"
             "  --payload MODE    dump: payload as text (default), hex or none\n"
             "  -h, --help        this help\n"
             "  --version         print the version\n\n"
             "Environment: FELIX_RUNTIME_DIR, where the broker keeps its boot tokens\n"
             "(default /run/felix), FELIX_BOOT_ID_FILE (tests only).\n\n"
             "Exit codes: 0 ok, 1 failure, 2 usage, 3 not found, 6 corrupt data found.\n"
             "See felix-inspect(1) and felix-storage(5).\n");
}

static int subcommand_usage(const subcommand *s, FILE *f) {
  fprintf(f, "usage: felix-inspect [--json] %s %s%s\n  %s\n", s->name, s->args,
          strcmp(s->name, "dump") == 0 ? " [--from OFFSET] [--limit N] [--payload text|hex|none]" : "", s->summary);
  return f == stdout ? FELIX_EXIT_OK : FELIX_EXIT_USAGE;
}

static bool parse_u64(const char *flag, const char *v, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long x = v ? strtoull(v, &end, 10) : 0;
  if (!v || !*v || *end || errno || v[0] < '0' || v[0] > '9') {
    inspect_error(FELIX_EXIT_USAGE, "give a non-negative integer", "%s: '%s' is not a non-negative integer", flag, v ? v : "");
    return false;
  }
  *out = x;
  return true;
}

static bool allowed(const subcommand *s, const char *flag) {
  if (!s) return false;
  const char *p = strstr(s->options, flag);
  size_t n = strlen(flag);
  return p && (p[n] == ' ' || p[n] == '\0');
}

enum { OPT_JSON = 'j', OPT_HELP = 'h', OPT_VERSION = 'V', OPT_FROM = 'f', OPT_LIMIT = 'l', OPT_PAYLOAD = 'p' };
static const struct option longopts[] = {
    {"json", no_argument, NULL, OPT_JSON},          {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},    {"from", required_argument, NULL, OPT_FROM},
    {"limit", required_argument, NULL, OPT_LIMIT},  {"payload", required_argument, NULL, OPT_PAYLOAD},
    {0, 0, 0, 0}};

/* dump's options, as given: checked once the subcommand is known, so that
 * "--payload 1" on segments says it is dump's, not that 1 is a bad mode. */
typedef struct dump_flags {
  char first[64]; /* the first one given ("" when none) */
  const char *value[3]; /* from, limit, payload */
} dump_flags;

static int dump_options(const dump_flags *d, inspect_opts *o) {
  if (d->value[0] && !(o->have_from = parse_u64("--from", d->value[0], &o->from))) return FELIX_EXIT_USAGE;
  if (d->value[1] && !(o->have_limit = parse_u64("--limit", d->value[1], &o->limit))) return FELIX_EXIT_USAGE;
  const char *v = d->value[2];
  if (v && strcmp(v, "text") && strcmp(v, "hex") && strcmp(v, "none"))
    return inspect_error(FELIX_EXIT_USAGE, "use text, hex or none", "--payload: '%s' is not a payload mode", v);
  if (v) o->payload = v;
  return -1;
}

/* The options, through getopt_long; returns -1 to go on, or an exit code. */
static int parse_options(int argc, char **argv, inspect_opts *o, bool *help, dump_flags *d) {
  felix_opts p = {.argc = argc, .argv = argv, .shortopts = "h", .longopts = longopts};
  const char *v;
  for (int c; (c = felix_opts_next(&p, &v)) != -1;) {
    if (c == '?')
      return inspect_error(FELIX_EXIT_USAGE, strncmp(p.error, "unknown", 7) ? NULL : "see felix-inspect --help", "%s", p.error);
    if (c == OPT_JSON) o->json = true;
    else if (c == OPT_HELP) *help = true;
    else if (c == OPT_VERSION) return printf("felix-inspect %s\n", FELIX_VERSION), FELIX_EXIT_OK;
    else {
      d->value[c == OPT_FROM ? 0 : c == OPT_LIMIT ? 1 : 2] = v;
      if (!d->first[0]) felix_opts_name(&p, c, d->first);
    }
  }
  return -1;
}

/* The operands: a subcommand name first, or one DATADIR. */
static int parse_operands(int argc, char **argv, inspect_opts *o, const subcommand **sub) {
  for (int i = optind; i < argc; i++) {
    const char *a = argv[i];
    if (!*sub && o->nargs == 0) {
      for (size_t k = 0; k < NSUB && !*sub; k++)
        if (!strcmp(a, subcommands[k].name)) *sub = &subcommands[k];
      if (!*sub) o->args[o->nargs++] = a;
    } else if (o->nargs < 4) {
      o->args[o->nargs++] = a;
    } else {
      return inspect_error(FELIX_EXIT_USAGE, NULL, "too many arguments");
    }
  }
  return -1;
}

/* Parses argv into o; returns -1 to go on, or an exit code. */
static int parse(int argc, char **argv, inspect_opts *o, const subcommand **sub) {
  *sub = NULL;
  bool help = false;
  dump_flags d = {""};
  int rc = parse_options(argc, argv, o, &help, &d);
  if (rc < 0) rc = parse_operands(argc, argv, o, sub);
  if (rc < 0 && d.first[0] && !allowed(*sub, d.first))
    rc = inspect_error(FELIX_EXIT_USAGE, "see felix-inspect --help", "%s is an option of dump only", d.first);
  if (rc < 0) rc = dump_options(&d, o);
  if (rc >= 0) return rc;
  if (help) {
    if (*sub) return subcommand_usage(*sub, stdout);
    usage(stdout);
    return FELIX_EXIT_OK;
  }
  if (o->nargs != 1) {
    if (*sub) {
      inspect_error(FELIX_EXIT_USAGE, NULL, "%s takes exactly one argument: %s", (*sub)->name, (*sub)->args);
      return subcommand_usage(*sub, stderr);
    }
    if (o->nargs > 1) inspect_error(FELIX_EXIT_USAGE, NULL, "too many arguments: give one DATADIR, or a subcommand");
    usage(stderr);
    return FELIX_EXIT_USAGE;
  }
  return -1;
}

int main(int argc, char **argv) {
  inspect_opts o = {.payload = "text"};
  const subcommand *sub;
  int rc = parse(argc, argv, &o, &sub);
  if (rc >= 0) return rc;
  return sub ? sub->run(&o) : cmd_summary(&o);
}
