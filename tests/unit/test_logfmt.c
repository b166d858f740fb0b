/* test_logfmt.c — levels and repeated lines of lib/util/logfmt.c, read back
 * from stderr redirected to a file, on a clock the test moves. */
#include "testutil.h"

#include <fcntl.h>
#include <unistd.h>

#include "felix/logfmt.h"

static uint64_t clock_ms = 1000000;
static uint64_t fake_clock(void) { return clock_ms; }

static int saved_stderr = -1;
static char path[64];

static int capture(void **s) {
  (void)s;
  snprintf(path, sizeof path, "/tmp/felix-logfmt-%d", (int)getpid());
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(fd >= 0);
  saved_stderr = dup(2);
  dup2(fd, 2);
  close(fd);
  felix_log_test_clock(fake_clock);
  felix_log_set_level(FELIX_LOG_INFO);
  return 0;
}

static int release(void **s) {
  (void)s;
  dup2(saved_stderr, 2);
  close(saved_stderr);
  unlink(path);
  felix_log_test_clock(NULL);
  return 0;
}

/* What was written since the last call, lines joined by '|' without ts=. */
static const char *written(void) {
  static char out[8192];
  static long seen;
  char buf[8192];
  int fd = open(path, O_RDONLY);
  ssize_t n = pread(fd, buf, sizeof buf - 1, seen);
  close(fd);
  buf[n > 0 ? n : 0] = '\0';
  seen += n > 0 ? n : 0;
  size_t k = 0;
  out[0] = '\0';
  for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
    char *body = strchr(line, ' ');
    k += (size_t)snprintf(out + k, sizeof out - k, "%s%s", k ? "|" : "", body ? body + 1 : line);
  }
  return out;
}

static void levels_below_the_set_one_are_dropped(void **s) {
  (void)s;
  written();
  felix_log_event("debug", "d1", NULL);
  felix_log_event("info", "i1", NULL);
  felix_log_set_level(FELIX_LOG_WARN);
  felix_log_event("info", "i2", NULL);
  felix_log_event("error", "e1", "k", "v w", NULL);
  felix_log_set_level(FELIX_LOG_DEBUG);
  felix_log_event("debug", "d2", NULL);
  assert_string_equal(written(), "level=info msg=i1|level=error msg=e1 k=\"v w\"|level=debug msg=d2");
  felix_log_level l;
  assert_true(felix_log_level_parse("warn", &l) && l == FELIX_LOG_WARN);
  assert_false(felix_log_level_parse("WARN", &l));
  char err[160];
  assert_false(felix_log_configure("loud", err, sizeof err));
  assert_string_equal(err, "--log-level: 'loud' is not debug, info, warn or error");
  setenv("FELIX_LOG_LEVEL", "chatty", 1);
  assert_false(felix_log_configure(NULL, err, sizeof err));
  assert_string_equal(err, "environment FELIX_LOG_LEVEL: 'chatty' is not debug, info, warn or error");
  unsetenv("FELIX_LOG_LEVEL");
  assert_true(felix_log_configure(NULL, err, sizeof err));
}

/* Five times a second for 12 s: the first line, then one with the count
 * when the window has passed, the rest left out; other lines unaffected. */
static void a_repeated_line_is_written_once_with_its_count(void **s) {
  (void)s;
  written();
  for (int i = 0; i < 60; i++) {
    felix_log_event("info", "peer link reset", "shard", "q3_0", NULL);
    if (i == 3) felix_log_event("info", "peer link reset", "shard", "q3_1", NULL); /* another shard: its own line */
    clock_ms += 200;
  }
  assert_string_equal(written(), "level=info msg=\"peer link reset\" shard=q3_0|level=info msg=\"peer link reset\" shard=q3_1|"
                                 "level=info msg=\"peer link reset\" shard=q3_0 repeated=49");
  /* the burst stops: the flush reports what was left out once its window is over */
  felix_log_flush_repeats();
  assert_string_equal(written(), "");
  clock_ms += FELIX_LOG_REPEAT_MS;
  felix_log_flush_repeats();
  assert_string_equal(written(), "level=info msg=\"peer link reset\" shard=q3_0 repeated=9");
  felix_log_flush_repeats();
  assert_string_equal(written(), ""); /* reported once */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(levels_below_the_set_one_are_dropped),
      cmocka_unit_test(a_repeated_line_is_written_once_with_its_count),
  };
  return cmocka_run_group_tests(tests, capture, release);
}
