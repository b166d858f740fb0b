/* decide/identity.c — the storage-id rotation decision of DESIGN.md §3.3 and the
 * whole-directory sync its "same boot" row depends on.
 *
 * Why rotate at all: under a relaxed fsync mode a machine that went down may
 * have lost an unsynced tail, and the copy would then look caught up while it
 * is not. A new storage id (and so new copy ids) makes the cluster measure it
 * again before trusting it. */
#include "felix/identity.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *felix_last_run_name(felix_last_run r) {
  switch (r) {
  case FELIX_LAST_RUN_UNRECORDED: return "unrecorded";
  case FELIX_LAST_RUN_STOPPED: return "stopped";
  case FELIX_LAST_RUN_CRASHED: return "crashed";
  case FELIX_LAST_RUN_RESTORED: return "restored";
  }
  return "unknown";
}

felix_last_run felix_last_run_of(const felix_run_state *rs, bool present) {
  if (!present) return FELIX_LAST_RUN_UNRECORDED;
  switch (rs->state) {
  case FELIX_RUN_STOPPED: return FELIX_LAST_RUN_STOPPED;
  case FELIX_RUN_RESTORED: return FELIX_LAST_RUN_RESTORED;
  case FELIX_RUN_RUNNING: break;
  }
  return FELIX_LAST_RUN_CRASHED;
}

static void verdict(felix_identity_verdict *v, bool rotate, const char *reason) {
  v->rotate = rotate;
  snprintf(v->reason, sizeof v->reason, "%s", reason);
}

/* Crashed, and this boot may still hold its page cache: keep the id only if
 * the boot token says no write failed this boot and a sync now succeeds. */
static void decide_same_boot(const felix_identity_facts *f, felix_data_dir_sync_fn sync, void *ctx,
                             felix_identity_verdict *v, const char *which) {
  char why[256];
  if (!f->boot_token_present) {
    snprintf(why, sizeof why, "crashed %s, and this boot's token is missing (a sync failed, or the runtime directory was lost)", which);
    verdict(v, true, why);
    return;
  }
  if (!sync) {
    v->needs_sync = true;
    snprintf(why, sizeof why, "crashed %s with the boot token present: kept if the data-directory sync at start succeeds", which);
    verdict(v, false, why);
    return;
  }
  int rc = sync(ctx);
  if (rc != 0) {
    snprintf(why, sizeof why, "crashed %s, and the data-directory sync failed: %s", which, strerror(rc));
    verdict(v, true, why);
    return;
  }
  v->synced = true;
  snprintf(why, sizeof why, "crashed %s with the boot token present, and the data-directory sync succeeded", which);
  verdict(v, false, why);
}

void felix_identity_decide(const felix_identity_facts *f, felix_data_dir_sync_fn sync, void *ctx,
                           felix_identity_verdict *v) {
  memset(v, 0, sizeof *v);
  bool same_boot = f->last_boot_known && f->current_boot_id && strcmp(f->last_boot_id, f->current_boot_id) == 0;
  bool relaxed = felix_fsync_mode_relaxed(f->last_mode);
  if (f->storage_id_created)
    verdict(v, false, "storage id created at this start: it is already new");
  else if (f->last_run == FELIX_LAST_RUN_UNRECORDED)
    verdict(v, true, "no run-state file: nothing says the last stop was safe");
  else if (f->last_run == FELIX_LAST_RUN_STOPPED)
    verdict(v, false, "last run stopped cleanly");
  else if (f->last_run == FELIX_LAST_RUN_RESTORED) /* the restore synced every file and wrote a new id */
    verdict(v, false, "restored from a restore point, no run since: the restore synced every file and its storage id is already new");
  else if (same_boot)
    decide_same_boot(f, sync, ctx, v, "on this same boot");
  else if (!relaxed && f->last_boot_known)
    verdict(v, false, "crashed under on_commit on another boot: everything it held was synced");
  else if (!relaxed) /* on_commit without a boot id: it may be this boot, so ask the token */
    decide_same_boot(f, sync, ctx, v, "under on_commit with no recorded boot id");
  else if (!f->last_boot_known)
    verdict(v, true, "crashed under a relaxed fsync mode and the boot id was not recorded");
  else
    verdict(v, true, "crashed under a relaxed fsync mode on another boot: the page cache went down with the machine");
  /* "keep if the sync succeeds" is given only without a sync function, and a
   * sync that ran is the reason to keep. */
  assert(!v->needs_sync || (!sync && !v->rotate && !v->synced));
  assert(!v->synced || (sync && !v->rotate));
}

/* Depth-first fsync of every file and directory under dirfd; syncfs once per
 * filesystem seen. Returns 0 or the first errno. */
static int sync_tree(int dirfd, dev_t *devs, size_t *ndevs, int depth) {
  struct stat sb;
  if (fstat(dirfd, &sb) != 0) return errno;
  bool seen = false;
  for (size_t i = 0; i < *ndevs; i++) seen |= devs[i] == sb.st_dev;
  if (!seen && *ndevs < 64) {
    devs[(*ndevs)++] = sb.st_dev;
    if (syncfs(dirfd) != 0) return errno;
  }
  if (depth > 16) return ELOOP;
  int dup_fd = dup(dirfd);
  DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
  if (!d) return dup_fd >= 0 ? (close(dup_fd), errno) : errno;
  int rc = 0;
  struct dirent *de;
  while (rc == 0 && (de = readdir(d)) != NULL) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    int fd = openat(dirfd, de->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
      if (errno != ENOENT && errno != ELOOP) rc = errno;
      continue;
    }
    struct stat cs;
    if (fstat(fd, &cs) != 0) rc = errno;
    else if (S_ISDIR(cs.st_mode)) rc = sync_tree(fd, devs, ndevs, depth + 1);
    else if (S_ISREG(cs.st_mode) && fsync(fd) != 0) rc = errno;
    close(fd);
  }
  closedir(d);
  if (rc == 0 && fsync(dirfd) != 0) rc = errno;
  return rc;
}

int felix_sync_data_dir(const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno;
  dev_t devs[64];
  size_t n = 0;
  int rc = sync_tree(fd, devs, &n, 0);
  close(fd);
  return rc;
}

int felix_sync_data_dir_cb(void *ctx) { return felix_sync_data_dir((const char *)ctx); }
