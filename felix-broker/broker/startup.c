/* broker/startup.c — the start-up order of DESIGN.md §3.3: take the directory
 * lock, recover every shard's log, decide the identity and persist any new id,
 * give every copy made under another storage id a new copy id, write
 * run-state=running, create the boot token. Nothing registers or answers
 * before this returns. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "broker.h"
#include "drain.h"
#include "felix/exitcode.h"
#include "felix/fileutil.h"
#include "felix/identity.h"
#include "felix/logfmt.h"
#include "felix/survey.h"

static int fail(const char *msg, int code) {
  felix_log_event("error", msg, NULL);
  return code;
}

shard *broker_find_shard(broker *b, const char *stream, uint32_t index) {
  for (shard *s = b->shards; s; s = s->next)
    if (s->index == index && !strcmp(s->stream, stream)) return s;
  return NULL;
}

shard *broker_find_shard_uuid(broker *b, const char *uuid, uint32_t index) {
  for (shard *s = b->shards; s; s = s->next)
    if (s->index == index && !strcmp(s->ballot.stream_uuid, uuid)) return s;
  return NULL;
}

/* Refused at start, said in the log and the inventory. */
static void refuse_at_start(shard *s, const char *why) {
  s->refused = true;
  snprintf(s->refused_why, sizeof s->refused_why, "%.500s", why);
  felix_log_event("error", "shard copy refused", "shard", s->dir_name, "reason", why, NULL);
}

/* A directory is named after the stream, shard and uuid its ballot holds; one
 * that is not (renamed by hand: r_0 copied as r_1, or r_00) would serve another
 * shard's records under this one's name. */
static void refuse_misnamed(shard *s) {
  char expected[300], why[700];
  if (felix_shard_dir_name(expected, sizeof expected, s->stream, s->index, s->ballot.stream_uuid) &&
      !strcmp(expected, s->dir_name) && (!s->ballot.has_shard || s->ballot.shard == s->index)) {
    /* A copy made before the index was recorded learns it from its name; the
     * next ballot write records it. */
    if (!s->ballot.has_shard) s->ballot.has_shard = true, s->ballot.shard = s->index;
    return;
  }
  snprintf(why, sizeof why,
           "the directory's name does not match its ballot (stream uuid %s, shard %s%u): renamed or copied by hand "
           "from another shard; move it away and start again",
           s->ballot.stream_uuid, s->ballot.has_shard ? "" : "not recorded, named ",
           s->ballot.has_shard ? s->ballot.shard : s->index);
  refuse_at_start(s, why);
}

/* Copy ids are random: two directories with one copy id, or two copies of one
 * shard, are hand-made duplicates, and nothing tells which one holds what the
 * control plane measured. Both are refused until one is moved away. */
static void refuse_duplicates(broker *b) {
  for (shard *s = b->shards; s; s = s->next)
    for (shard *t = s->next; t; t = t->next) {
      if (!s->ballot.copy_id[0] || !t->ballot.copy_id[0]) continue;
      bool same_copy = !strcmp(s->ballot.copy_id, t->ballot.copy_id);
      bool same_shard = s->index == t->index && !strcmp(s->ballot.stream_uuid, t->ballot.stream_uuid);
      if (!same_copy && !same_shard) continue;
      char why[1200];
      snprintf(why, sizeof why, "directories %s and %s hold %s %s (a hand-made duplicate): both refused until one is moved away",
               s->dir_name, t->dir_name, same_copy ? "one copy id" : "copies of one shard",
               same_copy ? s->ballot.copy_id : s->ballot.stream_uuid);
      if (!s->refused) refuse_at_start(s, why);
      if (!t->refused) refuse_at_start(t, why);
    }
}

