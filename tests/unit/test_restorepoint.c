/* test_restorepoint.c — restore points (lib/rp_*.c) and the rule that the
 * log never writes into a segment file a restore point shares. */
#include <fcntl.h>
#include <inttypes.h>
#include <sys/file.h>

#include "testutil.h"

#include "felix/ballot.h"
#include "felix/datadir.h"
#include "felix/fileutil.h"
#include "felix/log.h"
#include "felix/restorepoint.h"

#define SHARD_DIR "orders_0-b54cda2600004000"
#define UUID "b54cda26-0000-4000-8000-000000000001"

static bool exists(const char *dir, const char *rel);

/* Removes a directory the test made and frees its name. */
static void drop(char *dir) {
  tu_untrack_rmdir(dir);
  free(dir);
}

/* A fresh directory (returned, tracked) and, in `to`, the path of a point in it. */
static char *temp_point(char *to, size_t cap) {
  char *t = tu_mkdtemp();
  tu_track(t);
  snprintf(to, cap, "%s/point", t);
  return t;
}

static felix_log_config small_segments(void) {
  felix_log_config c = {.segment_bytes = 256, .index_spacing_bytes = 64, .fsync_mode = FELIX_FSYNC_NONE,
                        .fsync_interval_ms = 5};
  return c;
}

static void append_n(felix_log *log, int from, int n) {
  felix_err err;
  for (int i = from; i < from + n; i++) {
    char p[32];
    snprintf(p, sizeof p, "record-%03d", i);
    if (felix_log_append(log, p, (uint32_t)strlen(p), NULL, &err)) fail_msg("append: %s", err.msg);
  }
}

static felix_log *open_shard(const char *path) {
  felix_log_config c = small_segments();
  felix_log *log = NULL;
  felix_err err;
  if (felix_log_open(path, "orders_0", &c, true, &log, NULL, &err)) fail_msg("open %s: %s", path, err.msg);
  return log;
}

/* A data directory with one shard of n records (several segments). */
static char *make_data_dir(int n) {
  char *d = tu_mkdtemp(), p[4200];
  tu_track(d);
  int fd;
  felix_err err;
  felix_storage_id sid;
  assert_int_equal(felix_open_dir(AT_FDCWD, d, &fd, &err), FELIX_OK);
  assert_int_equal(felix_storage_id_replace(fd, d, &sid, &err), FELIX_OK);
  felix_run_state rs = {.state = FELIX_RUN_STOPPED, .fsync_mode = FELIX_FSYNC_PERIODIC, .pid = 1};
  snprintf(rs.since, sizeof rs.since, "2026-12-01T00:00:00Z");
  snprintf(rs.broker_id, sizeof rs.broker_id, "b1");
  assert_int_equal(felix_run_state_write(fd, d, &rs, &err), FELIX_OK);
  close(fd);
  snprintf(p, sizeof p, "%s/shards", d);
  assert_int_equal(mkdir(p, 0755), 0);
  snprintf(p, sizeof p, "%s/shards/" SHARD_DIR, d);
  assert_int_equal(mkdir(p, 0755), 0);
  felix_log *log = open_shard(p);
  append_n(log, 0, n);
  assert_int_equal(felix_log_close(log, &err), FELIX_OK);
  felix_ballot b = {.generation = 3};
  snprintf(b.copy_id, sizeof b.copy_id, "%032d", 7);
  snprintf(b.storage_id, sizeof b.storage_id, "%s", sid.hex);
  snprintf(b.stream_uuid, sizeof b.stream_uuid, UUID);
  b.has_leader = true;
  snprintf(b.leader, sizeof b.leader, "b1");
  snprintf(b.leader_copy_id, sizeof b.leader_copy_id, "%032d", 7);
  snprintf(b.leader_incarnation, sizeof b.leader_incarnation, "i-1");
  felix_generation g[2] = {{1, 0}, {3, 5}};
  felix_generations gens = {g, 2};
  assert_int_equal(felix_open_dir(AT_FDCWD, p, &fd, &err), FELIX_OK);
  assert_int_equal(felix_ballot_write(fd, p, &b, &err), FELIX_OK);
  assert_int_equal(felix_generations_write(fd, p, &gens, &err), FELIX_OK);
  close(fd);
  return d;
}

static uint8_t *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc(*len + 1);
  assert_int_equal(fread(b, 1, *len, f), *len);
  fclose(f);
  return b;
}

