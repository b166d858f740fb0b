/* broker/watchdog.c — what a hang on the loop would hide, told from a thread
 * of its own (helper-29).
 *
 * A sync made under a log's lock (a segment seal or create, a truncation, a
 * trim) runs on the loop thread: while it hangs, the loop runs no timer, so
 * neither its log lines nor its /metrics can say so. This thread reads each
 * open copy's disk syncs without the log's lock (felix_log_disk_waiting) and
 * the loop's tick stamp, every WATCH_PASS_MS; it logs a hung sync and a loop
 * that stopped ticking, and renders felix_sync_in_flight_seconds and
 * felix_loop_stall_seconds, which /metrics serves beside the loop's text.
 *
 * Lock order: the loop takes w->mu only to add or remove a copy, never while
 * it holds a log's lock; this thread takes nothing else under w->mu but
 * felix_log_event's own lock. */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker.h"
#include "felix/lease.h"
#include "felix/logfmt.h"
#include "felix/metrics.h"

#define WATCH_PASS_MS 250
/* A pass later than this after the one before says the whole process (or
 * the machine) stood still, SIGSTOP say: that gap counts as no one's stall. */
#define WATCH_GAP_MS 1000

void watch_init(broker_watch *w) {
  pthread_mutex_init(&w->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&w->cv, &ca);
  pthread_condattr_destroy(&ca);
}

void watch_add(broker *b, const shard *s) {
  broker_watch *w = &b->watch;
  assert(s->log);
  pthread_mutex_lock(&w->mu);
  if (w->n == w->cap) {
    size_t nc = w->cap ? w->cap * 2 : 16;
    watch_copy *nv = realloc(w->copies, nc * sizeof *nv);
    if (!nv) { /* out of memory: this copy goes unwatched, as the lines say */
      pthread_mutex_unlock(&w->mu);
      felix_log_event("error", "out of memory: a hung sync of this copy would not be logged", "shard", s->dir_name, NULL);
      return;
    }
    w->copies = nv, w->cap = nc;
  }
  watch_copy *c = &w->copies[w->n++];
  memset(c, 0, sizeof *c);
  c->log = s->log;
  snprintf(c->shard, sizeof c->shard, "%s", s->dir_name);
  char idx[16];
  snprintf(idx, sizeof idx, "%u", s->index);
  felix_metrics_labels(c->labels, sizeof c->labels, "stream", s->stream, "shard", idx, NULL);
  c->mode = felix_log_mode(s->log);
  pthread_mutex_unlock(&w->mu);
}

void watch_remove(broker *b, const felix_log *log) {
  broker_watch *w = &b->watch;
  pthread_mutex_lock(&w->mu);
  for (size_t i = 0; i < w->n; i++)
    if (w->copies[i].log == log) {
      w->copies[i] = w->copies[--w->n];
      break;
    }
  pthread_mutex_unlock(&w->mu);
}

void watch_loop_ticked(broker *b) { atomic_fetch_add(&b->watch.loop_ticks, 1); }

/* What a pass has to say, written once it let go of w->mu: an HTTP probe
 * (/ready, /metrics) takes w->mu, and must not wait on a write to stderr
 * (a full pipe) behind it (helper-31). */
typedef enum { SYNC_STUCK, SYNC_BACK, LOOP_STUCK, LOOP_BACK } watch_said;
typedef struct watch_line {
  watch_said said;
  char shard[300];
  const char *what;
  felix_fsync_mode mode;
  uint64_t ms, bytes;
} watch_line;
typedef struct watch_lines {
  watch_line *v;
  size_t n, cap;
} watch_lines;

static watch_line *say(watch_lines *out, watch_said said, const char *copy) {
  if (out->n == out->cap) {
    size_t nc = out->cap ? out->cap * 2 : 8;
    watch_line *nv = realloc(out->v, nc * sizeof *nv);
    if (!nv) return NULL; /* out of memory: the line is left out */
    out->v = nv, out->cap = nc;
  }
  watch_line *l = &out->v[out->n++];
  memset(l, 0, sizeof *l);
  l->said = said;
  snprintf(l->shard, sizeof l->shard, "%s", copy ? copy : "");
  return l;
}

static void write_line(const watch_line *l) {
  char ms[32], bytes[32];
  snprintf(ms, sizeof ms, "%" PRIu64, l->ms);
  snprintf(bytes, sizeof bytes, "%" PRIu64, l->bytes);
  switch (l->said) {
  case SYNC_STUCK: /* whether it holds the loop too, the loop's own line says */
    felix_log_event("warn", "a sync of the log has not returned: is the disk hung?", "shard", l->shard, "for_ms", ms,
                    "unsynced_bytes", bytes, "fsync_mode", felix_fsync_mode_name(l->mode), "acknowledged_unsynced",
                    felix_fsync_mode_relaxed(l->mode) ? "yes" : "no", "sync", l->what, NULL);
    break;
  case SYNC_BACK:
    felix_log_event("info", "the stalled sync of the log returned", "shard", l->shard, "sync", l->what, "after_ms", ms, NULL);
    break;
  case LOOP_STUCK:
    felix_log_event("warn", "the broker's loop has not run: publishes, replication and its metrics wait", "for_ms", ms,
                    NULL);
    break;
  case LOOP_BACK: felix_log_event("info", "the broker's loop runs again", "after_ms", ms, NULL); break;
  }
}

/* The part of since_last_pass_ms this thread watched: none of a gap in
 * which it stood still itself (the whole process was stopped). */
static uint64_t watched(uint64_t since_last_pass_ms) { return since_last_pass_ms <= WATCH_GAP_MS ? since_last_pass_ms : 0; }

