/* broker/shard.c — a shard copy's lifecycle on this broker: creating an empty
 * copy, taking promises from the control plane's assignments, becoming the
 * leader of a generation, deleting a copy of a deleted stream.
 *
 * Invariants (DESIGN.md §3.4): a promise is on disk before it is acted on; a
 * copy takes a promise only for a higher generation (or again for the same
 * leader); the leader's own copy obeys its ballot — it leads generation G only
 * while the ballot names this process (broker, copy id, incarnation) at G; the
 * generations line of G is durable before any record of G is written. */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker.h"
#include "drain.h"
#include "felix/restorepoint.h"
#include "felix/fileutil.h"
#include "felix/logfmt.h"

uint64_t shard_last_generation(const shard *s, uint64_t log_end) {
  for (size_t i = s->gens.count; i > 0; i--)
    if (s->gens.items[i - 1].start_offset < log_end) return s->gens.items[i - 1].generation;
  return 0;
}

/* A failed write of one of a copy's identity files (ballot, generations,
 * stream; review 5, item 5): what memory holds may no longer be what a
 * restart reads, so the copy is refused until it is reopened, and the boot
 * token goes at once — the error may come from a disk that lost pages, and
 * nothing may vouch for this run's page cache after it. The caller puts
 * memory back to what is on disk. */
void shard_fail_closed(broker *b, shard *s, const char *file, const char *why) {
  atomic_store(&b->storage_failed, true);
  felix_boot_token_remove(&b->sid, b->boot_id);
  felix_log_event("error", "cannot write a copy's identity file: copy refused, boot token removed", "shard",
                  s->dir_name, "file", file, "reason", why, NULL);
  shard_refuse(b, s, why);
}

int shard_write_ballot(broker *b, shard *s) {
  char what[4700];
  felix_err err;
  snprintf(what, sizeof what, "%s/ballot", s->path);
  if (felix_ballot_write(s->dirfd, what, &s->ballot, &err)) {
    shard_fail_closed(b, s, "ballot", err.msg);
    return -1;
  }
  return 0;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb; (void)flag; (void)ftw;
  return remove(p);
}

/* Builds the copy in a temp directory and renames it into place, so a crash
 * never leaves a shard directory without its ballot. */
static int build_copy(broker *b, const char *tmp, const char *name, uint32_t index, const char *uuid) {
  felix_err err;
  felix_log *log;
  if (felix_log_open(tmp, name, &b->cfg.log, true, &log, NULL, &err)) {
    felix_log_event("error", "cannot create shard copy", "shard", name, "reason", err.msg, NULL);
    return -1;
  }
  felix_log_close(log, NULL);
  shard s = {.dirfd = -1};
  snprintf(s.path, sizeof s.path, "%.4500s", tmp);
  snprintf(s.dir_name, sizeof s.dir_name, "%s", name);
  uint8_t raw[16];
  if (felix_open_dir(AT_FDCWD, tmp, &s.dirfd, &err) || felix_random_bytes(raw, sizeof raw, &err)) return -1;
  felix_hex_encode(raw, sizeof raw, s.ballot.copy_id);
  snprintf(s.ballot.storage_id, sizeof s.ballot.storage_id, "%s", b->sid.hex);
  snprintf(s.ballot.stream_uuid, sizeof s.ballot.stream_uuid, "%s", uuid);
  s.ballot.has_shard = true, s.ballot.shard = index;
  char what[4800];
  snprintf(what, sizeof what, "%.4700s/ballot", tmp);
  int rc = felix_ballot_write(s.dirfd, what, &s.ballot, &err) ? -1 : 0;
  snprintf(what, sizeof what, "%.4700s/generations", tmp);
  if (!rc) rc = felix_generations_write(s.dirfd, what, &s.gens, &err) ? -1 : 0;
  if (rc) felix_log_event("error", "cannot create shard copy", "shard", name, "reason", err.msg, NULL);
  close(s.dirfd);
  return rc;
}

int broker_remove_leftovers(broker *b) {
  char shards[4200];
  felix_err err;
  snprintf(shards, sizeof shards, "%s/shards", b->cfg.data_dir);
  /* a restore that stopped midway: its .new- copies must not be removed while
   * an old copy it replaced is still hidden under .replaced- */
  if (felix_rp_settle_leftovers(b->cfg.data_dir, &err)) {
    felix_log_event("error", "cannot settle the leftovers of an interrupted restore", "reason", err.msg, NULL);
    return -1;
  }
  DIR *d = opendir(shards);
  struct dirent *de;
  while (d && (de = readdir(d)) != NULL) {
    if (strncmp(de->d_name, ".new-", 5) && strncmp(de->d_name, ".deleting-", 10)) continue;
    char p[4700];
    snprintf(p, sizeof p, "%s/%s", shards, de->d_name);
    nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    felix_log_event("info", "removed the leftover of an interrupted copy creation or deletion", "dir", de->d_name, NULL);
  }
  if (d) closedir(d);
  return 0;
}