static void truncating_into_a_linked_segment_leaves_the_link_alone(void **s) {
  (void)s;
  char *d = make_data_dir(40), shard[4200], seg0[4300], link0[4300];
  snprintf(shard, sizeof shard, "%s/shards/" SHARD_DIR, d);
  snprintf(seg0, sizeof seg0, "%s/00000000000000000000.log", shard);
  snprintf(link0, sizeof link0, "%s/linked.log", d);
  assert_int_equal(link(seg0, link0), 0);
  size_t before_len, after_len;
  uint8_t *before = slurp(link0, &before_len);
  felix_log *log = open_shard(shard);
  felix_err err;
  assert_int_equal(felix_log_truncate(log, 2, &err), FELIX_OK); /* into the first, linked segment */
  append_n(log, 100, 3);
  assert_int_equal(felix_log_close(log, &err), FELIX_OK);
  uint8_t *after = slurp(link0, &after_len);
  assert_int_equal(after_len, before_len);
  assert_memory_equal(after, before, before_len);
  struct stat a, b;
  assert_int_equal(stat(seg0, &a), 0);
  assert_int_equal(stat(link0, &b), 0);
  assert_true(a.st_ino != b.st_ino); /* the log got its own file */
  assert_int_equal(b.st_nlink, 1);
  free(before);
  free(after);
  drop(d);
}

static void appending_to_a_linked_newest_segment_unshares_it_first(void **s) {
  (void)s;
  char *d = make_data_dir(3), shard[4200], seg0[4300], link0[4300];
  snprintf(shard, sizeof shard, "%s/shards/" SHARD_DIR, d);
  snprintf(seg0, sizeof seg0, "%s/00000000000000000000.log", shard);
  snprintf(link0, sizeof link0, "%s/linked.log", d);
  assert_int_equal(link(seg0, link0), 0);
  size_t before_len, after_len;
  uint8_t *before = slurp(link0, &before_len);
  felix_log *log = open_shard(shard); /* recovery meets the linked newest segment */
  felix_err err;
  append_n(log, 3, 2);
  assert_int_equal(felix_log_close(log, &err), FELIX_OK);
  uint8_t *after = slurp(link0, &after_len);
  assert_int_equal(after_len, before_len);
  assert_memory_equal(after, before, before_len);
  free(before);
  free(after);
  drop(d);
}

static felix_status create_point(const char *d, const char *to, felix_rp_manifest *m, felix_err *err) {
  felix_rp_create_opts o = {.data_dir = d, .to = to};
  return felix_rp_create(&o, m, err);
}

static void create_links_sealed_copies_newest_and_verifies(void **s) {
  (void)s;
  char *d = make_data_dir(40), to[4200];
  snprintf(to, sizeof to, "%s/point", d);
  felix_rp_manifest m;
  felix_err err;
  /* not inside the data directory */
  assert_int_equal(create_point(d, to, &m, &err), FELIX_E_INVAL);
  assert_non_null(strstr(err.msg, "inside --data-dir"));
  char *t = temp_point(to, sizeof to);
  assert_int_equal(create_point(d, to, &m, &err), FELIX_OK);
  assert_int_equal(m.nshards, 1);
  assert_string_equal(m.broker_id, "b1");
  felix_rp_shard *sh = &m.shards[0];
  assert_string_equal(sh->stream, "orders");
  assert_int_equal(sh->end_offset, 40);
  assert_int_equal(sh->ballot_generation, 3);
  assert_int_equal(sh->gens.count, 2);
  size_t linked = 0, logs = 0;
  for (size_t i = 0; i < sh->nfiles; i++) {
    logs += strstr(sh->files[i].name, ".log") != NULL;
    linked += sh->files[i].linked;
  }
  assert_true(logs > 2);
  assert_int_equal(linked, logs - 1); /* every sealed segment, never the newest */
  felix_rp_mismatches bad;
  felix_rp_manifest back;
  assert_int_equal(felix_rp_manifest_read(to, &back, &err), FELIX_OK);
  assert_int_equal(felix_rp_verify(to, &back, NULL, &bad, NULL, NULL, &err), FELIX_OK);
  assert_int_equal(bad.count, 0);
  /* a second create into the same complete point is refused */
  felix_rp_manifest again;
  assert_int_equal(create_point(d, to, &again, &err), FELIX_E_REFUSED);
  felix_rp_manifest_free(&back);
  felix_rp_manifest_free(&m);
  drop(t);
  drop(d);
}

