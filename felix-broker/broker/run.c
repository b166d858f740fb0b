/* broker/run.c — felix-broker run: arguments, the start-up order, the loop,
 * and the drain on SIGTERM/SIGINT (DESIGN.md §3.3, §5).
 *
 * Order: storage first (lock, recovery, identity, run-state, boot token), then
 * registration; the data port opens only once the control plane has answered,
 * so nothing is served before the id on disk is final and registered. */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "broker.h"
#include "felix/exitcode.h"
#include "felix/fileutil.h"
#include "felix/logfmt.h"
#include "programs.h"

static const char *usage_text =
    "usage: felix-broker run --id ID --data-dir DIR [--listen ADDR] [--http ADDR]\n"
    "                        [--control-plane URL] [--token-file F]\n"
    "                        [--fsync-mode none|periodic|on_commit] [--fsync-interval-ms N]\n\n"
    "Runs a broker: takes DIR's lock, recovers every shard copy, decides the storage\n"
    "identity, registers with the control plane and serves the data protocol.\n\n"
    "  --id ID                  broker id (letters, digits, '.', '_', '-'; at most 64)\n"
    "  --data-dir DIR           data directory (env FELIX_DATA_DIR)\n"
    "  --listen ADDR            data protocol address (default 127.0.0.1:7101)\n"
    "  --http ADDR              /live /ready /metrics address (default 127.0.0.1:7201)\n"
    "  --control-plane URL      control plane (env FELIX_CONTROL_PLANE, default http://127.0.0.1:7070)\n"
    "  --token-file F           the control plane's broker token (env FELIX_TOKEN_FILE)\n"
    "  --fsync-mode MODE        none, periodic (default) or on_commit (env FELIX_DURABLE_FSYNC_MODE)\n"
    "  --fsync-interval-ms N    periodic flush interval (default 250; env FELIX_DURABLE_FSYNC_INTERVAL_MS)\n"
    "  -h, --help               this help\n\n"
    "SIGTERM or SIGINT drains: readiness off, producer appends refused, every store\n"
    "flushed, run-state state=stopped, exit 0 (within FELIX_SHUTDOWN_DRAIN_TIMEOUT_MS,\n"
    "default 25000, else exit 1). See felix-broker(8).\n";

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

