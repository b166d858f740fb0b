/* broker/run.c — felix-broker run: arguments, the start-up order, the loop,
 * and the signals that start a drain (drain.c; DESIGN.md §3.3, §5).
 *
 * Order: the directory lock, the HTTP endpoints (/ready is 503 until serving),
 * then storage (recovery, identity, run-state, boot token), then
 * registration; the data port opens only once the control plane has answered,
 * so no data is served before the id on disk is final and registered. */
#include <systemd/sd-daemon.h>
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "broker.h"
#include "drain.h"
#include "felix/cli.h"
#include "felix/exitcode.h"
#include "felix/fileutil.h"
#include "felix/logfmt.h"
#include "programs.h"

static const char *usage_text =
    "usage: felix-broker run --id ID --data-dir DIR [--listen ADDR] [--http ADDR]\n"
    "                        [--control-plane URL] [--token-file F]\n"
    "                        [--fsync-mode none|periodic|on_commit] [--fsync-interval-ms N]\n"
    "                        [--log-level debug|info|warn|error]\n\n"
    "Runs a broker: takes DIR's lock, recovers every shard copy, decides the storage\n"
    "identity, registers with the control plane and serves the data protocol.\n\n"
    "  --id ID                  broker id (letters, digits, '.', '_', '-'; at most 64)\n"
    "  --data-dir DIR           data directory (env FELIX_DATA_DIR)\n"
    "  --listen ADDR            data protocol address (default 127.0.0.1:7101)\n"
    "  --http ADDR              /live /ready /metrics address (default 127.0.0.1:7201)\n"
    "  --control-plane URL      control plane (env FELIX_CONTROL_PLANE, default http://127.0.0.1:7070)\n"
    "  --token-file F           the control plane's broker token (env FELIX_BROKER_TOKEN_FILE)\n"
    "  --fsync-mode MODE        none, periodic (default) or on_commit (env FELIX_DURABLE_FSYNC_MODE)\n"
    "  --fsync-interval-ms N    periodic flush interval (default 250; env FELIX_DURABLE_FSYNC_INTERVAL_MS)\n"
    "  --log-level LEVEL        debug, info (default), warn or error (env FELIX_LOG_LEVEL)\n"
    "  -h, --help               this help\n\n"
    "SIGTERM or SIGINT drains: readiness off, producer appends refused, every store\n"
    "flushed, run-state state=stopped, exit 0 (within FELIX_SHUTDOWN_DRAIN_TIMEOUT_MS,\n"
    "default 25000, else exit 1). Exit 7: the control plane refused the broker's token\n"
    "(401), so no retry can succeed. See felix-broker(8).\n";

static int usage_error(const char *fmt, const char *a, const char *b2) {
  fprintf(stderr, "felix-broker: error: ");
  fprintf(stderr, fmt, a, b2);
  fprintf(stderr, "\nfelix-broker: hint: felix-broker run --help\n");
  return FELIX_EXIT_USAGE;
}

static bool valid_id(const char *id) {
  size_t n = strlen(id);
  if (n == 0 || n > 64) return false;
  for (size_t i = 0; i < n; i++)
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", id[i])) return false;
  return true;
}

static const char *env_or(const char *name, const char *dflt) {
  const char *v = getenv(name);
  return v && *v ? v : dflt;
}

/* host:port with a numeric port from 0 to 65535 and an IP address host
 * (IPv4 only where ipv4_only: the HTTP endpoints). */
static bool valid_address(const char *addr, bool ipv4_only) {
  const char *colon = strrchr(addr, ':');
  if (!colon || !colon[1] || strlen(colon + 1) > 5 || strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
      atoi(colon + 1) > 65535)
    return false;
  struct sockaddr_storage ss;
  return broker_parse_addr(addr, &ss) == 0 && (!ipv4_only || ss.ss_family == AF_INET);
}

