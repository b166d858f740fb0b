/* test_felixctl_top.c — the content of `felixctl top` (felixctl/top_model.c):
 * the order and filter of shards and the text of every line, without a
 * terminal. The control-plane client is stubbed: these tests fetch nothing. */
#include "testutil.h"

#include <math.h>

#include "../../felixctl/parse.c"
#include "../../felixctl/top_model.c"

/* Stubs of the parts of felixctl that top_model.c calls but these tests do not reach. */
int ctl_http(const ctl_opts *o, const char *method, const char *path, const char *body, ctl_reply *out) {
  (void)o, (void)method, (void)path, (void)body;
  memset(out, 0, sizeof *out);
  return FELIX_EXIT_UNREACHABLE;
}
void ctl_reply_free(ctl_reply *r) { memset(r, 0, sizeof *r); }
void ctl_error_capture(char *buf, size_t cap) { (void)buf, (void)cap; }
int ctl_shard_path(const char *stream, uint32_t shard, const char *suffix, char *path, size_t cap) {
  snprintf(path, cap, "/v1/shards/%s/%u%s", stream, shard, suffix);
  return 0;
}

static const char *shards_json =
    "[{\"stream\":\"r\",\"shard\":0,\"generation\":2,\"state\":\"Active\",\"leader\":\"b1\",\"leader_copy_id\":\"c-r0\",\"hwm\":15,"
    "  \"replicas\":[{\"broker\":\"b1\",\"confirmed\":15,\"storage_id\":\"aa\",\"registered_storage_id\":\"aa\"},"
    "               {\"broker\":\"b2\",\"confirmed\":10,\"storage_id\":\"bb\",\"registered_storage_id\":\"cc\"},"
    "               {\"broker\":\"b3\",\"confirmed\":15,\"storage_id\":\"dd\",\"registered_storage_id\":\"dd\"}]},"
    " {\"stream\":\"r\",\"shard\":1,\"generation\":1,\"state\":\"NoCaughtUpReplica\",\"leader\":null,\"hwm\":7,\"replicas\":[]},"
    " {\"stream\":\"a\",\"shard\":0,\"generation\":4,\"state\":\"Fencing\",\"leader\":\"b2\",\"leader_copy_id\":\"c-a0\",\"hwm\":0,\"replicas\":[]},"
    " {\"stream\":\"b\",\"shard\":0,\"generation\":1,\"state\":\"Active\",\"leader\":\"b3\",\"leader_copy_id\":\"c-b0\",\"hwm\":3,\"replicas\":[]}]";

static void stuck_and_fencing_shards_come_first(void **s) {
  (void)s;
  cJSON *shards = cJSON_Parse(shards_json);
  const cJSON *order[8];
  char name[64];
  assert_int_equal(top_shard_order(shards, "", TOP_SORT_URGENCY, order, 8), 4);
  assert_string_equal(top_shard_name(order[0], name, sizeof name), "r/1");
  assert_string_equal(top_shard_name(order[1], name, sizeof name), "a/0");
  assert_string_equal(top_shard_name(order[2], name, sizeof name), "b/0");
  assert_string_equal(top_shard_name(order[3], name, sizeof name), "r/0");
  assert_int_equal(top_shard_urgency(order[0]), 0);
  assert_int_equal(top_shard_urgency(order[1]), 1);
  /* the filter matches anywhere in the shard's line */
  assert_int_equal(top_shard_order(shards, "b/0", TOP_SORT_URGENCY, order, 8), 1);
  assert_int_equal(top_shard_order(shards, "Fencing", TOP_SORT_URGENCY, order, 8), 1);
  assert_int_equal(top_shard_order(shards, "nothing", TOP_SORT_URGENCY, order, 8), 0);
  assert_int_equal(top_shard_order(shards, "", TOP_SORT_URGENCY, order, 2), 2); /* bounded by cap */
  cJSON_Delete(shards);
}