int shard_create_copy(broker *b, const char *stream, uint32_t index, const char *uuid) {
  char name[300], tmp[4700], final[4700], shards[4200];
  if (!felix_shard_dir_name(name, sizeof name, stream, index, uuid)) return -1;
  snprintf(shards, sizeof shards, "%s/shards", b->cfg.data_dir);
  snprintf(tmp, sizeof tmp, "%s/.new-%s", shards, name);
  snprintf(final, sizeof final, "%s/%s", shards, name);
  nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS); /* a leftover of a crash midway */
  if (build_copy(b, tmp, name, index, uuid) || rename(tmp, final) != 0) {
    felix_log_event("error", "cannot create shard copy", "shard", name, "reason", strerror(errno), NULL);
    return -1;
  }
  int fd = open(shards, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int synced = fd >= 0 && fsync(fd) == 0 ? 0 : errno;
  if (fd >= 0) close(fd);
  shard *before = b->shards;
  broker_open_shards_one(b, name);
  if (b->shards == before || b->shards->refused) return -1;
  if (synced != 0) { /* the new directory's name may not be durable: as any failed identity write */
    shard_fail_closed(b, b->shards, "shards directory", strerror(synced));
    return -1;
  }
  felix_log_event("info", "created an empty shard copy", "shard", name, "copy_id", b->shards->ballot.copy_id, NULL);
  return 0;
}

void shard_set_hwm(broker *b, shard *s, uint64_t hwm) {
  if (hwm <= s->hwm) return;
#ifndef NDEBUG
  felix_log_stats st;
  felix_log_get_stats(s->log, &st);
  assert(hwm <= st.end_offset); /* nothing is committed that this copy has not written */
#endif
  s->hwm = hwm;
  broker_wake_fetches(b, s);
  broker_publish_report(b);
  broker_drain_announce(b);
}

int shard_write_generations(broker *b, shard *s) {
  char what[4700];
  felix_err err;
  snprintf(what, sizeof what, "%s/generations", s->path);
  if (felix_generations_write(s->dirfd, what, &s->gens, &err)) {
    shard_fail_closed(b, s, "generations", err.msg);
    return -1;
  }
  return 0;
}

/* Ends every role of an older generation at once (§3.4): the leader stops
 * counting itself, its links close and its pending acknowledgements fail. */
void shard_stop_leading(broker *b, shard *s, const char *why) {
  bool was = s->leading || s->fencing;
  s->leading = false;
  s->fencing = false;
  s->lease_until_ms = 0; /* a lease is for one pin: the next one must be confirmed anew */
  peer_links_stop(b, s);
  peer_fail_pending_acks(b, s, why);
  if (!was) return;
  broker_fail_fetches(b, s);
  felix_log_event("info", "stopped leading", "shard", s->dir_name, "reason", why, NULL);
  broker_handoff_check(b);
}

typedef struct sync_work {
  uv_work_t work;
  broker *b;
  shard *s;
  uint64_t generation;
  shard_synced_fn then;
  felix_status st;
  felix_err err;
} sync_work;

static void sync_run(uv_work_t *w) {
  sync_work *x = w->data;
  x->st = felix_log_sync(x->s->log, &x->err);
}

/* What a finished sync means for the copy, then the caller's next step. */
static void sync_settle(broker *b, shard *s, uint64_t generation, felix_status st, const felix_err *err,
                        shard_synced_fn then) {
  if (st == FELIX_E_SYNC) broker_fail_closed(b, err->msg);
  if (st == FELIX_E_GONE) shard_refuse(b, s, err->msg);
  then(b, s, generation, st, err->msg);
}

static void sync_done(uv_work_t *w, int status) {
  sync_work *x = w->data;
  broker *b = x->b;
  (void)status;
  x->s->pending_held--;
  sync_settle(b, x->s, x->generation, x->st, &x->err, x->then);
  free(x);
  broker_drain_continue(b);
}

void shard_sync_then(broker *b, shard *s, shard_synced_fn then) {
  bool relaxed = felix_fsync_mode_relaxed(felix_log_mode(s->log));
  sync_work *x = relaxed ? NULL : calloc(1, sizeof *x);
  if (!x) { /* held once written; or out of memory, where the sync runs here */
    felix_err err = {0};
    sync_settle(b, s, s->ballot.generation, relaxed ? FELIX_OK : felix_log_sync(s->log, &err), &err, then);
    return;
  }
  *x = (sync_work){.b = b, .s = s, .generation = s->ballot.generation, .then = then};
  x->work.data = x;
  s->pending_held++; /* as an on_commit publish: a drain or a delete waits for it */
  uv_queue_work(b->loop, &x->work, sync_run, sync_done);
}