enum { OPT_ID = 1, OPT_DATA_DIR, OPT_LISTEN, OPT_HTTP, OPT_CP, OPT_TOKEN_FILE, OPT_LOG_LEVEL, OPT_FSYNC_MODE, OPT_FSYNC_INTERVAL };
static const struct option longopts[] = {
    {"id", required_argument, NULL, OPT_ID},           {"data-dir", required_argument, NULL, OPT_DATA_DIR},
    {"listen", required_argument, NULL, OPT_LISTEN},   {"http", required_argument, NULL, OPT_HTTP},
    {"control-plane", required_argument, NULL, OPT_CP}, {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
    {"fsync-mode", required_argument, NULL, OPT_FSYNC_MODE}, {"fsync-interval-ms", required_argument, NULL, OPT_FSYNC_INTERVAL},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL}, {"help", no_argument, NULL, 'h'},
    {0, 0, 0, 0}};

static int flag_value(int opt, const char *v, broker_config *c) {
  const char **text[] = {[OPT_ID] = &c->id, [OPT_DATA_DIR] = &c->data_dir, [OPT_LISTEN] = &c->listen, [OPT_HTTP] = &c->http,
                         [OPT_CP] = &c->control_plane, [OPT_TOKEN_FILE] = &c->token_file, [OPT_LOG_LEVEL] = &c->log_level};
  if (opt < OPT_FSYNC_MODE) {
    *text[opt] = v;
  } else if (opt == OPT_FSYNC_MODE) {
    if (!felix_fsync_mode_parse(v, &c->log.fsync_mode)) return usage_error("--fsync-mode: '%s' is not none, periodic or on_commit%s", v, "");
  } else {
    char *end;
    unsigned long ms = strtoul(v, &end, 10);
    if (!*v || *end || ms < 1 || ms > 3600000 || v[0] == '-') return usage_error("--fsync-interval-ms: '%s' is not an integer from 1 to 3600000%s", v, "");
    c->log.fsync_interval_ms = (uint32_t)ms;
  }
  return 0;
}

/* The flags, through getopt_long; no operands are taken. */
static int parse_flags(int argc, char **argv, broker_config *c) {
  felix_opts p = {.argc = argc, .argv = argv, .shortopts = "h", .longopts = longopts};
  const char *v;
  for (int opt; (opt = felix_opts_next(&p, &v)) != -1;) {
    if (opt == '?') return usage_error("%s%s", p.error, "");
    if (opt == 'h') return fputs(usage_text, stdout), -2;
    int rc = flag_value(opt, v, c);
    if (rc) return rc;
  }
  if (optind < argc) return usage_error("unexpected argument '%s': felix-broker run takes flags only%s", argv[optind], "");
  char err[160];
  if (!felix_log_configure(c->log_level, err, sizeof err)) return usage_error("%s%s", err, "");
  return 0;
}