static void a_follower_line_shows_cursor_lag_and_a_changed_id(void **s) {
  (void)s;
  cJSON *shards = cJSON_Parse(shards_json);
  char line[256];
  top_shard_line(cJSON_GetArrayItem(shards, 0), line, sizeof line, 200);
  assert_non_null(strstr(line, "r/0 "));
  assert_non_null(strstr(line, " b2 -5!")); /* measured under bb, registered cc */
  assert_non_null(strstr(line, " b3 -0"));
  assert_null(strstr(line, " b3 -0!"));
  assert_null(strstr(line, " b1 15")); /* the leader is not a follower */
  top_shard_line(cJSON_GetArrayItem(shards, 0), line, sizeof line, 20);
  assert_int_equal(strlen(line), 20); /* cut to the width, never wrapped */
  top_replica_line(cJSON_GetArrayItem(shards, 0), cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(shards, 0), "replicas"), 1),
                   line, sizeof line, 200);
  assert_non_null(strstr(line, "follower"));
  assert_non_null(strstr(line, "bb            ! cc")); /* measured-under, the mark, registered */
  cJSON_Delete(shards);
}

static void broker_event_and_header_lines(void **s) {
  (void)s;
  cJSON *b = cJSON_Parse("{\"id\":\"b1\",\"storage_id\":\"4f0c1a2b3c4d5e6f\",\"incarnation\":\"9e3f0000000000000000000000000000.7\","
                         "\"alive\":false,\"fsync_mode\":\"periodic\",\"lease_age_ms\":412}");
  char line[256];
  top_broker_line(b, NULL, line, sizeof line, 80);
  assert_non_null(strstr(line, "b1 "));
  assert_non_null(strstr(line, "4f0c1a2b3c "));
  assert_non_null(strstr(line, "00000000000000.7")); /* the end of the incarnation tells them apart */
  assert_non_null(strstr(line, " NO "));
  assert_non_null(strstr(line, "412 ms"));
  cJSON_Delete(b);
  cJSON *e = cJSON_Parse("{\"occurred_at\":\"2026-11-29T21:00:02.000000Z\",\"message\":\"generation 1 issued to b1\"}");
  top_event_line(e, line, sizeof line, 80);
  assert_string_equal(line, "21:00:02 generation 1 issued to b1");
  cJSON_Delete(e);
  top_snapshot snap = {.cluster = cJSON_Parse("{\"brokers_total\":3,\"brokers_alive\":2,\"shards_total\":4,"
                                              "\"shards_no_caught_up_replica\":1,\"shards_fencing\":1}")};
  ctl_opts o = {.control_plane = "http://127.0.0.1:7070"};
  top_header_line(&o, &snap, line, sizeof line, 80); /* no snapshot time: dashes */
  assert_string_equal(line, "127.0.0.1:7070 --:--:--  brokers 2/3  shards 4: NoCaughtUpReplica 1  Fencing 1");
  snap.fetched_at = 1796528832;
  top_header_line(&o, &snap, line, sizeof line, 80);
  assert_int_equal(strlen(line), strlen("127.0.0.1:7070 04:31:02  brokers 2/3  shards 4: NoCaughtUpReplica 1  Fencing 1"));
  assert_true(line[17] == ':' && line[20] == ':'); /* the local time of day */
  top_status_line("r/", TOP_SORT_LAG, line, sizeof line, 200);
  assert_non_null(strstr(line, "/ filter [r/]  s sort: lag "));
  top_snapshot_free(&snap);
}

/* The name of the n-th shard in the order `key`. */
static const char *nth_by(const cJSON *shards, top_sort key, int n, char name[64]) {
  const cJSON *order[8];
  assert_true((size_t)n < top_shard_order(shards, "", key, order, 8));
  return top_shard_name(order[n], name, 64);
}