static void create_cuts_a_torn_tail_at_a_record_boundary(void **s) {
  (void)s;
  char *d = make_data_dir(3), seg0[4300], to[4200];
  snprintf(seg0, sizeof seg0, "%s/shards/" SHARD_DIR "/00000000000000000000.log", d);
  size_t whole;
  free(slurp(seg0, &whole));
  int fd = open(seg0, O_WRONLY | O_APPEND);
  assert_int_equal(write(fd, "\0\0\0\x09partial", 11), 11); /* a record being appended */
  close(fd);
  char *t = temp_point(to, sizeof to);
  felix_rp_manifest m;
  felix_err err;
  assert_int_equal(create_point(d, to, &m, &err), FELIX_OK);
  assert_int_equal(m.shards[0].end_offset, 3);
  assert_int_equal(m.shards[0].files[0].size, whole);
  felix_rp_manifest_free(&m);
  drop(t);
  drop(d);
}

static char *read_text(const char *dir, const char *name) {
  char p[4300];
  size_t len;
  snprintf(p, sizeof p, "%s/%s", dir, name);
  uint8_t *b = slurp(p, &len);
  b[len] = 0;
  return (char *)b;
}

static void restore_gives_new_ids_and_leader_none(void **s) {
  (void)s;
  char *d = make_data_dir(40), to[4200], target[4200];
  char *t = temp_point(to, sizeof to);
  snprintf(target, sizeof target, "%s/restored", t);
  felix_rp_manifest m, m2;
  felix_err err;
  assert_int_equal(create_point(d, to, &m, &err), FELIX_OK);
  felix_rp_restore_opts o = {.from = to, .data_dir = target};
  felix_rp_mismatches bad;
  felix_rp_restore_result res;
  assert_int_equal(felix_rp_restore(&o, &m2, &bad, &res, &err), FELIX_OK);
  assert_int_equal(res.shards, 1);
  assert_string_not_equal(res.storage_id, m.storage_id);
  char sdir[4400];
  snprintf(sdir, sizeof sdir, "%s/shards/" SHARD_DIR, target);
  felix_ballot b;
  int fd;
  assert_int_equal(felix_open_dir(AT_FDCWD, sdir, &fd, &err), FELIX_OK);
  assert_int_equal(felix_ballot_read(fd, sdir, &b, &err), FELIX_OK);
  close(fd);
  assert_false(b.has_leader);
  assert_string_equal(b.storage_id, res.storage_id);
  assert_string_not_equal(b.copy_id, "00000000000000000000000000000007");
  assert_int_equal(b.generation, 3);
  assert_false(exists(target, "shards/.restore-journal")); /* a finished restore leaves nothing behind */
  char *rs = read_text(target, "run-state");
  assert_non_null(strstr(rs, "state=restored\n"));
  assert_non_null(strstr(rs, "restored_from="));
  assert_null(strstr(rs, "pid=")); /* no run happened: none is claimed */
  assert_null(strstr(rs, "fsync_mode="));
  free(rs);
  /* the restored log opens and holds every record */
  felix_log *log = open_shard(sdir);
  felix_log_stats st;
  felix_log_get_stats(log, &st);
  assert_int_equal(st.end_offset, 40);
  assert_int_equal(felix_log_close(log, &err), FELIX_OK);
  felix_rp_manifest_free(&m);
  felix_rp_manifest_free(&m2);
  felix_rp_mismatches_free(&bad);
  drop(t);
  drop(d);
}

