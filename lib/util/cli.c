/* util/cli.c — getopt_long with Felix's errors: opterr off, every problem
 * returned as one message that names the option. */
#include "felix/cli.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *felix_opts_name(const felix_opts *o, int val, char buf[64]) {
  for (const struct option *l = o->longopts; l && l->name; l++)
    if (l->val == val) {
      snprintf(buf, 64, "--%s", l->name);
      return buf;
    }
  snprintf(buf, 64, "-%c", val);
  return buf;
}

/* The argv element the option just returned came from: the one before its
 * separate value, if it had one. */
static const char *option_text(const felix_opts *o, const char *value) {
  if (value && optind >= 2 && value == o->argv[optind - 1]) return o->argv[optind - 2];
  return optind >= 1 ? o->argv[optind - 1] : "";
}

/* "--name" or "--name=..." spelled out in full. */
static int whole_name(const char *text, const char *name) {
  size_t n = strlen(name);
  return !strncmp(text, "--", 2) && !strncmp(text + 2, name, n) && (text[2 + n] == '\0' || text[2 + n] == '=');
}

static int fail(felix_opts *o, const char *fmt, const char *what) {
  snprintf(o->error, sizeof o->error, fmt, what);
  return '?';
}

int felix_opts_next(felix_opts *o, const char **value) {
  char spec[128], name[64];
  snprintf(spec, sizeof spec, "%s:%s", o->in_order ? "+" : "", o->shortopts ? o->shortopts : "");
  if (!o->started) optind = 0; /* glibc: 0 re-initialises, for a second parser in one process */
  o->started = 1;
  opterr = 0;
  int index = -1;
  int c = getopt_long(o->argc, o->argv, spec, o->longopts, &index);
  *value = optarg;
  if (c == -1) return -1;
  const char *text = c == '?' || c == ':' ? (optind >= 1 ? o->argv[optind - 1] : "") : option_text(o, optarg);
  if (c == ':') {
    if (text[0] == '-' && text[1] != '-' && optopt) return fail(o, "%s needs a value", felix_opts_name(o, optopt, name));
    return fail(o, "%s needs a value", text);
  }
  if (c == '?') {
    if (optopt && !strncmp(text, "--", 2) && strchr(text, '='))
      return fail(o, "%s takes no value", felix_opts_name(o, optopt, name));
    if (optopt && text[0] == '-' && text[1] != '-') {
      snprintf(name, sizeof name, "-%c", optopt);
      return fail(o, "unknown option %s", name);
    }
    return fail(o, "unknown option %s", text);
  }
  if (index >= 0 && !whole_name(text, o->longopts[index].name)) {
    snprintf(name, sizeof name, "%.*s", (int)strcspn(text, "="), text);
    return fail(o, "unknown option %s", name);
  }
  return c;
}

bool felix_format_units(double v, const felix_unit *units, size_t n, char *out, size_t cap) {
  assert(n > 0 && cap >= 2);
  if (v >= 0) /* false for a negative value and for NaN */
    for (size_t i = 0; i < n; i++) {
      double x = v / units[i].size;
      snprintf(out, cap, x < units[i].decimal_below ? "%.1f%s" : "%.0f%s", x, units[i].suffix);
      /* judged as printed: 1023.96 KiB prints "1024", which is "1.0 MiB" */
      if (strtod(out, NULL) < units[i].up) return true;
    }
  snprintf(out, cap, "-");
  return false;
}

void felix_human_bytes(double b, char out[24]) {
  /* as ls -h: one decimal below 10 of a unit, so it takes at most 8 columns */
  static const felix_unit units[] = {
      {" B", 1, 0, 1024},
      {" KiB", 0x1p10, 9.95, 1024},
      {" MiB", 0x1p20, 9.95, 1024},
      {" GiB", 0x1p30, 9.95, 1024},
      {" TiB", 0x1p40, 9.95, 1024},
      {" PiB", 0x1p50, 9.95, 1024},
      {" EiB", 0x1p60, 9.95, 1024},
  };
  felix_format_units(b, units, sizeof units / sizeof units[0], out, 24);
}

bool felix_parse_duration_ms(const char *s, bool bare_is_seconds, uint64_t max_ms, uint64_t *out) {
  static const struct {
    const char *unit;
    uint64_t ms;
  } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}};
  size_t digits = s ? strspn(s, "0123456789") : 0;
  if (digits == 0 || digits > 12) return false; /* 12 digits of days still fit in 64 bits */
  uint64_t v = 0;
  for (size_t i = 0; i < digits; i++) v = v * 10 + (uint64_t)(s[i] - '0');
  const char *unit = s + digits;
  uint64_t scale = 0;
  if (!*unit) scale = bare_is_seconds ? 1000 : 0;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (!strcmp(unit, units[i].unit)) scale = units[i].ms;
  if (!scale || v > max_ms / scale) return false;
  *out = v * scale;
  return true;
}