static int parse_args(int argc, char **argv, broker_config *c) {
  felix_err err;
  if (felix_log_config_from_env(&c->log, &err)) return usage_error("%s%s", err.msg, "");
  c->listen = "127.0.0.1:7101";
  c->http = "127.0.0.1:7201";
  c->control_plane = env_or("FELIX_CONTROL_PLANE", "http://127.0.0.1:7070");
  c->data_dir = env_or("FELIX_DATA_DIR", NULL);
  /* Not FELIX_TOKEN_FILE: that is felixctl's admin token, which a broker
   * must never be started with by accident (the control plane refuses it). */
  c->token_file = env_or("FELIX_BROKER_TOKEN_FILE", NULL);
  const char *drain = env_or("FELIX_SHUTDOWN_DRAIN_TIMEOUT_MS", "25000");
  char *dend;
  unsigned long dms = strtoul(drain, &dend, 10);
  if (*dend || drain[0] < '0' || drain[0] > '9' || dms < 1 || dms > 3600000)
    return usage_error("environment FELIX_SHUTDOWN_DRAIN_TIMEOUT_MS=%s: expected milliseconds from 1 to 3600000%s", drain, "");
  c->drain_timeout_ms = (uint32_t)dms;
  c->test_slow_drain_ms = (uint32_t)strtoul(env_or("FELIX_TEST_SLOW_DRAIN_MS", "0"), NULL, 10);
  int rc = parse_flags(argc, argv, c);
  if (rc) return rc;
  if (!c->id) return usage_error("--id is required%s%s", "", "");
  if (!valid_id(c->id)) return usage_error("--id: '%s' must be 1 to 64 letters, digits, '.', '_' or '-'%s", c->id, "");
  if (!c->data_dir) return usage_error("--data-dir is required (or FELIX_DATA_DIR)%s%s", "", "");
  if (!c->token_file) return usage_error("--token-file is required (or FELIX_BROKER_TOKEN_FILE): the control plane's broker token, <db>.broker-token%s%s", "", "");
  if (access(c->token_file, R_OK) != 0)
    return usage_error("--token-file %s: %s (the control plane writes <db>.broker-token at its first start)", c->token_file, strerror(errno));
  /* Every flag is checked before the data directory is touched: a typo must
   * not leave state=running and a boot token behind (a clean stop would turn
   * into a crash that rotates the storage id after the next reboot). */
  if (!valid_address(c->listen, false))
    return usage_error("--listen: '%s' is not an IP address and a port from 0 to 65535 (e.g. 127.0.0.1:7101)%s", c->listen, "");
  if (!valid_address(c->http, true))
    return usage_error("--http: '%s' is not an IPv4 address and a port from 0 to 65535 (e.g. 127.0.0.1:7201)%s", c->http, "");
  /* As felixctl: a URL without a scheme is http (libcurl's guess too). */
  const char *scheme_end = strstr(c->control_plane, "://");
  if (!c->control_plane[0] || strpbrk(c->control_plane, " \t\r\n") ||
      (scheme_end && strncasecmp(c->control_plane, "http://", 7) && strncasecmp(c->control_plane, "https://", 8)))
    return usage_error("--control-plane: '%s' is not an http:// or https:// URL (or host:port)%s", c->control_plane, "");
  return 0;
}

/* Every half second: the metrics snapshot, and the check that an idle shard's
 * periodic flush did not fail behind our back (§3.2: fail closed). */
static void on_metrics_timer(uv_timer_t *t) {
  broker *b = t->data;
  watch_loop_ticked(b);
  felix_log_flush_repeats(); /* a burst of identical lines that stopped still gets its count */
  for (shard *s = b->shards; s && !b->stopping; s = s->next) {
    if (!s->log || s->refused) continue;
    felix_log_stats st;
    felix_log_get_stats(s->log, &st);
    if (st.dir_gone || felix_log_dir_deleted(s->log)) shard_refuse(b, s, "its directory was deleted");
    else if (st.sync_error) broker_fail_closed(b, strerror(st.sync_error));
  }
  bool stalled = false;
  for (shard *s = b->shards; s && !b->stopping; s = s->next)
    if (s->leading && s->stalled_since_ms) stalled = true, peer_log_stall(b, s);
  if (stalled) broker_publish_report(b); /* keep the no-quorum age fresh in the report */
  if (b->inventory_stale && !b->stopping) broker_publish_inventory(b);
  broker_update_metrics(b);
}

void broker_on_cp_async(uv_async_t *h) {
  broker *b = h->data;
  pthread_mutex_lock(&b->mb.mu);
  char *json = b->mb.assignments_json;
  uint64_t sent_ms = b->mb.assignments_sent_ms;
  b->mb.assignments_json = NULL;
  bool new_incarnation = b->mb.registered && strcmp(b->incarnation, b->mb.incarnation) != 0;
  if (b->mb.registered) snprintf(b->incarnation, sizeof b->incarnation, "%s", b->mb.incarnation);
  bool unauthorized = b->mb.unauthorized;
  pthread_mutex_unlock(&b->mb.mu);
  if (unauthorized && !b->draining) {
    b->exit_code = FELIX_EXIT_UNAUTHORIZED;
    broker_begin_drain(b, "the control plane refused the token");
    return;
  }
  /* Pins name an incarnation: a lease confirmed for the old one ends. */
  if (new_incarnation) broker_drop_shard_leases(b);
  if (json && broker_drain_takes_assignments(b)) broker_apply_cp(b, json, sent_ms);
  free(json);
  if (!b->serving && b->incarnation[0] && !b->stopping) {
    if (broker_net_listen(b) != 0) {
      b->exit_code = FELIX_EXIT_FAILURE;
      broker_begin_drain(b, "cannot listen");
      return;
    }
    b->serving = true;
    pthread_mutex_lock(&b->stats_mu);
    b->ready = true;
    pthread_mutex_unlock(&b->stats_mu);
    /* Type=notify (packaging/felix-broker@.service): started once serving, as /ready says */
    sd_notifyf(0, "READY=1\nSTATUS=serving the data protocol on %s as %s", b->cfg.listen, b->cfg.id);
  }
}

