/* top_model.c — the data and the text lines of `felixctl top` (see
 * top_model.h). Everything here is plain C over the control plane's JSON, so
 * the view's content is tested without a terminal. */
#include "top_model.h"

#include "felix/cli.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

static double num(const cJSON *o, const char *k) {
  const cJSON *v = get(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *str(const cJSON *o, const char *k) {
  const cJSON *v = get(o, k);
  return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : "-";
}

/* Copies at most width columns of line into out (ASCII only is drawn). */
static void fit(char *out, size_t cap, int width, const char *line) {
  size_t w = width > 0 ? (size_t)width : 0;
  if (w >= cap) w = cap - 1;
  size_t n = strnlen(line, w); /* cut on purpose: memcpy, not a truncating snprintf */
  memcpy(out, line, n);
  out[n] = '\0';
}

/* --- fetching ------------------------------------------------------------- */

static int fetch_one(const ctl_opts *o, const char *path, cJSON **out) {
  ctl_reply r;
  int rc = ctl_http(o, "GET", path, NULL, &r);
  if (rc) return rc;
  *out = r.json;
  r.json = NULL;
  ctl_reply_free(&r);
  return 0;
}

static double monotonic_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

int top_fetch(const ctl_opts *o, const char *open_shard, top_snapshot *out, char *err, size_t cap) {
  memset(out, 0, sizeof *out);
  out->fetched_ms = monotonic_ms();
  out->fetched_at = (long)time(NULL);
  ctl_error_capture(err, cap);
  int rc = fetch_one(o, "/v1/cluster", &out->cluster);
  if (!rc) rc = fetch_one(o, "/v1/brokers", &out->brokers);
  if (!rc) rc = fetch_one(o, "/v1/shards", &out->shards);
  char path[600];
  snprintf(path, sizeof path, "/v1/events?limit=%d", TOP_EVENTS);
  if (!rc) rc = fetch_one(o, path, &out->events);
  char stream[256];
  uint32_t shard;
  if (!rc && open_shard && ctl_parse_stream_shard(open_shard, stream, sizeof stream, &shard) &&
      ctl_shard_path(stream, shard, "/history", path, sizeof path) == 0)
    rc = fetch_one(o, path, &out->history);
  ctl_error_capture(NULL, 0);
  if (rc) top_snapshot_free(out);
  return rc;
}

void top_snapshot_free(top_snapshot *s) {
  cJSON_Delete(s->cluster);
  cJSON_Delete(s->brokers);
  cJSON_Delete(s->shards);
  cJSON_Delete(s->events);
  cJSON_Delete(s->history);
  cJSON_Delete(s->base_shards);
  memset(s, 0, sizeof *s);
}

/* --- shards: order and filter ------------------------------------------------ */

static const cJSON *find_shard(const cJSON *shards, const cJSON *like) {
  const cJSON *s;
  cJSON_ArrayForEach(s, shards) if (!strcmp(str(s, "stream"), str(like, "stream")) && num(s, "shard") == num(like, "shard")) return s;
  return NULL;
}

/* Whether two samples of a shard come from one stream instance: the same
 * leader copy at the same or a later generation. Another copy (one replaced,
 * or of a recreated stream) has another log, so the difference of its HWM or
 * size is no rate: a spike, or a drop to 0. */
static bool same_instance(const cJSON *s, const cJSON *p) {
  const char *copy = str(s, "leader_copy_id");
  return strcmp(copy, "-") && !strcmp(copy, str(p, "leader_copy_id")) && num(s, "generation") >= num(p, "generation");
}

/* The rates of s since p, dt seconds earlier; bytes only when both samples
 * have the leader's log size (null until its first report). */
static void measure_rates(cJSON *s, const cJSON *p, double dt) {
  assert(dt > 0);
  double d = num(s, "hwm") - num(p, "hwm"); /* a HWM lowered by an abandon is no negative rate */
  cJSON_AddNumberToObject(s, "records_per_second", d > 0 ? d / dt : 0);
  const cJSON *b = get(s, "log_bytes"), *pb = get(p, "log_bytes");
  if (!cJSON_IsNumber(b) || !cJSON_IsNumber(pb)) return;
  d = b->valuedouble - pb->valuedouble;
  cJSON_AddNumberToObject(s, "bytes_per_second", d > 0 ? d / dt : 0);
}

static void keep_rate(cJSON *s, const cJSON *p, const char *key) {
  const cJSON *r = get(p, key);
  if (cJSON_IsNumber(r)) cJSON_AddNumberToObject(s, key, r->valuedouble);
}

void top_add_rates(top_snapshot *cur, const top_snapshot *prev) {
  assert(!cur->base_shards);
  if (!prev) return;
  const cJSON *base = prev->base_shards ? prev->base_shards : prev->shards;
  double base_ms = prev->base_shards ? prev->base_ms : prev->fetched_ms;
  /* a few milliseconds give a rate of noise: keep the shown ones instead */
  bool early = cur->fetched_ms - base_ms < TOP_REFRESH_MS;
  cJSON *s;
  cJSON_ArrayForEach(s, cur->shards) {
    const cJSON *p = find_shard(early ? prev->shards : base, s);
    if (!p || !same_instance(s, p)) continue;
    if (early) keep_rate(s, p, "records_per_second"), keep_rate(s, p, "bytes_per_second");
    else measure_rates(s, p, (cur->fetched_ms - base_ms) / 1000.0);
  }
  if (!early) return;
  /* out of memory it stays NULL: cur is the baseline, and the next refresh
   * too soon after it keeps the rates again */
  cur->base_shards = cJSON_Duplicate(base, true);
  cur->base_ms = base_ms;
}

const char *top_sort_name(top_sort k) {
  static const char *const names[TOP_SORT_N] = {"urgency", "name", "hwm", "rate", "bytes", "lag"};
  return k < TOP_SORT_N ? names[k] : "?";
}

int top_shard_urgency(const cJSON *shard) {
  const char *st = str(shard, "state");
  return !strcmp(st, "NoCaughtUpReplica") ? 0 : !strcmp(st, "Fencing") ? 1 : 2;
}

const char *top_shard_name(const cJSON *shard, char *buf, size_t cap) {
  snprintf(buf, cap, "%s/%.0f", str(shard, "stream"), num(shard, "shard"));
  return buf;
}

static int cmp_desc(double x, double y) { return (x < y) - (x > y); }

/* By a rate, the largest first; an unknown one ("-") is no 0 and no
 * maximum: it comes after every known one. */
static int cmp_rate(const cJSON *x, const cJSON *y, const char *key) {
  bool kx = cJSON_IsNumber(get(x, key)), ky = cJSON_IsNumber(get(y, key));
  if (kx != ky) return (int)ky - (int)kx;
  return kx ? cmp_desc(num(x, key), num(y, key)) : 0;
}

static top_sort sort_key; /* qsort has no context argument */

static int cmp_shards(const void *a, const void *b) {
  const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
  int d = 0;
  switch (sort_key) {
  case TOP_SORT_URGENCY: d = top_shard_urgency(x) - top_shard_urgency(y); break;
  case TOP_SORT_HWM: d = cmp_desc(num(x, "hwm"), num(y, "hwm")); break;
  case TOP_SORT_RATE: d = cmp_rate(x, y, "records_per_second"); break;
  case TOP_SORT_BYTES: d = cmp_rate(x, y, "bytes_per_second"); break;
  case TOP_SORT_LAG: d = cmp_desc(num(x, "max_lag_records"), num(y, "max_lag_records")); break;
  default: break;
  }
  if (d) return d;
  d = strcmp(str(x, "stream"), str(y, "stream"));
  return d ? d : (num(x, "shard") > num(y, "shard")) - (num(x, "shard") < num(y, "shard"));
}

/* Whether "STREAM/N" (whole: the SHARD column may cut it) or the shard's
 * line (its state, leader, followers...) contains filter. */
static bool shard_matches(const cJSON *s, const char *filter) {
  char name[300], line[1024]; /* the line is formatted only to be searched, every follower in it */
  if (strstr(top_shard_name(s, name, sizeof name), filter)) return true;
  top_shard_line(s, line, sizeof line, (int)sizeof line - 1);
  return strstr(line, filter) != NULL;
}

size_t top_shard_order(const cJSON *shards, const char *filter, top_sort sort, const cJSON **out, size_t cap) {
  size_t n = 0;
  const cJSON *s;
  cJSON_ArrayForEach(s, shards) {
    if (n == cap) break;
    if (!filter || !filter[0] || shard_matches(s, filter)) out[n++] = s;
  }
  sort_key = sort;
  qsort(out, n, sizeof *out, cmp_shards);
  return n;
}

/* --- lines ------------------------------------------------------------------ */

void top_status_line(const char *filter, top_sort sort, char *out, size_t cap, int width) {
  char line[512];
  snprintf(line, sizeof line, "q quit  / filter%s%s%s  s sort: %s  arrows select  Enter open  Esc back  ? help",
           filter[0] ? " [" : "", filter, filter[0] ? "]" : "", top_sort_name(sort));
  fit(out, cap, width, line);
}

void top_header_line(const ctl_opts *o, const top_snapshot *s, char *out, size_t cap, int width) {
  const cJSON *c = s->cluster;
  char line[512], at[16] = "--:--:--";
  const char *cp = strstr(o->control_plane, "://");
  time_t t = (time_t)s->fetched_at;
  struct tm tm;
  if (t && localtime_r(&t, &tm)) strftime(at, sizeof at, "%H:%M:%S", &tm);
  /* fits 80 columns with a local address; the status line names the order */
  snprintf(line, sizeof line, "%s %s  brokers %.0f/%.0f  shards %.0f: NoCaughtUpReplica %.0f  Fencing %.0f%s",
           cp ? cp + 3 : o->control_plane, at, num(c, "brokers_alive"), num(c, "brokers_total"), num(c, "shards_total"),
           num(c, "shards_no_caught_up_replica"), num(c, "shards_fencing"),
           cJSON_IsTrue(get(c, "start_up_wait_open")) ? "  waiting for inventories" : "");
  fit(out, cap, width, line);
}

/* One format for the heading and the lines, so the columns cannot drift:
 * 80 columns exactly. */
#define BROKER_COLUMNS "%-10.10s %-10.10s %-16.16s %-5s %-9.9s %-9.9s %6s %8s"

void top_broker_heading(char *out, size_t cap, int width) {
  char line[512];
  snprintf(line, sizeof line, BROKER_COLUMNS, "BROKER", "STORAGE-ID", "INCARNATION", "ALIVE", "FSYNC", "LEASE-AGE",
           "REC/S", "B/S");
  fit(out, cap, width, line);
}

/* The last `n` characters of s: incarnations share their long prefix. */
static const char *tail(const char *s, size_t n) {
  size_t len = strlen(s);
  return len > n ? s + len - n : s;
}

/* Records per second in the 6 columns of REC/S: "12.5", "617", "12.3k",
 * "1.2M"; "-" unknown (before a second snapshot, across another instance). */
static const char *rate_text(const cJSON *r, char buf[32]) {
  static const felix_unit units[] = {
      {"", 1, 99.95, 1000}, {"k", 1e3, 1000, 1000}, {"M", 1e6, 1000, 1000}, {"G", 1e9, 1000, 1000}, {"T", 1e12, 1000, 1000},
  };
  if (!cJSON_IsNumber(r)) return "-";
  felix_format_units(r->valuedouble, units, sizeof units / sizeof units[0], buf, 32);
  assert(strlen(buf) <= 6);
  return buf;
}

/* A lease age in the 9 columns of LEASE-AGE: "412 ms", "41.2 s", "12.5 min",
 * "3.2 h", "1.4 d"; a dead broker's grows without bound. */
static const char *age_text(const cJSON *ms, char buf[32]) {
  static const felix_unit units[] = {
      {" ms", 1, 0, 10000}, {" s", 1e3, 60, 60}, {" min", 6e4, 60, 60}, {" h", 3.6e6, 24, 24}, {" d", 8.64e7, 100, 1e5},
  };
  if (!cJSON_IsNumber(ms)) return "-";
  felix_format_units(ms->valuedouble, units, sizeof units / sizeof units[0], buf, 32);
  assert(strlen(buf) <= 9);
  return buf;
}

/* "1.5 KiB" per second, "-" unknown (before a second snapshot, the leader's
 * first report, or across a change of leader). */
static const char *bytes_text(const cJSON *r, char buf[32]) {
  if (!cJSON_IsNumber(r)) return "-";
  felix_human_bytes(r->valuedouble, buf);
  return buf;
}

/* The sum of `key` over the shards b leads, as a number (NULL when none has one). */
static cJSON *led_sum(const cJSON *b, const cJSON *shards, const char *key) {
  double sum = 0;
  bool known = false;
  const cJSON *s;
  cJSON_ArrayForEach(s, shards) {
    if (strcmp(str(s, "leader"), str(b, "id")) || !cJSON_IsNumber(get(s, key))) continue;
    known = true;
    sum += num(s, key);
  }
  return known ? cJSON_CreateNumber(sum) : NULL;
}

void top_broker_line(const cJSON *b, const cJSON *shards, char *out, size_t cap, int width) {
  char line[512], age[32], rate[32], bytes[32];
  cJSON *records = led_sum(b, shards, "records_per_second"), *octets = led_sum(b, shards, "bytes_per_second");
  snprintf(line, sizeof line, BROKER_COLUMNS, str(b, "id"), str(b, "storage_id"), tail(str(b, "incarnation"), 16),
           cJSON_IsTrue(get(b, "alive")) ? "yes" : "NO", str(b, "fsync_mode"), age_text(get(b, "lease_age_ms"), age),
           rate_text(records, rate), bytes_text(octets, bytes));
  cJSON_Delete(records);
  cJSON_Delete(octets);
  fit(out, cap, width, line);
}

/* HWM: 7 digits fit before the columns shift (10 million records); at 80
 * columns two followers still show, each with its mark. */
#define SHARD_WIDTH 13
#define SHARD_COLUMNS "%-13.13s %3s %-6.6s %-17.17s %7s %6s %8s"

void top_shard_heading(char *out, size_t cap, int width) {
  char line[512];
  snprintf(line, sizeof line, SHARD_COLUMNS " %s", "SHARD", "GEN", "LEADER", "STATE", "HWM", "REC/S", "B/S",
           "FOLLOWER -LAG");
  fit(out, cap, width, line);
}

/* "STREAM/N" in SHARD_WIDTH columns: a stream name too long for it is cut
 * and marked '~' ("transacti~/12"), so the shard number, which tells a
 * stream's shards apart, always shows. */
static const char *shard_cell(const cJSON *s, char buf[SHARD_WIDTH + 1]) {
  char name[300], number[32];
  top_shard_name(s, name, sizeof name);
  int n = snprintf(number, sizeof number, "/%.0f", num(s, "shard"));
  if (strlen(name) > SHARD_WIDTH && n + 2 <= SHARD_WIDTH) /* room for a letter, '~' and the number */
    snprintf(name, sizeof name, "%.*s~%s", SHARD_WIDTH - 1 - n, str(s, "stream"), number);
  fit(buf, SHARD_WIDTH + 1, SHARD_WIDTH, name); /* else a number no column holds: plainly cut */
  return buf;
}

/* Whether the copy was measured under a storage id its broker no longer has. */
static bool id_changed(const cJSON *r) {
  const char *m = str(r, "storage_id"), *reg = str(r, "registered_storage_id");
  return strcmp(m, "-") && strcmp(reg, "-") && strcmp(m, reg);
}

static bool is_follower(const cJSON *s, const cJSON *r) { return strcmp(str(r, "broker"), str(s, "leader")) != 0; }

static size_t followers(const cJSON *s) {
  size_t n = 0;
  const cJSON *r;
  cJSON_ArrayForEach(r, get(s, "replicas")) n += is_follower(s, r);
  return n;
}

/* " +N" for the N followers left out, "" for none; returns its length. */
static size_t left_out(size_t n, char buf[32]) {
  buf[0] = '\0';
  return n ? (size_t)snprintf(buf, 32, " +%zu", n) : 0;
}

/* Appends " BROKER -LAG[!]" of each follower to line (len characters) while
 * whole ones fit width, keeping room for the " +N" of those left out: a name
 * cut in the middle could read as another broker's. */
static void add_followers(const cJSON *s, char *line, size_t len, size_t width) {
  size_t total = followers(s), shown = 0;
  double hwm = num(s, "hwm");
  char one[300], more[32];
  const cJSON *r;
  cJSON_ArrayForEach(r, get(s, "replicas")) {
    if (!is_follower(s, r)) continue;
    double c = num(r, "confirmed"), lag = hwm > c ? hwm - c : 0; /* its confirmed offset: the detail view */
    size_t n = (size_t)snprintf(one, sizeof one, " %s -%.0f%s", str(r, "broker"), lag, id_changed(r) ? "!" : "");
    if (n >= sizeof one || len + n + left_out(total - shown - 1, more) > width) break;
    memcpy(line + len, one, n + 1);
    len += n, shown++;
  }
  if (len + left_out(total - shown, more) <= width) memcpy(line + len, more, strlen(more) + 1);
}

void top_shard_line(const cJSON *s, char *out, size_t cap, int width) {
  char cell[SHARD_WIDTH + 1], line[1024], gen[32], hwm_text[32], rate[32], bytes[32];
  snprintf(gen, sizeof gen, "%.0f", num(s, "generation"));
  snprintf(hwm_text, sizeof hwm_text, "%.0f", num(s, "hwm"));
  int n = snprintf(line, sizeof line, SHARD_COLUMNS, shard_cell(s, cell), gen, str(s, "leader"), str(s, "state"), hwm_text,
                   rate_text(get(s, "records_per_second"), rate), bytes_text(get(s, "bytes_per_second"), bytes));
  assert(n > 0 && (size_t)n < sizeof line);
  size_t w = width > 0 ? (size_t)width : 0;
  add_followers(s, line, (size_t)n, w < sizeof line ? w : sizeof line - 1);
  fit(out, cap, width, line);
}

void top_event_line(const cJSON *e, char *out, size_t cap, int width) {
  char line[1024];
  const char *ts = str(e, "occurred_at"); /* the time of day is enough on a live view; messages name their shard */
  snprintf(line, sizeof line, "%.8s %s", strlen(ts) >= 19 ? ts + 11 : ts, str(e, "message"));
  fit(out, cap, width, line);
}

void top_detail_line(const cJSON *s, char *out, size_t cap, int width) {
  char name[300], line[1024];
  snprintf(line, sizeof line, "%s  generation %.0f  %s  leader %s  hwm %.0f (max %.0f)  %s", top_shard_name(s, name, sizeof name),
           num(s, "generation"), str(s, "state"), str(s, "leader"), num(s, "hwm"), num(s, "max_hwm"),
           strcmp(str(s, "detail"), "-") ? str(s, "detail") : "");
  fit(out, cap, width, line);
}

void top_replica_heading(char *out, size_t cap, int width) {
  fit(out, cap, width, "BROKER        ROLE      ALIVE  CONFIRMED    LAG  CAUGHT-UP  MEASURED-UNDER  REGISTERED  STRANGER");
}

void top_replica_line(const cJSON *s, const cJSON *r, char *out, size_t cap, int width) {
  char line[512];
  double hwm = num(s, "hwm"), c = num(r, "confirmed");
  snprintf(line, sizeof line, "%-12.12s  %-8s  %-5s  %9.0f  %5.0f  %-9s  %-14.14s%s %-10.10s  %s", str(r, "broker"),
           strcmp(str(r, "broker"), str(s, "leader")) ? "follower" : "leader", cJSON_IsFalse(get(r, "alive")) ? "NO" : "yes",
           c, hwm > c ? hwm - c : 0, cJSON_IsTrue(get(r, "caught_up")) ? "yes" : "no", str(r, "storage_id"),
           id_changed(r) ? "!" : " ", str(r, "registered_storage_id"), cJSON_IsTrue(get(r, "stranger")) ? "yes" : "no");
  fit(out, cap, width, line);
}
