/* broker/cp_client.c — the broker's side of the control plane: register once per
 * process start, heartbeat on the control plane's fixed cadence (with the
 * inventory when it changed; a changed inventory also goes out at once),
 * report the shards it leads, and hand assignments to the loop.
 *
 * The HTTP calls run on their own thread (libcurl is blocking); the loop and
 * this thread share only the mailbox, under its mutex. A control-plane outage
 * never changes the incarnation: the broker registers again only when the
 * control plane says its incarnation is unknown (409 reregister). */
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker.h"
#include "felix/jsonnum.h"
#include "felix/fileutil.h"
#include "felix/lease.h"
#include "felix/logfmt.h"

typedef struct http_resp {
  char *body;
  size_t len;
} http_resp;

static size_t on_body(char *p, size_t sz, size_t n, void *ud) {
  http_resp *r = ud;
  char *nb = realloc(r->body, r->len + sz * n + 1);
  if (!nb) return 0;
  memcpy(nb + r->len, p, sz * n);
  r->body = nb;
  r->len += sz * n;
  r->body[r->len] = '\0';
  return sz * n;
}

/* POSTs json to path; returns the HTTP status, or -1 when unreachable. */
static long post_json(CURL *curl, const broker *b, const char *token, const char *path, const char *json, http_resp *resp) {
  char url[1024], auth[300];
  snprintf(url, sizeof url, "%s%s", b->cfg.control_plane, path);
  snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
  struct curl_slist *h = curl_slist_append(NULL, auth);
  h = curl_slist_append(h, "Content-Type: application/json");
  free(resp->body);
  *resp = (http_resp){0};
  curl_easy_reset(curl);
  curl_easy_setopt(curl, CURLOPT_URL, url);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, json);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, resp);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 3000L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  CURLcode rc = curl_easy_perform(curl);
  long code = -1;
  if (rc == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
  curl_slist_free_all(h);
  return code;
}

/* The inventory or report the loop printed (exact 64-bit integers), as it
 * is: parsed again, its numbers became doubles, printed back as
 * 9.00719925474099e+15 (cJSON keeps 15 digits when they compare equal
 * within an epsilon), and the control plane took 2^53 - 1 for 2^53 - 3. */
static cJSON *as_printed(const char *s) {
  return cJSON_CreateRaw(s ? s : "[]");
}

static char *register_body(broker *b, const char *inventory) {
  /* never as_printed's "[]": the control plane would forget every copy here
   * (helper-30); no inventory is out of memory, and the next pass retries */
  if (!inventory) return NULL;
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "broker_id", b->cfg.id);
  cJSON_AddStringToObject(j, "storage_id", b->sid.hex);
  cJSON_AddStringToObject(j, "boot_id", b->boot_id);
  cJSON_AddStringToObject(j, "fsync_mode", felix_fsync_mode_name(b->cfg.log.fsync_mode));
  cJSON_AddStringToObject(j, "address", b->cfg.listen);
  cJSON_AddStringToObject(j, "http_address", b->cfg.http);
  cJSON_AddBoolToObject(j, "rotated", b->rotated);
  /* This directory's own earlier id: the old process was the lock holder. */
  if (b->previous_sid[0]) cJSON_AddStringToObject(j, "previous_storage_id", b->previous_sid);
  cJSON_AddNumberToObject(j, "unread_copies", b->unread_copies); /* counted at start, before this thread ran */
  cJSON_AddItemToObject(j, "inventory", as_printed(inventory));
  char *s = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  return s;
}

static char *heartbeat_body(broker *b, const char *incarnation, const char *inventory) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "broker_id", b->cfg.id);
  cJSON_AddStringToObject(j, "incarnation", incarnation);
  if (inventory) cJSON_AddItemToObject(j, "inventory", as_printed(inventory));
  pthread_mutex_lock(&b->mb.mu);
  if (b->mb.draining) cJSON_AddTrueToObject(j, "draining");
  pthread_mutex_unlock(&b->mb.mu);
  char *s = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  return s;
}