static int parse_args(int argc, char **argv, broker_config *c) {
  felix_err err;
  if (felix_log_config_from_env(&c->log, &err)) return usage_error("%s%s", err.msg, "");
  c->listen = "127.0.0.1:7101";
  c->http = "127.0.0.1:7201";
  c->control_plane = env_or("FELIX_CONTROL_PLANE", "http://127.0.0.1:7070");
  c->data_dir = env_or("FELIX_DATA_DIR", NULL);
  c->token_file = env_or("FELIX_TOKEN_FILE", NULL);
  const char *drain = env_or("FELIX_SHUTDOWN_DRAIN_TIMEOUT_MS", "25000");
  char *dend;
  unsigned long dms = strtoul(drain, &dend, 10);
  if (*dend || drain[0] < '0' || drain[0] > '9' || dms < 1 || dms > 3600000)
    return usage_error("environment FELIX_SHUTDOWN_DRAIN_TIMEOUT_MS=%s: expected milliseconds from 1 to 3600000%s", drain, "");
  c->drain_timeout_ms = (uint32_t)dms;
  c->test_slow_drain_ms = (uint32_t)strtoul(env_or("FELIX_TEST_SLOW_DRAIN_MS", "0"), NULL, 10);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    static const char *known[] = {"--id", "--data-dir", "--listen", "--http", "--control-plane", "--token-file",
                                  "--fsync-mode", "--fsync-interval-ms", NULL};
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) return fputs(usage_text, stdout), -2;
    bool is_known = false;
    for (int k = 0; known[k] && !is_known; k++) is_known = !strcmp(a, known[k]);
    if (!is_known) return usage_error("unknown option %s%s", a, "");
    if (!v) return usage_error("%s needs a value%s", a, "");
    i++;
    if (!strcmp(a, "--id")) c->id = v;
    else if (!strcmp(a, "--data-dir")) c->data_dir = v;
    else if (!strcmp(a, "--listen")) c->listen = v;
    else if (!strcmp(a, "--http")) c->http = v;
    else if (!strcmp(a, "--control-plane")) c->control_plane = v;
    else if (!strcmp(a, "--token-file")) c->token_file = v;
    else if (!strcmp(a, "--fsync-mode")) {
      if (!felix_fsync_mode_parse(v, &c->log.fsync_mode)) return usage_error("--fsync-mode: '%s' is not none, periodic or on_commit%s", v, "");
    } else if (!strcmp(a, "--fsync-interval-ms")) {
      char *end;
      unsigned long ms = strtoul(v, &end, 10);
      if (!*v || *end || ms < 1 || ms > 3600000 || v[0] == '-') return usage_error("--fsync-interval-ms: '%s' is not an integer from 1 to 3600000%s", v, "");
      c->log.fsync_interval_ms = (uint32_t)ms;
    } else {
      return usage_error("unknown option %s%s", a, "");
    }
  }
  if (!c->id) return usage_error("--id is required%s%s", "", "");
  if (!valid_id(c->id)) return usage_error("--id: '%s' must be 1 to 64 letters, digits, '.', '_' or '-'%s", c->id, "");
  if (!c->data_dir) return usage_error("--data-dir is required (or FELIX_DATA_DIR)%s%s", "", "");
  if (!c->token_file) return usage_error("--token-file is required (or FELIX_TOKEN_FILE): the control plane's broker token%s%s", "", "");
  if (access(c->token_file, R_OK) != 0)
    return usage_error("--token-file %s: %s (the control plane writes <db>.broker-token at its first start)", c->token_file, strerror(errno));
  return 0;
}

static broker *the_broker; /* for broker_fail_closed from any thread */

void broker_fail_closed(broker *b, const char *why) {
  felix_boot_token_remove(&b->sid, b->boot_id);
  felix_log_event("error", "a sync failed: boot token removed, exiting without acknowledging more", "reason", why, NULL);
  _exit(FELIX_EXIT_FAILURE);
}

/* Every half second: the metrics snapshot, and the check that an idle shard's
 * periodic flush did not fail behind our back (§3.2: fail closed). */
static void on_metrics_timer(uv_timer_t *t) {
  broker *b = t->data;
  for (shard *s = b->shards; s && !b->stopping; s = s->next) {
    if (!s->log || s->refused) continue;
    felix_log_stats st;
    felix_log_get_stats(s->log, &st);
    if (st.dir_gone || felix_log_dir_deleted(s->log)) shard_refuse(b, s, "its directory was deleted");
    else if (st.sync_error) broker_fail_closed(b, strerror(st.sync_error));
  }
  for (shard *s = b->shards; s && !b->stopping; s = s->next)
    if (s->leading && s->stalled_since_ms) { /* keep the no-quorum age fresh in the report */
      broker_publish_report(b);
      break;
    }
  if (b->inventory_stale && !b->stopping) {
    b->inventory_stale = false;
    broker_publish_inventory(b);
  }
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
  pthread_mutex_unlock(&b->mb.mu);
  /* A draining broker takes no new role (shard_apply_assignment), but still
   * learns that the shards it led moved on. */
  /* Pins name an incarnation: a lease confirmed for the old one ends. */
  if (new_incarnation) broker_drop_shard_leases(b);
  if (json && (!b->draining || b->handing_off)) broker_apply_cp(b, json, sent_ms);
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
  }
}

/* ---- drain ---- */

typedef struct drain_work {
  uv_work_t work;
  broker *b;
  bool ok;
} drain_work;

static void drain_flush(uv_work_t *w) {
  drain_work *d = w->data;
  d->ok = true;
  if (d->b->cfg.test_slow_drain_ms) usleep(d->b->cfg.test_slow_drain_ms * 1000u); /* a slow disk, for tests */
  for (shard *s = d->b->shards; s; s = s->next) {
    felix_err err;
    if (s->log && !s->refused && felix_log_sync(s->log, &err) != FELIX_OK) {
      felix_log_event("error", "flush failed during drain", "shard", s->dir_name, "reason", err.msg, NULL);
      d->ok = false;
    }
  }
}

