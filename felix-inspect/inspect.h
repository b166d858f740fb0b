/* inspect.h — shared plumbing of felix-inspect's subcommands.
 *
 * felix-inspect only reads: no subcommand opens a file for writing, takes the
 * directory lock, repairs or rotates anything. */
#ifndef FELIX_INSPECT_H
#define FELIX_INSPECT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "felix/error.h"
#include "felix/exitcode.h"
#include "felix/identity.h"

typedef struct inspect_opts {
  bool json;
  bool have_from, have_limit;
  uint64_t from, limit;
  const char *payload; /* text | hex | none */
  int nargs;
  const char *args[4];
} inspect_opts;

/* Prints "felix-inspect: error: MSG" and an optional hint; returns code. */
int inspect_error(int code, const char *hint, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Reports a lib failure with the exit code its status maps to. */
int inspect_fail(const felix_err *err, const char *hint);
/* Prints a cJSON value as one line to stdout and frees it. */
void inspect_print_json(cJSON *v);
void inspect_time_text(uint64_t micros, char out[40]);

/* What the next broker start will decide about the identity of datadir, or,
 * while a broker runs in it, what a start after its death would decide. */
typedef struct next_start {
  bool have_storage_id;
  felix_storage_id sid;
  bool run_state_present;
  felix_run_state rs;
  felix_last_run last_run;
  char current_boot[FELIX_BOOT_ID_MAX + 1];
  char boot_source[8];
  bool boot_known;
  bool token_present;
  char token_path[4200]; /* where the token was looked for ("" without storage id or boot) */
  pid_t holder;          /* the pid holding the directory lock, 0 when none */
  pid_t holder_own_pid;  /* the holder's pid in its own pid namespace, when that is another (0: the same) */
  bool running;          /* holder is the run that run-state names */
  bool unseen_run;       /* run-state names a live-looking run on this boot, but no process this pid
                            namespace can see holds the lock: crashed, or alive in another namespace */
  char missing[64];      /* the files a broker makes at its start that are not here ("" when none) */
  felix_identity_verdict verdict;            /* next start; not meaningful while running */
  felix_identity_verdict if_dies_up, if_dies_down; /* while running: the machine up / down */
} next_start;

/* Fails (with err) when datadir has none of a data directory's files
 * (FELIX_E_NOTFOUND), or when storage-id or run-state exist but are
 * malformed or unreadable. */
felix_status inspect_next_start(const char *datadir, next_start *out, felix_err *err);
cJSON *inspect_next_start_json(const next_start *ns);
void inspect_next_start_print(const next_start *ns);
/* The hint for a directory that is not a data directory, or NULL. */
const char *next_start_hint(const felix_err *err);

struct felix_problems;
cJSON *inspect_problems_json(const struct felix_problems *p);

int cmd_summary(const inspect_opts *o);
int cmd_storage_id(const inspect_opts *o);
int cmd_run_state(const inspect_opts *o);
int cmd_segments(const inspect_opts *o);
int cmd_dump(const inspect_opts *o);
int cmd_index(const inspect_opts *o);
int cmd_verify(const inspect_opts *o);
int cmd_ballot(const inspect_opts *o);

#endif
