/* test_metrics.c — lib/util/metrics.c: the exposition text of a family,
 * exact integers, escaped labels, and the cumulative histogram. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "felix/metrics.h"

static void a_family_has_help_and_type_then_its_samples(void **state) {
  (void)state;
  felix_metrics m = {0};
  felix_metrics_family(&m, "felix_x_total", "counter", "Things.");
  felix_metrics_u64(&m, "felix_x_total", "", UINT64_MAX);
  felix_metrics_u64(&m, "felix_x_total", "k=\"v\"", 0);
  felix_metrics_double(&m, "felix_x_total", "k=\"w\"", 0.25);
  char *t = felix_metrics_take(&m);
  assert_string_equal(t, "# HELP felix_x_total Things.\n# TYPE felix_x_total counter\n"
                         "felix_x_total 18446744073709551615\nfelix_x_total{k=\"v\"} 0\nfelix_x_total{k=\"w\"} 0.25\n");
  free(t);
  t = felix_metrics_take(&m); /* the builder was reset: empty, not NULL */
  assert_non_null(t);
  assert_string_equal(t, "");
  free(t);
}

static void label_values_are_escaped_and_bounded(void **state) {
  (void)state;
  char out[64];
  assert_true(felix_metrics_labels(out, sizeof out, "stream", "a\"b\\c\nd", "shard", "3", NULL));
  assert_string_equal(out, "stream=\"a\\\"b\\\\c\\nd\",shard=\"3\"");
  char small[12];
  assert_false(felix_metrics_labels(small, sizeof small, "stream", "orders", NULL)); /* needs 16 bytes */
  assert_true(felix_metrics_labels(out, sizeof out, NULL));
  assert_string_equal(out, "");
}

static void the_histogram_is_cumulative_and_counts_what_is_above_the_last_bound(void **state) {
  (void)state;
  felix_histogram h = {0};
  felix_histogram_observe(&h, 0.0004);
  felix_histogram_observe(&h, 0.0005); /* on a bound: counted in it (le) */
  felix_histogram_observe(&h, 0.003);
  felix_histogram_observe(&h, 60);
  felix_metrics m = {0};
  felix_metrics_histogram(&m, "lat", "", &h);
  char *t = felix_metrics_take(&m);
  assert_non_null(strstr(t, "lat_bucket{le=\"0.0005\"} 2\n"));
  assert_non_null(strstr(t, "lat_bucket{le=\"0.001\"} 2\n"));
  assert_non_null(strstr(t, "lat_bucket{le=\"0.005\"} 3\n"));
  assert_non_null(strstr(t, "lat_bucket{le=\"10\"} 3\n"));
  assert_non_null(strstr(t, "lat_bucket{le=\"+Inf\"} 4\n"));
  assert_non_null(strstr(t, "lat_count 4\n"));
  assert_non_null(strstr(t, "lat_sum 60.0039\n"));
  free(t);
  felix_metrics_histogram(&m, "lat", "x=\"1\"", &h);
  t = felix_metrics_take(&m);
  assert_non_null(strstr(t, "lat_bucket{x=\"1\",le=\"+Inf\"} 4\n"));
  assert_non_null(strstr(t, "lat_count{x=\"1\"} 4\n"));
  free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_family_has_help_and_type_then_its_samples),
      cmocka_unit_test(label_values_are_escaped_and_bounded),
      cmocka_unit_test(the_histogram_is_cumulative_and_counts_what_is_above_the_last_bound),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