/* The start record held: the HWM may pass it once a majority holds it. */
static void start_record_synced(broker *b, shard *s, uint64_t generation, felix_status st, const char *why) {
  (void)why;
  if (st == FELIX_OK && s->leading && s->ballot.generation == generation) peer_pump(b, s);
}

/* The end of the fence: record generation G, then its start record, which
 * makes the HWM move as soon as a majority holds it (rule 3); under on_commit
 * only once it is synced, which runs off the loop (shard_sync_then). */
void shard_become_leader(broker *b, shard *s, uint64_t generation) {
  felix_log_stats st;
  felix_log_get_stats(s->log, &st);
  /* A generation is led once, above every generation this copy has records of. */
  assert(generation > s->led_generation);
  assert(s->gens.count == 0 || generation > s->gens.items[s->gens.count - 1].generation);
  assert(generation == s->ballot.generation);
  felix_generation *ni = realloc(s->gens.items, (s->gens.count + 1) * sizeof *ni);
  if (!ni) return;
  s->gens.items = ni;
  s->gens.items[s->gens.count++] = (felix_generation){generation, st.end_offset};
  char g[32];
  felix_err err;
  if (shard_write_generations(b, s)) {
    s->gens.count--; /* memory as on disk; the copy is refused */
    return;
  }
  felix_record_in start_record = {"", 0, 0};
  felix_appended a;
  if (felix_log_append_batch(s->log, &start_record, 1, &a, &err)) {
    s->gens.count--;
    felix_log_event("error", "cannot start generation", "shard", s->dir_name, "reason", err.msg, NULL);
    shard_refuse(b, s, err.msg); /* a failed write of the log itself has failed the broker closed already */
    return;
  }
  s->generation_start = a.first_offset;
  s->leading = true;
  s->fencing = false;
  s->led_generation = generation;
  /* Rule 3: a new leader starts from the control plane's maximum HWM alone;
   * its fence adopted the highest-ranked counted copy, which holds it. Never
   * from an HWM it learned as a follower: an abandon may since have put other
   * records at those offsets (review 5, item 3). */
  felix_log_get_stats(s->log, &st);
  uint64_t from_cp = s->cp_max_hwm > 0 ? (uint64_t)s->cp_max_hwm : 0;
  s->hwm = from_cp < st.held_end ? from_cp : st.held_end;
  s->confirmed_end = 0; /* nothing confirmed in this generation yet */
  assert(s->hwm <= st.held_end);
  felix_log_get_stats(s->log, &st);
  snprintf(g, sizeof g, "%" PRIu64, generation);
  felix_log_event("info", "leading", "shard", s->dir_name, "generation", g, "copy_id", s->ballot.copy_id, NULL);
  broker_publish_inventory(b);
  broker_publish_report(b);
  peer_pump(b, s); /* ships the start record; with one replica it commits at once (relaxed modes) */
  shard_sync_then(b, s, start_record_synced);
}

static bool names_this_process(const broker *b, const shard *s, const char *leader, const char *copy, const char *inc) {
  return !strcmp(leader, b->cfg.id) && !strcmp(copy, s->ballot.copy_id) && !strcmp(inc, b->incarnation);
}

void shard_apply_assignment(broker *b, shard *s, uint64_t generation, const char *leader, const char *leader_copy,
                            const char *leader_inc, const char *leader_addr) {
  (void)leader_addr;
  if (s->refused || generation == 0 || generation < s->ballot.generation) return;
  if ((s->leading || s->fencing) &&
      !(generation == s->ballot.generation && names_this_process(b, s, leader, leader_copy, leader_inc)))
    shard_stop_leading(b, s, "the control plane's pin no longer names this process");
  bool same_promise = generation == s->ballot.generation && s->ballot.has_leader && !strcmp(s->ballot.leader, leader) &&
                      !strcmp(s->ballot.leader_copy_id, leader_copy) && !strcmp(s->ballot.leader_incarnation, leader_inc);
  if (same_promise && s->fencing && names_this_process(b, s, leader, leader_copy, leader_inc) &&
      strcmp(s->fence_cp_instance, b->cp_instance) != 0) {
    /* The instance that now speaks still names this process (§4.8): replicas
     * that refused the old instance's fence answer its retries. */
    snprintf(s->fence_cp_instance, sizeof s->fence_cp_instance, "%s", b->cp_instance);
    return;
  }
  if (same_promise && (s->leading || s->fencing || !names_this_process(b, s, leader, leader_copy, leader_inc))) return;
  if (!strcmp(leader, b->cfg.id) && !names_this_process(b, s, leader, leader_copy, leader_inc)) {
    felix_log_event("warn", "refusing to lead: the pin names another copy or incarnation", "shard", s->dir_name,
                    "pinned_copy", leader_copy, "pinned_incarnation", leader_inc, NULL);
    return;
  }
  /* A promise for G is given once; a copy whose identity was renewed holds
   * no promise under its new copy id and takes G's pin from the control
   * plane (§4.4) so that the current leader copies to it at once. */
  if (generation == s->ballot.generation && !same_promise && s->ballot.has_leader) return;
  shard_stop_leading(b, s, "promised a newer generation");
  assert(generation >= s->ballot.generation); /* a promise never goes down */
  felix_ballot was = s->ballot;
  s->ballot.generation = generation;
  s->ballot.has_leader = true;
  snprintf(s->ballot.leader, sizeof s->ballot.leader, "%s", leader);
  snprintf(s->ballot.leader_copy_id, sizeof s->ballot.leader_copy_id, "%s", leader_copy);
  snprintf(s->ballot.leader_incarnation, sizeof s->ballot.leader_incarnation, "%s", leader_inc);
  if (shard_write_ballot(b, s)) {
    s->ballot = was; /* memory as on disk (review 5, item 5); the copy is refused */
    return;
  }
  broker_publish_inventory(b);
  if (names_this_process(b, s, leader, leader_copy, leader_inc) && !b->draining) peer_start_fence(b, s);
}

