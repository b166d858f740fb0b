/* output.c — how felixctl prints: aligned tables with an upper-case header
 * row, key-value describe views, and JSON.
 *
 * Table columns are separated by two spaces and padded to the widest cell;
 * the last column is not padded, so a free-text column (a message) may be
 * long without widening anything. JSON for list and describe commands is the
 * control plane's body as it arrived (on one line): its field names are the
 * contract (DESIGN.md §5), and re-encoding would turn 64-bit integers into
 * doubles. */
#include <stdlib.h>
#include <string.h>

#include "felixctl.h"

#include "felix/jsonnum.h"

struct ctl_table {
  int ncols;
  size_t nrows, cap;
  char **cells; /* nrows * ncols, row 0 is the header */
  size_t *width;
};

static void table_add(ctl_table *t, const char *const *cells) {
  if (t->nrows == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 16;
    char **c = realloc(t->cells, cap * (size_t)t->ncols * sizeof *c);
    if (!c) abort(); /* a table that does not fit in memory is not worth a recovery path */
    t->cells = c;
    t->cap = cap;
  }
  for (int i = 0; i < t->ncols; i++) {
    const char *v = cells[i] && cells[i][0] ? cells[i] : "-";
    char *copy = strdup(v);
    if (!copy) abort();
    t->cells[t->nrows * (size_t)t->ncols + (size_t)i] = copy;
    size_t w = strlen(copy);
    if (w > t->width[i]) t->width[i] = w;
  }
  t->nrows++;
}

ctl_table *ctl_table_new(int ncols, const char *const *headers) {
  ctl_table *t = calloc(1, sizeof *t);
  if (!t || !(t->width = calloc((size_t)ncols, sizeof *t->width))) abort();
  t->ncols = ncols;
  table_add(t, headers);
  return t;
}

void ctl_table_row(ctl_table *t, const char *const *cells) { table_add(t, cells); }

void ctl_table_print(ctl_table *t) {
  for (size_t r = 0; r < t->nrows; r++) {
    for (int i = 0; i < t->ncols; i++) {
      const char *v = t->cells[r * (size_t)t->ncols + (size_t)i];
      if (i == t->ncols - 1) printf("%s\n", v);
      else printf("%-*s  ", (int)t->width[i], v);
      free((char *)v);
    }
  }
  free(t->cells);
  free(t->width);
  free(t);
}

const char *ctl_field(const cJSON *obj, const char *key, char buf[64]) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (cJSON_IsString(v)) return v->valuestring[0] ? v->valuestring : "-";
  if (cJSON_IsBool(v)) return cJSON_IsTrue(v) ? "yes" : "no";
  if (cJSON_IsNumber(v)) return ctl_number_text(v, buf);
  return "-";
}

const char *ctl_number_text(const cJSON *v, char buf[64]) {
  int64_t n;
  /* Exact integers by the one checked reader; a fraction to 15 digits (0.1
   * stays 0.1); 2^53 and
   * beyond (the double may have rounded it) in full floating-point form,
   * never as an integer it may not be. */
  switch (felix_json_i64(v, &n)) {
  case FELIX_JSON_INT_OK: snprintf(buf, 64, "%lld", (long long)n); break;
  case FELIX_JSON_INT_INEXACT: snprintf(buf, 64, "%.17g", v->valuedouble); break;
  case FELIX_JSON_INT_NOT_INTEGER: snprintf(buf, 64, "%.15g", v->valuedouble); break;
  }
  return buf;
}

void ctl_kv(const char *key, const char *value) {
  char label[64];
  snprintf(label, sizeof label, "%s:", key);
  printf("%-18s %s\n", label, value && value[0] ? value : "-");
}

/* Prints the body without the whitespace between tokens, so a pretty
 * answer still comes out as one line: lossless, unlike re-encoding. */
void ctl_print_body(const ctl_reply *r) {
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < r->len; i++) {
    char c = r->body[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      continue;
    } else if (c == '"') {
      in_string = true;
    }
    putchar(c);
  }
  putchar('\n');
}

void ctl_json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p == '\n') fputs("\\n", f);
    else if (*p == '\t') fputs("\\t", f);
    else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
    else fputc(*p, f);
  }
  fputc('"', f);
}

void ctl_print_rows(const cJSON *rows, const char *const *headers, const char *const *keys, int n) {
  ctl_table *t = ctl_table_new(n, headers);
  const cJSON *row;
  cJSON_ArrayForEach(row, rows) {
    char buf[CTL_MAX_COLUMNS][64];
    const char *cells[CTL_MAX_COLUMNS];
    for (int i = 0; i < n && i < CTL_MAX_COLUMNS; i++) cells[i] = ctl_field(row, keys[i], buf[i]);
    ctl_table_row(t, cells);
  }
  ctl_table_print(t);
}
