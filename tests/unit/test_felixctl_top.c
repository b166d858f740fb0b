/* test_felixctl_top.c — the content of `felixctl top` (felixctl/top_model.c):
 * the order and filter of shards and the text of every line, without a
 * terminal. The control-plane client is stubbed: these tests fetch nothing. */
#include "testutil.h"

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
    "[{\"stream\":\"r\",\"shard\":0,\"generation\":2,\"state\":\"Active\",\"leader\":\"b1\",\"hwm\":15,"
    "  \"replicas\":[{\"broker\":\"b1\",\"confirmed\":15,\"storage_id\":\"aa\",\"registered_storage_id\":\"aa\"},"
    "               {\"broker\":\"b2\",\"confirmed\":10,\"storage_id\":\"bb\",\"registered_storage_id\":\"cc\"},"
    "               {\"broker\":\"b3\",\"confirmed\":15,\"storage_id\":\"dd\",\"registered_storage_id\":\"dd\"}]},"
    " {\"stream\":\"r\",\"shard\":1,\"generation\":1,\"state\":\"NoCaughtUpReplica\",\"leader\":null,\"hwm\":7,\"replicas\":[]},"
    " {\"stream\":\"a\",\"shard\":0,\"generation\":4,\"state\":\"Fencing\",\"leader\":\"b2\",\"hwm\":0,\"replicas\":[]},"
    " {\"stream\":\"b\",\"shard\":0,\"generation\":1,\"state\":\"Active\",\"leader\":\"b3\",\"hwm\":3,\"replicas\":[]}]";

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

/* Rates come from the HWM's change between two snapshots; sort keys order by them. */
static void rates_and_sort_keys(void **s) {
  (void)s;
  top_snapshot prev = {.shards = cJSON_Parse(shards_json), .fetched_ms = 1000};
  top_snapshot cur = {.shards = cJSON_Parse(shards_json), .fetched_ms = 3000};
  cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cur.shards, 0), "hwm"), 1234567); /* r/0: +1234552 in 2 s */
  cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cur.shards, 3), "hwm"), 8);       /* b/0: +5 */
  cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cur.shards, 1), "hwm"), 2);       /* r/1 lowered: no negative */
  top_add_rates(&cur, &prev);
  double r0 = cJSON_GetObjectItem(cJSON_GetArrayItem(cur.shards, 0), "records_per_second")->valuedouble;
  assert_true(r0 == 617276);
  assert_true(cJSON_GetObjectItem(cJSON_GetArrayItem(cur.shards, 1), "records_per_second")->valuedouble == 0);
  char line[256], name[64];
  top_shard_line(cJSON_GetArrayItem(cur.shards, 0), line, sizeof line, 200);
  assert_non_null(strstr(line, "Active            1234567 617276        - b2 ")); /* 7-digit HWM in its column, then the rates */
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

/* Bytes per second come from the leader's log_bytes, only while the same
 * leader of the same generation reported both; the broker sums its shards'. */
static void bytes_per_second_from_one_leaders_log(void **s) {
  (void)s;
  top_snapshot prev = {.shards = cJSON_Parse(shards_json), .fetched_ms = 1000};
  top_snapshot cur = {.shards = cJSON_Parse(shards_json), .fetched_ms = 3000};
  set_log_bytes(&prev, 0, 1000), set_log_bytes(&cur, 0, 1000 + 2 * 1536); /* r/0: 1.5 KiB/s */
  set_log_bytes(&prev, 3, 500), set_log_bytes(&cur, 3, 500 + 2 * 300);    /* b/0: 300 B/s */
  set_log_bytes(&prev, 2, 0), set_log_bytes(&cur, 2, 9000); /* a/0: a new generation's leader */
  cJSON_SetNumberValue(cJSON_GetObjectItem(shard_at(&cur, 2), "generation"), 5);
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
  assert_non_null(strstr(line, "    0.0        -")); /* not 4.4 KiB/s: another leader's log */
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
  assert_string_equal(line, "r/0           999 b1     NoCaughtUpReplica 9999999 123456 1023 KiB b2 -0! b3 -0!");
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
  felix_human_bytes(1023.9, b), assert_string_equal(b, "1024 B");
  felix_human_bytes(1536, b), assert_string_equal(b, "1.5 KiB");
  felix_human_bytes(10180, b), assert_string_equal(b, "9.9 KiB");
  felix_human_bytes(10189, b), assert_string_equal(b, "10 KiB"); /* 9.95 and up: never "10.0", 8 columns at most */
  felix_human_bytes(17.4 * 1048576, b), assert_string_equal(b, "17 MiB");
  felix_human_bytes(1048575, b), assert_string_equal(b, "1024 KiB");
  felix_human_bytes(3.0 * 1099511627776.0 * 1024, b), assert_string_equal(b, "3072 TiB");
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
      cmocka_unit_test(a_failed_fetch_leaves_nothing_behind),
  };
  return cmocka_run_group_tests_name("felixctl_top", tests, NULL, NULL);
}