/* One warn line when a sync has been watched for SYNC_STALL_LOG_MS, one info
 * line when it returns; by the sync (its start), not the copy: under
 * on_commit syncs run back to back, and a pass rarely sees none running
 * (helper-29). The watched time leaves out a stop of the whole process
 * (SIGSTOP), whose sync returns when it goes on (helper-31). */
static void watch_sync(watch_copy *c, const felix_log_disk_wait *d, uint64_t now_ns, uint64_t since_last_pass_ms,
                       watch_lines *out) {
  if (c->stalled_ns && d->started_ns != c->stalled_ns) {
    watch_line *l = say(out, SYNC_BACK, c->shard);
    if (l) l->what = c->stalled_what, l->ms = (now_ns - c->stalled_ns) / 1000000u;
    c->stalled_ns = 0;
  }
  if (d->started_ns != c->watching_ns) { /* another sync, or none */
    c->watching_ns = d->started_ns;
    c->watched_ms = d->ms < watched(since_last_pass_ms) ? d->ms : watched(since_last_pass_ms);
  } else if (d->started_ns) {
    c->watched_ms += watched(since_last_pass_ms);
  }
  if (d->started_ns && c->watched_ms >= SYNC_STALL_LOG_MS && !c->stalled_ns) {
    c->stalled_ns = d->started_ns;
    c->stalled_what = d->what;
    watch_line *l = say(out, SYNC_STUCK, c->shard);
    if (l) l->what = d->what, l->ms = d->ms, l->bytes = d->unsynced_bytes, l->mode = c->mode;
  }
}

/* The loop ticks every 500 ms (on_metrics_timer): quiet for LOOP_STALL_LOG_MS
 * of this thread's own watching, it is stuck (a sync under a log's lock, or
 * anything else that blocks it). */
static void watch_loop(broker_watch *w, uint64_t since_last_pass_ms, watch_lines *out) {
  uint64_t ticks = atomic_load(&w->loop_ticks);
  if (ticks == 0) return; /* not running yet: the start's recovery is not a stall */
  if (ticks != w->seen_ticks) {
    watch_line *l = w->loop_logged ? say(out, LOOP_BACK, NULL) : NULL;
    if (l) l->ms = w->quiet_ms;
    w->seen_ticks = ticks, w->quiet_ms = 0, w->loop_logged = false;
    return;
  }
  w->quiet_ms += watched(since_last_pass_ms);
  if (w->quiet_ms >= LOOP_STALL_LOG_MS && !w->loop_logged) {
    w->loop_logged = true;
    watch_line *l = say(out, LOOP_STUCK, NULL);
    if (l) l->ms = w->quiet_ms;
  }
}

static uint64_t monotonic_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void watch_pass(broker_watch *w, uint64_t since_last_pass_ms) {
  felix_metrics m = {0};
  watch_lines lines = {0};
  uint64_t now_ns = monotonic_ns();
  pthread_mutex_lock(&w->mu);
  watch_loop(w, since_last_pass_ms, &lines);
  felix_metrics_family(&m, "felix_loop_stall_seconds", "gauge",
                       "How long the broker's loop has gone without its half-second tick, as its watchdog thread sees it.");
  felix_metrics_double(&m, "felix_loop_stall_seconds", "", (double)w->quiet_ms / 1000);
  felix_metrics_family(&m, "felix_sync_in_flight_seconds", "gauge",
                       "How long the oldest fsync of this copy's log now running has run (0: none); a hung disk makes it grow.");
  for (size_t i = 0; i < w->n; i++) {
    watch_copy *c = &w->copies[i];
    felix_log_disk_wait d;
    felix_log_disk_waiting(c->log, &d);
    watch_sync(c, &d, now_ns > d.started_ns ? now_ns : d.started_ns, since_last_pass_ms, &lines);
    felix_metrics_double(&m, "felix_sync_in_flight_seconds", c->labels, (double)d.ms / 1000);
  }
  char *t = felix_metrics_take(&m);
  if (t) free(w->text), w->text = t; /* out of memory: the last text stays */
  pthread_mutex_unlock(&w->mu);
  for (size_t i = 0; i < lines.n; i++) write_line(&lines.v[i]);
  free(lines.v);
}

static void *watch_main(void *arg) {
  broker_watch *w = arg;
  uint64_t last = felix_monotonic_ms();
  pthread_mutex_lock(&w->mu);
  while (!w->stopping) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec + WATCH_PASS_MS * 1000000ull;
    ts.tv_sec += (time_t)(ns / 1000000000u), ts.tv_nsec = (long)(ns % 1000000000u);
    while (!w->stopping && pthread_cond_timedwait(&w->cv, &w->mu, &ts) == 0) {
    }
    if (w->stopping) break;
    pthread_mutex_unlock(&w->mu);
    uint64_t now = felix_monotonic_ms();
    watch_pass(w, now - last);
    last = now;
    pthread_mutex_lock(&w->mu);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

int watch_start(broker *b) {
  b->watch.running = pthread_create(&b->watch.thread, NULL, watch_main, &b->watch) == 0;
  if (!b->watch.running) felix_log_event("error", "cannot start the watchdog thread", NULL);
  return b->watch.running ? 0 : -1;
}

void watch_stop(broker *b) {
  broker_watch *w = &b->watch;
  pthread_mutex_lock(&w->mu);
  w->stopping = true;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  if (w->running) pthread_join(w->thread, NULL);
  w->running = false;
}

char *watch_metrics_text(broker *b) {
  pthread_mutex_lock(&b->watch.mu);
  char *t = strdup(b->watch.text ? b->watch.text : "");
  pthread_mutex_unlock(&b->watch.mu);
  return t;
}
