/* cmd_placement.c — `felixctl placement history STREAM/SHARD`
 * (GET /v1/shards/{stream}/{shard}/history) and `felixctl placement abandon`
 * (POST /v1/shards/{stream}/{shard}/abandon, DESIGN.md §4.9): the operator's
 * escape for a stuck shard. Abandon acts only on --yes with the generation and
 * copy a dry run showed, so a stale command cannot act on a shard that moved. */
#include <inttypes.h>
#include "felix/jsonnum.h"
#include <stdio.h>
#include <stdlib.h>

#include "felixctl.h"

static int placement_history(const ctl_opts *o) {
  char stream[128], path[512];
  uint32_t shard;
  int rc = ctl_shard_arg(o->args[0], stream, sizeof stream, &shard);
  if (rc || (rc = ctl_shard_path(stream, shard, "/history", path, sizeof path))) return rc;
  ctl_reply r;
  if ((rc = ctl_http(o, "GET", path, NULL, &r))) return rc;
  if (CTL_DOCUMENT(o)) ctl_print_reply(o, &r);
  else ctl_print_events(r.json);
  ctl_reply_free(&r);
  return FELIX_EXIT_OK;
}

const ctl_command ctl_cmd_placement_history = {
    .group = "placement",
    .verb = "history",
    .nargs = 1,
    .usage = "placement history STREAM/SHARD",
    .summary = "a shard's placement events, oldest first",
    .help = "\n"
            "Every event the control plane recorded for the shard: created,\n"
            "copy_created, generation, active, no_caught_up_replica, registered,\n"
            "new_storage_id, lease_lapsed, deleted. A NoCaughtUpReplica event names\n"
            "each copy and why it was not eligible. Exits 3 when there is no such\n"
            "shard.\n"
            "\n"
            "With -o json, prints the control plane's array of {event_id, occurred_at,\n"
            "kind, stream, shard, generation, broker, message}.\n",
    .run = placement_history,
};

static void print_abandon(const cJSON *j, bool dry_run) {
  char b1[64], b2[64], b3[64], b4[64], b5[64];
  const cJSON *ch = cJSON_GetObjectItemCaseSensitive(j, "chosen");
  const char *stream = ctl_field(j, "stream", b1), *shard = ctl_field(j, "shard", b2), *gen = ctl_field(j, "generation", b3);
  const char *dig = ctl_field(j, "digest", b4), *expect = ctl_field(ch, "expect_copy", b5);
  char c1[64], c2[64];
  printf("%s %s/%s on %s (copy %s)%s%s\n", dry_run ? "would re-place" : "re-placed", stream, shard,
         ctl_field(ch, "broker", c1), ctl_field(ch, "copy_id", c2), dry_run ? "" : " at generation ", dry_run ? "" : gen);
  printf("committed records at risk: %s of %s (an estimate from the control plane's maximum HWM)\n",
         ctl_field(j, "records_at_risk", c1), ctl_field(j, "max_hwm", c2));
  printf("copies (digest of the live ones %s):\n", dig);
  const cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(j, "copies")) {
    char b[64], id[64], lg[64], le[64], k[64];
    printf("  %-10s copy %-32s %-4s rank (%s, %s) keeps %s\n", ctl_field(c, "broker", b), ctl_field(c, "copy_id", id),
           cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "live")) ? "live" : "down", ctl_field(c, "last_generation", lg),
           ctl_field(c, "log_end", le), ctl_field(c, "keeps", k));
  }
  const cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "waiting_for");
  bool waiting = cJSON_GetArraySize(w) > 0;
  if (waiting) {
    printf("the control plane still waits for inventories from:");
    const cJSON *x;
    cJSON_ArrayForEach(x, w) printf(" %s", cJSON_IsString(x) ? x->valuestring : "?");
    printf("\n  their copies may hold a generation it does not know: acting needs --above-generation N,\n"
           "  N at least the highest generation any of them may hold (felix-inspect ballot on their directories)\n");
  }
  if (dry_run)
    printf("to act: felixctl placement abandon %s/%s --yes --expect-generation %s --expect-copy %s --expect-digest %s%s\n",
           stream, shard, gen, expect, dig, waiting ? " --above-generation N" : "");
}

