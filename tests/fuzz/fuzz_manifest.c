/* fuzz_manifest.c — libFuzzer target for a restore point's manifest.json
 * parser (lib/restore-point/manifest.c). A manifest names files that restore copies
 * into a data directory, so beyond not crashing or leaking:
 *   - every accepted dir is a shard directory name and every file name a
 *     segment, ballot, generations or stream: no '/', never a dot-name;
 *   - an accepted manifest encodes back to one that parses to the same digest.
 * Built with -DFELIX_FUZZ_SEEDS it writes seed manifests (with valid digests)
 * into the directory given as argv[1]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "felix/restorepoint.h"
#include "fuzz_check.h"

static void check_names(const felix_rp_manifest *m) {
  for (size_t i = 0; i < m->nshards; i++) {
    const felix_rp_shard *s = &m->shards[i];
    CHECK(s->dir[0] != '.' && !strchr(s->dir, '/'));
    for (size_t f = 0; f < s->nfiles; f++) CHECK(s->files[f].name[0] != '.' && !strchr(s->files[f].name, '/'));
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  felix_rp_manifest m, back;
  felix_err err;
  if (felix_rp_manifest_parse((const char *)data, size, "fuzz", &m, &err) != FELIX_OK) return 0;
  check_names(&m);
  char *text = felix_rp_manifest_encode(&m);
  CHECK(text != NULL);
  CHECK(felix_rp_manifest_parse(text, strlen(text), "again", &back, &err) == FELIX_OK);
  CHECK(felix_rp_manifest_digest(&back) == felix_rp_manifest_digest(&m));
  free(text);
  felix_rp_manifest_free(&back);
  felix_rp_manifest_free(&m);
  return 0;
}

#ifdef FELIX_FUZZ_SEEDS
static void seed(const char *dir, const char *name, const felix_rp_manifest *m) {
  char path[4200], *text = felix_rp_manifest_encode(m);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f || !text) exit(1);
  fputs(text, f);
  fclose(f);
  free(text);
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  felix_rp_file files[3] = {{.name = "00000000000000000000.log", .size = 4094, .crc32 = 123, .linked = true},
                            {.name = "00000000000000000123.log", .size = 746, .crc32 = 9},
                            {.name = "ballot", .size = 203, .crc32 = 77}};
  felix_generation g[2] = {{1, 0}, {3, 100}};
  felix_rp_shard sh = {.dir = "orders_0-b54cda2600004000", .stream = "orders", .shard = 0,
                       .stream_uuid = "b54cda26-0000-4000-8000-000000000001", .end_offset = 140,
                       .ballot_generation = 3, .gens = {g, 2}, .files = files, .nfiles = 3};
  felix_rp_manifest m = {.version = 1, .created_at = "2026-12-01T00:00:00Z", .created_at_micros = 1796147040731984,
                         .source_data_dir = "/var/lib/felix", .broker_id = "b1",
                         .storage_id = "fc6485175ebb91dcf407848e9cbef62f", .broker_was_running = true,
                         .shards = &sh, .nshards = 1};
  seed(argv[1], "one-shard", &m);
  m.nshards = 0;
  seed(argv[1], "empty", &m);
  return 0;
}
#endif
