/* exitcode.h — the exit codes shared by felix-broker, felixctl and felix-inspect (DESIGN.md §5). */
#ifndef FELIX_EXITCODE_H
#define FELIX_EXITCODE_H

#include "felix/error.h"

enum {
  FELIX_EXIT_OK = 0,
  FELIX_EXIT_FAILURE = 1,
  FELIX_EXIT_USAGE = 2,
  FELIX_EXIT_NOT_FOUND = 3,
  FELIX_EXIT_REFUSED = 4,
  FELIX_EXIT_UNREACHABLE = 5,
  FELIX_EXIT_CORRUPT = 6,
  FELIX_EXIT_UNAUTHORIZED = 7, /* felix-broker run: the control plane refused its token (401) */
};

static inline int felix_exit_code_of(felix_status st) {
  switch (st) {
  case FELIX_OK: return FELIX_EXIT_OK;
  case FELIX_E_NOTFOUND: return FELIX_EXIT_NOT_FOUND;
  case FELIX_E_CORRUPT: return FELIX_EXIT_CORRUPT;
  case FELIX_E_BUSY: return FELIX_EXIT_REFUSED;
  case FELIX_E_REFUSED: return FELIX_EXIT_REFUSED;
  case FELIX_E_UNREACHABLE: return FELIX_EXIT_UNREACHABLE;
  case FELIX_E_INVAL: return FELIX_EXIT_USAGE;
  default: return FELIX_EXIT_FAILURE;
  }
}

#endif
