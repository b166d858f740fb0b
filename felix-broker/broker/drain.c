/* broker/drain.c — how a broker stops: the drain state machine (DESIGN.md
 * §3.3, §4.9) and fail-closed on a failed sync (§3.2).
 *
 * A drain goes: serving -> handing off (each replicated shard it leads gets a
 * new leader; the control plane is asked only once all it wrote is committed)
 * -> flushing (peers refused, every log synced on the thread pool) -> waiting
 * for on_commit batches still owed an answer -> closed (state=stopped written
 * only when nothing was appended after the flush began). Each step is entered
 * once; the timers bound the hand-off (half the drain timeout) and the whole
 * drain (exit 1 without state=stopped). */
#include <systemd/sd-daemon.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "broker.h"
#include "drain.h"
#include "felix/exitcode.h"
#include "felix/fileutil.h"
#include "felix/logfmt.h"

void broker_fail_closed(broker *b, const char *why) {
  felix_boot_token_remove(&b->sid, b->boot_id);
  felix_log_event("error", "a sync failed: boot token removed, exiting without acknowledging more", "reason", why, NULL);
  _exit(FELIX_EXIT_FAILURE);
}


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
    felix_status st = s->log && !s->refused ? felix_log_sync(s->log, &err) : FELIX_OK;
    if (st == FELIX_E_GONE) /* a directory deleted since the last check: that copy is made anew, not the disk */
      felix_log_event("warn", "a deleted copy is not flushed", "shard", s->dir_name, NULL);
    else if (st) {
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
  felix_boot_token_remove(&b->sid, b->boot_id); /* an identity file failed to write: fail closed (review 5, item 5) */
  felix_log_event("error", "cannot write run-state: boot token removed", "reason", err.msg, NULL);
  return false;
}

void broker_drain_continue(broker *b) {
  if (!b->draining || !b->drain.flushed || b->drain.finished) return;
  for (shard *s = b->shards; s; s = s->next)
    if (s->pending_held) return; /* an on_commit batch still owes its producer an answer */
  b->drain.finished = true;
  bool synced = b->drain.flush_ok;
  for (shard *s = b->shards; s; s = s->next) synced = shard_close(b, s) == FELIX_OK && synced;
  if (!synced) broker_fail_closed(b, "a sync failed during the drain");
  /* Never state=stopped after a failed sync or write of any copy, refused
   * ones included: the next start must not keep the ids (review 5, item 4). */
  bool clean = !atomic_load(&b->storage_failed) && b->appends_total == b->drain.appends_before && write_stopped(b);
  if (!clean && !b->exit_code) b->exit_code = FELIX_EXIT_FAILURE;
  felix_log_event(clean ? "info" : "error", clean ? "drained: run-state state=stopped" : "drain incomplete: run-state left at running", NULL);
  b->stopping = true;
  uv_walk(b->loop, close_handle, NULL);
}

static void drain_done(uv_work_t *w, int status) {
  drain_work *d = w->data;
  broker *b = d->b;
  (void)status;
  b->drain.flushed = true;
  b->drain.flush_ok = d->ok;
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
  b->drain.handing_off = false;
  b->peer_refusing = true;
  uv_timer_stop(&handoff_timer);
  for (shard *s = b->shards; s; s = s->next) broker_wake_fetches(b, s);
  broker_net_close(b);
  drain_work *d = calloc(1, sizeof *d);
  d->b = b;
  b->drain.appends_before = b->appends_total;
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
  if (!b->drain.handing_off || b->drain.announced || !led_all_committed(b)) return;
  /* Only now is the control plane asked to hand off: a batch acknowledged
   * under acks=leader is held by a majority first, so the next leader has it
   * (found by the adversarial review: a drain could lose such records). */
  b->drain.announced = true;
  broker_publish_due(b); /* the report of what was committed goes before the request to hand off */
  pthread_mutex_lock(&b->mb.mu);
  b->mb.draining = true;
  b->mb.inventory_dirty = true; /* wakes the control-plane thread: a heartbeat now */
  pthread_cond_broadcast(&b->mb.cv);
  pthread_mutex_unlock(&b->mb.mu);
  felix_log_event("info", "handing off the shards it leads", NULL);
}

void broker_handoff_check(broker *b) {
  if (!b->drain.handing_off || leads_replicated(b)) return;
  felix_log_event("info", "handed off every replicated shard it led", NULL);
  drain_flush_start(b);
}

static void on_handoff_timeout(uv_timer_t *t) {
  broker *b = t->data;
  if (!b->drain.handing_off) return;
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
  sd_notifyf(0, "STOPPING=1\nSTATUS=draining (%s): handing off led shards, then a final sync", why);
  uv_timer_init(b->loop, &drain_timer);
  drain_timer.data = b;
  uv_timer_start(&drain_timer, on_drain_timeout, b->cfg.drain_timeout_ms, 0);
  /* §4.9: producers are refused from now on; each replicated shard it
   * leads is handed to an eligible follower (a new generation through the
   * fence, whose promise ends our role) before peers are refused. */
  uv_timer_init(b->loop, &handoff_timer);
  handoff_timer.data = b;
  if (b->serving && leads_replicated(b)) {
    b->drain.handing_off = true;
    uint32_t wait = b->cfg.drain_timeout_ms / 2;
    uv_timer_start(&handoff_timer, on_handoff_timeout, wait, 0);
    broker_drain_announce(b); /* at once, or when the last written record commits (shard_set_hwm) */
    return;
  }
  drain_flush_start(b);
}

bool broker_drain_takes_assignments(const broker *b) {
  /* A draining broker takes no new role (shard_apply_assignment), but while
   * it hands off it still learns that the shards it led moved on. */
  return !b->draining || b->drain.handing_off;
}