static void close_handle(uv_handle_t *h, void *arg) {
  (void)arg;
  if (!uv_is_closing(h)) uv_close(h, NULL);
}

static bool write_stopped(broker *b) {
  felix_run_state rs = {.state = FELIX_RUN_STOPPED, .fsync_mode = b->cfg.log.fsync_mode, .has_boot_id = true, .pid = getpid()};
  snprintf(rs.boot_id, sizeof rs.boot_id, "%s", b->boot_id);
  snprintf(rs.boot_id_source, sizeof rs.boot_id_source, "%s", b->boot_source);
  felix_format_rfc3339(rs.since, time(NULL));
  snprintf(rs.broker_id, sizeof rs.broker_id, "%s", b->cfg.id);
  felix_err err;
  if (felix_run_state_write(b->dirfd, b->cfg.data_dir, &rs, &err) == FELIX_OK) return true;
  felix_log_event("error", "cannot write run-state", "reason", err.msg, NULL);
  return false;
}

void broker_drain_continue(broker *b) {
  if (!b->draining || !b->drain_flushed || b->drain_finished) return;
  for (shard *s = b->shards; s; s = s->next)
    if (s->pending_held) return; /* an on_commit batch still owes its producer an answer */
  b->drain_finished = true;
  bool synced = b->drain_flush_ok;
  for (shard *s = b->shards; s; s = s->next) synced = shard_close(s) == FELIX_OK && synced;
  if (!synced) broker_fail_closed(b, "a sync failed during the drain");
  bool clean = b->appends_total == b->drain_appends_before && write_stopped(b);
  if (!clean && !b->exit_code) b->exit_code = FELIX_EXIT_FAILURE;
  felix_log_event(clean ? "info" : "error", clean ? "drained: run-state state=stopped" : "drain incomplete: run-state left at running", NULL);
  b->stopping = true;
  uv_walk(b->loop, close_handle, NULL);
}

static void drain_done(uv_work_t *w, int status) {
  drain_work *d = w->data;
  broker *b = d->b;
  (void)status;
  b->drain_flushed = true;
  b->drain_flush_ok = d->ok;
  free(d);
  broker_drain_continue(b);
}

static void on_drain_timeout(uv_timer_t *t) {
  broker *b = t->data;
  char ms[32];
  snprintf(ms, sizeof ms, "%u", b->cfg.drain_timeout_ms);
  felix_log_event("error", "drain timed out: exiting without state=stopped", "timeout_ms", ms, NULL);
  (void)b;
  _exit(FELIX_EXIT_FAILURE);
}

static uv_timer_t drain_timer, handoff_timer;

static bool leads_replicated(const broker *b) {
  for (const shard *s = b->shards; s; s = s->next)
    if ((s->leading || s->fencing) && s->nmembers > 1) return true;
  return false;
}

/* The second half of a drain: refuse peers, flush, stop (§3.3). */
static void drain_flush_start(broker *b) {
  b->handing_off = false;
  b->peer_refusing = true;
  uv_timer_stop(&handoff_timer);
  for (shard *s = b->shards; s; s = s->next) broker_wake_fetches(b, s);
  broker_net_close(b);
  drain_work *d = calloc(1, sizeof *d);
  d->b = b;
  b->drain_appends_before = b->appends_total;
  d->work.data = d;
  uv_queue_work(b->loop, &d->work, drain_flush, drain_done);
}

/* Every record a replicated shard it leads has written is committed. */
static bool led_all_committed(const broker *b) {
  for (const shard *s = b->shards; s; s = s->next) {
    if (!s->leading || s->nmembers <= 1) continue;
    felix_log_stats st;
    felix_log_get_stats(s->log, &st);
    if (s->hwm < st.end_offset) return false;
  }
  return true;
}