/* The shards in order by KEY are exactly the space-separated WANT ("r/0 b/0"). */
static void assert_order(const cJSON *shards, top_sort key, const char *want) {
  const cJSON *order[8];
  size_t n = top_shard_order(shards, "", key, order, 8);
  char got[256] = "", name[64];
  for (size_t i = 0; i < n; i++)
    snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? " " : "", top_shard_name(order[i], name, 64));
  assert_string_equal(got, want);
}

/* Rates come from the HWM's change between two snapshots; sort keys order by them. */
static void rates_and_sort_keys(void **s) {
  (void)s;
  top_snapshot prev = {.shards = cJSON_Parse(shards_json), .fetched_ms = 1000};
  top_snapshot cur = {.shards = cJSON_Parse(shards_json), .fetched_ms = 3000};
  cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cur.shards, 0), "hwm"), 1234567); /* r/0: +1234552 in 2 s */
  cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cur.shards, 3), "hwm"), 8);       /* b/0: +5 */
  cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(prev.shards, 2), "hwm"), 9);      /* a/0 lowered: no negative */
  top_add_rates(&cur, &prev);
  double r0 = cJSON_GetObjectItem(cJSON_GetArrayItem(cur.shards, 0), "records_per_second")->valuedouble;
  assert_true(r0 == 617276);
  assert_true(cJSON_GetObjectItem(cJSON_GetArrayItem(cur.shards, 2), "records_per_second")->valuedouble == 0);
  assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(cur.shards, 1), "records_per_second")); /* r/1: no leader copy */
  char line[256], name[64];
  top_shard_line(cJSON_GetArrayItem(cur.shards, 0), line, sizeof line, 200);
  assert_non_null(strstr(line, "Active            1234567 617.3k        - b2 ")); /* 7-digit HWM in its column, then the rates */
  top_shard_line(cJSON_GetArrayItem(cur.shards, 3), line, sizeof line, 200);
  assert_non_null(strstr(line, "      8    2.5        -"));
  top_shard_line(cJSON_GetArrayItem(prev.shards, 3), line, sizeof line, 200);
  assert_non_null(strstr(line, "      3      -        -")); /* no rate before a second snapshot */
  cJSON *b = cJSON_Parse("{\"id\":\"b3\",\"alive\":true}");
  top_broker_line(b, cur.shards, line, sizeof line, 200); /* b3 leads b/0 only */
  assert_non_null(strstr(line, "    2.5        -"));
  cJSON_Delete(b);
  assert_string_equal(nth_by(cur.shards, TOP_SORT_RATE, 0, name), "r/0");
  assert_string_equal(nth_by(cur.shards, TOP_SORT_RATE, 1, name), "b/0");
  assert_string_equal(nth_by(cur.shards, TOP_SORT_NAME, 0, name), "a/0");
  assert_string_equal(nth_by(cur.shards, TOP_SORT_NAME, 3, name), "r/1");
  assert_string_equal(nth_by(cur.shards, TOP_SORT_HWM, 0, name), "r/0");
  assert_string_equal(nth_by(cur.shards, TOP_SORT_HWM, 3, name), "a/0");
  assert_string_equal(top_sort_name(TOP_SORT_LAG), "lag");
  top_snapshot_free(&prev);
  top_snapshot_free(&cur);
}

static cJSON *shard_at(const top_snapshot *s, int i) { return cJSON_GetArrayItem(s->shards, i); }

static void set_log_bytes(const top_snapshot *s, int i, double bytes) {
  cJSON_DeleteItemFromObject(shard_at(s, i), "log_bytes");
  cJSON_AddNumberToObject(shard_at(s, i), "log_bytes", bytes);
}

static void set_num(cJSON *o, const char *k, double v) {
  cJSON_DeleteItemFromObject(o, k);
  cJSON_AddNumberToObject(o, k, v);
}

static void set_str(cJSON *o, const char *k, const char *v) {
  cJSON_DeleteItemFromObject(o, k);
  cJSON_AddStringToObject(o, k, v);
}

