/* test_cli.c — felix_opts_next: getopt_long with whole names only and
 * errors that name the option. */
#include "testutil.h"

#include "felix/cli.h"

static const struct option longopts[] = {
    {"json", no_argument, NULL, 'j'}, {"from", required_argument, NULL, 'f'}, {"format", required_argument, NULL, 'F'},
    {"help", no_argument, NULL, 'h'}, {0, 0, 0, 0}};

/* Parses the NULL-terminated words; returns the last result and copies the
 * error or the collected "c=value " pairs into out. */
static int run_words(const char **words, char *out, size_t cap, int in_order) {
  char *argv[16];
  int argc = 0;
  for (; words[argc]; argc++) argv[argc] = (char *)words[argc];
  argv[argc] = NULL;
  felix_opts o = {argc, argv, "ho:", longopts, in_order, 0, ""};
  const char *v;
  int c;
  size_t n = 0;
  out[0] = '\0';
  while ((c = felix_opts_next(&o, &v)) != -1 && c != '?') n += (size_t)snprintf(out + n, cap - n, "%c=%s ", c, v ? v : "-");
  if (c == '?') snprintf(out, cap, "%s", o.error);
  else n += (size_t)snprintf(out + n, cap - n, "| %s", optind < argc ? argv[optind] : "");
  return c;
}

static void expect(const char **words, const char *want) {
  char got[400];
  run_words(words, got, sizeof got, 0);
  if (strcmp(got, want)) fail_msg("got \"%s\", want \"%s\"", got, want);
}

static void values_both_ways_and_anywhere(void **s) {
  (void)s;
  expect((const char *[]){"p", "--from", "7", "DIR", "--json", NULL}, "f=7 j=- | DIR");
  expect((const char *[]){"p", "--from=7", "-oyaml", "DIR", NULL}, "f=7 o=yaml | DIR");
  expect((const char *[]){"p", "--from=", "DIR", NULL}, "f= | DIR");
  expect((const char *[]){"p", "--", "--json", NULL}, "| --json");
}

static void errors_name_the_option(void **s) {
  (void)s;
  expect((const char *[]){"p", "--color", NULL}, "unknown option --color");
  expect((const char *[]){"p", "--color=red", NULL}, "unknown option --color=red");
  expect((const char *[]){"p", "-x", NULL}, "unknown option -x");
  expect((const char *[]){"p", "DIR", "--from", NULL}, "--from needs a value");
  expect((const char *[]){"p", "-o", NULL}, "-o needs a value");
  expect((const char *[]){"p", "--json=yes", NULL}, "--json takes no value");
}

/* GNU getopt_long takes "--js" for --json: a script's meaning would change
 * the day another --js... flag is added. Whole names only. */
static void abbreviations_are_refused(void **s) {
  (void)s;
  expect((const char *[]){"p", "--js", NULL}, "unknown option --js");
  expect((const char *[]){"p", "--fr=3", NULL}, "unknown option --fr");
  expect((const char *[]){"p", "--fo", "x", NULL}, "unknown option --fo"); /* ambiguous: --from, --format */
}

static void in_order_stops_at_the_first_operand(void **s) {
  (void)s;
  char got[400];
  run_words((const char *[]){"p", "--json", "cmd", "--from", "1", NULL}, got, sizeof got, 1);
  assert_string_equal(got, "j=- | cmd");
}

/* A second parser in the same process starts from argv[1] again. */
static void a_second_parse_starts_over(void **s) {
  (void)s;
  expect((const char *[]){"p", "--json", "A", NULL}, "j=- | A");
  expect((const char *[]){"p", "--from", "1", "B", NULL}, "f=1 | B");
}

static void durations_have_one_parser(void **s) {
  (void)s;
  uint64_t ms = 7;
  assert_true(felix_parse_duration_ms("10", true, 3600000, &ms) && ms == 10000);
  assert_true(felix_parse_duration_ms("500ms", true, 3600000, &ms) && ms == 500);
  assert_true(felix_parse_duration_ms("2m", true, 3600000, &ms) && ms == 120000);
  assert_true(felix_parse_duration_ms("1h", true, 3600000, &ms) && ms == 3600000);
  assert_true(felix_parse_duration_ms("7d", false, UINT64_MAX, &ms) && ms == 604800000);
  assert_true(felix_parse_duration_ms("0s", false, 1, &ms) && ms == 0);
  ms = 7;
  /* refused, and *out untouched: over the cap, no unit where one is needed,
   * an unknown unit, a sign, spaces, nothing, too many digits */
  const char *bad[] = {"3601s", "61m", "2h", "10x", "-1s", "+1s", " 1s", "1s ", "", "s", "1w", "1ss", "9999999999999d"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) assert_false(felix_parse_duration_ms(bad[i], true, 3600000, &ms));
  assert_false(felix_parse_duration_ms("10", false, 3600000, &ms));
  assert_false(felix_parse_duration_ms(NULL, true, 3600000, &ms));
  assert_false(felix_parse_duration_ms("999999999999d", false, UINT64_MAX, &ms)); /* 8.6e19 ms: over 2^64 */
  assert_int_equal(ms, 7);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(values_both_ways_and_anywhere), cmocka_unit_test(errors_name_the_option),
      cmocka_unit_test(abbreviations_are_refused), cmocka_unit_test(in_order_stops_at_the_first_operand),
      cmocka_unit_test(a_second_parse_starts_over), cmocka_unit_test(durations_have_one_parser),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
