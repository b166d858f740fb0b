/* restore-point/main.c — felix-broker restore-point create|list|verify|restore:
 * argument parsing, the terminal progress line and dispatch. The work is in
 * lib/restore-point/; the printing in commands.c. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "felix/cli.h"
#include "felix/exitcode.h"
#include "programs.h"

static const char *usage_text =
    "usage: felix-broker restore-point create --data-dir DIR --to PATH [--shard STREAM/N ...] [--json]\n"
    "       felix-broker restore-point list --from PATH [--json]\n"
    "       felix-broker restore-point verify --from PATH [--shard STREAM/N ...] [--json]\n"
    "       felix-broker restore-point restore --from PATH --data-dir DIR [--shard STREAM/N ...] [--json]\n"
    "       felix-broker restore-point prune --from DIR --keep N [--older-than AGE] [--dry-run] [--json]\n\n"
    "  create   copy DIR's shard logs to the new restore point PATH (the broker may be running):\n"
    "           sealed segments hard-linked when on the same file system, the newest copied up to\n"
    "           a record boundary, manifest.json written last\n"
    "  list     the complete restore points at PATH (PATH itself, or the directories in it)\n"
    "  verify   check every file against the manifest; exit 6 naming each file that differs\n"
    "  restore  write the point into DIR (no broker may hold it; exit 4 names the pid): new storage\n"
    "           id, new copy ids, every ballot at leader=none; the next start registers strangers\n"
    "  prune    remove the complete points in DIR but the N newest (and, with --older-than,\n"
    "           only those older than AGE: 90s, 30m, 12h, 7d); incomplete ones are left alone\n\n"
    "  --data-dir DIR       the data directory (env FELIX_DATA_DIR)\n"
    "  --to PATH            where create writes the restore point (new, empty, or an interrupted one)\n"
    "  --from PATH          the restore point (for list: or a directory of them)\n"
    "  --shard STREAM/N     only this shard (repeatable; default every shard)\n"
    "  --keep N             prune: keep the N newest points (1 or more)\n"
    "  --older-than AGE     prune: remove only points older than AGE\n"
    "  --dry-run            prune: say what would be removed, remove nothing\n"
    "  --json               a JSON summary on stdout\n"
    "  -h, --help           this help\n\n"
    "Progress (bytes done / total, rate, ETA) goes to stderr when it is a terminal.\n"
    "Exit: 0 ok, 1 failure, 2 usage, 3 not found, 4 refused, 6 corrupt. See felix-broker(8).\n";

static int usage_error(const char *fmt, const char *a) {
  fputs("felix-broker: error: ", stderr);
  fprintf(stderr, fmt, a);
  fputs("\nfelix-broker: hint: felix-broker restore-point --help\n", stderr);
  return FELIX_EXIT_USAGE;
}

/* Which flags each command takes, and which it needs. */
typedef struct rp_command {
  const char *name;
  int (*run)(rp_args *);
  const char *allowed;  /* space separated */
  const char *required;
} rp_command;

static const rp_command commands[] = {
    {"create", rp_cmd_create, "--data-dir --to --shard --json", "--data-dir --to"},
    {"list", rp_cmd_list, "--from --json", "--from"},
    {"verify", rp_cmd_verify, "--from --shard --json", "--from"},
    {"restore", rp_cmd_restore, "--from --data-dir --shard --json", "--from --data-dir"},
    {"prune", rp_cmd_prune, "--from --keep --older-than --dry-run --json", "--from --keep"},
};

static bool word_in(const char *word, const char *list) {
  size_t n = strlen(word);
  for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return true;
  return false;
}

static const char **flag_slot(rp_args *a, const char *flag) {
  if (!strcmp(flag, "--data-dir")) return &a->data_dir;
  if (!strcmp(flag, "--to")) return &a->to;
  if (!strcmp(flag, "--from")) return &a->from;
  if (!strcmp(flag, "--keep")) return &a->keep;
  if (!strcmp(flag, "--older-than")) return &a->older_than;
  return NULL;
}

static int check_required(const rp_command *c, rp_args *a) {
  static const char *all[] = {"--data-dir", "--to", "--from", "--keep"};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (word_in(all[i], c->required) && !*flag_slot(a, all[i]))
      return usage_error(!strcmp(all[i], "--data-dir") ? "%s is required (or FELIX_DATA_DIR)" : "%s is required", all[i]);
  return 0;
}

