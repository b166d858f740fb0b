/* control-plane/main.c — `felix-broker control-plane`: flags, the database lock, token
 * files, start-up and shutdown (DESIGN.md §4.1, §5). Everything else lives in
 * the engine (control-plane/state.h) and the HTTP front (control-plane/http.h).
 *
 * Invariants: at most one control plane per database (an flock on
 * <db>.lock, which records the holder's pid); nothing is served before the
 * store is open and migrated; SIGTERM/SIGINT stop the HTTP server first, then
 * close the database, then exit 0. */
#include <systemd/sd-daemon.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "http.h"
#include "felix/logfmt.h"
#include "state.h"
#include "felix/cli.h"
#include "felix/exitcode.h"
#include "felix/lease.h"
#include "programs.h"

typedef struct cp_args {
  const char *listen, *db, *admin_token_file, *broker_token_file;
  uint64_t lease_ms;
} cp_args;

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) {
  stop_signal = sig;
}

static void usage(FILE *f) {
  fputs("usage: felix-broker control-plane --listen ADDR --db FILE [--lease-ms N]\n"
        "                                  [--admin-token-file F] [--broker-token-file F]\n"
        "                                  [--log-level debug|info|warn|error]\n\n"
        "Runs the control plane: the HTTP/JSON API of docs/control-plane-api.md on ADDR,\n"
        "its state in the SQLite database FILE.\n\n"
        "  --listen ADDR             HOST:PORT to serve on (default 127.0.0.1:7070)\n"
        "  --db FILE                 the SQLite database (created at first start); one control\n"
        "                            plane per database (FILE.lock holds the lock)\n"
        "  --lease-ms N              broker lease in milliseconds (default 5000, 100..3600000)\n"
        "  --admin-token-file F      the operators' bearer token (default FILE.admin-token,\n"
        "                            generated with mode 0600 when absent)\n"
        "  --broker-token-file F     the brokers' bearer token (default FILE.broker-token,\n"
        "                            generated with mode 0600 when absent)\n"
        "  --log-level LEVEL         debug, info (default), warn or error (env FELIX_LOG_LEVEL)\n"
        "  -h, --help                this help\n\n"
        "Logs go to stderr (logfmt). SIGTERM or SIGINT stops it cleanly (exit 0).\n"
        "Exit codes: 0 ok, 1 failure, 2 usage, 4 the database is in use by another control plane.\n",
        f);
}

static int usage_error(const char *fmt, const char *a, const char *b) {
  fputs("felix-broker: error: ", stderr);
  fprintf(stderr, fmt, a, b);
  fputs("\nfelix-broker: hint: felix-broker control-plane --help lists the flags\n", stderr);
  return FELIX_EXIT_USAGE;
}

static int parse_lease(const char *v, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  if (!*v || *end || errno || v[0] == '-' || x < 100 || x > 3600000)
    return usage_error("--lease-ms '%s' is not a lease in milliseconds%s", v, " (100..3600000)");
  *out = x;
  return 0;
}

static const struct option longopts[] = {
    {"listen", required_argument, NULL, 'l'},           {"db", required_argument, NULL, 'd'},
    {"lease-ms", required_argument, NULL, 'L'},         {"admin-token-file", required_argument, NULL, 'a'},
    {"broker-token-file", required_argument, NULL, 'b'}, {"log-level", required_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},                   {0, 0, 0, 0}};

/* Returns -1 to go on, else an exit code. */
static int parse_args(int argc, char **argv, cp_args *a) {
  *a = (cp_args){.listen = "127.0.0.1:7070", .lease_ms = CP_DEFAULT_LEASE_MS};
  felix_opts p = {.argc = argc, .argv = argv, .shortopts = "h", .longopts = longopts};
  const char *v, *log_level = NULL;
  char name[64], err[160];
  for (int c; (c = felix_opts_next(&p, &v)) != -1;) {
    if (c == '?') return usage_error("%s%s", p.error, "");
    if (c == 'h') return usage(stdout), FELIX_EXIT_OK;
    if (!*v) return usage_error("%s needs a value%s", felix_opts_name(&p, c, name), "");
    if (c == 'l') a->listen = v;
    else if (c == 'd') a->db = v;
    else if (c == 'L' && parse_lease(v, &a->lease_ms)) return FELIX_EXIT_USAGE;
    else if (c == 'a') a->admin_token_file = v;
    else if (c == 'b') a->broker_token_file = v;
    else if (c == 'v') log_level = v;
  }
  if (!felix_log_configure(log_level, err, sizeof err)) return usage_error("%s%s", err, "");
  if (optind < argc) return usage_error("unexpected argument '%s': control-plane takes flags only%s", argv[optind], "");
  char host[256], port[16];
  if (!a->db) return usage_error("--db FILE is required%s%s", "", "");
  if (!cp_split_addr(a->listen, host, sizeof host, port, sizeof port))
    return usage_error("--listen '%s' is not HOST:PORT%s", a->listen, "");
  return -1;
}