/* Bytes per second come from the leader's log_bytes, only while the same
 * leader copy reported both; the broker sums its shards'. */
static void bytes_per_second_from_one_leaders_log(void **s) {
  (void)s;
  top_snapshot prev = {.shards = cJSON_Parse(shards_json), .fetched_ms = 1000};
  top_snapshot cur = {.shards = cJSON_Parse(shards_json), .fetched_ms = 3000};
  set_log_bytes(&prev, 0, 1000), set_log_bytes(&cur, 0, 1000 + 2 * 1536); /* r/0: 1.5 KiB/s */
  set_log_bytes(&prev, 3, 500), set_log_bytes(&cur, 3, 500 + 2 * 300);    /* b/0: 300 B/s */
  set_log_bytes(&prev, 2, 0), set_log_bytes(&cur, 2, 9000); /* a/0: a new generation's leader copy */
  cJSON_SetNumberValue(cJSON_GetObjectItem(shard_at(&cur, 2), "generation"), 5);
  set_str(shard_at(&cur, 2), "leader_copy_id", "c-a0-new");
  set_str(shard_at(&prev, 1), "leader_copy_id", "c-r1"), set_str(shard_at(&cur, 1), "leader_copy_id", "c-r1");
  set_log_bytes(&cur, 1, 100); /* r/1: the leader's first report (null before) */
  top_add_rates(&cur, &prev);
  assert_true(cJSON_GetObjectItem(shard_at(&cur, 0), "bytes_per_second")->valuedouble == 1536);
  assert_true(cJSON_GetObjectItem(shard_at(&cur, 3), "bytes_per_second")->valuedouble == 300);
  assert_null(cJSON_GetObjectItem(shard_at(&cur, 2), "bytes_per_second"));
  assert_null(cJSON_GetObjectItem(shard_at(&cur, 1), "bytes_per_second"));
  char line[256];
  top_shard_line(shard_at(&cur, 0), line, sizeof line, 200);
  assert_non_null(strstr(line, "      15    0.0  1.5 KiB b2 -5! b3 -0"));
  top_shard_line(shard_at(&cur, 2), line, sizeof line, 200);
  assert_non_null(strstr(line, "      0      -        -")); /* not 4.4 KiB/s: another copy's log */
  cJSON *b = cJSON_Parse("{\"id\":\"b3\",\"storage_id\":\"4f0c1a2b3c4d5e6f\",\"incarnation\":\"9e3f0000000000000000000000000000.7\","
                         "\"alive\":true,\"fsync_mode\":\"on_commit\",\"lease_age_ms\":41234}");
  top_broker_line(b, cur.shards, line, sizeof line, 200);
  assert_non_null(strstr(line, "    0.0    300 B")); /* b/0: no new records, 300 B/s */
  assert_int_equal(strlen(line), 80); /* the widest broker line fits 80 columns */
  cJSON_Delete(b);
  cJSON *b1 = cJSON_Parse("{\"id\":\"b1\",\"alive\":true}");
  top_broker_line(b1, cur.shards, line, sizeof line, 200);
  assert_non_null(strstr(line, "  1.5 KiB")); /* b1 leads r/0 */
  cJSON_Delete(b1);
  /* two followers, both marked, and the widest columns still fit 80 */
  cJSON_ReplaceItemInObject(shard_at(&cur, 0), "state", cJSON_CreateString("NoCaughtUpReplica"));
  cJSON_SetNumberValue(cJSON_GetObjectItem(shard_at(&cur, 0), "hwm"), 9999999);
  cJSON_SetNumberValue(cJSON_GetObjectItem(shard_at(&cur, 0), "generation"), 999);
  cJSON_ReplaceItemInObject(shard_at(&cur, 0), "records_per_second", cJSON_CreateNumber(123456));
  cJSON_ReplaceItemInObject(shard_at(&cur, 0), "bytes_per_second", cJSON_CreateNumber(1023.0 * 1024));
  cJSON *b3 = cJSON_GetArrayItem(cJSON_GetObjectItem(shard_at(&cur, 0), "replicas"), 2);
  cJSON_ReplaceItemInObject(b3, "registered_storage_id", cJSON_CreateString("ee"));
  cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(shard_at(&cur, 0), "replicas"), 1), "confirmed",
                            cJSON_CreateNumber(9999999));
  cJSON_ReplaceItemInObject(b3, "confirmed", cJSON_CreateNumber(9999999));
  top_shard_line(shard_at(&cur, 0), line, sizeof line, 200);
  assert_string_equal(line, "r/0           999 b1     NoCaughtUpReplica 9999999 123.5k 1023 KiB b2 -0! b3 -0!");
  top_shard_heading(line, sizeof line, 200);
  assert_string_equal(line, "SHARD         GEN LEADER STATE                 HWM  REC/S      B/S FOLLOWER -LAG");
  top_broker_heading(line, sizeof line, 200);
  assert_true(strlen(line) <= 80);
  char name[64];
  assert_string_equal(nth_by(cur.shards, TOP_SORT_BYTES, 0, name), "r/0");
  assert_string_equal(nth_by(cur.shards, TOP_SORT_BYTES, 1, name), "b/0");
  assert_string_equal(top_sort_name(TOP_SORT_BYTES), "bytes");
  top_snapshot_free(&prev);
  top_snapshot_free(&cur);
}

