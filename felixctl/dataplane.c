/* dataplane.c — what produce and consume share: asking the control plane
 * where a shard's leader is, and turning a failed data-protocol call into an
 * error, a hint and an exit code.
 *
 * The control plane is asked, not a broker's metadata, because it is the one
 * authority on who leads a generation; the client library's session then
 * follows NOT_LEADER redirects if leadership moved since. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "felix/lease.h" /* felix_monotonic_ms */
#include "felixctl.h"

int ctl_stream_shard_count(const ctl_opts *o, const char *stream, uint32_t *n) {
  char esc[3 * 128 + 1], path[sizeof esc + 16];
  if (!ctl_url_escape(stream, esc, sizeof esc))
    return ctl_error(FELIX_EXIT_USAGE, "stream names are at most 64 characters", "stream name '%.40s...' is too long",
                     stream);
  snprintf(path, sizeof path, "/v1/streams/%s", esc);
  ctl_reply r;
  int rc = ctl_http(o, "GET", path, NULL, &r);
  if (rc) return rc;
  const cJSON *shards = cJSON_GetObjectItemCaseSensitive(r.json, "shard_count");
  bool ok = cJSON_IsNumber(shards) && shards->valuedouble >= 1 && shards->valuedouble <= UINT32_MAX;
  if (ok) *n = (uint32_t)shards->valuedouble;
  ctl_reply_free(&r);
  if (!ok) return ctl_error(FELIX_EXIT_FAILURE, NULL, "the control plane gave no shard count for stream %s", stream);
  return 0;
}

enum { LEADER_NONE_YET = -1 };

/* One look at the shard: 0 with the address, LEADER_NONE_YET (state in
 * state) while it is between leaders, or the exit code of an error printed. */
static int leader_once(const ctl_opts *o, const char *stream, uint32_t shard, char *addr, size_t cap, char state[64]) {
  char path[512], hint[256];
  int rc = ctl_shard_path(stream, shard, "", path, sizeof path);
  ctl_reply r;
  if (rc || (rc = ctl_http(o, "GET", path, NULL, &r))) return rc;
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(r.json, "leader_address");
  char buf[64];
  snprintf(state, 64, "%s", ctl_field(r.json, "state", buf));
  rc = LEADER_NONE_YET;
  if (!strcmp(state, "NoCaughtUpReplica")) {
    /* The pin stays, but no copy may serve, and waiting will not change it:
     * an operator decides. Say so instead of trying it. */
    snprintf(hint, sizeof hint, "felixctl shard describe %s/%u names each copy and why; felixctl placement abandon %s/%u "
             "decides, stating the records at risk", stream, shard, stream, shard);
    rc = ctl_error(FELIX_EXIT_FAILURE, hint, "shard %s/%u is NoCaughtUpReplica: no copy can serve it without losing "
                   "committed records", stream, shard);
  } else if (!strcmp(state, "Active") && cJSON_IsString(a) && a->valuestring[0] && strlen(a->valuestring) < cap) {
    strcpy(addr, a->valuestring);
    rc = 0;
  }
  ctl_reply_free(&r);
  return rc;
}

/* A shard between leaders (Fencing right after stream create, or a
 * failover) gets a leader within a lease or two: wait for it, up to --wait. */
int ctl_shard_leader(const ctl_opts *o, const char *stream, uint32_t shard, char *addr, size_t cap) {
  uint64_t deadline = felix_monotonic_ms() + o->wait_ms;
  char state[64] = "";
  bool said = false;
  for (;;) {
    int rc = leader_once(o, stream, shard, addr, cap, state);
    if (rc != LEADER_NONE_YET) return rc;
    if (felix_monotonic_ms() >= deadline) break;
    if (!said && isatty(STDERR_FILENO))
      fprintf(stderr, "felixctl: waiting up to %.1f s for a leader of %s/%u (state %s)\n", (double)o->wait_ms / 1000, stream,
              shard, state);
    said = true;
    struct timespec pause = {.tv_sec = 0, .tv_nsec = 200 * 1000000L};
    nanosleep(&pause, NULL);
  }
  char hint[256];
  snprintf(hint, sizeof hint, "felixctl shard describe %s/%u shows why; --wait gives it longer", stream, shard);
  return ctl_error(FELIX_EXIT_FAILURE, hint, "shard %s/%u has no leader (state %s) after waiting %.1f s", stream, shard,
                   state, (double)o->wait_ms / 1000);
}

int ctl_data_error(const felix_err *err, const char *verb, const char *stream, uint32_t shard, const char *address) {
  char hint[256];
  switch (err->status) {
  case FELIX_E_UNREACHABLE:
    snprintf(hint, sizeof hint, "felixctl broker list shows whether it is alive; felixctl shard describe %s/%u "
             "shows the current leader", stream, shard);
    return ctl_error(FELIX_EXIT_UNREACHABLE, hint, "cannot reach the broker at %s (leader of %s/%u): %s", address,
                     stream, shard, err->msg);
  case FELIX_E_UNAVAILABLE:
    snprintf(hint, sizeof hint, "the shard may be changing leader or the broker draining; see felixctl shard "
             "describe %s/%u and retry", stream, shard);
    return ctl_error(FELIX_EXIT_FAILURE, hint, "the broker at %s could not %s now: %s", address, verb, err->msg);
  case FELIX_E_NOTFOUND:
  case FELIX_E_INVAL:
    snprintf(hint, sizeof hint, "felixctl shard describe %s/%u shows the shard's leader and HWM", stream, shard);
    return ctl_error(felix_exit_code_of(err->status), hint, "the broker at %s refused to %s: %s", address, verb,
                     err->msg);
  default:
    return ctl_error(felix_exit_code_of(err->status), NULL, "the broker at %s could not %s: %s", address, verb,
                     err->msg);
  }
}