void broker_open_shards_one(broker *b, const char *name) {
  shard *s = calloc(1, sizeof *s);
  char uuid16[17];
  if (!s) return;
  s->dirfd = -1;
  snprintf(s->dir_name, sizeof s->dir_name, "%s", name);
  snprintf(s->path, sizeof s->path, "%s/shards/%s", b->cfg.data_dir, name);
  if (!felix_shard_dir_parse(name, s->stream, sizeof s->stream, &s->index, uuid16)) {
    free(s);
    felix_log_event("warn", "ignoring a directory that is not a shard copy", "dir", name, NULL);
    return;
  }
  felix_err err;
  felix_recovery_report rep;
  char what[4700];
  snprintf(what, sizeof what, "%s/ballot", s->path);
  if (felix_open_dir(AT_FDCWD, s->path, &s->dirfd, &err) || felix_ballot_read(s->dirfd, what, &s->ballot, &err) ||
      felix_log_open(s->path, name, &b->cfg.log, false, &s->log, &rep, &err)) {
    s->refused = true;
    snprintf(s->refused_why, sizeof s->refused_why, "%.500s", err.msg);
    felix_log_event("error", "shard copy refused: recovery failed", "shard", name, "reason", err.msg, NULL);
  } else if (rep.truncated_bytes) {
    char n[32], at[32];
    snprintf(n, sizeof n, "%" PRIu64, rep.truncated_bytes);
    snprintf(at, sizeof at, "%" PRIu64, rep.truncated_at);
    felix_log_event("warn", "cut a torn tail", "shard", name, "bytes", n, "at", at, "kind", rep.truncated_kind, NULL);
  }
  if (s->log) watch_add(b, s);
  if (!s->refused) refuse_misnamed(s);
  snprintf(what, sizeof what, "%s/generations", s->path);
  if (!s->refused && felix_generations_read(s->dirfd, what, &s->gens, &err) && err.status != FELIX_E_NOTFOUND)
    refuse_at_start(s, err.msg);
  snprintf(what, sizeof what, "%s/stream", s->path);
  if (!s->refused && felix_stream_meta_read(s->dirfd, what, &s->meta, &s->has_meta, &err))
    /* Advisory (only stream adopt reads it): the copy's records stay served;
     * the file is written anew from the next assignment. */
    felix_log_event("warn", "ignoring a malformed stream file", "shard", name, "reason", err.msg, NULL);
  s->next = b->shards;
  b->shards = s;
}

int broker_open_shards(broker *b) {
  char **names;
  size_t n;
  felix_err err;
  if (felix_list_shard_dirs(b->cfg.data_dir, &names, &n, &err)) return fail(err.msg, FELIX_EXIT_FAILURE);
  for (size_t i = 0; i < n; i++) broker_open_shards_one(b, names[i]);
  felix_free_names(names, n);
  refuse_duplicates(b);
  for (shard *s = b->shards; s; s = s->next) /* the inventory cannot name them (no ids): registration says how many */
    b->unread_copies += s->refused && !felix_hex_valid(s->ballot.copy_id, 32);
  return 0;
}

/* The load rule of §3.4: generation lines at or past the log end are dropped. */
static int trim_generations(shard *s) {
  felix_log_stats st;
  felix_log_get_stats(s->log, &st);
  if (felix_generations_trim_to(&s->gens, st.end_offset) == 0) return 0;
  char what[4700];
  felix_err err;
  snprintf(what, sizeof what, "%s/generations", s->path);
  if (felix_generations_write(s->dirfd, what, &s->gens, &err)) return fail(err.msg, FELIX_EXIT_FAILURE);
  felix_log_event("info", "dropped generation lines past the log end", "shard", s->dir_name, NULL);
  return 0;
}

/* §3.4: a copy made under another storage id gets a new copy id; §4.4: a
 * copy with a new identity never names itself leader. */
static int rebind_copy(broker *b, shard *s) {
  if (!strcmp(s->ballot.storage_id, b->sid.hex)) return 0;
  uint8_t raw[16];
  felix_err err;
  char what[4700], old[40];
  snprintf(old, sizeof old, "%s", s->ballot.copy_id);
  if (felix_random_bytes(raw, sizeof raw, &err)) return fail(err.msg, FELIX_EXIT_FAILURE);
  felix_hex_encode(raw, sizeof raw, s->ballot.copy_id);
  snprintf(s->ballot.storage_id, sizeof s->ballot.storage_id, "%s", b->sid.hex);
  s->ballot.has_leader = false;
  snprintf(what, sizeof what, "%s/ballot", s->path);
  if (felix_ballot_write(s->dirfd, what, &s->ballot, &err)) return fail(err.msg, FELIX_EXIT_FAILURE);
  felix_log_event("info", "new copy id: the copy was made under another storage id", "shard", s->dir_name, "old_copy_id", old,
                  "copy_id", s->ballot.copy_id, NULL);
  return 0;
}

