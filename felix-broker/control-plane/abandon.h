/* control-plane/abandon.h — placement abandon (DESIGN.md §4.9), over cp_state. */
#ifndef FELIX_CP_ABANDON_H
#define FELIX_CP_ABANDON_H

#include "state.h"

typedef struct cp_abandon_req {
  const char *stream;
  int shard;
  bool dry_run;
  int64_t expect_generation;
  const char *expect_copy;   /* "BROKER:COPY_ID" */
  const char *expect_digest; /* optional */
  /* While the shard still waits for inventories (§4.8): the operator's word
   * that no copy holds a generation above this; the new one goes above it. */
  int64_t above_generation;
} cp_abandon_req;

typedef struct cp_abandon_copy {
  char broker[CP_ID_MAX], copy_id[CP_HEX_MAX];
  bool live;
  int64_t log_end, last_generation, kept;
} cp_abandon_copy;

typedef struct cp_abandon_result {
  int64_t generation; /* the shard's (after: the new one) */
  int64_t max_hwm, at_risk;
  int chosen;
  char digest[17];
  int ncopies;
  cp_abandon_copy copies[FELIX_MAX_REPLICAS];
  bool waiting;                          /* the shard still waits for inventories */
  char waiting_for[FELIX_MAX_REPLICAS][CP_ID_MAX]; /* the slots that have not answered */
  int nwaiting_for;
} cp_abandon_result;

/* 200 with r filled (a dry run changes nothing); 404 no shard; 409 refused
 * (start-up wait, no live copy, or an expectation that no longer holds).
 * Caller holds mu. */
void cp_abandon(cp_state *cp, const cp_abandon_req *q, cp_abandon_result *r, cp_outcome *out);

/* The committed records an abandon would lose now (-1: no live copy). */
int64_t cp_abandon_estimate(cp_state *cp, const cp_shard_row *sh);

#endif