/* Locks <db>.lock; on conflict names the holder's pid. Returns the fd or -1. */
static int lock_db(const char *db, int *exit_code) {
  char path[4096], pid[32] = "";
  snprintf(path, sizeof path, "%s.lock", db);
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  *exit_code = FELIX_EXIT_FAILURE;
  if (fd < 0) {
    fprintf(stderr, "felix-broker: error: cannot open %s: %s\n", path, strerror(errno));
    return -1;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
    pid[n > 0 ? n : 0] = '\0';
    pid[strcspn(pid, "\n")] = '\0';
    fprintf(stderr,
            "felix-broker: error: database %s is in use by another control plane%s%s%s\n"
            "felix-broker: hint: stop that control plane first, or give this one another --db\n",
            db, pid[0] ? " (pid " : "", pid, pid[0] ? ")" : "");
    close(fd);
    *exit_code = FELIX_EXIT_REFUSED;
    return -1;
  }
  int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len)
    felix_log_event("warn", "cannot record pid in lock file", "path", path, NULL);
  return fd;
}

static int load_token(const char *flag, const char *flag_path, const char *db, const char *suffix,
                      char out[CP_TOKEN_MAX]) {
  char path[4096];
  snprintf(path, sizeof path, "%s%s", flag_path ? flag_path : db, flag_path ? "" : suffix);
  bool created;
  felix_err err;
  /* A token file named by a flag must exist: a typo must not mint a new token. */
  if (cp_token_load_or_create(path, flag_path == NULL, out, &created, &err) != FELIX_OK) {
    if (flag_path) fprintf(stderr, "felix-broker: error: %s %s: %s\n", flag, flag_path, err.msg);
    else fprintf(stderr, "felix-broker: error: %s\n", err.msg);
    return FELIX_EXIT_FAILURE;
  }
  felix_log_event("info", created ? "generated token file" : "using token file", "kind", suffix + 1, "path", path, NULL);
  return 0;
}

static void install_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
}

/* The ticker: advances the lease clock every tick until a signal. */
static void run_loop(cp_state *cp) {
  struct timespec tick = {.tv_sec = 0, .tv_nsec = CP_TICK_MS * 1000000L};
  while (!stop_signal) {
    nanosleep(&tick, NULL);
    pthread_mutex_lock(&cp->mu);
    cp_state_tick(cp, felix_monotonic_ms());
    pthread_mutex_unlock(&cp->mu);
    felix_log_flush_repeats(); /* a burst of identical lines that stopped still gets its count */
  }
}

static int serve(const cp_args *a, const cp_tokens *tokens) {
  static cp_state cp; /* static: the HTTP thread refers to it until stopped */
  felix_err err;
  if (cp_state_open(&cp, a->db, NULL, a->lease_ms, felix_monotonic_ms(), &err) != FELIX_OK) {
    fprintf(stderr, "felix-broker: error: %s\n", err.msg);
    return err.status == FELIX_E_REFUSED ? FELIX_EXIT_REFUSED : FELIX_EXIT_FAILURE;
  }
  cp_server *srv = NULL;
  if (cp_http_start(&cp, tokens, a->listen, &srv, &err) != FELIX_OK) {
    fprintf(stderr, "felix-broker: error: %s\nfelix-broker: hint: choose another --listen address\n", err.msg);
    cp_state_close(&cp);
    return FELIX_EXIT_FAILURE;
  }
  char lease[32], schema[16];
  snprintf(lease, sizeof lease, "%llu", (unsigned long long)a->lease_ms);
  snprintf(schema, sizeof schema, "%d", cp_store_schema_version(cp.store));
  felix_log_event("info", "control plane serving", "version", FELIX_VERSION, "listen", a->listen, "db", a->db, "instance_id", cp.instance_id,
         "lease_ms", lease, "schema_version", schema, NULL);
  sd_notifyf(0, "READY=1\nSTATUS=serving on %s, instance %s", a->listen, cp.instance_id);
  run_loop(&cp);
  sd_notify(0, "STOPPING=1");
  felix_log_event("info", "stopping", "signal", stop_signal == SIGINT ? "SIGINT" : "SIGTERM", NULL);
  cp_http_stop(srv); /* waits for requests in flight: none touches the store after this */
  cp_state_close(&cp);
  felix_log_event("info", "stopped: database closed", "db", a->db, NULL);
  return FELIX_EXIT_OK;
}

int cp_main(int argc, char **argv) {
  cp_args a;
  int rc = parse_args(argc, argv, &a);
  if (rc >= 0) return rc;
  install_signals();
  int lock_fd = lock_db(a.db, &rc);
  if (lock_fd < 0) return rc;
  static cp_tokens tokens;
  rc = load_token("--admin-token-file", a.admin_token_file, a.db, ".admin-token", tokens.admin);
  if (!rc) rc = load_token("--broker-token-file", a.broker_token_file, a.db, ".broker-token", tokens.broker);
  if (!rc) rc = serve(&a, &tokens);
  close(lock_fd);
  return rc;
}