static void human_bytes_take_at_most_8_columns(void **s) {
  (void)s;
  char b[24];
  felix_human_bytes(0, b), assert_string_equal(b, "0 B");
  felix_human_bytes(1023.4, b), assert_string_equal(b, "1023 B");
  felix_human_bytes(1023.9, b), assert_string_equal(b, "1.0 KiB"); /* "1024 B" is a KiB */
  felix_human_bytes(1024, b), assert_string_equal(b, "1.0 KiB");
  felix_human_bytes(1536, b), assert_string_equal(b, "1.5 KiB");
  felix_human_bytes(10180, b), assert_string_equal(b, "9.9 KiB");
  felix_human_bytes(10189, b), assert_string_equal(b, "10 KiB"); /* 9.95 and up: never "10.0", 8 columns at most */
  felix_human_bytes(17.4 * 1048576, b), assert_string_equal(b, "17 MiB");
  felix_human_bytes(1023.4 * 1024, b), assert_string_equal(b, "1023 KiB");
  felix_human_bytes(1048575, b), assert_string_equal(b, "1.0 MiB"); /* 1023.999 KiB rounds to 1024: the next unit */
  felix_human_bytes(1023.99 * 1048576, b), assert_string_equal(b, "1.0 GiB");
  felix_human_bytes(3.0 * 1099511627776.0 * 1024, b), assert_string_equal(b, "3.0 PiB");
  felix_human_bytes(5.0 * 1152921504606846976.0, b), assert_string_equal(b, "5.0 EiB");
  felix_human_bytes(1023.0 * 1152921504606846976.0, b), assert_string_equal(b, "1023 EiB");
  felix_human_bytes(1023.6 * 1152921504606846976.0, b), assert_string_equal(b, "-"); /* beyond EiB */
  felix_human_bytes(-1, b), assert_string_equal(b, "-");
  felix_human_bytes(NAN, b), assert_string_equal(b, "-");
  felix_human_bytes(INFINITY, b), assert_string_equal(b, "-");
  for (double v = 0.3; v < 1e22; v *= 1.07) felix_human_bytes(v, b), assert_true(strlen(b) <= 8);
}

/* The rate `k` of shard i of s, -1 when it has none (unknown). */
static double rate_of(const top_snapshot *s, int i, const char *k) {
  const cJSON *r = cJSON_GetObjectItem(shard_at(s, i), k);
  return cJSON_IsNumber(r) ? r->valuedouble : -1;
}