static void a_corrupt_point_fails_verify_and_restore_changes_nothing(void **s) {
  (void)s;
  char *d = make_data_dir(40), to[4200], seg[4400];
  char *t = temp_point(to, sizeof to);
  felix_rp_manifest m, m2;
  felix_err err;
  assert_int_equal(create_point(d, to, &m, &err), FELIX_OK);
  snprintf(seg, sizeof seg, "%s/shards/" SHARD_DIR "/%s", to, m.shards[0].files[m.shards[0].nfiles - 3].name);
  int fd = open(seg, O_WRONLY);
  assert_int_equal(pwrite(fd, "Z", 1, 40), 1);
  close(fd);
  felix_rp_mismatches bad;
  assert_int_equal(felix_rp_verify(to, &m, NULL, &bad, NULL, NULL, &err), FELIX_OK);
  assert_int_equal(bad.count, 1);
  assert_string_equal(bad.items[0].kind, "crc32");
  assert_string_equal(bad.items[0].file, seg);
  felix_rp_mismatches_free(&bad);
  char *sid_before = read_text(d, "storage-id"), *rs_before = read_text(d, "run-state");
  felix_rp_restore_opts o = {.from = to, .data_dir = d};
  felix_rp_restore_result res;
  assert_int_equal(felix_rp_restore(&o, &m2, &bad, &res, &err), FELIX_E_CORRUPT);
  assert_int_equal(bad.count, 1);
  char *sid_after = read_text(d, "storage-id"), *rs_after = read_text(d, "run-state");
  assert_string_equal(sid_before, sid_after);
  assert_string_equal(rs_before, rs_after);
  free(sid_before), free(sid_after), free(rs_before), free(rs_after);
  felix_rp_mismatches_free(&bad);
  felix_rp_manifest_free(&m2);
  felix_rp_manifest_free(&m);
  drop(t);
  drop(d);
}

static void restore_refuses_a_locked_directory(void **s) {
  (void)s;
  char *d = make_data_dir(4), to[4200];
  char *t = temp_point(to, sizeof to);
  felix_rp_manifest m, m2;
  felix_err err;
  assert_int_equal(create_point(d, to, &m, &err), FELIX_OK);
  int dfd;
  felix_dir_lock lock;
  assert_int_equal(felix_open_dir(AT_FDCWD, d, &dfd, &err), FELIX_OK);
  assert_int_equal(felix_dir_lock_acquire(dfd, d, &lock, &err), FELIX_OK);
  char *sid_before = read_text(d, "storage-id");
  felix_rp_restore_opts o = {.from = to, .data_dir = d};
  felix_rp_mismatches bad;
  felix_rp_restore_result res;
  assert_int_equal(felix_rp_restore(&o, &m2, &bad, &res, &err), FELIX_E_BUSY);
  char *sid_after = read_text(d, "storage-id");
  assert_string_equal(sid_before, sid_after);
  free(sid_before), free(sid_after);
  felix_dir_lock_release(&lock);
  close(dfd);
  felix_rp_mismatches_free(&bad);
  felix_rp_manifest_free(&m2);
  felix_rp_manifest_free(&m);
  drop(t);
  drop(d);
}

/* A manifest of one shard with one segment, as create would write it. */
static char *sample_manifest_text(void) {
  felix_rp_file f = {.name = "00000000000000000000.log", .size = 10, .crc32 = 5};
  felix_generation g = {1, 0};
  felix_rp_shard sh = {.dir = SHARD_DIR, .stream = "orders", .shard = 0, .stream_uuid = UUID, .end_offset = 2,
                       .ballot_generation = 1, .gens = {&g, 1}, .files = &f, .nfiles = 1};
  felix_rp_manifest m = {.version = 1, .created_at = "2026-12-01T00:00:00Z", .created_at_micros = 1,
                         .source_data_dir = "/d", .broker_id = "b1", .storage_id = "00000000000000000000000000000001",
                         .shards = &sh, .nshards = 1};
  return felix_rp_manifest_encode(&m);
}

