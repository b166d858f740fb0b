/* test_watchdog.c — the broker's watchdog (felix-broker/broker/watchdog.c):
 * which passes say a sync or the loop is stuck, on pass intervals the test
 * chooses. A gap between passes longer than WATCH_GAP_MS is a stop of the
 * whole process (SIGSTOP, a suspended VM): it counts as no one's stall
 * (helper-31). Lines are read back from stderr redirected to a file. */
#include "testutil.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "../../felix-broker/broker/watchdog.c"

static int saved_stderr = -1;
static char *dir;

static uint64_t far_apart_ms(void) {
  static uint64_t t;
  return t += 2 * FELIX_LOG_REPEAT_MS; /* no line held back as a repeat */
}

static int capture(void **s) {
  (void)s;
  dir = tu_mkdtemp();
  char *p = tu_path(dir, "err.log");
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  free(p);
  assert_true(fd >= 0);
  saved_stderr = dup(2);
  dup2(fd, 2);
  close(fd);
  felix_log_test_clock(far_apart_ms);
  return 0;
}

static int release(void **s) {
  (void)s;
  dup2(saved_stderr, 2);
  close(saved_stderr);
  felix_log_test_clock(NULL);
  tu_rmdir(dir);
  return 0;
}

static int said(const char *needle) { return tu_count_in(dir, "err.log", needle); }

static const char LOOP_STUCK_LINE[] = "the broker's loop has not run";
static const char SYNC_STUCK_LINE[] = "a sync of the log has not returned";

static void passes(broker_watch *w, int n, uint64_t every_ms) {
  for (int i = 0; i < n; i++) watch_pass(w, every_ms);
}

/* Quiet for 2 s of watched time: one line, and one when it ticks again; a
 * 30 s gap between passes (the process stopped) adds nothing. */
static void the_loop_line_counts_watched_time_only(void **s) {
  (void)s;
  broker_watch w = {0};
  watch_init(&w);
  atomic_store(&w.loop_ticks, 1);
  passes(&w, 5, 250); /* 1000 ms quiet (the first pass saw the tick) */
  passes(&w, 1, 30000); /* stopped whole: not counted */
  assert_int_equal(w.quiet_ms, 1000);
  assert_int_equal(said(LOOP_STUCK_LINE), 0);
  passes(&w, 4, 250);
  assert_int_equal(said(LOOP_STUCK_LINE), 1);
  passes(&w, 4, 250);
  assert_int_equal(said(LOOP_STUCK_LINE), 1); /* once a stretch */
  atomic_store(&w.loop_ticks, 2);
  passes(&w, 1, 250);
  assert_int_equal(said("the broker's loop runs again"), 1);
  assert_int_equal(w.quiet_ms, 0);
  free(w.text);
}

/* The loop is not watched before its first tick: the start's recovery. */
static void no_loop_line_before_the_first_tick(void **s) {
  (void)s;
  broker_watch w = {0};
  watch_init(&w);
  passes(&w, 20, 250);
  assert_int_equal(said(LOOP_STUCK_LINE), 0);
  free(w.text);
}

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static bool gate_closed, gate_entered;

static int gated_sync(int fd, void *ctx) {
  (void)ctx;
  pthread_mutex_lock(&gate_mu);
  gate_entered = true;
  pthread_cond_broadcast(&gate_cv);
  while (gate_closed) pthread_cond_wait(&gate_cv, &gate_mu);
  pthread_mutex_unlock(&gate_mu);
  return fdatasync(fd) == 0 ? 0 : errno;
}

static void *sync_thread(void *arg) {
  felix_err err;
  assert_int_equal(felix_log_sync(arg, &err), FELIX_OK);
  return NULL;
}

/* A sync watched for 2 s is said once, and its return once; a 30 s gap
 * between passes, in which the process stood still, adds nothing. */
static void the_sync_line_counts_watched_time_only(void **s) {
  (void)s;
  char *d = tu_mkdtemp();
  felix_log_config cfg = {.segment_bytes = 1 << 16, .index_spacing_bytes = 256, .fsync_mode = FELIX_FSYNC_ON_COMMIT,
                          .fsync_interval_ms = 20, .sync_fn = gated_sync};
  felix_log *log = NULL;
  felix_err err;
  assert_int_equal(felix_log_open(d, "w_0", &cfg, true, &log, NULL, &err), FELIX_OK);
  felix_record_in r = {"x", 1, 0};
  felix_appended a;
  assert_int_equal(felix_log_append_batch(log, &r, 1, &a, &err), FELIX_OK);
  broker_watch w = {0};
  watch_init(&w);
  w.copies = calloc(1, sizeof *w.copies);
  w.n = w.cap = 1;
  w.copies[0].log = log;
  w.copies[0].mode = FELIX_FSYNC_ON_COMMIT;
  snprintf(w.copies[0].shard, sizeof w.copies[0].shard, "w_0-test");
  pthread_mutex_lock(&gate_mu);
  gate_closed = true, gate_entered = false;
  pthread_mutex_unlock(&gate_mu);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, sync_thread, log), 0);
  pthread_mutex_lock(&gate_mu);
  while (!gate_entered) pthread_cond_wait(&gate_cv, &gate_mu);
  pthread_mutex_unlock(&gate_mu);
  passes(&w, 5, 250);   /* watched: at most 1000 ms (the first pass counts only what it saw) */
  passes(&w, 3, 30000); /* stopped whole */
  assert_true(w.copies[0].watched_ms <= 1000);
  assert_int_equal(said(SYNC_STUCK_LINE), 0);
  passes(&w, 8, 250);
  assert_int_equal(said(SYNC_STUCK_LINE), 1);
  assert_int_equal(said("sync=sync"), 1);
  passes(&w, 4, 250);
  assert_int_equal(said(SYNC_STUCK_LINE), 1); /* once a sync */
  pthread_mutex_lock(&gate_mu);
  gate_closed = false;
  pthread_cond_broadcast(&gate_cv);
  pthread_mutex_unlock(&gate_mu);
  assert_int_equal(pthread_join(t, NULL), 0);
  passes(&w, 1, 250);
  assert_int_equal(said("the stalled sync of the log returned"), 1);
  assert_int_equal(felix_log_close(log, &err), FELIX_OK);
  free(w.copies);
  free(w.text);
  tu_rmdir(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(the_loop_line_counts_watched_time_only, capture, release),
      cmocka_unit_test_setup_teardown(no_loop_line_before_the_first_tick, capture, release),
      cmocka_unit_test_setup_teardown(the_sync_line_counts_watched_time_only, capture, release),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
