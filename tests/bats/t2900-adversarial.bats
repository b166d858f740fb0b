#!/usr/bin/env bats
# Adversarial review of the broker's acknowledgement and identity path, with
# real processes on loopback. Every test here was written against a bug found
# by breaking the broker (kills, drains, failing syncs, deleted directories)
# and FAILS until that bug is fixed; each names the rule of DESIGN.md it
# checks and the code that breaks it.
#
# A failing disk is simulated with an LD_PRELOAD shim (built here, from the
# source below) that makes fsync/fdatasync/syncfs fail with EIO while a
# trigger file exists and logs every failure it injects, so a test can prove
# the broker really saw a failed sync.

load cluster

setup_file() {
  export BATS_NO_PARALLELIZE_WITHIN_FILE=true
  SHIM="$BATS_FILE_TMPDIR/failsync.so"
  cat >"$BATS_FILE_TMPDIR/failsync.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static int tripped(const char *what) {
  const char *t = getenv("FAILSYNC_TRIGGER");
  if (!t || access(t, F_OK) != 0) return 0;
  char p[4096];
  snprintf(p, sizeof p, "%s.log", t);
  int fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) {
    char line[64];
    int n = snprintf(line, sizeof line, "%s EIO\n", what);
    (void)!write(fd, line, (size_t)n);
    close(fd);
  }
  return 1;
}
#define WRAP(name)                                                  \
  int name(int fd) {                                                \
    static int (*real)(int);                                        \
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, #name);        \
    if (tripped(#name)) { errno = EIO; return -1; }                 \
    return real(fd);                                                \
  }
WRAP(fsync)
WRAP(fdatasync)
WRAP(syncfs)
EOF
  cc -shared -fPIC -O2 -o "$SHIM" "$BATS_FILE_TMPDIR/failsync.c" -ldl
  export SHIM
}

setup() {
  cluster_init "$BATS_TEST_TMPDIR/c"
  cp_start
}

teardown() {
  cluster_teardown
  if [ -z "${BATS_TEST_COMPLETED:-}" ]; then tail -n 40 "$C"/*.log >&3 2>/dev/null || true; fi
}

one_stream() { # SHARDS
  wait_until 60 brokers_alive 1
  run -0 "$CTL" stream create s --shards "$1" --replicas 1
  local i
  for i in $(seq 0 $(($1 - 1))); do wait_until 60 shard_is "s/$i" Active; done
}

tokens() { ls "$FELIX_RUNTIME_DIR" 2>/dev/null | grep -c '\.ok$' || true; }
no_token() { [ "$(tokens)" -eq 0 ]; }
b1_alive() { kill -0 "$(pid_of b1)" 2>/dev/null; }
# held_records — the HWMs of s/0 and s/1 added; held_more_than N K: above N + K.
held_records() { echo $(($("$CTL" -o json shard describe s/0 | jget 'j["hwm"]') + $("$CTL" -o json shard describe s/1 | jget 'j["hwm"]'))); }
held_more_than() { [ "$(held_records)" -gt $(($1 + $2)) ]; }

# every_acknowledged_line_survives ROUNDS — for each producer k of each round,
# the first `count` lines it sent (what felixctl says was acknowledged) are in
# shard k % 2; fails naming the first missing line.
every_acknowledged_line_survives() {
  "$CTL" consume s --shard 0 >"$BATS_TEST_TMPDIR/s0" && "$CTL" consume s --shard 1 >"$BATS_TEST_TMPDIR/s1" ||
    fail "cannot read the stream back"
  python3 - "$BATS_TEST_TMPDIR" "$1" <<'PY'
import json, os, sys
d, rounds = sys.argv[1], int(sys.argv[2])
held = [set(open(os.path.join(d, "s%d" % s)).read().split()) for s in (0, 1)]
total = 0
for r in range(1, rounds + 1):
    for k in range(1, 7):
        out = open(os.path.join(d, "acked.%d.%d" % (r, k))).read().strip()
        n = json.loads(out.splitlines()[-1])["count"] if out else 0
        total += n
        for i in range(1, n + 1):
            if "r%dp%d-%d" % (r, k, i) not in held[k % 2]:
                sys.exit("acknowledged r%dp%d-%d (of %d) is not in s/%d" % (r, k, i, n, k % 2))
if total == 0:
    sys.exit("no producer had anything acknowledged: the drains were not tested under load")
PY
}

# §3.2: "A failed fsync or syncfs means acknowledged data may not be on disk
# even though the page cache still shows it. The broker fails closed: it first
# removes its boot token, stops acknowledging, and exits." The periodic
# flusher (lib/storage/log.c flusher_main -> log_sync_round) only records the error in
# the log's sticky sync_error; nothing in the broker looks at it until the next
# append. An idle shard's failed flush leaves the token in place, and a crash
# on the same boot then keeps the storage id (§3.3 row "crashed, same boot").
@test "a failed periodic flush removes the boot token, and a crash after it rotates the storage id" {
  export FAILSYNC_TRIGGER="$C/failsync"
  LD_PRELOAD="$SHIM" broker_start 1
  one_stream 1
  seq 1 5 | "$CTL" produce s --shard 0
  sid=$(cat "$C/b1/storage-id")
  touch "$FAILSYNC_TRIGGER"
  # Acknowledged once written (periodic) — unless the flusher's sync of 1..5
  # already failed, and then the broker rightly refuses, or (the flusher
  # failing while the publish is in flight) has already failed closed and
  # exited: in every case a flush fails with records in the page cache only.
  out=$(seq 6 10 | "$CTL" produce s --shard 0 2>&1) || [[ $out == *"an earlier sync or write failed"* ]] ||
    { [[ $out == *"cannot reach the broker"* ]] && wait_exit "$(pid_of b1)" 10; } || fail "$out"
  wait_until 10 test -s "$FAILSYNC_TRIGGER.log" # the flusher's sync failed
  # the broker must fail closed: token gone (waited for, bounded)
  no_token_rc=1
  for _ in $(seq 1 100); do
    if no_token; then no_token_rc=0 && break; fi
    sleep 0.1
  done
  if b1_alive; then stop_process b1 KILL; fi
  rm -f "$FAILSYNC_TRIGGER"
  broker_start 1
  wait_until 60 grep -q 'msg="storage id' "$C/b1.log"
  wait_until 60 bash -c "[ \$(grep -c 'msg=\"storage id' '$C/b1.log') -ge 2 ]"
  [ "$no_token_rc" -eq 0 ] || fail "a periodic flush failed with EIO, yet the boot token is still present"
  grep 'msg="storage id' "$C/b1.log" | tail -n 1 | grep -q 'msg="storage id rotated"' ||
    fail "restart after a failed flush kept storage id $sid: $(grep 'msg="storage id' "$C/b1.log" | tail -n 1)"
}

# The same rule on the drain path: broker/drain.c drain_flush/drain_done treat
# a failed flush as "drain incomplete" and exit 1 with the boot token still in
# place, so the next start on this boot keeps the storage id although the
# flush of acknowledged records failed. The flusher is kept out of the way
# (--fsync-interval-ms 3600000) so the drain's own flush is the one that fails.
@test "a drain whose flush fails removes the boot token, so the next start rotates the storage id" {
  export FAILSYNC_TRIGGER="$C/failsync"
  LD_PRELOAD="$SHIM" broker_start 1 --fsync-interval-ms 3600000
  one_stream 1
  seq 1 20 | "$CTL" produce s --shard 0
  sid=$(cat "$C/b1/storage-id")
  touch "$FAILSYNC_TRIGGER"
  stop_process b1 TERM
  rm -f "$FAILSYNC_TRIGGER"
  # the failed sync fails the broker closed where it is seen (review 5, item 4)
  grep -q 'msg="a sync or write failed"' "$C/b1.log"
  grep -q 'boot token removed, exiting' "$C/b1.log"
  grep -q '^state=running$' "$C/b1/run-state"
  run no_token
  no_token_rc=$status
  broker_start 1
  wait_until 60 bash -c "[ \$(grep -c 'msg=\"storage id' '$C/b1.log') -ge 2 ]"
  [ "$no_token_rc" -eq 0 ] || fail "the drain's flush failed with EIO, yet the boot token is still present"
  grep 'msg="storage id' "$C/b1.log" | tail -n 1 | grep -q 'msg="storage id rotated"' ||
    fail "restart after a failed drain flush kept storage id $sid"
}

# §3.2: "if that directory disappears (ENOENT, link count 0) the shard is
# refused and comes back only as a new copy". lib/storage/log.c log_sync_round turns
# the vanished directory into a sticky sync error; broker/data.c
# handle_publish/held_done then call broker_fail_closed for the whole broker:
# it removes the boot token and exits, so every other shard goes down and the
# restart rotates the storage id, making every untouched copy a stranger
# (with one replica: NoCaughtUpReplica for good).
@test "deleting one shard directory refuses that copy alone: the broker keeps serving its other shards under the same storage id" {
  broker_start 1
  one_stream 2
  seq 1 5 | "$CTL" produce s --shard 0
  seq 1 5 | "$CTL" produce s --shard 1
  sid=$(cat "$C/b1/storage-id")
  rm -rf "$C"/b1/shards/s_0-*
  run "$CTL" produce s --shard 0 <<<"lost" # an append checks its directory first
  [ "$status" -eq 1 ] || fail "produce exited $status (1 expected): $output"
  # Refused either by this append's own check or, a moment before it, by the
  # broker's 500 ms check (the append is then redirected: no leader here).
  [[ $output == *"was deleted: this copy is refused"* ]] || grep -q 'msg="shard copy refused" shard=s_0-' "$C/b1.log" ||
    fail "$output"
  wait_until 10 grep -q 'msg="shard copy refused" shard=s_0-' "$C/b1.log"
  b1_alive || fail "deleting the directory of s/0 made broker b1 exit: $(grep 'level=error' "$C/b1.log" | tail -n 1)"
  [ "$(tokens)" -ge 1 ] || fail "deleting the directory of s/0 removed the boot token: the next start rotates the storage id"
  run -0 "$CTL" produce s --shard 1 <<<"still-here"
  [ "$("$CTL" consume s --shard 1 | wc -l)" -eq 6 ]
  [ "$(cat "$C/b1/storage-id")" = "$sid" ]
}

# §5 Shutdown: a drain ends in state=stopped and exit 0. Under on_commit a
# publish whose sync is still on the thread pool when SIGTERM arrives has its
# held_done (broker/data.c) run after drain_done (broker/drain.c) closed every
# log (shard_close sets s->log = NULL): felix_log_get_stats(NULL) -> SIGSEGV,
# about one drain in two. (held_wait can also still be inside
# felix_log_wait_held while felix_log_close frees the log.)
# drain_rounds ROUNDS [broker flags] — ROUNDS drains, each with six producers
# in flight; every drain exits 0 and every acknowledged line survives.
drain_rounds() {
  local round clean=0 rounds=$1
  shift
  broker_start 1 "$@"
  one_stream 2
  for round in $(seq 1 $rounds); do
    local pid producers=() before
    pid=$(pid_of b1)
    before=$(held_records)
    for k in 1 2 3 4 5 6; do
      # Each producer's own payloads; felixctl reports how many lines were
      # acknowledged, in order, even when the drain cuts it off.
      (seq 1 200000 | sed "s/^/r${round}p${k}-/" | "$CTL" -o json produce s --shard $((k % 2)) \
        >"$BATS_TEST_TMPDIR/acked.$round.$k" 2>/dev/null) &
      producers+=($!)
    done
    wait_until 10 held_more_than "$before" 500 # publishes are in flight
    kill -TERM "$pid"
    wait_exit "$pid" 30
    for k in "${producers[@]}"; do kill "$k" 2>/dev/null || true; wait "$k" 2>/dev/null || true; done
    clean=$(grep -c 'msg=exiting code=0' "$C/b1.log" || true)
    [ "$clean" -eq "$round" ] || fail "drain $round did not exit 0 (crashed after: $(grep -E 'drained|drain incomplete' "$C/b1.log" | tail -n 1))"
    broker_start 1 "$@"
    wait_until 60 shard_is s/0 Active
    wait_until 60 shard_is s/1 Active
  done
  every_acknowledged_line_survives "$rounds"
}

@test "an on_commit drain with publishes in flight exits 0 every time" {
  drain_rounds 8 --fsync-mode on_commit # the crash it guards came about one drain in two
}

@test "a periodic drain with publishes in flight exits 0 every time, and every acknowledged record survives it" {
  drain_rounds 4
}

# (e) "a data directory that recovery refuses after an ordinary crash":
# broker/shard.c shard_delete removes a deleted stream's copy file by file
# (nftw) in place. A SIGKILL midway leaves shards/<copy>/ with segments
# missing from the middle: recovery refuses it (offset_gap), felix-inspect
# verify exits 6, and if the ballot went first the copy has no stream uuid
# and is never cleaned up. Renaming the directory out of the shard namespace
# first (like shard_create_copy's .new-), then removing it, closes this.
@test "a SIGKILL while a deleted stream's copy is being removed leaves a data directory that verifies" {
  export FELIX_DURABLE_SEGMENT_BYTES=4096
  broker_start 1
  one_stream 1
  python3 -c '
for i in range(60000): print("x" * 100)' | "$CTL" produce s --shard 0 >/dev/null
  d=$(ls -d "$C"/b1/shards/s_0-*)
  total=$(ls "$d" | wc -l)
  [ "$total" -gt 3000 ]
  run -0 "$CTL" stream delete s --yes
  local i n=$total
  for i in $(seq 1 3000); do # bounded: about 30 s
    n=$(ls "$d" 2>/dev/null | wc -l)
    [ "$n" -lt $((total - 20)) ] && break
    sleep 0.01
  done
  [ "$n" -lt $((total - 20)) ] || fail "the copy of the deleted stream was never removed"
  stop_process b1 KILL
  run "$FELIX_BUILD/felix-inspect" verify "$C/b1"
  [ "$status" -eq 0 ] || fail "after a SIGKILL during a stream deletion, verify says: ${lines[-1]}"
}

