/* cp_fixture3.h — three brokers b1, b2, b3 (storage ids sids[], copies
 * copies[]) and the control-plane engine on a temp SQLite store, for the
 * unit tests of restores and adoption. The store can be closed, copied and
 * reopened under another instance, as an operator restores a backup. */
#ifndef FELIX_TEST_CP_FIXTURE3_H
#define FELIX_TEST_CP_FIXTURE3_H

#include "testutil.h"

#include <cjson/cJSON.h>

#include "control-plane/api.h"
#include "felix/logfmt.h"
#include "control-plane/state.h"

#define INST1 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define INST2 "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define NEWSID "44444444444444444444444444444444"
#define NEWCOPY "c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4"

static const char *const ids[3] = {"b1", "b2", "b3"};
static const char *const sids[3] = {"11111111111111111111111111111111", "22222222222222222222222222222222",
                              "33333333333333333333333333333333"};
static const char *const copies[3] = {"c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1", "c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2",
                                "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3"};

typedef struct fx {
  char *dir, *db, *backup;
  cp_state cp;
  uint64_t t;
  char inc[3][CP_INC_MAX];
  char uuid[40];
} fx;

static inline void fx_open(fx *f, const char *instance) {
  felix_err err;
  f->t += 1000;
  assert_int_equal(cp_state_open(&f->cp, f->db, instance, 5000, f->t, &err), FELIX_OK);
}

static inline int setup(void **state) {
  felix_log_set_level(FELIX_LOG_WARN);
  fx *f = calloc(1, sizeof *f);
  f->dir = tu_mkdtemp();
  f->db = tu_path(f->dir, "cp.db");
  f->backup = tu_path(f->dir, "backup.db");
  fx_open(f, INST1);
  *state = f;
  return 0;
}

static inline int teardown(void **state) {
  fx *f = *state;
  cp_state_close(&f->cp);
  free(f->db);
  free(f->backup);
  tu_rmdir(f->dir);
  free(f);
  return 0;
}

static inline void copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  assert_non_null(in);
  assert_non_null(out);
  char buf[8192];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0) assert_int_equal(fwrite(buf, 1, n, out), n);
  fclose(in);
  assert_int_equal(fclose(out), 0);
}

/* Copy i of "orders"/0 as broker i's inventory: what it holds, its ballot
 * generation, and the control-plane instance it was built for. */
static inline cp_inv_entry inv(fx *f, const char *copy, int64_t log_end, int64_t ballot_gen, const char *instance) {
  cp_inv_entry e;
  memset(&e, 0, sizeof e);
  snprintf(e.stream, sizeof e.stream, "orders");
  snprintf(e.stream_uuid, sizeof e.stream_uuid, "%s", f->uuid);
  snprintf(e.copy_id, sizeof e.copy_id, "%s", copy);
  e.log_end = log_end;
  e.last_generation = log_end > 0 ? 1 : 0;
  e.ballot_generation = ballot_gen;
  snprintf(e.cp_instance, sizeof e.cp_instance, "%s", instance);
  return e;
}

static inline int do_register(fx *f, int i, const char *sid, const cp_inv_entry *e, size_t n) {
  cp_register_req r = {.broker_id = ids[i], .storage_id = sid, .boot_id = "boot", .fsync_mode = "periodic",
                       .address = "127.0.0.1:7101", .http_address = "", .inv = e, .ninv = n};
  cp_outcome o;
  cp_register(&f->cp, &r, f->inc[i], &o);
  return o.status;
}

static inline void heartbeat(fx *f, int i, const cp_inv_entry *e) {
  cp_outcome o;
  cp_heartbeat(&f->cp, ids[i], f->inc[i], e, e ? 1 : 0, &o);
  assert_int_equal(o.status, 200);
}

static inline cp_shard_row shard0(fx *f) {
  cp_shard_row sh;
  bool found;
  felix_err err;
  assert_int_equal(cp_store_shard_get(f->cp.store, f->uuid, 0, &sh, &found, &err), FELIX_OK);
  assert_true(found);
  return sh;
}

static inline int leader_index(fx *f) {
  cp_shard_row sh = shard0(f);
  for (int i = 0; i < 3; i++)
    if (!strcmp(sh.leader, ids[i])) return i;
  fail_msg("no leader");
  return -1;
}