/* A refresh sooner than TOP_REFRESH_MS after the baseline (Enter opens a
 * shard at once) keeps the rates shown; the next one is measured from the
 * baseline, not from the early refresh. */
static void an_early_refresh_keeps_the_rates_and_the_baseline(void **s) {
  (void)s;
  top_snapshot a = {.shards = cJSON_Parse(shards_json), .fetched_ms = 1000};
  top_snapshot b = {.shards = cJSON_Parse(shards_json), .fetched_ms = 1000 + 2 * TOP_REFRESH_MS};
  top_snapshot c = {.shards = cJSON_Parse(shards_json), .fetched_ms = b.fetched_ms + 50};
  top_snapshot d = {.shards = cJSON_Parse(shards_json), .fetched_ms = b.fetched_ms + TOP_REFRESH_MS};
  set_log_bytes(&a, 0, 1000), set_log_bytes(&b, 0, 1000 + 2 * 2048), set_log_bytes(&c, 0, 9000);
  set_num(shard_at(&b, 0), "hwm", 35); /* r/0: +20 in 2 s */
  set_num(shard_at(&c, 0), "hwm", 40); /* +5 in 50 ms: no 100 a second */
  set_num(shard_at(&d, 0), "hwm", 45); /* +10 in the second since b */
  top_add_rates(&b, &a);
  assert_true(rate_of(&b, 0, "records_per_second") == 10);
  assert_true(rate_of(&b, 0, "bytes_per_second") == 2048);
  top_add_rates(&c, &b);
  assert_true(rate_of(&c, 0, "records_per_second") == 10);
  assert_true(rate_of(&c, 0, "bytes_per_second") == 2048);
  assert_true(rate_of(&c, 3, "records_per_second") == 0); /* b/0: kept, still 0 */
  top_add_rates(&d, &c);
  assert_true(rate_of(&d, 0, "records_per_second") == 10);
  top_snapshot_free(&a), top_snapshot_free(&b), top_snapshot_free(&c), top_snapshot_free(&d);
}

/* A rate compares two samples of one stream instance: the same leader copy
 * at the same or a higher generation. Otherwise it is unknown: "-". */
static void rates_only_within_one_stream_instance(void **s) {
  (void)s;
  top_snapshot prev = {.shards = cJSON_Parse(shards_json), .fetched_ms = 1000};
  top_snapshot cur = {.shards = cJSON_Parse(shards_json), .fetched_ms = 3000};
  set_num(shard_at(&cur, 0), "generation", 3), set_num(shard_at(&cur, 0), "hwm", 25); /* r/0: same copy, new generation */
  set_str(shard_at(&cur, 3), "leader_copy_id", "c-b0-new"), set_num(shard_at(&cur, 3), "hwm", 8); /* b/0: copy replaced */
  set_num(shard_at(&cur, 2), "generation", 3), set_num(shard_at(&cur, 2), "hwm", 4); /* a/0: lower generation: recreated */
  set_log_bytes(&prev, 3, 100), set_log_bytes(&cur, 3, 9000);
  top_add_rates(&cur, &prev);
  assert_true(rate_of(&cur, 0, "records_per_second") == 5);
  assert_true(rate_of(&cur, 3, "records_per_second") == -1);
  assert_true(rate_of(&cur, 3, "bytes_per_second") == -1);
  assert_true(rate_of(&cur, 2, "records_per_second") == -1);
  assert_true(rate_of(&cur, 1, "records_per_second") == -1); /* r/1: no leader copy to compare */
  char line[256];
  top_shard_line(shard_at(&cur, 3), line, sizeof line, 200);
  assert_non_null(strstr(line, "      8      -        -"));
  top_snapshot_free(&prev), top_snapshot_free(&cur);
}

