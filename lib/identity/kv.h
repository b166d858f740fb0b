/* identity/kv.h — the key=value line format shared by run-state and ballot. */
#ifndef FELIX_KV_H
#define FELIX_KV_H

#include <stddef.h>
#include <stdint.h>

#include "felix/error.h"

typedef struct kv_field {
  const char *key;
  char *value;   /* copied out; NULL when absent */
  size_t at;     /* byte position of the line */
  int required;
} kv_field;

/* Parses buf against the given fields: each line "key=value\n", every key
 * known, none repeated, required ones present, and the file ends with '\n'.
 * Errors name `what`, the line and its byte position. */
felix_status kv_parse(const char *buf, size_t len, const char *what, kv_field *fields, size_t n,
                      felix_err *err);
void kv_free(kv_field *fields, size_t n);
/* Parses a decimal u64 value of field f; error names the field. */
felix_status kv_u64(const kv_field *f, const char *what, uint64_t *out, felix_err *err);

#endif