static void on_signal(uv_signal_t *h, int signum) {
  broker_begin_drain(h->data, signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

/* A prepare handle runs once per loop iteration just before libuv polls:
 * after the timers of this iteration and the I/O callbacks of the last, so
 * nothing marked waits through a poll's sleep. */
static void on_publish_prepare(uv_prepare_t *h) {
  broker *b = h->data;
  if (!b->stopping) broker_publish_due(b);
}

static int run_loop(broker *b) {
  b->loop = uv_default_loop();
  uv_async_init(b->loop, &b->cp_async, broker_on_cp_async);
  b->cp_async.data = b;
  uv_signal_init(b->loop, &b->sigterm);
  uv_signal_init(b->loop, &b->sigint);
  b->sigterm.data = b->sigint.data = b;
  uv_signal_start(&b->sigterm, on_signal, SIGTERM);
  uv_signal_start(&b->sigint, on_signal, SIGINT);
  uv_timer_init(b->loop, &b->report_timer);
  b->report_timer.data = b;
  uv_timer_start(&b->report_timer, on_metrics_timer, 0, 500);
  uv_prepare_init(b->loop, &b->publish_prepare);
  b->publish_prepare.data = b;
  uv_prepare_start(&b->publish_prepare, on_publish_prepare);
  if (watch_start(b) != 0 || broker_cp_start(b) != 0) return FELIX_EXIT_FAILURE;
  uv_run(b->loop, UV_RUN_DEFAULT);
  watch_stop(b); /* the loop is over: its quiet from here (a slow last control-plane call) is no stall (helper-31) */
  broker_cp_stop(b);
  return b->exit_code;
}

int broker_main(int argc, char **argv) {
  broker *b = calloc(1, sizeof *b);
  if (!b) return FELIX_EXIT_FAILURE;
  b->dirfd = -1;
  b->lock.fd = -1; /* nothing to release if the start fails before the lock */
  b->listen_fd = -1;
  watch_init(&b->watch);
  int rc = parse_args(argc, argv, &b->cfg);
  if (rc) return rc == -2 ? FELIX_EXIT_OK : rc;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  char pid[32];
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  felix_log_event("info", "starting", "id", b->cfg.id, "version", FELIX_VERSION, "data_dir", b->cfg.data_dir, "fsync_mode",
                  felix_fsync_mode_name(b->cfg.log.fsync_mode), "pid", pid, NULL);
  if (b->cfg.test_slow_drain_ms)
    felix_log_event("warn", "FELIX_TEST_SLOW_DRAIN_MS is set: the drain waits before flushing (tests only)", NULL);
  /* The lock (a second broker on the directory is told so, exit 4), then
   * the HTTP and data ports: a start that cannot have them leaves the data
   * directory as it found it (no recovery, run-state or boot token written). */
  rc = broker_lock_data_dir(b);
  if (!rc && broker_http_start(b) != 0) rc = FELIX_EXIT_FAILURE;
  if (!rc && broker_net_reserve(b) != 0) rc = FELIX_EXIT_FAILURE;
  if (!rc) sd_notifyf(0, "STATUS=recovering the data directory %s", b->cfg.data_dir);
  if (!rc) rc = broker_start_storage(b);
  if (!rc) sd_notifyf(0, "STATUS=registering with the control plane at %s", b->cfg.control_plane);
  if (!rc) rc = run_loop(b);
  broker_http_stop(b);
  if (b->listen_fd >= 0) close(b->listen_fd); /* taken at start, never handed to libuv */
  felix_dir_lock_release(&b->lock);
  curl_global_cleanup();
  felix_log_event(rc ? "error" : "info", "exiting", "code", rc ? "nonzero" : "0", NULL);
  return rc;
}
