/* test_cp_auth.c — bearer tokens: right, wrong, missing, admin vs broker;
 * token files (generated 0600, reread, refused when empty); and that a
 * refused request changes nothing (docs/control-plane-api.md "Authentication"). */
#include "testutil.h"

#include "control-plane/auth.h"
#include "control-plane/http.h"
#include "felix/logfmt.h"

static const cp_tokens toks = {.admin = "admin-secret", .broker = "broker-secret"};

static void token_equal_is_exact(void **s) {
  (void)s;
  assert_true(cp_token_equal("abc", "abc"));
  assert_false(cp_token_equal("abc", "abd"));
  assert_false(cp_token_equal("abc", "ab"));
  assert_false(cp_token_equal("abc", "abcd"));
  assert_false(cp_token_equal("abc", ""));
  assert_false(cp_token_equal("", "")); /* an empty expected token matches nothing */
}

static void bearer_checks(void **s) {
  (void)s;
  assert_true(cp_auth_check(&toks, "/v1/cluster", "Bearer admin-secret"));
  assert_true(cp_auth_check(&toks, "/v1/broker/register", "Bearer broker-secret"));
  assert_false(cp_auth_check(&toks, "/v1/cluster", NULL));                      /* missing */
  assert_false(cp_auth_check(&toks, "/v1/cluster", "Bearer wrong"));            /* wrong */
  assert_false(cp_auth_check(&toks, "/v1/cluster", "admin-secret"));            /* no scheme */
  assert_false(cp_auth_check(&toks, "/v1/cluster", "Basic admin-secret"));      /* other scheme */
  assert_false(cp_auth_check(&toks, "/v1/cluster", "Bearer broker-secret"));    /* broker token on admin */
  assert_false(cp_auth_check(&toks, "/v1/broker/report", "Bearer admin-secret")); /* admin token on broker */
  assert_false(cp_auth_check(&toks, "/v1/cluster", "Bearer admin-secretX"));
}

static void token_files(void **s) {
  (void)s;
  char *dir = tu_mkdtemp(), *p = tu_path(dir, "cp.db.admin-token");
  char tok[CP_TOKEN_MAX], again[CP_TOKEN_MAX];
  bool created;
  felix_err err;
  assert_int_equal(cp_token_load_or_create(p, false, tok, &created, &err), FELIX_E_NOTFOUND);
  assert_int_equal(cp_token_load_or_create(p, true, tok, &created, &err), FELIX_OK);
  assert_true(created);
  assert_int_equal(strlen(tok), 32);
  struct stat st;
  assert_int_equal(stat(p, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  assert_int_equal(cp_token_load_or_create(p, true, again, &created, &err), FELIX_OK);
  assert_false(created);
  assert_string_equal(tok, again);
  tu_write(dir, "given", "tok-from-file\n", 14);
  char *g = tu_path(dir, "given");
  assert_int_equal(cp_token_load_or_create(g, false, again, &created, &err), FELIX_OK);
  assert_string_equal(again, "tok-from-file"); /* trailing newline ignored */
  tu_write(dir, "given", "\n", 1);
  assert_int_not_equal(cp_token_load_or_create(g, false, again, &created, &err), FELIX_OK);
  assert_non_null(strstr(err.msg, "empty"));
  free(g);
  free(p);
  tu_rmdir(dir);
}

/* ---- through the dispatcher: 401 changes nothing ---- */

static void dispatch(cp_state *cp, const char *method, const char *url, const char *body, const char *auth,
                     cp_reply *rep) {
  cp_request req = {.method = method, .url = url, .body = body, .body_len = strlen(body)};
  cp_http_dispatch(cp, &toks, &req, auth, rep);
}

static void refused_request_touches_nothing(void **s) {
  (void)s;
  felix_log_set_level(FELIX_LOG_WARN);
  char *dir = tu_mkdtemp(), *db = tu_path(dir, "cp.db");
  cp_state cp;
  felix_err err;
  assert_int_equal(cp_state_open(&cp, db, NULL, 5000, 0, &err), FELIX_OK);
  const char *reg = "{\"broker_id\":\"b1\",\"storage_id\":\"11111111111111111111111111111111\","
                    "\"fsync_mode\":\"periodic\",\"address\":\"127.0.0.1:7101\"}";
  const char *wrong[] = {NULL, "Bearer nope", "Bearer admin-secret"};
  for (int i = 0; i < 3; i++) {
    cp_reply rep = {0};
    dispatch(&cp, "POST", "/v1/broker/register", reg, wrong[i], &rep);
    assert_int_equal(rep.status, 401);
    assert_non_null(strstr(rep.body, "missing or invalid bearer token"));
    free(rep.body);
  }
  cp_broker_row b;
  bool found = true;
  assert_int_equal(cp_store_broker_get(cp.store, "b1", &b, &found, &err), FELIX_OK);
  assert_false(found);
  cp_reply rep = {0};
  dispatch(&cp, "POST", "/v1/broker/register", reg, "Bearer broker-secret", &rep);
  assert_int_equal(rep.status, 200);
  free(rep.body);
  assert_int_equal(cp_store_broker_get(cp.store, "b1", &b, &found, &err), FELIX_OK);
  assert_true(found);
  /* Unknown routes and wrong methods, once authenticated. */
  rep = (cp_reply){0};
  dispatch(&cp, "GET", "/v1/nothing", "", "Bearer admin-secret", &rep);
  assert_int_equal(rep.status, 404);
  free(rep.body);
  rep = (cp_reply){0};
  dispatch(&cp, "PUT", "/v1/cluster", "", "Bearer admin-secret", &rep);
  assert_int_equal(rep.status, 405);
  free(rep.body);
  rep = (cp_reply){0};
  dispatch(&cp, "POST", "/v1/streams", "{\"name\":\"s\",\"shard_count\":\"x\"}", "Bearer admin-secret", &rep);
  assert_int_equal(rep.status, 400);
  assert_non_null(strstr(rep.body, "field shard_count"));
  free(rep.body);
  cp_state_close(&cp);
  free(db);
  tu_rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(token_equal_is_exact),
      cmocka_unit_test(bearer_checks),
      cmocka_unit_test(token_files),
      cmocka_unit_test(refused_request_touches_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