void broker_drain_announce(broker *b) {
  if (!b->handing_off || b->drain_announced || !led_all_committed(b)) return;
  /* Only now is the control plane asked to hand off: a batch acknowledged
   * under acks=leader is held by a majority first, so the next leader has it
   * (found by the adversarial review: a drain could lose such records). */
  b->drain_announced = true;
  pthread_mutex_lock(&b->mb.mu);
  b->mb.draining = true;
  b->mb.inventory_dirty = true; /* wakes the control-plane thread: a heartbeat now */
  pthread_cond_broadcast(&b->mb.cv);
  pthread_mutex_unlock(&b->mb.mu);
  felix_log_event("info", "handing off the shards it leads", NULL);
}

void broker_handoff_check(broker *b) {
  if (!b->handing_off || leads_replicated(b)) return;
  felix_log_event("info", "handed off every replicated shard it led", NULL);
  drain_flush_start(b);
}

static void on_handoff_timeout(uv_timer_t *t) {
  broker *b = t->data;
  if (!b->handing_off) return;
  felix_log_event("warn", "hand-off not finished in time: draining anyway (the control plane fails the shards over)", NULL);
  drain_flush_start(b);
}

void broker_begin_drain(broker *b, const char *why) {
  if (b->draining) {
    felix_log_event("warn", "already draining: signal ignored (SIGKILL stops harder)", NULL);
    return;
  }
  b->draining = true;
  pthread_mutex_lock(&b->stats_mu);
  b->ready = false;
  pthread_mutex_unlock(&b->stats_mu);
  felix_log_event("info", "draining", "reason", why, NULL);
  uv_timer_init(b->loop, &drain_timer);
  drain_timer.data = b;
  uv_timer_start(&drain_timer, on_drain_timeout, b->cfg.drain_timeout_ms, 0);
  /* §4.9: producers are refused from now on; each replicated shard it
   * leads is handed to an eligible follower (a new generation through the
   * fence, whose promise ends our role) before peers are refused. */
  uv_timer_init(b->loop, &handoff_timer);
  handoff_timer.data = b;
  if (b->serving && leads_replicated(b)) {
    b->handing_off = true;
    uint32_t wait = b->cfg.drain_timeout_ms / 2;
    uv_timer_start(&handoff_timer, on_handoff_timeout, wait, 0);
    broker_drain_announce(b); /* at once, or when the last written record commits (shard_set_hwm) */
    return;
  }
  drain_flush_start(b);
}

static void on_signal(uv_signal_t *h, int signum) {
  broker_begin_drain(h->data, signum == SIGTERM ? "SIGTERM" : "SIGINT");
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
  if (broker_cp_start(b) != 0) return FELIX_EXIT_FAILURE;
  uv_run(b->loop, UV_RUN_DEFAULT);
  broker_cp_stop(b);
  return b->exit_code;
}

int broker_main(int argc, char **argv) {
  broker *b = calloc(1, sizeof *b);
  if (!b) return FELIX_EXIT_FAILURE;
  the_broker = b;
  b->dirfd = -1;
  int rc = parse_args(argc, argv, &b->cfg);
  if (rc) return rc == -2 ? FELIX_EXIT_OK : rc;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  char pid[32];
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  felix_log_event("info", "starting", "id", b->cfg.id, "data_dir", b->cfg.data_dir, "fsync_mode",
                  felix_fsync_mode_name(b->cfg.log.fsync_mode), "pid", pid, NULL);
  if (b->cfg.test_slow_drain_ms)
    felix_log_event("warn", "FELIX_TEST_SLOW_DRAIN_MS is set: the drain waits before flushing (tests only)", NULL);
  rc = broker_start_storage(b);
  if (!rc && broker_http_start(b) != 0) rc = FELIX_EXIT_FAILURE;
  if (!rc) rc = run_loop(b);
  broker_http_stop(b);
  felix_dir_lock_release(&b->lock);
  curl_global_cleanup();
  felix_log_event(rc ? "error" : "info", "exiting", "code", rc ? "nonzero" : "0", NULL);
  return rc;
}