/* A report of broker i at generation gen, HWM hwm (its log ends there too),
 * written records waiting no_quorum_ms for a majority; followers lists the
 * others with what each holds on a live connection (h0 0). Returns the
 * number accepted; reason gets a rejection's. */
static inline int report_nq(fx *f, int i, int64_t seq, int64_t gen, int64_t hwm, const char *const follower_copy[3],
                            int64_t no_quorum_ms, char *reason) {
  cp_report_shard r = {.stream = "orders", .shard = 0, .generation = gen, .copy_id = copies[i], .log_end = hwm,
                       .last_generation = gen, .generation_start = 0, .hwm = hwm, .no_quorum_ms = no_quorum_ms};
  for (int k = 0; k < 3; k++)
    if (k != i && follower_copy[k])
      r.followers[r.nfollowers++] =
          (cp_report_follower){.broker = ids[k], .copy_id = follower_copy[k], .connected = true, .held = hwm, .h0 = 0};
  cp_report_rejection rej[1];
  size_t nrej = 0;
  cp_outcome o;
  int n = cp_report(&f->cp, ids[i], f->inc[i], seq, &r, 1, rej, &nrej, &o);
  assert_int_equal(o.status, 200);
  snprintf(reason, 200, "%.199s", nrej ? rej[0].reason : "");
  return n;
}

static inline int report(fx *f, int i, int64_t seq, int64_t gen, int64_t hwm, const char *const follower_copy[3],
                         char *reason) {
  return report_nq(f, i, seq, gen, hwm, follower_copy, 0, reason);
}

static inline const char *query_of(void *ctx, const char *key) {
  const char **kv = ctx;
  for (int i = 0; kv[i]; i += 2)
    if (!strcmp(kv[i], key)) return kv[i + 1];
  return NULL;
}

/* GET /v1/broker/assignments for broker i, from control-plane instance
 * `instance`: the assignment of orders/0 (the caller frees it). */
static inline cJSON *assignment_for(fx *f, const char *instance, int i) {
  const char *kv[] = {"broker_id", ids[i], "incarnation", f->inc[i], NULL};
  cp_request req = {.method = "GET", .url = "/v1/broker/assignments", .query = query_of, .query_ctx = kv};
  cp_reply rep = {0};
  char *path[] = {"assignments"};
  cp_api_broker(&f->cp, &req, path, 1, &rep);
  assert_int_equal(rep.status, 200);
  cJSON *j = cJSON_Parse(rep.body);
  free(rep.body);
  assert_non_null(j);
  assert_string_equal(cJSON_GetObjectItem(j, "instance_id")->valuestring, instance);
  cJSON *a = cJSON_DetachItemFromArray(cJSON_GetObjectItem(j, "assignments"), 0);
  cJSON_Delete(j);
  assert_non_null(a);
  return a;
}

/* "orders" (one shard, R = 3, the ack policy acks) created. */
static inline void create_orders(fx *f, const char *acks) {
  cp_stream_row s;
  cp_outcome o;
  cp_stream_create(&f->cp, "orders", 1, 3, acks, &s, &o);
  assert_int_equal(o.status, 201);
  snprintf(f->uuid, sizeof f->uuid, "%s", s.uuid);
}

/* Three brokers registered and "orders" (quorum) created. */
static inline void created_orders(fx *f) {
  for (int i = 0; i < 3; i++) assert_int_equal(do_register(f, i, sids[i], NULL, 0), 200);
  create_orders(f, "quorum");
}

/* The created "orders": its empty copies listed (instance INST1), generation
 * 1 Active at HWM hwm with every copy measured there; returns the leader's
 * index. */
static inline int lead_orders(fx *f, int64_t hwm) {
  for (int i = 0; i < 3; i++) {
    cp_inv_entry e = inv(f, copies[i], 0, 0, INST1);
    heartbeat(f, i, &e);
  }
  assert_int_equal(shard0(f).generation, 1);
  int a = leader_index(f);
  char why[200];
  assert_int_equal(report(f, a, 1, 1, hwm, copies, why), 1);
  assert_string_equal(shard0(f).state, "Active");
  return a;
}

/* created_orders, then lead_orders. */
static inline int active_orders(fx *f, int64_t hwm) {
  created_orders(f);
  return lead_orders(f, hwm);
}

#endif
