/* test_smallfiles.c — the small files of a data directory (DESIGN.md §3,
 * §3.3, §3.4): storage-id, run-state, ballot, generations, stream, shard directory
 * names, the directory lock, the boot id and the boot token. */
#include "testutil.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <sys/stat.h>

#include "felix/ballot.h"
#include "felix/datadir.h"
#include "felix/fileutil.h"
#include "felix/streammeta.h"

/* ---- helpers ------------------------------------------------------------ */

typedef struct tdir {
  char path[4096];
  int fd;
} tdir;

static tdir tdir_new(void) {
  tdir t;
  char *p = tu_mkdtemp();
  snprintf(t.path, sizeof t.path, "%s", p);
  free(p);
  t.fd = open(t.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  assert_true(t.fd >= 0);
  tu_track(t.path);
  return t;
}

static void tdir_free(tdir *t) {
  close(t->fd);
  tu_untrack_rmdir(t->path);
}

/* Removes what a failed test left behind. */
static int remove_leftover_roots(void **s) {
  (void)s;
  tu_remove_tracked();
  unsetenv("FELIX_BOOT_ID_FILE");
  unsetenv("FELIX_RUNTIME_DIR");
  return 0;
}

static void assert_contains(const char *msg, const char *needle) {
  if (!strstr(msg, needle)) fail_msg("message \"%s\" does not contain \"%s\"", msg, needle);
}

/* The message names "byte <pos>" exactly (not a longer number). */
static void assert_names_byte(const char *msg, size_t pos) {
  char want[48];
  int n = snprintf(want, sizeof want, "byte %zu", pos);
  for (const char *p = strstr(msg, want); p; p = strstr(p + 1, want))
    if (p[n] < '0' || p[n] > '9') return;
  fail_msg("message \"%s\" does not name byte %zu", msg, pos);
}

/* The message names "byte N" for some N in [lo, hi] (the start of a damaged
 * line, or the offending character within it). */
static void assert_names_byte_within(const char *msg, size_t lo, size_t hi) {
  for (const char *p = strstr(msg, "byte "); p; p = strstr(p + 1, "byte ")) {
    char *end;
    unsigned long long v = strtoull(p + 5, &end, 10);
    if (end != p + 5 && v >= lo && v <= hi) return;
  }
  fail_msg("message \"%s\" names no byte from %zu to %zu", msg, lo, hi);
}

static bool all_lower_hex(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  return true;
}

/* ---- storage-id ---------------------------------------------------------- */

static void storage_id_load_or_create_creates_then_loads_the_same(void **s) {
  (void)s;
  tdir d = tdir_new();
  felix_storage_id a, b;
  bool created = false;
  felix_err err = {0};
  assert_int_equal(felix_storage_id_load_or_create(d.fd, d.path, &a, &created, &err), FELIX_OK);
  assert_true(created);
  assert_int_equal(strlen(a.hex), FELIX_STORAGE_ID_HEX);
  assert_true(all_lower_hex(a.hex, FELIX_STORAGE_ID_HEX));
  /* On disk: exactly the 32 hex characters and a newline. */
  size_t len;
  unsigned char *file = tu_read(d.path, "storage-id", &len);
  assert_non_null(file);
  assert_int_equal(len, FELIX_STORAGE_ID_HEX + 1);
  assert_memory_equal(file, a.hex, FELIX_STORAGE_ID_HEX);
  assert_int_equal(file[FELIX_STORAGE_ID_HEX], '\n');
  free(file);
  /* Persisted: a second call loads it. */
  created = true;
  assert_int_equal(felix_storage_id_load_or_create(d.fd, d.path, &b, &created, &err), FELIX_OK);
  assert_false(created);
  assert_string_equal(a.hex, b.hex);
  memset(&b, 0, sizeof b);
  assert_int_equal(felix_storage_id_load(d.fd, d.path, &b, &err), FELIX_OK);
  assert_string_equal(a.hex, b.hex);
  tdir_free(&d);
}

static void storage_id_load_of_missing_file_is_notfound(void **s) {
  (void)s;
  tdir d = tdir_new();
  felix_storage_id a;
  felix_err err = {0};
  assert_int_equal(felix_storage_id_load(d.fd, d.path, &a, &err), FELIX_E_NOTFOUND);
  assert_contains(err.msg, "storage-id");
  tdir_free(&d);
}

static void storage_id_replace_writes_a_new_id(void **s) {
  (void)s;
  tdir d = tdir_new();
  felix_storage_id a, b, c;
  bool created;
  felix_err err = {0};
  assert_int_equal(felix_storage_id_load_or_create(d.fd, d.path, &a, &created, &err), FELIX_OK);
  assert_int_equal(felix_storage_id_replace(d.fd, d.path, &b, &err), FELIX_OK);
  assert_string_not_equal(a.hex, b.hex);
  assert_true(all_lower_hex(b.hex, FELIX_STORAGE_ID_HEX));
  assert_int_equal(felix_storage_id_load(d.fd, d.path, &c, &err), FELIX_OK);
  assert_string_equal(b.hex, c.hex);
  /* No temp file left behind. */
  size_t len;
  unsigned char *tmp = tu_read(d.path, ".storage-id.tmp", &len);
  assert_null(tmp);
  tdir_free(&d);
}

static void storage_id_load_or_create_refuses_a_malformed_file_and_keeps_it(void **s) {
  (void)s;
  tdir d = tdir_new();
  const char *bad = "0123456789ABCDEF0123456789abcdef\n";
  tu_write(d.path, "storage-id", bad, strlen(bad));
  felix_storage_id a;
  bool created = true;
  felix_err err = {0};
  assert_int_equal(felix_storage_id_load_or_create(d.fd, d.path, &a, &created, &err), FELIX_E_CORRUPT);
  assert_false(created);
  assert_contains(err.msg, "storage-id");
  assert_names_byte(err.msg, 10);
  size_t len;
  unsigned char *file = tu_read(d.path, "storage-id", &len);
  assert_int_equal(len, strlen(bad));
  assert_memory_equal(file, bad, len); /* never guessed over */
  free(file);
  tdir_free(&d);
}

static void expect_storage_id_error(const char *buf, size_t len, size_t byte) {
  felix_storage_id out;
  felix_err err = {0};
  assert_int_equal(felix_storage_id_parse(buf, len, "/data/storage-id", &out, &err), FELIX_E_CORRUPT);
  assert_contains(err.msg, "/data/storage-id");
  assert_names_byte(err.msg, byte);
}

static void storage_id_parse_accepts_32_lowercase_hex_and_newline(void **s) {
  (void)s;
  const char *ok = "00112233445566778899aabbccddeeff\n";
  felix_storage_id out;
  felix_err err = {0};
  assert_int_equal(felix_storage_id_parse(ok, strlen(ok), "x", &out, &err), FELIX_OK);
  assert_string_equal(out.hex, "00112233445566778899aabbccddeeff");
}

static void storage_id_parse_errors_name_the_byte(void **s) {
  (void)s;
  /* Short: the file ends at byte 7. */
  expect_storage_id_error("0011223", 7, 7);
  expect_storage_id_error("", 0, 0);
  /* Uppercase hex at byte 20. */
  expect_storage_id_error("00112233445566778899AABBCCDDEEFF\n", 33, 20);
  /* Not hex at byte 0. */
  expect_storage_id_error("g0112233445566778899aabbccddeeff\n", 33, 0);
  /* Missing newline: 32 characters only, or something else at byte 32. */
  expect_storage_id_error("00112233445566778899aabbccddeeff", 32, 32);
  expect_storage_id_error("00112233445566778899aabbccddeeff \n", 34, 32);
  /* Trailing data after the newline. */
  expect_storage_id_error("00112233445566778899aabbccddeeff\nmore", 37, 33);
  expect_storage_id_error("00112233445566778899aabbccddeeff\n\n", 34, 33);
  /* A 33rd hex character where the newline belongs. */
  expect_storage_id_error("00112233445566778899aabbccddeeff0\n", 34, 32);
}

/* ---- run-state ----------------------------------------------------------- */

static felix_run_state sample_run_state(bool with_boot) {
  felix_run_state rs;
  memset(&rs, 0, sizeof rs);
  rs.state = FELIX_RUN_RUNNING;
  rs.fsync_mode = FELIX_FSYNC_PERIODIC;
  rs.has_boot_id = with_boot;
  if (with_boot) {
    snprintf(rs.boot_id, sizeof rs.boot_id, "3f1c9a7e-1111-2222-3333-444455556666");
    snprintf(rs.boot_id_source, sizeof rs.boot_id_source, "file");
  }
  rs.pid = 4242;
  snprintf(rs.since, sizeof rs.since, "2026-11-29T21:18:10Z");
  return rs;
}

static void assert_run_state_equal(const felix_run_state *a, const felix_run_state *b) {
  assert_int_equal(a->state, b->state);
  assert_int_equal(a->fsync_mode, b->fsync_mode);
  assert_int_equal(a->has_boot_id, b->has_boot_id);
  if (a->has_boot_id) {
    assert_string_equal(a->boot_id, b->boot_id);
    assert_string_equal(a->boot_id_source, b->boot_id_source);
  }
  assert_int_equal(a->pid, b->pid);
  assert_string_equal(a->since, b->since);
}

static void run_state_round_trips_with_boot_id(void **s) {
  (void)s;
  felix_run_state rs = sample_run_state(true), back;
  char buf[1024];
  felix_run_state_format(&rs, buf, sizeof buf);
  assert_string_equal(buf,
                      "state=running\nfsync_mode=periodic\n"
                      "boot_id=3f1c9a7e-1111-2222-3333-444455556666\nboot_id_source=file\n"
                      "pid=4242\nsince=2026-11-29T21:18:10Z\n");
  felix_err err = {0};
  assert_int_equal(felix_run_state_parse(buf, strlen(buf), "rs", &back, &err), FELIX_OK);
  assert_run_state_equal(&rs, &back);
}

static void run_state_round_trips_without_boot_id(void **s) {
  (void)s;
  felix_run_state rs = sample_run_state(false), back;
  rs.state = FELIX_RUN_STOPPED;
  rs.fsync_mode = FELIX_FSYNC_ON_COMMIT;
  char buf[1024];
  felix_run_state_format(&rs, buf, sizeof buf);
  assert_string_equal(buf, "state=stopped\nfsync_mode=on_commit\npid=4242\nsince=2026-11-29T21:18:10Z\n");
  felix_err err = {0};
  assert_int_equal(felix_run_state_parse(buf, strlen(buf), "rs", &back, &err), FELIX_OK);
  assert_run_state_equal(&rs, &back);
  assert_false(back.has_boot_id);
  /* Every mode round-trips. */
  for (int m = FELIX_FSYNC_NONE; m <= FELIX_FSYNC_ON_COMMIT; m++) {
    rs.fsync_mode = (felix_fsync_mode)m;
    felix_run_state_format(&rs, buf, sizeof buf);
    assert_int_equal(felix_run_state_parse(buf, strlen(buf), "rs", &back, &err), FELIX_OK);
    assert_int_equal(back.fsync_mode, m);
  }
}

static void run_state_keys_may_come_in_any_order(void **s) {
  (void)s;
  const char *txt = "since=2026-01-01T00:00:00Z\npid=1\nfsync_mode=none\nstate=stopped\n";
  felix_run_state back;
  felix_err err = {0};
  assert_int_equal(felix_run_state_parse(txt, strlen(txt), "rs", &back, &err), FELIX_OK);
  assert_int_equal(back.state, FELIX_RUN_STOPPED);
  assert_int_equal(back.fsync_mode, FELIX_FSYNC_NONE);
  assert_int_equal(back.pid, 1);
}

static void expect_run_state_error(const char *txt, size_t byte) {
  felix_run_state out;
  felix_err err = {0};
  felix_status st = felix_run_state_parse(txt, strlen(txt), "/data/run-state", &out, &err);
  if (st != FELIX_E_CORRUPT) fail_msg("run-state \"%s\": status %d, expected corrupt", txt, st);
  assert_int_equal(err.status, FELIX_E_CORRUPT);
  assert_contains(err.msg, "/data/run-state");
  assert_names_byte(err.msg, byte);
}

#define RS_L1 "state=running\n"       /* 14 bytes, at 0 */
#define RS_L2 "fsync_mode=periodic\n" /* 20 bytes, at 14 */
#define RS_L3 "pid=77\n"              /* 7 bytes, at 34 */
#define RS_L4 "since=2026-11-29T21:18:10Z\n" /* at 41 */

static void run_state_rejects_unknown_key(void **s) {
  (void)s;
  expect_run_state_error(RS_L1 RS_L2 "colour=red\n" RS_L3 RS_L4, 34);
}

static void run_state_rejects_repeated_key(void **s) {
  (void)s;
  expect_run_state_error(RS_L1 RS_L2 RS_L3 RS_L4 "state=stopped\n", 68);
}

static void run_state_rejects_missing_required_key(void **s) {
  (void)s;
  /* Without pid: reported at the end of the file (byte 61). */
  const char *txt = RS_L1 RS_L2 RS_L4;
  expect_run_state_error(txt, strlen(txt));
  felix_run_state out;
  felix_err err = {0};
  assert_int_equal(felix_run_state_parse(txt, strlen(txt), "rs", &out, &err), FELIX_E_CORRUPT);
  assert_contains(err.msg, "pid");
  /* An empty file lacks everything. */
  expect_run_state_error("", 0);
}

/* restore-point restore writes state=restored: no run happened, so the file
 * names none (no fsync mode, pid, boot or broker), and a run's file needs its
 * fsync mode and pid. */
static void run_state_restored_names_no_run(void **s) {
  (void)s;
  felix_run_state rs = {.state = FELIX_RUN_RESTORED}, back;
  snprintf(rs.since, sizeof rs.since, "2026-12-05T10:00:00Z");
  snprintf(rs.restored_from, sizeof rs.restored_from, "/backups/one");
  snprintf(rs.restored_by, sizeof rs.restored_by, "felix-broker restore-point restore --from /backups/one");
  char buf[2048];
  felix_run_state_format(&rs, buf, sizeof buf);
  assert_string_equal(buf, "state=restored\nsince=2026-12-05T10:00:00Z\nrestored_from=/backups/one\n"
                           "restored_by=felix-broker restore-point restore --from /backups/one\n");
  felix_err err = {0};
  assert_int_equal(felix_run_state_parse(buf, strlen(buf), "rs", &back, &err), FELIX_OK);
  assert_int_equal(back.state, FELIX_RUN_RESTORED);
  assert_string_equal(back.restored_from, "/backups/one");
  assert_string_equal(back.restored_by, rs.restored_by);
  assert_false(back.has_boot_id);
  assert_int_equal(back.pid, 0);
  assert_string_equal(felix_run_phase_name(back.state), "restored");
  /* a restored file that claims a run: the byte of the claim */
  expect_run_state_error("state=restored\nsince=x\nrestored_from=/p\npid=7\n", 40);
  expect_run_state_error("state=restored\nfsync_mode=periodic\nsince=x\nrestored_from=/p\n", 15);
  expect_run_state_error("state=restored\nsince=x\nrestored_from=/p\nboot_id=b\n", 40);
  expect_run_state_error("state=restored\nsince=x\nrestored_from=/p\nbroker_id=b1\n", 40);
  /* restored without its point: the end of the file */
  expect_run_state_error("state=restored\nsince=x\n", 23);
  /* restored_by belongs to a restore */
  expect_run_state_error(RS_L1 RS_L2 RS_L3 RS_L4 "restored_by=x\n", 68);
  /* a run without its fsync mode, at the end of the file */
  expect_run_state_error(RS_L1 RS_L3 RS_L4, 48);
}

static void run_state_rejects_bad_state(void **s) {
  (void)s;
  expect_run_state_error(RS_L2 "state=crashed\n" RS_L3 RS_L4, 20);
}

static void run_state_rejects_bad_mode(void **s) {
  (void)s;
  expect_run_state_error(RS_L1 RS_L3 "fsync_mode=always\n" RS_L4, 21);
  expect_run_state_error(RS_L1 "fsync_mode=Periodic\n" RS_L3 RS_L4, 14);
}

static void run_state_rejects_missing_trailing_newline(void **s) {
  (void)s;
  expect_run_state_error(RS_L1 RS_L2 RS_L3 "since=2026-11-29T21:18:10Z", 41);
}

static void run_state_rejects_non_numeric_pid(void **s) {
  (void)s;
  expect_run_state_error(RS_L1 RS_L2 "pid=12a\n" RS_L4, 34);
  expect_run_state_error(RS_L1 RS_L2 "pid=\n" RS_L4, 34);
  expect_run_state_error(RS_L1 RS_L2 "pid=-1\n" RS_L4, 34);
  expect_run_state_error(RS_L1 RS_L2 "pid= 1\n" RS_L4, 34);
}

static void run_state_rejects_line_without_equals(void **s) {
  (void)s;
  expect_run_state_error(RS_L1 "garbage\n" RS_L2 RS_L3 RS_L4, 14);
}

static void run_state_read_of_missing_file_is_absent(void **s) {
  (void)s;
  tdir d = tdir_new();
  felix_run_state rs;
  bool present = true;
  felix_err err = {0};
  assert_int_equal(felix_run_state_read(d.fd, d.path, &rs, &present, &err), FELIX_OK);
  assert_false(present);
  tdir_free(&d);
}

static void run_state_write_then_read_round_trips(void **s) {
  (void)s;
  tdir d = tdir_new();
  felix_run_state rs = sample_run_state(true), back;
  felix_err err = {0};
  assert_int_equal(felix_run_state_write(d.fd, d.path, &rs, &err), FELIX_OK);
  bool present = false;
  assert_int_equal(felix_run_state_read(d.fd, d.path, &back, &present, &err), FELIX_OK);
  assert_true(present);
  assert_run_state_equal(&rs, &back);
  tdir_free(&d);
}

static void run_state_read_of_malformed_file_fails_naming_it(void **s) {
  (void)s;
  tdir d = tdir_new();
  const char *txt = RS_L1 RS_L2 "pid=x\n" RS_L4;
  tu_write(d.path, "run-state", txt, strlen(txt));
  felix_run_state back;
  bool present = true;
  felix_err err = {0};
  assert_int_equal(felix_run_state_read(d.fd, d.path, &back, &present, &err), FELIX_E_CORRUPT);
  assert_false(present);
  char want[4200];
  snprintf(want, sizeof want, "%s/run-state", d.path);
  assert_contains(err.msg, want);
  assert_names_byte(err.msg, 34);
  tdir_free(&d);
}

/* ---- ballot -------------------------------------------------------------- */

#define HEX_A "0123456789abcdef0123456789abcdef"
#define HEX_B "fedcba9876543210fedcba9876543210"
#define HEX_C "00000000000000001111111111111111"
#define UUID "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"

static felix_ballot sample_ballot(bool leader) {
  felix_ballot b;
  memset(&b, 0, sizeof b);
  snprintf(b.copy_id, sizeof b.copy_id, HEX_A);
  snprintf(b.storage_id, sizeof b.storage_id, HEX_B);
  snprintf(b.stream_uuid, sizeof b.stream_uuid, UUID);
  b.generation = 17;
  b.has_leader = leader;
  if (leader) {
    snprintf(b.leader, sizeof b.leader, "broker-2");
    snprintf(b.leader_copy_id, sizeof b.leader_copy_id, HEX_C);
    snprintf(b.leader_incarnation, sizeof b.leader_incarnation, "inc-99");
  }
  return b;
}

static void assert_ballot_equal(const felix_ballot *a, const felix_ballot *b) {
  assert_string_equal(a->copy_id, b->copy_id);
  assert_string_equal(a->storage_id, b->storage_id);
  assert_string_equal(a->stream_uuid, b->stream_uuid);
  assert_true(a->generation == b->generation);
  assert_int_equal(a->has_leader, b->has_leader);
  if (a->has_leader) {
    assert_string_equal(a->leader, b->leader);
    assert_string_equal(a->leader_copy_id, b->leader_copy_id);
    assert_string_equal(a->leader_incarnation, b->leader_incarnation);
  }
}

static void ballot_round_trips_with_leader(void **s) {
  (void)s;
  felix_ballot b = sample_ballot(true), back;
  char buf[1024];
  felix_ballot_format(&b, buf, sizeof buf);
  assert_string_equal(buf, "copy_id=" HEX_A "\nstorage_id=" HEX_B "\nstream_uuid=" UUID
                           "\ngeneration=17\nleader=broker-2\nleader_copy_id=" HEX_C
                           "\nleader_incarnation=inc-99\n");
  felix_err err = {0};
  assert_int_equal(felix_ballot_parse(buf, strlen(buf), "ballot", &back, &err), FELIX_OK);
  assert_ballot_equal(&b, &back);
}

static void ballot_round_trips_with_leader_none(void **s) {
  (void)s;
  felix_ballot b = sample_ballot(false), back;
  char buf[1024];
  felix_ballot_format(&b, buf, sizeof buf);
  assert_non_null(strstr(buf, "\nleader=none\nleader_copy_id=none\nleader_incarnation=none\n"));
  felix_err err = {0};
  assert_int_equal(felix_ballot_parse(buf, strlen(buf), "ballot", &back, &err), FELIX_OK);
  assert_false(back.has_leader);
  assert_ballot_equal(&b, &back);
}

static void ballot_write_then_read_round_trips(void **s) {
  (void)s;
  tdir d = tdir_new();
  felix_ballot b = sample_ballot(true), back;
  felix_err err = {0};
  assert_int_equal(felix_ballot_write(d.fd, "shard/ballot", &b, &err), FELIX_OK);
  assert_int_equal(felix_ballot_read(d.fd, "shard/ballot", &back, &err), FELIX_OK);
  assert_ballot_equal(&b, &back);
  b.generation = 18;
  b.has_leader = false;
  assert_int_equal(felix_ballot_write(d.fd, "shard/ballot", &b, &err), FELIX_OK);
  assert_int_equal(felix_ballot_read(d.fd, "shard/ballot", &back, &err), FELIX_OK);
  assert_ballot_equal(&b, &back);
  tdir_free(&d);
}

static void expect_ballot_error(const char *txt, size_t byte) {
  felix_ballot out;
  felix_err err = {0};
  felix_status st = felix_ballot_parse(txt, strlen(txt), "/d/shards/x/ballot", &out, &err);
  if (st != FELIX_E_CORRUPT) fail_msg("ballot accepted or wrong status %d:\n%s", st, txt);
  assert_contains(err.msg, "/d/shards/x/ballot");
  assert_names_byte(err.msg, byte);
}

#define B_HEAD "copy_id=" HEX_A "\nstorage_id=" HEX_B "\nstream_uuid=" UUID "\ngeneration=17\n"
/* copy_id line 41 bytes, storage_id 44, stream_uuid 49, generation 14: leader at 148 */

static void ballot_rejects_partial_none(void **s) {
  (void)s;
  assert_int_equal(strlen(B_HEAD), 148);
  expect_ballot_error(B_HEAD "leader=none\nleader_copy_id=" HEX_C "\nleader_incarnation=inc-1\n", 148);
  expect_ballot_error(B_HEAD "leader=b1\nleader_copy_id=none\nleader_incarnation=inc-1\n", 148);
  expect_ballot_error(B_HEAD "leader=b1\nleader_copy_id=" HEX_C "\nleader_incarnation=none\n", 148);
  expect_ballot_error(B_HEAD "leader=none\nleader_copy_id=none\nleader_incarnation=inc-1\n", 148);
}

/* Review 5, item 8: the shard index a copy was made for, optional (copies
 * made before it was recorded lack it), checked against the directory's name. */
static void ballot_round_trips_its_shard_index(void **s) {
  (void)s;
  felix_ballot b = sample_ballot(false), back;
  char buf[1024];
  felix_err err = {0};
  felix_ballot_format(&b, buf, sizeof buf);
  assert_null(strstr(buf, "shard="));
  assert_int_equal(felix_ballot_parse(buf, strlen(buf), "ballot", &back, &err), FELIX_OK);
  assert_false(back.has_shard);
  b.has_shard = true, b.shard = 4294967295u;
  felix_ballot_format(&b, buf, sizeof buf);
  assert_non_null(strstr(buf, "\nshard=4294967295\n"));
  assert_int_equal(felix_ballot_parse(buf, strlen(buf), "ballot", &back, &err), FELIX_OK);
  assert_true(back.has_shard);
  assert_int_equal(back.shard, 4294967295u);
  expect_ballot_error(B_HEAD "leader=none\nleader_copy_id=none\nleader_incarnation=none\nshard=4294967296\n", 204);
  expect_ballot_error(B_HEAD "leader=none\nleader_copy_id=none\nleader_incarnation=none\nshard=x\n", 204);
}

static void ballot_rejects_bad_copy_id(void **s) {
  (void)s;
  const char *tail = "storage_id=" HEX_B "\nstream_uuid=" UUID "\ngeneration=1\nleader=none\n"
                     "leader_copy_id=none\nleader_incarnation=none\n";
  char txt[1024];
  /* Uppercase. */
  snprintf(txt, sizeof txt, "copy_id=0123456789ABCDEF0123456789abcdef\n%s", tail);
  expect_ballot_error(txt, 0);
  /* 31 characters. */
  snprintf(txt, sizeof txt, "copy_id=0123456789abcdef0123456789abcde\n%s", tail);
  expect_ballot_error(txt, 0);
  /* 33 characters. */
  snprintf(txt, sizeof txt, "copy_id=0123456789abcdef0123456789abcdef0\n%s", tail);
  expect_ballot_error(txt, 0);
  /* Empty. */
  snprintf(txt, sizeof txt, "copy_id=\n%s", tail);
  expect_ballot_error(txt, 0);
  /* A bad leader_copy_id is named at its own line. */
  snprintf(txt, sizeof txt, "%sleader=b1\nleader_copy_id=XYZ\nleader_incarnation=i\n", B_HEAD);
  expect_ballot_error(txt, 158);
}

static void ballot_rejects_missing_key_and_bad_generation(void **s) {
  (void)s;
  /* No leader_incarnation: reported at the end of the file. */
  const char *no_inc = B_HEAD "leader=none\nleader_copy_id=none\n";
  expect_ballot_error(no_inc, strlen(no_inc));
  expect_ballot_error("copy_id=" HEX_A "\nstorage_id=" HEX_B "\nstream_uuid=" UUID
                      "\ngeneration=x7\nleader=none\nleader_copy_id=none\nleader_incarnation=none\n",
                      134);
}

/* ---- generations --------------------------------------------------------- */

/* ---- stream (streammeta.h) ---- */

#define S_GOLDEN "name=orders\nuuid=0b9c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3\nshards=4\nreplicas=3\nacks=quorum\n"

static void stream_file_golden_round_trips(void **s) {
  (void)s;
  felix_stream_meta m = {.shards = 4, .replicas = 3};
  snprintf(m.name, sizeof m.name, "orders");
  snprintf(m.uuid, sizeof m.uuid, "0b9c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3");
  snprintf(m.acks, sizeof m.acks, "quorum");
  char buf[512];
  felix_stream_meta_format(&m, buf, sizeof buf);
  assert_string_equal(buf, S_GOLDEN);
  felix_stream_meta back;
  felix_err err = {0};
  assert_int_equal(felix_stream_meta_parse(buf, strlen(buf), "stream", &back, &err), FELIX_OK);
  assert_true(felix_stream_meta_equal(&m, &back));
  tdir d = tdir_new();
  bool found = true;
  assert_int_equal(felix_stream_meta_read(d.fd, "shard/stream", &back, &found, &err), FELIX_OK);
  assert_false(found); /* a copy made before stream files */
  assert_int_equal(felix_stream_meta_write(d.fd, "shard/stream", &m, &err), FELIX_OK);
  assert_int_equal(felix_stream_meta_read(d.fd, "shard/stream", &back, &found, &err), FELIX_OK);
  assert_true(found);
  assert_true(felix_stream_meta_equal(&m, &back));
  tdir_free(&d);
}

static void expect_stream_error(const char *txt, size_t byte, const char *needle) {
  felix_stream_meta out;
  felix_err err = {0};
  felix_status st = felix_stream_meta_parse(txt, strlen(txt), "/d/shards/x/stream", &out, &err);
  if (st != FELIX_E_CORRUPT) fail_msg("stream file accepted or wrong status %d:\n%s", st, txt);
  assert_contains(err.msg, "/d/shards/x/stream");
  assert_names_byte(err.msg, byte);
  assert_contains(err.msg, needle);
}

static void stream_file_errors_name_the_byte(void **s) {
  (void)s;
  /* name line 12 bytes, uuid 42, shards 9, replicas 11: acks at 74 */
  expect_stream_error("name=orders\nuuid=0b9c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3\nshards=4\nreplicas=2\nacks=quorum\n"
                      "extra=1\n", 86, "extra");
  expect_stream_error("name=orders\nuuid=0b9c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3\nshards=0\nreplicas=3\nacks=quorum\n", 54,
                      "shards is 0, must be 1 to 1024");
  expect_stream_error("name=orders\nuuid=0b9c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3\nshards=4\nreplicas=9\nacks=quorum\n", 63,
                      "replicas is 9, must be 1 to 7");
  expect_stream_error("name=orders\nuuid=0b9c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3\nshards=4\nreplicas=3\nacks=most\n", 74,
                      "acks must be quorum, leader or all");
  expect_stream_error("name=orders\nuuid=0b9c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3\nshards=4\nreplicas=3\n", 74, "acks");
}

static void generations_round_trip(void **s) {
  (void)s;
  const char *txt = "1 0\n3 10\n4 10\n18446744073709551615 18446744073709551615\n";
  felix_generations g;
  felix_err err = {0};
  assert_int_equal(felix_generations_parse(txt, strlen(txt), "gen", &g, &err), FELIX_OK);
  assert_int_equal(g.count, 4);
  assert_int_equal(g.items[0].generation, 1);
  assert_int_equal(g.items[0].start_offset, 0);
  assert_int_equal(g.items[1].generation, 3);
  assert_int_equal(g.items[1].start_offset, 10);
  assert_int_equal(g.items[2].generation, 4);
  assert_int_equal(g.items[2].start_offset, 10);
  assert_true(g.items[3].generation == UINT64_MAX);
  assert_true(g.items[3].start_offset == UINT64_MAX);
  char *back = felix_generations_format(&g);
  assert_non_null(back);
  assert_string_equal(back, txt);
  free(back);
  felix_generations_free(&g);
  assert_null(g.items);
  assert_int_equal(g.count, 0);
}

static void generations_empty_file_is_empty_history(void **s) {
  (void)s;
  felix_generations g;
  felix_err err = {0};
  assert_int_equal(felix_generations_parse("", 0, "gen", &g, &err), FELIX_OK);
  assert_int_equal(g.count, 0);
  char *txt = felix_generations_format(&g);
  assert_non_null(txt);
  assert_string_equal(txt, "");
  free(txt);
  felix_generations_free(&g);
}

static void generations_write_then_read_round_trips(void **s) {
  (void)s;
  tdir d = tdir_new();
  felix_generation items[] = {{2, 0}, {5, 100}, {9, 250}};
  felix_generations g = {items, 3}, back;
  felix_err err = {0};
  assert_int_equal(felix_generations_write(d.fd, "gen", &g, &err), FELIX_OK);
  size_t len;
  unsigned char *file = tu_read(d.path, "generations", &len);
  assert_non_null(file);
  assert_int_equal(len, strlen("2 0\n5 100\n9 250\n"));
  assert_memory_equal(file, "2 0\n5 100\n9 250\n", len);
  free(file);
  assert_int_equal(felix_generations_read(d.fd, "gen", &back, &err), FELIX_OK);
  assert_int_equal(back.count, 3);
  for (size_t i = 0; i < 3; i++) {
    assert_int_equal(back.items[i].generation, items[i].generation);
    assert_int_equal(back.items[i].start_offset, items[i].start_offset);
  }
  felix_generations_free(&back);
  tdir_free(&d);
}

/* Expects txt rejected naming a byte of the line [line_at, line_end]. */
static void expect_generations_error_in(const char *txt, size_t line_at, size_t line_end) {
  felix_generations g;
  felix_err err = {0};
  felix_status st = felix_generations_parse(txt, strlen(txt), "/d/shards/x/generations", &g, &err);
  if (st != FELIX_E_CORRUPT) fail_msg("generations \"%s\": status %d, expected corrupt", txt, st);
  assert_contains(err.msg, "/d/shards/x/generations");
  assert_names_byte_within(err.msg, line_at, line_end);
  assert_null(g.items);
  assert_int_equal(g.count, 0);
}

/* Expects txt rejected naming the line that starts at line_at (the last line). */
static void expect_generations_error(const char *txt, size_t line_at) {
  expect_generations_error_in(txt, line_at, strlen(txt));
}

static void generations_rejects_non_ascending_generations(void **s) {
  (void)s;
  expect_generations_error("1 0\n3 5\n3 9\n", 8);
  expect_generations_error("1 0\n3 5\n2 9\n", 8);
  expect_generations_error_in("2 0\n1 5\n3 9\n", 4, 7);
}

static void generations_rejects_decreasing_offsets(void **s) {
  (void)s;
  expect_generations_error("1 0\n2 10\n3 9\n", 9);
  expect_generations_error_in("1 7\n2 6\n3 9\n", 4, 7);
}

static void generations_rejects_garbage(void **s) {
  (void)s;
  expect_generations_error("1 0\nabc\n", 4);
  expect_generations_error("1 0\n2\n", 4);
  expect_generations_error("1 0\n2 x\n", 4);
  expect_generations_error("1 0\n2 3 4\n", 4);
  expect_generations_error("1 0\n2  3\n", 4);
  expect_generations_error("1 0\n-2 3\n", 4);
  expect_generations_error("1 0\n2 -3\n", 4);
  expect_generations_error("1 0\n+2 3\n", 4);
  expect_generations_error("1 0\n\n", 4);
  expect_generations_error("1 0\n 2 3\n", 4);
  expect_generations_error("1 0\n2 18446744073709551616\n", 4);
}

static void generations_rejects_missing_newline(void **s) {
  (void)s;
  expect_generations_error("1 0\n2 5", 4);
  expect_generations_error("1 0", 0);
  /* A damaged first line is named there, not at the end. */
  expect_generations_error_in("x 0\n2 5\n", 0, 3);
}

static void generations_trim_to_removes_lines_at_or_after_log_end(void **s) {
  (void)s;
  felix_generation base[] = {{1, 0}, {2, 10}, {3, 20}, {4, 20}, {6, 35}};
  felix_generation items[5];
  felix_generations g;

  memcpy(items, base, sizeof base);
  g = (felix_generations){items, 5};
  assert_int_equal(felix_generations_trim_to(&g, 20), 3); /* 3@20, 4@20, 6@35 */
  assert_int_equal(g.count, 2);
  assert_int_equal(g.items[1].generation, 2);

  memcpy(items, base, sizeof base);
  g = (felix_generations){items, 5};
  assert_int_equal(felix_generations_trim_to(&g, 21), 1); /* only 6@35 */
  assert_int_equal(g.count, 4);
  assert_int_equal(g.items[3].generation, 4);

  memcpy(items, base, sizeof base);
  g = (felix_generations){items, 5};
  assert_int_equal(felix_generations_trim_to(&g, 36), 0);
  assert_int_equal(g.count, 5);

  memcpy(items, base, sizeof base);
  g = (felix_generations){items, 5};
  assert_int_equal(felix_generations_trim_to(&g, 0), 5); /* empty log: nothing started */
  assert_int_equal(g.count, 0);

  g = (felix_generations){NULL, 0};
  assert_int_equal(felix_generations_trim_to(&g, 10), 0);
}

/* ---- shard directory names ------------------------------------------------ */

static void shard_dir_name_formats_stream_shard_and_uuid_prefix(void **s) {
  (void)s;
  char out[256];
  assert_true(felix_shard_dir_name(out, sizeof out, "orders", 3, UUID));
  assert_string_equal(out, "orders_3-0f1e2d3c4b5a6978");
  assert_true(felix_shard_dir_name(out, sizeof out, "my_orders_v2", 12, UUID));
  assert_string_equal(out, "my_orders_v2_12-0f1e2d3c4b5a6978");
  /* The uuid given without dashes gives the same name. */
  assert_true(felix_shard_dir_name(out, sizeof out, "orders", 3, "0f1e2d3c4b5a69788796a5b4c3d2e1f0"));
  assert_string_equal(out, "orders_3-0f1e2d3c4b5a6978");
}

static void shard_dir_name_refuses_short_uuid_and_small_buffer(void **s) {
  (void)s;
  char out[256];
  assert_false(felix_shard_dir_name(out, sizeof out, "orders", 3, "0f1e2d3c-4b5a-697"));
  assert_false(felix_shard_dir_name(out, 10, "orders", 3, UUID));
}

static void shard_dir_parse_splits_names(void **s) {
  (void)s;
  char stream[64], uuid16[17];
  uint32_t shard = 99;
  assert_true(felix_shard_dir_parse("orders_3-0f1e2d3c4b5a6978", stream, sizeof stream, &shard, uuid16));
  assert_string_equal(stream, "orders");
  assert_int_equal(shard, 3);
  assert_string_equal(uuid16, "0f1e2d3c4b5a6978");
  /* Underscores inside the stream name: the shard follows the last one. */
  assert_true(felix_shard_dir_parse("my_orders_v2_12-0f1e2d3c4b5a6978", stream, sizeof stream, &shard, uuid16));
  assert_string_equal(stream, "my_orders_v2");
  assert_int_equal(shard, 12);
  assert_true(felix_shard_dir_parse("a_1_0-ffffffffffffffff", stream, sizeof stream, &shard, uuid16));
  assert_string_equal(stream, "a_1");
  assert_int_equal(shard, 0);
  assert_string_equal(uuid16, "ffffffffffffffff");
  /* Dashes in the stream name are fine too. */
  assert_true(felix_shard_dir_parse("a-b_7-0123456789abcdef", stream, sizeof stream, &shard, uuid16));
  assert_string_equal(stream, "a-b");
  assert_int_equal(shard, 7);
}

static void shard_dir_name_and_parse_round_trip(void **s) {
  (void)s;
  const char *streams[] = {"s", "orders", "my_orders_v2", "x_1", "a-b-c", "__weird__"};
  const uint32_t shards[] = {0, 1, 12, 65535, 999999999};
  for (size_t i = 0; i < sizeof streams / sizeof streams[0]; i++)
    for (size_t j = 0; j < sizeof shards / sizeof shards[0]; j++) {
      char name[256], stream[64], uuid16[17];
      uint32_t shard = 0;
      assert_true(felix_shard_dir_name(name, sizeof name, streams[i], shards[j], UUID));
      if (!felix_shard_dir_parse(name, stream, sizeof stream, &shard, uuid16))
        fail_msg("'%s' does not parse", name);
      assert_string_equal(stream, streams[i]);
      assert_int_equal(shard, shards[j]);
      assert_string_equal(uuid16, "0f1e2d3c4b5a6978");
    }
}

static void shard_dir_parse_rejects_non_shard_names(void **s) {
  (void)s;
  const char *bad[] = {
      "orders-0f1e2d3c4b5a6978",       /* no underscore */
      "orders_-0f1e2d3c4b5a6978",      /* no shard digits */
      "_3-0f1e2d3c4b5a6978",           /* empty stream */
      "orders_3x-0f1e2d3c4b5a6978",    /* shard not a number */
      "orders_3-0F1E2D3C4B5A6978",     /* uppercase hex */
      "orders_3-0f1e2d3c4b5a697",      /* 15 hex */
      "orders_3-0f1e2d3c4b5a69780",    /* 17 hex */
      "orders_3_0f1e2d3c4b5a6978",     /* no dash */
      "orders_4294967296-0f1e2d3c4b5a6978", /* above UINT32_MAX */
      "orders_12345678901-0f1e2d3c4b5a6978", /* more than 10 digits */
      "lock",
      "",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char stream[64], uuid16[17];
    uint32_t shard;
    if (felix_shard_dir_parse(bad[i], stream, sizeof stream, &shard, uuid16))
      fail_msg("accepted '%s' as a shard directory", bad[i]);
  }
  /* A stream name that does not fit the caller's buffer is refused. */
  char small[4], uuid16[17];
  uint32_t shard;
  assert_false(felix_shard_dir_parse("orders_3-0f1e2d3c4b5a6978", small, sizeof small, &shard, uuid16));
}

/* Whatever felix_shard_dir_name produces must be a name felix_shard_dir_parse
 * accepts and splits back into the same parts (or name() must refuse). */
static void expect_name_parses_back(const char *stream_in, uint32_t shard_in, const char *uuid) {
  char name[256], stream[64], uuid16[17];
  uint32_t shard = 0;
  if (!felix_shard_dir_name(name, sizeof name, stream_in, shard_in, uuid)) return;
  if (!felix_shard_dir_parse(name, stream, sizeof stream, &shard, uuid16))
    fail_msg("felix_shard_dir_name made '%s', which felix_shard_dir_parse refuses", name);
  assert_string_equal(stream, stream_in);
  assert_true(shard == shard_in);
}

static void shard_dir_name_of_largest_shard_number_parses_back(void **s) {
  (void)s;
  expect_name_parses_back("orders", UINT32_MAX, UUID);
  expect_name_parses_back("orders", 1000000000u, UUID);
}

static void shard_dir_name_of_uppercase_uuid_parses_back_or_is_refused(void **s) {
  (void)s;
  expect_name_parses_back("orders", 3, "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0");
}

static void shard_dir_name_of_non_hex_uuid_parses_back_or_is_refused(void **s) {
  (void)s;
  expect_name_parses_back("orders", 3, "zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz");
}

/* ---- the directory lock --------------------------------------------------- */

static void dir_lock_second_acquire_fails_busy_naming_the_pid(void **s) {
  (void)s;
  tdir d = tdir_new();
  felix_dir_lock a, b;
  felix_err err = {0};
  assert_int_equal(felix_dir_lock_acquire(d.fd, d.path, &a, &err), FELIX_OK);
  assert_true(a.fd >= 0);
  /* The lock file holds our pid. */
  size_t len;
  unsigned char *file = tu_read(d.path, "lock", &len);
  char want[32];
  snprintf(want, sizeof want, "%ld\n", (long)getpid());
  assert_int_equal(len, strlen(want));
  assert_memory_equal(file, want, len);
  free(file);
  /* A second open + flock conflicts even in the same process. */
  memset(&err, 0, sizeof err);
  assert_int_equal(felix_dir_lock_acquire(d.fd, d.path, &b, &err), FELIX_E_BUSY);
  assert_int_equal(err.status, FELIX_E_BUSY);
  assert_int_equal(b.fd, -1);
  char pid_s[48];
  snprintf(pid_s, sizeof pid_s, "pid %ld", (long)getpid());
  assert_contains(err.msg, pid_s);
  assert_contains(err.msg, d.path);
  /* The failed attempt did not disturb the holder. */
  assert_int_equal(felix_dir_lock_holder(d.fd), getpid());
  felix_dir_lock_release(&a);
  assert_int_equal(a.fd, -1);
  /* Released: a new acquire succeeds. */
  assert_int_equal(felix_dir_lock_acquire(d.fd, d.path, &b, &err), FELIX_OK);
  felix_dir_lock_release(&b);
  tdir_free(&d);
}

static void dir_lock_holder_reports_our_pid_while_held_and_0_after(void **s) {
  (void)s;
  tdir d = tdir_new();
  assert_int_equal(felix_dir_lock_holder(d.fd), 0); /* no lock file yet */
  felix_dir_lock a;
  felix_err err = {0};
  assert_int_equal(felix_dir_lock_acquire(d.fd, d.path, &a, &err), FELIX_OK);
  assert_int_equal(felix_dir_lock_holder(d.fd), getpid());
  felix_dir_lock_release(&a);
  assert_int_equal(felix_dir_lock_holder(d.fd), 0); /* the file remains, unlocked */
  size_t len;
  unsigned char *file = tu_read(d.path, "lock", &len);
  assert_non_null(file);
  free(file);
  /* Releasing twice is harmless. */
  felix_dir_lock_release(&a);
  tdir_free(&d);
}

/* ---- boot id and boot token ------------------------------------------------ */

static void boot_id_is_read_from_felix_boot_id_file(void **s) {
  (void)s;
  tdir d = tdir_new();
  tu_write(d.path, "boot", "boot-abc-123\n", 13);
  char path[4200];
  snprintf(path, sizeof path, "%s/boot", d.path);
  setenv("FELIX_BOOT_ID_FILE", path, 1);
  char id[FELIX_BOOT_ID_MAX + 1], src[8];
  felix_err err = {0};
  assert_int_equal(felix_boot_id_read(id, src, &err), FELIX_OK);
  assert_string_equal(id, "boot-abc-123");
  assert_string_equal(src, "file");
  /* Changing the file simulates a machine restart. */
  tu_write(d.path, "boot", "boot-def", 8);
  assert_int_equal(felix_boot_id_read(id, src, &err), FELIX_OK);
  assert_string_equal(id, "boot-def");
  unsetenv("FELIX_BOOT_ID_FILE");
  tdir_free(&d);
}

static void boot_id_file_malformed_is_rejected_naming_it(void **s) {
  (void)s;
  tdir d = tdir_new();
  char path[4200];
  snprintf(path, sizeof path, "%s/boot", d.path);
  setenv("FELIX_BOOT_ID_FILE", path, 1);
  const char *bad[] = {"two words\n", "", "\n", "a=b\n", "a/b\n", "line1\nline2\n",
                       "0123456789012345678901234567890123456789012345678901234567890123456789\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tu_write(d.path, "boot", bad[i], strlen(bad[i]));
    char id[FELIX_BOOT_ID_MAX + 1], src[8];
    felix_err err = {0};
    felix_status st = felix_boot_id_read(id, src, &err);
    if (st != FELIX_E_CORRUPT) fail_msg("boot id file \"%s\" gave status %d", bad[i], st);
    assert_contains(err.msg, path);
    assert_names_byte(err.msg, 0);
  }
  /* A missing file is an error too, not a silent fallback to the kernel's. */
  remove(path);
  char id[FELIX_BOOT_ID_MAX + 1], src[8];
  felix_err err = {0};
  assert_int_not_equal(felix_boot_id_read(id, src, &err), FELIX_OK);
  assert_contains(err.msg, path);
  unsetenv("FELIX_BOOT_ID_FILE");
  tdir_free(&d);
}

static void boot_id_without_env_comes_from_the_kernel(void **s) {
  (void)s;
  unsetenv("FELIX_BOOT_ID_FILE");
  if (access("/proc/sys/kernel/random/boot_id", R_OK) != 0) skip();
  char id[FELIX_BOOT_ID_MAX + 1], src[8];
  felix_err err = {0};
  assert_int_equal(felix_boot_id_read(id, src, &err), FELIX_OK);
  assert_string_equal(src, "kernel");
  assert_int_equal(strlen(id), 36); /* a uuid */
}

static void boot_token_create_present_remove(void **s) {
  (void)s;
  tdir d = tdir_new();
  char run[4200];
  snprintf(run, sizeof run, "%s/run", d.path); /* does not exist yet */
  setenv("FELIX_RUNTIME_DIR", run, 1);
  assert_string_equal(felix_runtime_dir(), run);
  felix_storage_id sid;
  snprintf(sid.hex, sizeof sid.hex, HEX_A);
  char path[4200], want[4300];
  felix_boot_token_path(&sid, "boot-1", path, sizeof path);
  snprintf(want, sizeof want, "%s/%s.boot-1.ok", run, HEX_A);
  assert_string_equal(path, want);

  assert_false(felix_boot_token_present(&sid, "boot-1"));
  felix_err err = {0};
  assert_int_equal(felix_boot_token_create(&sid, "boot-1", &err), FELIX_OK);
  assert_true(felix_boot_token_present(&sid, "boot-1"));
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  assert_int_equal(sb.st_size, 0); /* an empty file */
  /* Another boot or another storage id has no token. */
  assert_false(felix_boot_token_present(&sid, "boot-2"));
  felix_storage_id other;
  snprintf(other.hex, sizeof other.hex, HEX_B);
  assert_false(felix_boot_token_present(&other, "boot-1"));
  /* Creating again is fine. */
  assert_int_equal(felix_boot_token_create(&sid, "boot-1", &err), FELIX_OK);
  felix_boot_token_remove(&sid, "boot-1");
  assert_false(felix_boot_token_present(&sid, "boot-1"));
  assert_int_not_equal(access(path, F_OK), 0);
  /* Removing an absent token is harmless. */
  felix_boot_token_remove(&sid, "boot-1");
  unsetenv("FELIX_RUNTIME_DIR");
  assert_string_equal(felix_runtime_dir(), "/run/felix");
  tdir_free(&d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(storage_id_load_or_create_creates_then_loads_the_same),
      cmocka_unit_test(storage_id_load_of_missing_file_is_notfound),
      cmocka_unit_test(storage_id_replace_writes_a_new_id),
      cmocka_unit_test(storage_id_load_or_create_refuses_a_malformed_file_and_keeps_it),
      cmocka_unit_test(storage_id_parse_accepts_32_lowercase_hex_and_newline),
      cmocka_unit_test(storage_id_parse_errors_name_the_byte),
      cmocka_unit_test(run_state_round_trips_with_boot_id),
      cmocka_unit_test(run_state_round_trips_without_boot_id),
      cmocka_unit_test(run_state_keys_may_come_in_any_order),
      cmocka_unit_test(run_state_rejects_unknown_key),
      cmocka_unit_test(run_state_rejects_repeated_key),
      cmocka_unit_test(run_state_rejects_missing_required_key),
      cmocka_unit_test(run_state_rejects_bad_state),
      cmocka_unit_test(run_state_restored_names_no_run),
      cmocka_unit_test(run_state_rejects_bad_mode),
      cmocka_unit_test(run_state_rejects_missing_trailing_newline),
      cmocka_unit_test(run_state_rejects_non_numeric_pid),
      cmocka_unit_test(run_state_rejects_line_without_equals),
      cmocka_unit_test(run_state_read_of_missing_file_is_absent),
      cmocka_unit_test(run_state_write_then_read_round_trips),
      cmocka_unit_test(run_state_read_of_malformed_file_fails_naming_it),
      cmocka_unit_test(ballot_round_trips_with_leader),
      cmocka_unit_test(ballot_round_trips_with_leader_none),
      cmocka_unit_test(ballot_write_then_read_round_trips),
      cmocka_unit_test(ballot_round_trips_its_shard_index),
      cmocka_unit_test(ballot_rejects_partial_none),
      cmocka_unit_test(ballot_rejects_bad_copy_id),
      cmocka_unit_test(ballot_rejects_missing_key_and_bad_generation),
      cmocka_unit_test(stream_file_golden_round_trips),
      cmocka_unit_test(stream_file_errors_name_the_byte),
      cmocka_unit_test(generations_round_trip),
      cmocka_unit_test(generations_empty_file_is_empty_history),
      cmocka_unit_test(generations_write_then_read_round_trips),
      cmocka_unit_test(generations_rejects_non_ascending_generations),
      cmocka_unit_test(generations_rejects_decreasing_offsets),
      cmocka_unit_test(generations_rejects_garbage),
      cmocka_unit_test(generations_rejects_missing_newline),
      cmocka_unit_test(generations_trim_to_removes_lines_at_or_after_log_end),
      cmocka_unit_test(shard_dir_name_formats_stream_shard_and_uuid_prefix),
      cmocka_unit_test(shard_dir_name_refuses_short_uuid_and_small_buffer),
      cmocka_unit_test(shard_dir_parse_splits_names),
      cmocka_unit_test(shard_dir_name_and_parse_round_trip),
      cmocka_unit_test(shard_dir_parse_rejects_non_shard_names),
      cmocka_unit_test(shard_dir_name_of_largest_shard_number_parses_back),
      cmocka_unit_test(shard_dir_name_of_uppercase_uuid_parses_back_or_is_refused),
      cmocka_unit_test(shard_dir_name_of_non_hex_uuid_parses_back_or_is_refused),
      cmocka_unit_test(dir_lock_second_acquire_fails_busy_naming_the_pid),
      cmocka_unit_test(dir_lock_holder_reports_our_pid_while_held_and_0_after),
      cmocka_unit_test(boot_id_is_read_from_felix_boot_id_file),
      cmocka_unit_test(boot_id_file_malformed_is_rejected_naming_it),
      cmocka_unit_test(boot_id_without_env_comes_from_the_kernel),
      cmocka_unit_test(boot_token_create_present_remove),
  };
  return cmocka_run_group_tests(tests, NULL, remove_leftover_roots);
}