static char *report_body(broker *b, const char *incarnation, uint64_t seq, const char *shards) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "broker_id", b->cfg.id);
  cJSON_AddStringToObject(j, "incarnation", incarnation);
  felix_json_add_u64(j, "seq", seq);
  cJSON_AddItemToObject(j, "shards", as_printed(shards));
  char *s = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  return s;
}

typedef struct cp_session {
  broker *b;
  CURL *curl;
  char token[256];
  char incarnation[128];
  bool registered;
  uint64_t seq;
  http_resp resp;
  time_t last_complaint;
  uint64_t last_late_warn_ms;
  uint64_t period_ms;  /* mb.heartbeat_ms when the pass began (1 s until a reply named one) */
  bool inventory_owed; /* an inventory was not delivered: the next heartbeat sends the newest */
} cp_session;

static void complain(cp_session *cs, const char *msg, long code) {
  time_t now = time(NULL);
  if (now - cs->last_complaint < 5) return; /* one line per 5 s while it lasts */
  cs->last_complaint = now;
  char c[16];
  snprintf(c, sizeof c, "%ld", code);
  felix_log_event("warn", msg, "control_plane", cs->b->cfg.control_plane, "status", c, "body", cs->resp.body ? cs->resp.body : "", NULL);
}

/* Takes the loop's newest inventory (when dirty or forced). */
static char *take_inventory(broker *b, bool force) {
  pthread_mutex_lock(&b->mb.mu);
  char *inv = (b->mb.inventory_dirty || force) && b->mb.inventory_json ? strdup(b->mb.inventory_json) : NULL;
  b->mb.inventory_dirty = false;
  pthread_mutex_unlock(&b->mb.mu);
  return inv;
}

/* sent_ms: CLOCK_BOOTTIME when the request left, which the per-shard lease
 * of leader acknowledgements counts from (§4.2). */
static void deliver(cp_session *cs, uint64_t sent_ms) {
  broker *b = cs->b;
  /* A new control-plane instance is noticed by the loop (broker_apply_cp),
   * which publishes an inventory stamped with it: only that one counts. */
  pthread_mutex_lock(&b->mb.mu);
  free(b->mb.assignments_json);
  b->mb.assignments_json = cs->resp.body;
  b->mb.assignments_sent_ms = sent_ms;
  b->mb.heartbeat_ok_ms = sent_ms;
  snprintf(b->mb.incarnation, sizeof b->mb.incarnation, "%s", cs->incarnation);
  b->mb.registered = true;
  pthread_mutex_unlock(&b->mb.mu);
  cs->resp = (http_resp){0};
  uv_async_send(&b->cp_async);
}

/* A wrong token never becomes right by retrying: the loop is told, and
 * the broker drains and exits with FELIX_EXIT_UNAUTHORIZED. */
static void refused_token(cp_session *cs) {
  broker *b = cs->b;
  felix_log_event("error", "the control plane refused this broker's token (401): give --token-file (or FELIX_BROKER_TOKEN_FILE) the control plane's broker token, <db>.broker-token, not the admin token",
                  "control_plane", b->cfg.control_plane, "token_file", b->cfg.token_file, NULL);
  pthread_mutex_lock(&b->mb.mu);
  b->mb.unauthorized = true;
  b->mb.stop = true; /* this thread has nothing more to say */
  pthread_mutex_unlock(&b->mb.mu);
  uv_async_send(&b->cp_async);
}