/* text with the first `from` replaced by `to` (malloc'd) */
static char *replaced(const char *text, const char *from, const char *to) {
  const char *at = strstr(text, from);
  assert_non_null(at);
  char *out = malloc(strlen(text) + strlen(to) + 1);
  sprintf(out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
  return out;
}

static felix_status parse_text(const char *text, felix_rp_manifest *m, felix_err *err) {
  return felix_rp_manifest_parse(text, strlen(text), "m.json", m, err);
}

static void expect_corrupt(const char *text, const char *from, const char *to, const char *says) {
  felix_rp_manifest m;
  felix_err err;
  char *t = replaced(text, from, to);
  assert_int_equal(parse_text(t, &m, &err), FELIX_E_CORRUPT);
  if (!strstr(err.msg, says)) fail_msg("'%s' does not say '%s'", err.msg, says);
  free(t);
}

static void manifest_round_trips_and_refuses_escaping_names(void **s) {
  (void)s;
  char *text = sample_manifest_text();
  felix_rp_manifest m;
  felix_err err;
  assert_int_equal(parse_text(text, &m, &err), FELIX_OK);
  assert_string_equal(m.broker_id, "b1");
  assert_int_equal(m.shards[0].files[0].size, 10);
  assert_int_equal(m.shards[0].files[0].crc32, 5);
  felix_rp_manifest_free(&m);
  /* names that could leave the restore point, checked before anything else */
  expect_corrupt(text, "\"" SHARD_DIR "\"", "\"../" SHARD_DIR "\"", "shards[0]: expected a dir named by");
  expect_corrupt(text, "\"00000000000000000000.log\"", "\"../../../etc/passwd\"", "shards[0].files[0].name");
  expect_corrupt(text, "\"stream\":\t\"orders\"", "\"stream\":\t\"a/../../x\"", "shards[0].stream: expected a stream name");
  expect_corrupt(text, "\"" SHARD_DIR "\"", "\"other_0-b54cda2600004000\"", "shards[0]: expected a dir named by");
  /* an edit the names allow is caught by the digest */
  expect_corrupt(text, "\"size\":\t10", "\"size\":\t11", "digest");
  expect_corrupt(text, "\"end_offset\":\t2", "\"end_offset\":\t3", "does not match its content");
  /* 2^53 + 1 reads as 2^53 in a double: refused, never taken rounded (helper-30) */
  expect_corrupt(text, "\"ballot_generation\":\t1", "\"ballot_generation\":\t9007199254740993", "below 2^53");
  expect_corrupt(text, "\"ballot_generation\":\t1", "\"ballot_generation\":\t9007199254740992", "below 2^53");
  free(text);
}

/* 2^53 - 1 is written with every digit and read back as itself. */
static void manifest_keeps_every_digit_up_to_2_53(void **s) {
  (void)s;
  felix_rp_file f = {.name = "00000000000000000000.log", .size = 9007199254740991ull, .crc32 = 5};
  felix_generation g = {9007199254740991ull, 9007199254740990ull};
  felix_rp_shard sh = {.dir = SHARD_DIR, .stream = "orders", .shard = 0, .stream_uuid = UUID, .end_offset = 9007199254740991ull,
                       .ballot_generation = 9007199254740991ull, .gens = {&g, 1}, .files = &f, .nfiles = 1};
  felix_rp_manifest m = {.version = 1, .created_at = "2026-12-01T00:00:00Z", .created_at_micros = 9007199254740991ull,
                         .source_data_dir = "/d", .broker_id = "b1", .storage_id = "00000000000000000000000000000001",
                         .shards = &sh, .nshards = 1};
  char *text = felix_rp_manifest_encode(&m);
  assert_non_null(strstr(text, "\"ballot_generation\":\t9007199254740991"));
  felix_rp_manifest back;
  felix_err err;
  if (parse_text(text, &back, &err) != FELIX_OK) fail_msg("%s", err.msg);
  assert_int_equal(back.shards[0].ballot_generation, 9007199254740991ull);
  assert_int_equal(back.shards[0].end_offset, 9007199254740991ull);
  assert_int_equal(back.shards[0].gens.items[0].generation, 9007199254740991ull);
  assert_int_equal(back.shards[0].gens.items[0].start_offset, 9007199254740990ull);
  assert_int_equal(back.shards[0].files[0].size, 9007199254740991ull);
  assert_int_equal(back.created_at_micros, 9007199254740991ull);
  felix_rp_manifest_free(&back);
  free(text);
}

static void manifest_names_the_byte_and_the_version(void **s) {
  (void)s;
  felix_rp_manifest m;
  felix_err err;
  const char *broken = "{\"format\": \"felix-restore-point\", \"version\": 1,, }";
  assert_int_equal(felix_rp_manifest_parse(broken, strlen(broken), "m.json", &m, &err), FELIX_E_CORRUPT);
  assert_non_null(strstr(err.msg, "m.json: byte 4"));
  const char *v2 = "{\"format\": \"felix-restore-point\", \"version\": 2}";
  assert_int_equal(felix_rp_manifest_parse(v2, strlen(v2), "m.json", &m, &err), FELIX_E_IO);
  assert_non_null(strstr(err.msg, "version 2 is not one this felix-broker reads"));
}

static void run_state_keeps_broker_id_and_restored_from(void **s) {
  (void)s;
  felix_run_state rs = {.state = FELIX_RUN_STOPPED, .fsync_mode = FELIX_FSYNC_PERIODIC, .pid = 9}, back;
  snprintf(rs.since, sizeof rs.since, "2026-12-01T00:00:00Z");
  snprintf(rs.broker_id, sizeof rs.broker_id, "b2");
  snprintf(rs.restored_from, sizeof rs.restored_from, "/backups/one");
  char buf[2048];
  felix_err err;
  felix_run_state_format(&rs, buf, sizeof buf);
  assert_int_equal(felix_run_state_parse(buf, strlen(buf), "rs", &back, &err), FELIX_OK);
  assert_string_equal(back.broker_id, "b2");
  assert_string_equal(back.restored_from, "/backups/one");
  const char *empty = "state=stopped\nfsync_mode=none\npid=1\nsince=x\nbroker_id=\n";
  assert_int_equal(felix_run_state_parse(empty, strlen(empty), "rs", &back, &err), FELIX_E_CORRUPT);
  assert_non_null(strstr(err.msg, "broker_id"));
}

static bool exists(const char *dir, const char *rel) {
  char p[4400];
  struct stat sb;
  snprintf(p, sizeof p, "%s/%s", dir, rel);
  return lstat(p, &sb) == 0;
}

static void touch(const char *dir, const char *rel) {
  char p[4400];
  snprintf(p, sizeof p, "%s/%s", dir, rel);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fclose(f);
}

#define OLD "shards/.replaced-" SHARD_DIR
#define NEW "shards/" SHARD_DIR

static void write_journal(const char *d, const char *sid, const char *dir, bool existed) {
  char p[4400];
  int fd;
  felix_err err;
  felix_rp_journal_entry e = {.existed = existed};
  snprintf(e.dir, sizeof e.dir, "%s", dir);
  snprintf(p, sizeof p, "%s/shards", d);
  assert_int_equal(felix_open_dir(AT_FDCWD, p, &fd, &err), FELIX_OK);
  assert_int_equal(felix_rp_journal_write(fd, p, sid, &e, 1, &err), FELIX_OK);
  close(fd);
}

#define OTHER_SID "0123456789abcdef0123456789abcdef"
#define JOURNAL_FILE "shards/.restore-journal"
#define ADDED "shards/added_0-b54cda2600004000"

static void leftovers_of_a_stopped_restore_are_settled(void **s) {
  (void)s;
  char *d = make_data_dir(3), p[4400], q[4400];
  felix_err err;
  snprintf(p, sizeof p, "%s/" NEW, d);
  snprintf(q, sizeof q, "%s/" OLD, d);
  touch(d, NEW "/old-marker");
  /* swapped, identity not written: undone, the old copy comes back */
  write_journal(d, OTHER_SID, SHARD_DIR, true);
  assert_int_equal(rename(p, q), 0);
  assert_int_equal(mkdir(p, 0755), 0);
  touch(d, NEW "/restored-marker");
  assert_int_equal(felix_rp_settle_leftovers(d, &err), FELIX_OK);
  assert_true(exists(d, NEW "/old-marker"));
  assert_false(exists(d, NEW "/restored-marker"));
  assert_false(exists(d, OLD));
  assert_false(exists(d, JOURNAL_FILE));
  /* stopped before its swap: the old copy stays as it is */
  write_journal(d, OTHER_SID, SHARD_DIR, true);
  assert_int_equal(felix_rp_settle_leftovers(d, &err), FELIX_OK);
  assert_true(exists(d, NEW "/old-marker"));
  /* a restored copy that had no old one: undone means removed */
  write_journal(d, OTHER_SID, "added_0-b54cda2600004000", false);
  char added[4400];
  snprintf(added, sizeof added, "%s/" ADDED, d);
  assert_int_equal(mkdir(added, 0755), 0);
  assert_int_equal(felix_rp_settle_leftovers(d, &err), FELIX_OK);
  assert_false(exists(d, ADDED));
  /* the identity was written: finished, the old copy goes */
  char *sid = read_text(d, "storage-id");
  sid[32] = '\0';
  write_journal(d, sid, SHARD_DIR, true);
  free(sid);
  assert_int_equal(rename(p, q), 0);
  assert_int_equal(mkdir(p, 0755), 0);
  touch(d, NEW "/restored-marker");
  assert_int_equal(felix_rp_settle_leftovers(d, &err), FELIX_OK);
  assert_true(exists(d, NEW "/restored-marker"));
  assert_false(exists(d, OLD));
  assert_false(exists(d, JOURNAL_FILE));
  /* a copy moved aside with no journal: nothing says which way, so refused */
  assert_int_equal(mkdir(q, 0755), 0);
  assert_int_equal(felix_rp_settle_leftovers(d, &err), FELIX_E_CORRUPT);
  assert_non_null(strstr(err.msg, "no .restore-journal says whether that restore finished"));
  assert_true(exists(d, OLD));
  rmdir(q);
  /* a journal naming something other than a shard directory is refused, nothing removed */
  tu_write(d, JOURNAL_FILE, "storage_id=" OTHER_SID "\ncopy=.. new\n", strlen("storage_id=" OTHER_SID "\ncopy=.. new\n"));
  assert_int_equal(felix_rp_settle_leftovers(d, &err), FELIX_E_CORRUPT);
  assert_non_null(strstr(err.msg, "expected storage_id=HEX or copy=SHARD-DIR"));
  assert_true(exists(d, "storage-id"));
  assert_true(exists(d, NEW "/restored-marker"));
  /* an unreadable storage-id decides nothing: the journal and both copies stay */
  write_journal(d, OTHER_SID, SHARD_DIR, true);
  assert_int_equal(rename(p, q), 0);
  assert_int_equal(mkdir(p, 0755), 0);
  char *sid_text = read_text(d, "storage-id");
  tu_write(d, "storage-id", "not hex\n", 8);
  assert_int_equal(felix_rp_settle_leftovers(d, &err), FELIX_E_CORRUPT);
  assert_true(exists(d, OLD));
  assert_true(exists(d, JOURNAL_FILE));
  tu_write(d, "storage-id", sid_text, strlen(sid_text));
  free(sid_text);
  assert_int_equal(felix_rp_settle_leftovers(d, &err), FELIX_OK); /* readable again: undone */
  assert_true(exists(d, NEW "/restored-marker")); /* what was at .replaced- is back */
  assert_false(exists(d, JOURNAL_FILE));
  /* and a create refuses a directory a restore left midway (a journal is enough) */
  write_journal(d, OTHER_SID, "added_0-b54cda2600004000", false);
  char to[4200], *t = temp_point(to, sizeof to);
  felix_rp_manifest m;
  assert_int_equal(create_point(d, to, &m, &err), FELIX_E_REFUSED);
  assert_non_null(strstr(err.msg, "a restore stopped midway"));
  drop(t);
  drop(d);
}

static void links_and_fifos_in_a_point_are_refused_without_waiting(void **s) {
  (void)s;
  char *d = make_data_dir(3), to[4200], path[4400];
  char *t = temp_point(to, sizeof to);
  felix_rp_manifest m;
  felix_err err;
  assert_int_equal(create_point(d, to, &m, &err), FELIX_OK);
  snprintf(path, sizeof path, "%s/shards/" SHARD_DIR "/generations", to);
  assert_int_equal(unlink(path), 0);
  assert_int_equal(symlink("/etc/hostname", path), 0);
  felix_rp_mismatches bad;
  assert_int_equal(felix_rp_verify(to, &m, NULL, &bad, NULL, NULL, &err), FELIX_OK);
  assert_int_equal(bad.count, 1);
  assert_string_equal(bad.items[0].kind, "unreadable");
  assert_non_null(strstr(bad.items[0].detail, "symbolic link"));
  felix_rp_mismatches_free(&bad);
  assert_int_equal(unlink(path), 0);
  assert_int_equal(mkfifo(path, 0644), 0); /* would block a plain open for ever */
  assert_int_equal(felix_rp_verify(to, &m, NULL, &bad, NULL, NULL, &err), FELIX_OK);
  assert_int_equal(bad.count, 1);
  assert_non_null(strstr(bad.items[0].detail, "not a regular file"));
  felix_rp_mismatches_free(&bad);
  felix_rp_manifest_free(&m);
  drop(t);
  drop(d);
}

static void verify_checks_the_shape_a_manifest_describes(void **s) {
  (void)s;
  char *d = make_data_dir(40), to[4200], path[4400];
  char *t = temp_point(to, sizeof to);
  felix_rp_manifest m;
  felix_err err;
  assert_int_equal(create_point(d, to, &m, &err), FELIX_OK);
  /* a writer that forgot the newest segment: consistent digest, short shard */
  felix_rp_shard *sh = &m.shards[0];
  size_t last = 0;
  for (size_t i = 0; i < sh->nfiles; i++)
    if (strstr(sh->files[i].name, ".log")) last = i;
  snprintf(path, sizeof path, "%s/shards/" SHARD_DIR "/%s", to, sh->files[last].name);
  assert_int_equal(unlink(path), 0);
  memmove(&sh->files[last], &sh->files[last + 1], (sh->nfiles - last - 1) * sizeof *sh->files);
  sh->nfiles--;
  char *text = felix_rp_manifest_encode(&m);
  int dfd;
  assert_int_equal(felix_open_dir(AT_FDCWD, to, &dfd, &err), FELIX_OK);
  assert_int_equal(felix_write_file_atomic(dfd, FELIX_RP_MANIFEST, text, strlen(text), "m", &err), FELIX_OK);
  close(dfd);
  free(text);
  felix_rp_mismatches bad;
  assert_int_equal(felix_rp_verify(to, &m, NULL, &bad, NULL, NULL, &err), FELIX_OK);
  assert_int_equal(bad.count, 1);
  assert_string_equal(bad.items[0].kind, "structure");
  assert_non_null(strstr(bad.items[0].detail, "the manifest says 40"));
  felix_rp_mismatches_free(&bad);
  felix_rp_manifest_free(&m);
  drop(t);
  drop(d);
}

static void a_from_path_run_state_cannot_record_is_refused_first(void **s) {
  (void)s;
  char *d = make_data_dir(3), *t = tu_mkdtemp(), deep[4096];
  tu_track(t);
  int n = snprintf(deep, sizeof deep, "%s", t);
  for (int i = 0; i < 12; i++) {
    n += snprintf(deep + n, sizeof deep - (size_t)n, "/%0100d", i);
    assert_int_equal(mkdir(deep, 0755), 0);
  }
  snprintf(deep + n, sizeof deep - (size_t)n, "/point");
  felix_rp_manifest m, m2;
  felix_err err;
  assert_int_equal(create_point(d, deep, &m, &err), FELIX_OK);
  char *sid_before = read_text(d, "storage-id");
  felix_rp_restore_opts o = {.from = deep, .data_dir = d};
  felix_rp_mismatches bad;
  felix_rp_restore_result res;
  assert_int_equal(felix_rp_restore(&o, &m2, &bad, &res, &err), FELIX_E_INVAL);
  if (!strstr(err.msg, "more than the 1023 run-state can record")) fail_msg("%s", err.msg);
  char *sid_after = read_text(d, "storage-id"), *rs = read_text(d, "run-state");
  assert_string_equal(sid_before, sid_after);
  free(sid_before), free(sid_after), free(rs);
  felix_rp_mismatches_free(&bad);
  felix_rp_manifest_free(&m2);
  felix_rp_manifest_free(&m);
  drop(t);
  drop(d);
}

static int teardown(void **s) {
  (void)s;
  tu_remove_tracked();
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(truncating_into_a_linked_segment_leaves_the_link_alone),
      cmocka_unit_test(appending_to_a_linked_newest_segment_unshares_it_first),
      cmocka_unit_test(create_links_sealed_copies_newest_and_verifies),
      cmocka_unit_test(create_cuts_a_torn_tail_at_a_record_boundary),
      cmocka_unit_test(restore_gives_new_ids_and_leader_none),
      cmocka_unit_test(a_corrupt_point_fails_verify_and_restore_changes_nothing),
      cmocka_unit_test(restore_refuses_a_locked_directory),
      cmocka_unit_test(manifest_round_trips_and_refuses_escaping_names),
      cmocka_unit_test(manifest_names_the_byte_and_the_version),
      cmocka_unit_test(manifest_keeps_every_digit_up_to_2_53),
      cmocka_unit_test(run_state_keeps_broker_id_and_restored_from),
      cmocka_unit_test(leftovers_of_a_stopped_restore_are_settled),
      cmocka_unit_test(links_and_fifos_in_a_point_are_refused_without_waiting),
      cmocka_unit_test(verify_checks_the_shape_a_manifest_describes),
      cmocka_unit_test(a_from_path_run_state_cannot_record_is_refused_first),
  };
  return cmocka_run_group_tests_name("restorepoint", tests, NULL, teardown);
}
