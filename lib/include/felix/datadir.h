/* datadir.h — the files that name a data directory (DESIGN.md §3, §3.3):
 * storage-id, run-state, the exclusive lock, the boot id and boot token. */
#ifndef FELIX_DATADIR_H
#define FELIX_DATADIR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "felix/error.h"
#include "felix/log.h"

#define FELIX_STORAGE_ID_HEX 32
#define FELIX_BOOT_ID_MAX 64

typedef struct felix_storage_id {
  char hex[FELIX_STORAGE_ID_HEX + 1];
} felix_storage_id;

/* Parses the content of a storage-id file; on failure names the byte. */
felix_status felix_storage_id_parse(const char *buf, size_t len, const char *what,
                                    felix_storage_id *out, felix_err *err);
/* Loads dirfd/storage-id, or creates a new one when absent (*created). */
felix_status felix_storage_id_load_or_create(int dirfd, const char *dir, felix_storage_id *out,
                                             bool *created, felix_err *err);
/* Reads without creating; FELIX_E_NOTFOUND when absent. */
felix_status felix_storage_id_load(int dirfd, const char *dir, felix_storage_id *out, felix_err *err);
/* Writes a fresh random id (rotation), durably, before returning it. */
felix_status felix_storage_id_replace(int dirfd, const char *dir, felix_storage_id *out, felix_err *err);

/* restored: written by `restore-point restore`, which is not a run: such a
 * file has no fsync_mode, pid, boot id or broker id. */
typedef enum felix_run_phase { FELIX_RUN_RUNNING, FELIX_RUN_STOPPED, FELIX_RUN_RESTORED } felix_run_phase;

typedef struct felix_run_state {
  felix_run_phase state;
  felix_fsync_mode fsync_mode;
  bool has_boot_id;
  char boot_id[FELIX_BOOT_ID_MAX + 1];
  char boot_id_source[8]; /* "kernel" | "file" */
  int64_t pid;
  char since[32];         /* RFC 3339 UTC: when the run started, stopped, or the restore finished */
  char broker_id[128];    /* the broker id of the run ("" when not recorded) */
  char restored_from[1024]; /* the restore point written here by
                             * `restore-point restore` ("" when none) */
  char restored_by[512];    /* the command that restored it (state=restored) */
} felix_run_state;

/* "running" | "stopped" | "restored", as run-state spells it. */
const char *felix_run_phase_name(felix_run_phase p);

felix_status felix_run_state_parse(const char *buf, size_t len, const char *what,
                                   felix_run_state *out, felix_err *err);
/* Renders the file content into out (NUL-terminated). */
void felix_run_state_format(const felix_run_state *rs, char *out, size_t cap);
/* *present=false (and FELIX_OK) when the file does not exist. */
felix_status felix_run_state_read(int dirfd, const char *dir, felix_run_state *out, bool *present,
                                  felix_err *err);
felix_status felix_run_state_write(int dirfd, const char *dir, const felix_run_state *rs, felix_err *err);

/* The machine's boot id: FELIX_BOOT_ID_FILE when set (source "file"), else
 * /proc/sys/kernel/random/boot_id (source "kernel"). */
felix_status felix_boot_id_read(char out[FELIX_BOOT_ID_MAX + 1], char source[8], felix_err *err);

/* <runtime dir>/<storage id>.<boot id>.ok, runtime dir from FELIX_RUNTIME_DIR
 * or /run/felix. */
void felix_boot_token_path(const felix_storage_id *sid, const char *boot_id, char *out, size_t cap);
const char *felix_runtime_dir(void);
bool felix_boot_token_present(const felix_storage_id *sid, const char *boot_id);
felix_status felix_boot_token_create(const felix_storage_id *sid, const char *boot_id, felix_err *err);
/* Removes the token; an unlink needs no free space, so this works on a full disk. */
void felix_boot_token_remove(const felix_storage_id *sid, const char *boot_id);

/* The exclusive lock of a data directory (flock on dirfd/lock). */
typedef struct felix_dir_lock {
  int fd;
} felix_dir_lock;

/* FELIX_E_BUSY with the holder's pid in the message when another process holds it. */
felix_status felix_dir_lock_acquire(int dirfd, const char *dir, felix_dir_lock *out, felix_err *err);
void felix_dir_lock_release(felix_dir_lock *lock);
/* Read-only probe (via /proc/locks): the pid holding dir's lock, or 0. */
pid_t felix_dir_lock_holder(int dirfd);

#endif
