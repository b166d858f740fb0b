/* cli.h — the one option loop of every Felix program, on getopt_long(3),
 * and the version they all print. */
#ifndef FELIX_CLI_H
#define FELIX_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FELIX_VERSION "0.1.0"

typedef struct felix_opts {
  int argc;
  char **argv;
  const char *shortopts;         /* getopt's, without the leading '+' or ':' */
  const struct option *longopts; /* ends with {0} */
  int in_order;                  /* stop at the first argument that is not an option */
  int started;
  char error[320];               /* why the last felix_opts_next returned '?' */
} felix_opts;

/* Returns the next option's val (value in *value, NULL when it has none),
 * -1 when none are left (the operands are argv[optind..]), or '?' with
 * o->error naming the option: unknown, missing its value, given a value it
 * does not take. Long options match whole names only: GNU's abbreviations
 * ("--j" for "--json") are refused, so adding a flag never changes what a
 * script's command line means. Accepts --flag=value and --flag value. */
int felix_opts_next(felix_opts *o, const char **value);

/* One unit of a scale for felix_format_units. */
typedef struct felix_unit {
  const char *suffix;   /* written right after the number: " KiB", "k" */
  double size;          /* in the first unit of the scale */
  double decimal_below; /* one decimal while the value in this unit is below this, none from it */
  double up;            /* from this value as printed on, the next unit (after the last: too large) */
} felix_unit;

/* v (in units[0]) in the first of the n units whose printed value stays
 * below its `up`, into out (cap bytes). False, and "-", for a negative
 * value, NaN, or one too large for the last unit. */
bool felix_format_units(double v, const felix_unit *units, size_t n, char *out, size_t cap);

/* b bytes for a person, in at most 8 columns: "512 B", "1.5 KiB", "17 MiB",
 * ... up to EiB (one decimal below 10). A value that would print as 1024 of
 * a unit is 1.0 of the next ("1023.99 KiB" is "1.0 MiB"); negative, NaN and
 * beyond 1023 EiB are "-". */
void felix_human_bytes(double b, char out[24]);

/* A duration flag's value into milliseconds: digits (at most 12) and a unit
 * of ms, s, m, h or d; bare digits are seconds when bare_is_seconds, else
 * refused. False for anything else or above max_ms. One parser for every
 * program (felixctl --wait, restore-point prune --older-than). */
bool felix_parse_duration_ms(const char *s, bool bare_is_seconds, uint64_t max_ms, uint64_t *out);

/* The name of the long option with this val ("--x"), or "-c" for a short one. */
const char *felix_opts_name(const felix_opts *o, int val, char buf[64]);

#endif