static bool valid_shard(const char *v) {
  const char *slash = strrchr(v, '/');
  if (!slash || slash == v || !slash[1]) return false;
  for (const char *p = slash + 1; *p; p++)
    if (*p < '0' || *p > '9') return false;
  return strlen(slash + 1) <= 10;
}

static const struct option longopts[] = {
    {"data-dir", required_argument, NULL, 'd'}, {"to", required_argument, NULL, 't'},
    {"from", required_argument, NULL, 'f'},     {"shard", required_argument, NULL, 's'},
    {"json", no_argument, NULL, 'j'},           {"help", no_argument, NULL, 'h'},
    {"keep", required_argument, NULL, 'k'},     {"older-than", required_argument, NULL, 'o'},
    {"dry-run", no_argument, NULL, 'n'},
    {0, 0, 0, 0}};

/* One flag's value into a; returns 0 or an exit code. */
static int take_flag(rp_args *a, const char *flag, const char *v) {
  if (!strcmp(flag, "--json") || !strcmp(flag, "--dry-run")) {
    *(flag[2] == 'j' ? &a->json : &a->dry_run) = true;
    return 0;
  }
  if (!*v) return usage_error("%s needs a value", flag);
  if (strcmp(flag, "--shard")) {
    *flag_slot(a, flag) = v;
    return 0;
  }
  if (!valid_shard(v)) return usage_error("--shard: '%s' is not STREAM/N", v);
  if (a->nshards == RP_MAX_SHARDS) return usage_error("--shard: more than %s selections", "256");
  a->shards[a->nshards++] = v;
  return 0;
}

static int parse(const rp_command *c, int argc, char **argv, rp_args *a) {
  const char *env = getenv("FELIX_DATA_DIR");
  if (env && *env && word_in("--data-dir", c->allowed)) a->data_dir = env;
  felix_opts p = {.argc = argc, .argv = argv, .shortopts = "h", .longopts = longopts};
  const char *v;
  char flag[64];
  for (int opt; (opt = felix_opts_next(&p, &v)) != -1;) {
    if (opt == '?') return usage_error("%s", p.error);
    if (opt == 'h') return fputs(usage_text, stdout), -1;
    felix_opts_name(&p, opt, flag);
    if (!word_in(flag, c->allowed)) return usage_error("unknown option %s for this command", flag);
    int rc = take_flag(a, flag, v);
    if (rc) return rc;
  }
  if (optind < argc) return usage_error("unexpected argument '%s'", argv[optind]);
  return check_required(c, a);
}

/* --- the progress line ---------------------------------------------------- */

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void rp_progress(void *ctx, uint64_t done, uint64_t total) {
  rp_progress_state *p = ctx;
  double t = now_seconds();
  if (!p->enabled || (t - p->last < 0.1 && done < total)) return;
  if (p->start == 0) p->start = t;
  p->last = t;
  if (done > total) total = done; /* a shard copied again after it moved */
  char d[24], tot[24], rate[24];
  double secs = t - p->start, r = secs > 0 ? (double)done / secs : 0;
  felix_human_bytes((double)done, d);
  felix_human_bytes((double)total, tot);
  felix_human_bytes(r, rate);
  double eta = r > 0 ? (double)(total - done) / r : 0;
  fprintf(stderr, "\r%s: %s / %s  %3.0f%%  %s/s  ETA %.0fs   ", p->verb, d, tot,
          total ? 100.0 * (double)done / (double)total : 100.0, rate, eta);
  p->shown = true;
}

void rp_progress_init(rp_progress_state *p, const char *verb) {
  memset(p, 0, sizeof *p);
  p->verb = verb;
  p->enabled = isatty(STDERR_FILENO);
  p->start = now_seconds();
}

void rp_progress_end(rp_progress_state *p) {
  if (p->shown) fputc('\n', stderr);
}

int rp_main(int argc, char **argv) {
  if (argc < 2) return usage_error("restore-point needs a command: create, list, verify, restore or prune%s", "");
  if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) return fputs(usage_text, stdout), FELIX_EXIT_OK;
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    if (strcmp(argv[1], commands[i].name)) continue;
    rp_args a = {0};
    int rc = parse(&commands[i], argc - 1, argv + 1, &a);
    if (rc) return rc < 0 ? FELIX_EXIT_OK : rc;
    return commands[i].run(&a);
  }
  return usage_error("unknown restore-point command '%s' (create, list, verify, restore, prune)", argv[1]);
}
