/* fuzz_check.h — the invariant check the fuzz targets share. Not assert():
 * these must hold in every build, NDEBUG or not. */
#ifndef FELIX_FUZZ_CHECK_H
#define FELIX_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                              \
  do {                                                                           \
    if (!(cond)) {                                                               \
      fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      abort();                                                                   \
    }                                                                            \
  } while (0)

#endif