static int decide_identity(broker *b) {
  felix_err err;
  bool created;
  if (felix_storage_id_load_or_create(b->dirfd, b->cfg.data_dir, &b->sid, &created, &err))
    return fail(err.msg, felix_exit_code_of(err.status));
  felix_run_state rs;
  bool present;
  if (felix_run_state_read(b->dirfd, b->cfg.data_dir, &rs, &present, &err)) return fail(err.msg, FELIX_EXIT_CORRUPT);
  if (felix_boot_id_read(b->boot_id, b->boot_source, &err)) return fail(err.msg, FELIX_EXIT_FAILURE);
  if (!strcmp(b->boot_source, "file"))
    felix_log_event("warn", "boot id read from FELIX_BOOT_ID_FILE (tests only)", "boot_id", b->boot_id, NULL);
  if (atomic_load(&b->storage_failed)) { /* a sync failed while recovering: the token cannot vouch */
    felix_boot_token_remove(&b->sid, b->boot_id);
    felix_log_event("error", "a sync failed during recovery: the boot token is removed", NULL);
  }
  felix_identity_facts f = {created, felix_last_run_of(&rs, present), rs.fsync_mode, present && rs.has_boot_id,
                            rs.boot_id, b->boot_id, felix_boot_token_present(&b->sid, b->boot_id)};
  felix_identity_verdict v;
  felix_identity_decide(&f, felix_sync_data_dir_cb, (void *)b->cfg.data_dir, &v);
  snprintf(b->rotate_reason, sizeof b->rotate_reason, "%s", v.reason);
  b->rotated = v.rotate || created;
  if (v.rotate) {
    char old[40];
    snprintf(old, sizeof old, "%s", b->sid.hex);
    snprintf(b->previous_sid, sizeof b->previous_sid, "%.32s", old);
    if (felix_storage_id_replace(b->dirfd, b->cfg.data_dir, &b->sid, &err)) return fail(err.msg, FELIX_EXIT_FAILURE);
    felix_log_event("warn", "storage id rotated", "old", old, "new", b->sid.hex, "reason", v.reason, NULL);
  } else {
    felix_log_event("info", "storage id kept", "storage_id", b->sid.hex, "reason", v.reason, NULL);
  }
  return 0;
}

static int write_running(broker *b) {
  felix_run_state rs = {.state = FELIX_RUN_RUNNING, .fsync_mode = b->cfg.log.fsync_mode, .has_boot_id = true,
                        .pid = getpid()};
  snprintf(rs.boot_id, sizeof rs.boot_id, "%s", b->boot_id);
  snprintf(rs.boot_id_source, sizeof rs.boot_id_source, "%s", b->boot_source);
  felix_format_rfc3339(rs.since, time(NULL));
  snprintf(rs.broker_id, sizeof rs.broker_id, "%s", b->cfg.id);
  felix_err err;
  if (felix_run_state_write(b->dirfd, b->cfg.data_dir, &rs, &err)) return fail(err.msg, FELIX_EXIT_FAILURE);
  /* no token at all once a copy has failed a sync or write on this boot */
  if (!atomic_load(&b->storage_failed) && felix_boot_token_create(&b->sid, b->boot_id, &err))
    return fail(err.msg, FELIX_EXIT_FAILURE);
  atomic_store(&b->token_created, true);
  /* a copy that failed between recovery and now: its error saw no token yet */
  if (atomic_load(&b->storage_failed)) felix_boot_token_remove(&b->sid, b->boot_id);
  return 0;
}

int broker_lock_data_dir(broker *b) {
  felix_err err;
  char shards[4200];
  if (mkdir(b->cfg.data_dir, 0755) != 0 && errno != EEXIST) return fail(strerror(errno), FELIX_EXIT_FAILURE);
  snprintf(shards, sizeof shards, "%s/shards", b->cfg.data_dir);
  if (mkdir(shards, 0755) != 0 && errno != EEXIST) return fail(strerror(errno), FELIX_EXIT_FAILURE);
  if (felix_open_dir(AT_FDCWD, b->cfg.data_dir, &b->dirfd, &err)) return fail(err.msg, FELIX_EXIT_FAILURE);
  if (felix_dir_lock_acquire(b->dirfd, b->cfg.data_dir, &b->lock, &err)) return fail(err.msg, felix_exit_code_of(err.status));
  return 0;
}

/* lib/ calls this in the thread that saw a copy's first failed sync or write,
 * before any waiter wakes (review 5, item 4): the kernel may already have
 * marked the failed pages clean, so nothing may vouch for this boot's page
 * cache from here on — not a timer later, not a drain's state=stopped — and
 * a running broker fails closed at once (it could otherwise serve pages the
 * kernel is free to drop). During recovery the copy is refused and the start
 * goes on without the token (decide_identity). */
static void on_storage_error(void *ctx, const char *copy, int sys_errno) {
  broker *b = ctx;
  atomic_store(&b->storage_failed, true);
  felix_log_event("error", "a sync or write failed", "shard", copy, "reason", strerror(sys_errno), NULL);
  if (atomic_load(&b->token_created)) broker_fail_closed(b, strerror(sys_errno));
}

int broker_start_storage(broker *b) {
  b->cfg.log.on_storage_error = on_storage_error;
  b->cfg.log.on_storage_error_ctx = b;
  if (broker_remove_leftovers(b))
    return fail("a restore-point restore stopped midway and what it left cannot be settled (see the log above: "
                "it names the file); fix that cause and start again", FELIX_EXIT_FAILURE);
  int rc = broker_open_shards(b);
  if (!rc) rc = decide_identity(b);
  for (shard *s = b->shards; s && !rc; s = s->next)
    if (!s->refused) rc = rebind_copy(b, s) ? FELIX_EXIT_FAILURE : trim_generations(s);
  if (!rc) rc = write_running(b);
  return rc;
}
