/* fuzz_smallfiles.c — libFuzzer target for the small-file parsers
 * (DESIGN.md §3, §3.3, §3.4): storage-id, run-state, ballot, generations.
 *
 * Every input goes to all four parsers. A reader of these files "never
 * guesses", so beyond not crashing or leaking, each accepted input must be
 * one the writer could have produced:
 *   - whatever parses formats back and re-parses to the same struct
 *     (run-state, ballot, generations), and the second format is identical;
 *   - an accepted storage-id is exactly 32 lowercase hex digits and '\n';
 *   - accepted numbers are plain decimal digits (no sign, no whitespace that
 *     strtoull would quietly skip). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "felix/ballot.h"
#include "felix/datadir.h"
#include "felix/fileutil.h"
#include "fuzz_check.h"

/* Generous: the largest valid ballot or run-state is well under 1 KiB. */
#define FORMAT_CAP 4096

static bool all_digits(const char *p, size_t n) {
  if (n == 0) return false;
  for (size_t i = 0; i < n; i++)
    if (p[i] < '0' || p[i] > '9') return false;
  return true;
}

/* The value of line "key=..." in an accepted key=value file is decimal. */
static bool kv_value_is_decimal(const char *buf, size_t len, const char *key) {
  size_t klen = strlen(key), pos = 0;
  while (pos < len) {
    const char *nl = memchr(buf + pos, '\n', len - pos);
    size_t llen = nl ? (size_t)(nl - (buf + pos)) : len - pos;
    if (llen > klen && memcmp(buf + pos, key, klen) == 0 && buf[pos + klen] == '=')
      return all_digits(buf + pos + klen + 1, llen - klen - 1);
    pos += llen + 1;
  }
  return true; /* absent: an optional key, nothing to check */
}

static void fuzz_storage_id(const char *buf, size_t len) {
  felix_storage_id sid;
  felix_err err;
  if (felix_storage_id_parse(buf, len, "storage-id", &sid, &err) != FELIX_OK) {
    CHECK(err.msg[0] != '\0');
    return;
  }
  CHECK(felix_hex_valid(sid.hex, FELIX_STORAGE_ID_HEX));
  CHECK(len == FELIX_STORAGE_ID_HEX + 1 && memcmp(buf, sid.hex, FELIX_STORAGE_ID_HEX) == 0);
}

static bool run_state_equal(const felix_run_state *a, const felix_run_state *b) {
  return a->state == b->state && a->fsync_mode == b->fsync_mode && a->has_boot_id == b->has_boot_id &&
         strcmp(a->boot_id, b->boot_id) == 0 && strcmp(a->boot_id_source, b->boot_id_source) == 0 &&
         a->pid == b->pid && strcmp(a->since, b->since) == 0;
}

static void fuzz_run_state(const char *buf, size_t len) {
  felix_run_state rs, back;
  felix_err err;
  if (felix_run_state_parse(buf, len, "run-state", &rs, &err) != FELIX_OK) return;
  CHECK(kv_value_is_decimal(buf, len, "pid"));
  char text[FORMAT_CAP], again[FORMAT_CAP];
  felix_run_state_format(&rs, text, sizeof text);
  if (felix_run_state_parse(text, strlen(text), "run-state", &back, &err) != FELIX_OK) {
    fprintf(stderr, "formatted run-state does not parse: %s\n---\n%s---\n", err.msg, text);
    CHECK(!"run-state round trip");
  }
  CHECK(run_state_equal(&rs, &back));
  felix_run_state_format(&back, again, sizeof again);
  CHECK(strcmp(text, again) == 0);
}

static bool ballot_equal(const felix_ballot *a, const felix_ballot *b) {
  return strcmp(a->copy_id, b->copy_id) == 0 && strcmp(a->storage_id, b->storage_id) == 0 &&
         strcmp(a->stream_uuid, b->stream_uuid) == 0 && a->generation == b->generation &&
         a->has_leader == b->has_leader && strcmp(a->leader, b->leader) == 0 &&
         strcmp(a->leader_copy_id, b->leader_copy_id) == 0 &&
         strcmp(a->leader_incarnation, b->leader_incarnation) == 0 && a->has_shard == b->has_shard &&
         (!a->has_shard || a->shard == b->shard);
}

static void fuzz_ballot(const char *buf, size_t len) {
  felix_ballot b, back;
  felix_err err;
  if (felix_ballot_parse(buf, len, "ballot", &b, &err) != FELIX_OK) return;
  CHECK(kv_value_is_decimal(buf, len, "generation"));
  CHECK(felix_hex_valid(b.copy_id, FELIX_COPY_ID_HEX) && felix_hex_valid(b.storage_id, FELIX_COPY_ID_HEX));
  char text[FORMAT_CAP], again[FORMAT_CAP];
  felix_ballot_format(&b, text, sizeof text);
  if (felix_ballot_parse(text, strlen(text), "ballot", &back, &err) != FELIX_OK) {
    fprintf(stderr, "formatted ballot does not parse: %s\n---\n%s---\n", err.msg, text);
    CHECK(!"ballot round trip");
  }
  CHECK(ballot_equal(&b, &back));
  felix_ballot_format(&back, again, sizeof again);
  CHECK(strcmp(text, again) == 0);
}

static void fuzz_generations(const char *buf, size_t len) {
  felix_generations g, back;
  felix_err err;
  if (felix_generations_parse(buf, len, "generations", &g, &err) != FELIX_OK) {
    CHECK(g.items == NULL && g.count == 0); /* nothing to free on failure */
    return;
  }
  for (size_t i = 0; i < len; i++) CHECK((buf[i] >= '0' && buf[i] <= '9') || buf[i] == ' ' || buf[i] == '\n');
  for (size_t i = 1; i < g.count; i++) {
    CHECK(g.items[i].generation > g.items[i - 1].generation);
    CHECK(g.items[i].start_offset >= g.items[i - 1].start_offset);
  }
  char *text = felix_generations_format(&g);
  CHECK(text != NULL);
  CHECK(felix_generations_parse(text, strlen(text), "generations", &back, &err) == FELIX_OK);
  CHECK(back.count == g.count);
  for (size_t i = 0; i < g.count; i++)
    CHECK(back.items[i].generation == g.items[i].generation && back.items[i].start_offset == g.items[i].start_offset);
  char *again = felix_generations_format(&back);
  CHECK(again != NULL && strcmp(text, again) == 0);
  free(again);
  free(text);
  felix_generations_free(&back);
  felix_generations_free(&g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *buf = (const char *)data;
  fuzz_storage_id(buf, size);
  fuzz_run_state(buf, size);
  fuzz_ballot(buf, size);
  fuzz_generations(buf, size);
  return 0;
}
