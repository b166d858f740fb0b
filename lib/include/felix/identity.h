/* identity.h — the storage-id rotation decision (DESIGN.md §3.3).
 *
 * A pure function over plain facts. Only the "crashed on this same boot" row
 * needs evidence from the disk: it calls the given sync function (a sync of
 * the whole data directory) and rotates when the sync fails. Offline callers
 * (felix-inspect) pass no sync function and get the verdict "keep, if the sync
 * succeeds" with needs_sync set. */
#ifndef FELIX_IDENTITY_H
#define FELIX_IDENTITY_H

#include <stdbool.h>

#include "felix/datadir.h"

typedef enum felix_last_run {
  FELIX_LAST_RUN_UNRECORDED, /* no run-state file */
  FELIX_LAST_RUN_STOPPED,
  FELIX_LAST_RUN_CRASHED,    /* state=running: the process never finished a drain */
  FELIX_LAST_RUN_RESTORED,   /* state=restored: written by a restore, no run since */
} felix_last_run;

typedef struct felix_identity_facts {
  bool storage_id_created;   /* the storage-id file did not exist before this start */
  felix_last_run last_run;
  felix_fsync_mode last_mode;
  bool last_boot_known;
  const char *last_boot_id;
  const char *current_boot_id;
  bool boot_token_present;   /* this boot's token for this storage id */
} felix_identity_facts;

typedef struct felix_identity_verdict {
  bool rotate;
  bool needs_sync;  /* the verdict holds only if the data-directory sync succeeds */
  bool synced;      /* the sync ran and succeeded */
  char reason[256];
} felix_identity_verdict;

/* Returns 0 on success or an errno value. */
typedef int (*felix_data_dir_sync_fn)(void *ctx);

void felix_identity_decide(const felix_identity_facts *f, felix_data_dir_sync_fn sync, void *ctx,
                           felix_identity_verdict *out);

const char *felix_last_run_name(felix_last_run r); /* "stopped" | "crashed" | "restored" | "unrecorded" */
felix_last_run felix_last_run_of(const felix_run_state *rs, bool present);

/* Syncs a whole data directory: syncfs on every filesystem under it, then
 * fsync of every file and directory. Returns 0 or the first errno. */
int felix_sync_data_dir(const char *path);
/* Adapter for felix_identity_decide: ctx is the path. */
int felix_sync_data_dir_cb(void *ctx);

#endif