static int placement_abandon(const ctl_opts *o) {
  char stream[128], path[512];
  uint32_t shard;
  int rc = ctl_shard_arg(o->args[0], stream, sizeof stream, &shard);
  if (rc || (rc = ctl_shard_path(stream, shard, "/abandon", path, sizeof path))) return rc;
  bool expects = (o->given & CTL_F_EXPECT_GENERATION) && (o->given & CTL_F_EXPECT_COPY) && (o->given & CTL_F_EXPECT_DIGEST);
  if (!o->dry_run && !(o->yes && expects))
    return ctl_error(FELIX_EXIT_REFUSED, "run it with --dry-run first, then with the --yes command it prints",
                     "refusing to abandon %s/%u without --yes, --expect-generation, --expect-copy and --expect-digest",
                     stream, shard);
  cJSON *body = cJSON_CreateObject();
  cJSON_AddBoolToObject(body, "dry_run", o->dry_run);
  if (!o->dry_run) {
    felix_json_add_u64(body, "expect_generation", o->expect_generation);
    cJSON_AddStringToObject(body, "expect_copy", o->expect_copy);
    cJSON_AddStringToObject(body, "expect_digest", o->expect_digest);
    if (o->given & CTL_F_ABOVE_GENERATION) felix_json_add_u64(body, "above_generation", o->above_generation);
  }
  char *text = cJSON_PrintUnformatted(body);
  cJSON_Delete(body);
  ctl_reply r;
  rc = ctl_http(o, "POST", path, text, &r);
  free(text);
  if (rc) return rc;
  if (CTL_DOCUMENT(o)) ctl_print_reply(o, &r);
  else print_abandon(r.json, o->dry_run);
  ctl_reply_free(&r);
  return FELIX_EXIT_OK;
}

const ctl_command ctl_cmd_placement_abandon = {
    .group = "placement",
    .verb = "abandon",
    .nargs = 1,
    .flags = CTL_F_DRY_RUN | CTL_F_YES | CTL_F_EXPECT_GENERATION | CTL_F_EXPECT_COPY | CTL_F_EXPECT_DIGEST |
             CTL_F_ABOVE_GENERATION,
    .usage = "placement abandon STREAM/SHARD [--dry-run] [--yes --expect-generation N --expect-copy BROKER:COPY "
             "--expect-digest D [--above-generation G]]",
    .summary = "re-place a stuck shard on the live copy with the fewest records at risk",
    .help = "\n"
            "The operator's escape for a shard stuck at NoCaughtUpReplica (or one\n"
            "whose every trusted copy is gone): the control plane picks the live copy\n"
            "with the fewest committed records at risk, whatever its ids, and issues a\n"
            "new generation pinned on it. Committed records that copy lacks are lost:\n"
            "the history says how many, and the shard's maximum HWM is lowered.\n"
            "\n"
            "  --dry-run               show the copy it would keep, the records at risk,\n"
            "                          every live copy with its rank, and a digest of them\n"
            "  --yes                   act (with the three flags below)\n"
            "  --expect-generation N   the generation the dry run showed\n"
            "  --expect-copy B:COPY    the copy the dry run chose, as it printed it\n"
            "  --expect-digest D       the digest the dry run printed: the live copies,\n"
            "                          their ranks, the max HWM and the leader it saw\n"
            "  --above-generation G    while the control plane still waits for some\n"
            "                          replicas' inventories after a start (the dry run\n"
            "                          names them): your word that none of their copies\n"
            "                          holds a generation above G; the new one is above G\n"
            "\n"
            "It is refused (exit 4) without --yes, when the shard's generation, the\n"
            "chosen copy or the digest are no longer what the dry run showed, when\n"
            "the shard is Active (unless the control plane is unsure of it), during\n"
            "the first lease after the control plane started, while it still waits\n"
            "for some replicas' inventories without --above-generation, and when no\n"
            "copy is live. The new leader's fence still needs a\n"
            "majority of promises and adopts the chosen copy only (it waits, Fencing,\n"
            "if a copy that promised outranks it: run the dry run again). A broker\n"
            "that was destroyed is replaced by starting a new one under the same\n"
            "broker id on an empty directory: it joins as a stranger and can promise.\n"
            "Recorded in placement history (kind abandoned).\n"
            "\n"
            "With -o json, prints the control plane's answer: {stream, shard, dry_run,\n"
            "generation, max_hwm, records_at_risk, digest, chosen {broker, copy_id,\n"
            "expect_copy}, copies [{broker, copy_id, live, last_generation, log_end,\n"
            "keeps}], waiting_for [broker, ...]}.\n",
    .run = placement_abandon,
};