/* By rate or bytes, a shard whose rate is unknown comes after every known
 * one, 0 included. */
static void unknown_rates_sort_last(void **s) {
  (void)s;
  top_snapshot cur = {.shards = cJSON_Parse(shards_json)};
  set_num(shard_at(&cur, 0), "records_per_second", 5);           /* r/0 */
  set_num(shard_at(&cur, 3), "records_per_second", 0);           /* b/0 */
  set_num(shard_at(&cur, 3), "bytes_per_second", 0);             /* a/0 and r/1: unknown */
  char name[64];
  assert_order(cur.shards, TOP_SORT_RATE, "r/0 b/0 a/0 r/1");
  assert_string_equal(nth_by(cur.shards, TOP_SORT_BYTES, 0, name), "b/0");
  assert_string_equal(nth_by(cur.shards, TOP_SORT_BYTES, 1, name), "a/0");
  top_snapshot_free(&cur);
}

/* The text of shard i's REC/S column (6 columns after SHARD GEN LEADER STATE HWM). */
static const char *rec_column(cJSON *shard, double rate, char col[8]) {
  char line[256];
  set_num(shard, "records_per_second", rate);
  top_shard_line(shard, line, sizeof line, 200);
  snprintf(col, 8, "%.7s", line + 13 + 1 + 3 + 1 + 6 + 1 + 17 + 1 + 7 + 1);
  return col;
}

/* REC/S takes 6 columns: k, M, G and T, and a value that rounds up to
 * 1000 of one is 1.0 of the next. */
static void rec_per_second_takes_6_columns(void **s) {
  (void)s;
  cJSON *shards = cJSON_Parse(shards_json), *r0 = cJSON_GetArrayItem(shards, 0);
  char col[8];
  assert_string_equal(rec_column(r0, 12.34, col), "  12.3 ");
  assert_string_equal(rec_column(r0, 99.96, col), "   100 ");
  assert_string_equal(rec_column(r0, 999.6, col), "  1.0k ");
  assert_string_equal(rec_column(r0, 12345, col), " 12.3k ");
  assert_string_equal(rec_column(r0, 617276, col), "617.3k ");
  assert_string_equal(rec_column(r0, 1234567, col), "  1.2M ");
  assert_string_equal(rec_column(r0, 999.96e9, col), "  1.0T ");
  cJSON_Delete(shards);
}

/* LEASE-AGE takes 9 columns: ms, s, min, h, d. */
static void lease_age_takes_9_columns(void **s) {
  (void)s;
  cJSON *b = cJSON_Parse("{\"id\":\"b1\",\"alive\":true,\"lease_age_ms\":123456789}");
  char line[256];
  top_broker_line(b, NULL, line, sizeof line, 200);
  assert_string_equal(line + 55, "1.4 d          -        -"); /* LEASE-AGE, then REC/S and B/S */
  set_num(b, "lease_age_ms", 41234);
  top_broker_line(b, NULL, line, sizeof line, 200);
  assert_string_equal(line + 55, "41.2 s         -        -");
  cJSON_Delete(b);
}

/* SHARD takes 13 columns: a long stream name is cut and marked '~', its
 * shard number stays whole. */
static void a_long_stream_name_keeps_its_shard_number(void **s) {
  (void)s;
  cJSON *shards = cJSON_Parse(shards_json), *r0 = cJSON_GetArrayItem(shards, 0);
  char line[256];
  set_str(r0, "stream", "transactions"), set_num(r0, "shard", 12);
  top_shard_line(r0, line, sizeof line, 200);
  assert_non_null(strstr(line, "transacti~/12   2 b1 "));
  set_str(r0, "stream", "abcdefghij");
  top_shard_line(r0, line, sizeof line, 200);
  assert_non_null(strstr(line, "abcdefghij/12   2 b1 ")); /* 13 fit whole */
  cJSON_Delete(shards);
}