static void do_register(cp_session *cs) {
  char *inv = take_inventory(cs->b, true);
  char *body = register_body(cs->b, inv);
  free(inv);
  if (!body) {
    felix_log_event("error", "out of memory: the registration waits for the next pass", NULL);
    return;
  }
  uint64_t sent_ms = felix_boottime_ms();
  long code = post_json(cs->curl, cs->b, cs->token, "/v1/broker/register", body, &cs->resp);
  free(body);
  cJSON *j = code == 200 ? cJSON_Parse(cs->resp.body) : NULL;
  const cJSON *inc = j ? cJSON_GetObjectItem(j, "incarnation") : NULL;
  if (cJSON_IsString(inc)) {
    snprintf(cs->incarnation, sizeof cs->incarnation, "%s", inc->valuestring);
    cs->registered = true;
    cs->seq = 0;
    felix_log_event("info", "registered", "broker", cs->b->cfg.id, "storage_id", cs->b->sid.hex, "incarnation", cs->incarnation,
                    "rotated", cs->b->rotated ? "true" : "false", NULL);
    deliver(cs, sent_ms);
  } else if (code == 401) {
    refused_token(cs);
  } else {
    complain(cs, code < 0 ? "control plane unreachable; will retry registration" : "registration refused; will retry", code);
  }
  cJSON_Delete(j);
}

static void do_heartbeat(cp_session *cs) {
  char *inv = take_inventory(cs->b, cs->inventory_owed);
  char *body = heartbeat_body(cs->b, cs->incarnation, inv);
  uint64_t sent_ms = felix_boottime_ms();
  long code = post_json(cs->curl, cs->b, cs->token, "/v1/broker/heartbeat", body, &cs->resp);
  free(body);
  if (code == 200) {
    if (inv) cs->inventory_owed = false;
    deliver(cs, sent_ms);
  } else {
    if (inv) cs->inventory_owed = true; /* not delivered: the next periodic heartbeat carries it */
    if (code == 409) {
      felix_log_event("warn", "control plane does not know this incarnation; registering again", "incarnation", cs->incarnation, NULL);
      cs->registered = false;
    } else {
      complain(cs, code < 0 ? "control plane unreachable; serving on" : "heartbeat refused", code);
    }
  }
  free(inv);
}

static void do_report(cp_session *cs) {
  broker *b = cs->b;
  pthread_mutex_lock(&b->mb.mu);
  char *shards = b->mb.report_json ? strdup(b->mb.report_json) : NULL;
  b->mb.report_dirty = false;
  pthread_mutex_unlock(&b->mb.mu);
  if (!shards) return;
  char *body = report_body(b, cs->incarnation, ++cs->seq, shards);
  free(shards);
  long code = post_json(cs->curl, b, cs->token, "/v1/broker/report", body, &cs->resp);
  free(body);
  if (code != 200) complain(cs, "report not accepted", code);
}

/* Heartbeats keep a fixed cadence taken from the clock: one is due a period
 * after the last periodic one went out, whatever news came in between. (A
 * deadline advanced on every wake-up once ran many seconds ahead under a
 * trickle of records, and the lease lapsed when the trickle stopped.) The
 * period is the control plane's heartbeat_ms, which the loop reads from
 * the replies it applies (1 s until then). News —
 * a changed inventory, a report — goes out between heartbeats, at most one
 * pass per NEWS_GAP_MS, and does not move the deadline; an inventory a
 * failed call did not deliver waits for the next periodic heartbeat. */
#define NEWS_GAP_MS 50u

static struct timespec monotonic_at(uint64_t ms) {
  return (struct timespec){.tv_sec = (time_t)(ms / 1000u), .tv_nsec = (long)(ms % 1000u) * 1000000L};
}

/* A heartbeat that leaves a whole period after its due time eats into the lease the
 * control plane counts: say so (at most once per 5 s). */
static void note_late(cp_session *cs, uint64_t due_ms, uint64_t now_ms) {
  uint64_t threshold = cs->period_ms > 100u ? cs->period_ms : 100u; /* no warning for scheduling jitter */
  if (now_ms < due_ms + threshold || now_ms < cs->last_late_warn_ms + 5000u) return;
  cs->last_late_warn_ms = now_ms;
  char late[32];
  snprintf(late, sizeof late, "%" PRIu64, now_ms - due_ms);
  felix_log_event("warn", "heartbeat went out late", "late_ms", late, "control_plane", cs->b->cfg.control_plane, NULL);
}

