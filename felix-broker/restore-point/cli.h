/* restore-point/cli.h — the pieces of felix-broker restore-point (restore-point/main.c parses,
 * restore-point/commands.c runs and prints). */
#ifndef FELIX_RP_CLI_H
#define FELIX_RP_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RP_MAX_SHARDS 256

typedef struct rp_args {
  const char *data_dir, *to, *from;
  const char *keep, *older_than; /* prune, as given (checked by rp_cmd_prune) */
  bool dry_run;
  const char *shards[RP_MAX_SHARDS];
  size_t nshards;
  bool json;
} rp_args;

int rp_cmd_create(rp_args *a);
int rp_cmd_list(rp_args *a);
int rp_cmd_verify(rp_args *a);
int rp_cmd_restore(rp_args *a);
int rp_cmd_prune(rp_args *a);

/* The "bytes done / total, rate, ETA" line on stderr, only on a terminal. */
typedef struct rp_progress_state {
  const char *verb;
  bool enabled, shown;
  double start, last;
} rp_progress_state;
void rp_progress_init(rp_progress_state *p, const char *verb);
void rp_progress(void *ctx, uint64_t done, uint64_t total);
void rp_progress_end(rp_progress_state *p);

#endif