/* Review 5, item 7: the records an abandon kept on this copy are the shard's
 * history from then on, and every later leader holds them, so no cut below
 * them is ever right. The bound is the lower of what it kept and the maximum
 * HWM assigned now: a later abandon that lowers the maximum HWM is a loss the
 * operator accepted again. Held in memory, for as long as the process runs. */
bool shard_cut_below_kept(const shard *s, uint64_t to) {
  int64_t keep = s->abandon_keeps < s->cp_max_hwm ? s->abandon_keeps : s->cp_max_hwm;
  if ((int64_t)to >= keep) return false;
  char at[32], kept[32];
  snprintf(at, sizeof at, "%" PRIu64, to);
  snprintf(kept, sizeof kept, "%" PRId64, keep);
  felix_log_event("error", "refusing to cut below what placement abandon kept on this copy", "shard", s->dir_name,
                  "offset", at, "kept", kept, NULL);
  return true;
}

void shard_refuse(broker *b, shard *s, const char *why) {
  if (s->refused) return;
  shard_stop_leading(b, s, why);
  s->refused = true;
  felix_log_stats st = {0};
  if (s->log) felix_log_get_stats(s->log, &st);
  s->gone = st.dir_gone;
  broker_net_close_peers(b, s->ballot.stream_uuid, s->index);
  snprintf(s->refused_why, sizeof s->refused_why, "%.500s", why);
  felix_log_event("error", "shard copy refused", "shard", s->dir_name, "reason", why, NULL);
  broker_publish_inventory(b);
  broker_publish_report(b);
}

felix_status shard_close(broker *b, shard *s) {
  felix_status st = FELIX_OK;
  felix_err err;
  if (s->log) watch_remove(b, s->log);
  if (s->log && (st = felix_log_close(s->log, &err)) != FELIX_OK && !s->refused && st != FELIX_E_GONE)
    felix_log_event("error", "the final sync failed", "shard", s->dir_name, "reason", err.msg, NULL);
  /* A refused copy's failure is already accounted for; a deleted directory
   * is not the disk's (§3.2): its copy is made anew, the ids stay. */
  if (s->refused || st == FELIX_E_GONE) st = FELIX_OK;
  s->log = NULL;
  if (s->dirfd >= 0) close(s->dirfd);
  s->dirfd = -1;
  felix_generations_free(&s->gens);
  return st;
}

void shard_delete(broker *b, shard *s) {
  shard_stop_leading(b, s, "stream deleted");
  shard_close(b, s);
  /* Rename first (durably), then remove: a crash midway leaves a .deleting-*
   * directory that the next start removes, never a copy with holes in it. */
  char shards[4200], doomed[4700];
  snprintf(shards, sizeof shards, "%s/shards", b->cfg.data_dir);
  snprintf(doomed, sizeof doomed, "%s/.deleting-%s", shards, s->dir_name);
  int fd = open(shards, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (rename(s->path, doomed) == 0) {
    if (fd >= 0) fsync(fd);
    nftw(doomed, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  }
  if (fd >= 0) fsync(fd), close(fd);
  felix_log_event("info", "deleted the copy of a deleted stream", "shard", s->dir_name, NULL);
  for (shard **p = &b->shards; *p; p = &(*p)->next)
    if (*p == s) {
      *p = s->next;
      break;
    }
  free(s);
  broker_publish_inventory(b);
}