/* One pass: register, or the heartbeat when due (or carrying a changed
 * inventory), then the report. Returns the new time of the last periodic send. */
static uint64_t cp_pass(cp_session *cs, uint64_t last_beat_ms, bool inventory_news) {
  uint64_t now = felix_monotonic_ms();
  if (!cs->registered) {
    do_register(cs);
    return now;
  }
  bool due = now >= last_beat_ms + cs->period_ms;
  if (due) note_late(cs, last_beat_ms + cs->period_ms, now);
  if (due || inventory_news) do_heartbeat(cs);
  do_report(cs);
  return due ? now : last_beat_ms;
}

/* When the next pass is due: the heartbeat deadline, or sooner when news
 * waits; never sooner than a gap after the last call ended, so neither news
 * nor failing calls make the thread spin. Called with the mailbox locked. */
static uint64_t next_pass_ms(const cp_session *cs, uint64_t last_beat, uint64_t ended) {
  const broker *b = cs->b;
  uint64_t deadline = last_beat + cs->period_ms;
  bool news = cs->registered && (b->mb.report_dirty || b->mb.inventory_dirty);
  uint64_t gap = cs->period_ms / 2 < NEWS_GAP_MS ? cs->period_ms / 2 : NEWS_GAP_MS;
  uint64_t wake = news && ended + NEWS_GAP_MS < deadline ? ended + NEWS_GAP_MS : deadline;
  return wake < ended + gap ? ended + gap : wake;
}

static void *cp_thread_main(void *arg) {
  cp_session cs = {.b = arg, .period_ms = 1000};
  broker *b = cs.b;
  cs.curl = curl_easy_init();
  char *tok;
  felix_err err;
  if (felix_read_file(AT_FDCWD, b->cfg.token_file, 4096, &tok, NULL, b->cfg.token_file, &err) == FELIX_OK) {
    tok[strcspn(tok, "\r\n")] = '\0';
    snprintf(cs.token, sizeof cs.token, "%s", tok);
    free(tok);
  }
  uint64_t last_beat = 0;
  pthread_mutex_lock(&b->mb.mu);
  while (!b->mb.stop) {
    bool inventory_news = b->mb.inventory_dirty;
    if (b->mb.heartbeat_ms) cs.period_ms = b->mb.heartbeat_ms;
    pthread_mutex_unlock(&b->mb.mu);
    last_beat = cp_pass(&cs, last_beat, inventory_news);
    uint64_t ended = felix_monotonic_ms();
    pthread_mutex_lock(&b->mb.mu);
    /* Re-evaluated on every wake-up: news that arrives meanwhile brings the
     * pass forward, but no earlier than the gap allows. */
    for (uint64_t wake; !b->mb.stop && felix_monotonic_ms() < (wake = next_pass_ms(&cs, last_beat, ended));) {
      struct timespec until = monotonic_at(wake);
      pthread_cond_timedwait(&b->mb.cv, &b->mb.mu, &until);
    }
  }
  pthread_mutex_unlock(&b->mb.mu);
  free(cs.resp.body);
  curl_easy_cleanup(cs.curl);
  return NULL;
}

int broker_cp_start(broker *b) {
  pthread_mutex_init(&b->mb.mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&b->mb.cv, &ca);
  pthread_condattr_destroy(&ca);
  /* Now, not at the loop's next turn: the registration carries it, and only
   * a registration's inventory is checked against the floors (§4.5; found
   * by the review of the deferred publish). */
  broker_publish_inventory(b);
  broker_publish_due(b);
  return pthread_create(&b->cp_thread, NULL, cp_thread_main, b);
}

void broker_cp_stop(broker *b) {
  pthread_mutex_lock(&b->mb.mu);
  b->mb.stop = true;
  pthread_cond_broadcast(&b->mb.cv);
  pthread_mutex_unlock(&b->mb.mu);
  pthread_join(b->cp_thread, NULL);
}