/* Followers are shown whole, then " +N" for those that do not fit. */
static void followers_whole_then_a_count(void **s) {
  (void)s;
  cJSON *sh = cJSON_Parse("{\"stream\":\"r\",\"shard\":0,\"generation\":2,\"state\":\"Active\",\"leader\":\"b1\",\"hwm\":15,"
                          "\"replicas\":[{\"broker\":\"b1\",\"confirmed\":15},{\"broker\":\"b2\",\"confirmed\":15},"
                          "{\"broker\":\"b3\",\"confirmed\":15},{\"broker\":\"b4\",\"confirmed\":15},"
                          "{\"broker\":\"b5\",\"confirmed\":15}]}");
  char line[256];
  top_shard_line(sh, line, sizeof line, 80);
  size_t n = strlen(line);
  assert_true(n <= 80);
  assert_string_equal(line + n - 9, " b2 -0 +3"); /* b3 would leave no room for the count */
  top_shard_line(sh, line, sizeof line, 200);
  assert_non_null(strstr(line, " b2 -0 b3 -0 b4 -0 b5 -0"));
  assert_null(strstr(line, "+"));
  top_shard_line(sh, line, sizeof line, 70);
  n = strlen(line);
  assert_string_equal(line + n - 3, " +4"); /* none fits whole */
  cJSON_Delete(sh);
}

/* The filter matches "STREAM/N" whole, even where the SHARD column cuts it. */
static void the_filter_matches_stream_slash_shard(void **s) {
  (void)s;
  cJSON *shards = cJSON_Parse("[{\"stream\":\"transactions\",\"shard\":12,\"replicas\":[]},"
                              " {\"stream\":\"orders\",\"shard\":3,\"replicas\":[]},"
                              " {\"stream\":\"orders\",\"shard\":4,\"replicas\":[]}]");
  const cJSON *order[4];
  assert_int_equal(top_shard_order(shards, "transactions/12", TOP_SORT_NAME, order, 4), 1);
  assert_int_equal(top_shard_order(shards, "orders/3", TOP_SORT_NAME, order, 4), 1);
  assert_int_equal(top_shard_order(shards, "orders/", TOP_SORT_NAME, order, 4), 2);
  assert_int_equal(top_shard_order(shards, "ions/1", TOP_SORT_NAME, order, 4), 1);
  cJSON_Delete(shards);
}

static void a_failed_fetch_leaves_nothing_behind(void **s) {
  (void)s;
  top_snapshot snap;
  char err[128];
  ctl_opts o = {.control_plane = "http://127.0.0.1:1"};
  assert_int_equal(top_fetch(&o, "r/0", &snap, err, sizeof err), FELIX_EXIT_UNREACHABLE);
  assert_null(snap.cluster);
  assert_null(snap.shards);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(stuck_and_fencing_shards_come_first),
      cmocka_unit_test(a_follower_line_shows_cursor_lag_and_a_changed_id),
      cmocka_unit_test(broker_event_and_header_lines),
      cmocka_unit_test(rates_and_sort_keys),
      cmocka_unit_test(bytes_per_second_from_one_leaders_log),
      cmocka_unit_test(human_bytes_take_at_most_8_columns),
      cmocka_unit_test(an_early_refresh_keeps_the_rates_and_the_baseline),
      cmocka_unit_test(rates_only_within_one_stream_instance),
      cmocka_unit_test(unknown_rates_sort_last),
      cmocka_unit_test(rec_per_second_takes_6_columns),
      cmocka_unit_test(lease_age_takes_9_columns),
      cmocka_unit_test(a_long_stream_name_keeps_its_shard_number),
      cmocka_unit_test(followers_whole_then_a_count),
      cmocka_unit_test(the_filter_matches_stream_slash_shard),
      cmocka_unit_test(a_failed_fetch_leaves_nothing_behind),
  };
  return cmocka_run_group_tests_name("felixctl_top", tests, NULL, NULL);
}
