#!/usr/bin/env bash
# run-broker-bench.sh — the broker half of `make bench`: produce benchmarks
# through real brokers on loopback: one copy (issue 3), then three copies
# with quorum acknowledgements (issue 4, "Benchmark").
#
# For each replication factor (1, 3) and fsync mode (periodic, on_commit) it
# starts a fresh control plane and R brokers (--fsync-mode MODE) on free
# 127.0.0.1 ports, data under one mktemp directory, creates a stream with 1
# shard and R replicas, waits until the shard is Active (and, with R=3, until
# every follower is caught up), and runs build/bench/broker_bench against its
# leader.
# Everything it started is killed, and its directory removed, on every exit
# path (trap). Every wait is bounded. Exit status: broker_bench's, or 1 when
# the cluster could not be brought up.

# shellcheck disable=SC2317 # functions reached through trap and wait_for
set -euo pipefail

BUILD=${BUILD:-build}
BROKER="$BUILD/felix-broker"
CTL="$BUILD/felixctl"
BENCH="$BUILD/bench/broker_bench"
MODES=(periodic on_commit)
STREAM=bench

for bin in "$BROKER" "$CTL" "$BENCH"; do
  [ -x "$bin" ] || { echo "run-broker-bench: error: $bin not built (make bench builds it)" >&2; exit 1; }
done

T=$(mktemp -d "${TMPDIR:-/tmp}/felix-broker-bench.XXXXXX")
PIDS=()

# Kills what this script started, by pid: TERM, a bounded wait, then KILL.
stop_all() {
  local pid _
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  PIDS=()
}
cleanup() {
  stop_all
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() { # MESSAGE — prints the logs of the current mode, then exits 1
  echo "run-broker-bench: error: $1" >&2
  local f
  for f in "$D"/*.log; do
    [ -f "$f" ] || continue
    echo "--- last lines of $f" >&2
    tail -n 20 "$f" >&2
  done
  exit 1
}

# wait_for SECONDS COMMAND... — polls COMMAND every 0.2 s, at most SECONDS.
wait_for() {
  local deadline=$((SECONDS + $1)) _
  shift
  for _ in $(seq 1 500); do
    "$@" >/dev/null 2>&1 && return 0
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.2
  done
  return 1
}

# pick_ports — a random base in 10000..32699, below the kernel's ephemeral
# range (an outgoing connection may take any port there), with base..base+6 free.
pick_ports() {
  local _ base listening
  for _ in $(seq 1 50); do
    base=$((10000 + RANDOM % 22700))
    listening=$(ss -tanH 2>/dev/null | awk '{print $4}')
    if ! grep -Eq ":($base|$((base + 1))|$((base + 2))|$((base + 3))|$((base + 4))|$((base + 5))|$((base + 6)))\$" <<<"$listening"; then
      PORT_BASE=$base
      return 0
    fi
  done
  echo "run-broker-bench: error: no free port range found" >&2
  exit 1
}

# json EXPR — evaluates a Python expression over the JSON document on stdin (j).
json() {
  python3 -c '
import json, sys
j = json.load(sys.stdin)
v = eval(sys.argv[1], {"j": j})
print(v if isinstance(v, str) else json.dumps(v))' "$1"
}

alive_brokers() { "$CTL" -o json broker list | json 'len([b for b in j if b["alive"]])'; }
all_alive() { [ "$(alive_brokers)" = "$R" ]; }
shard_active() { [ "$("$CTL" -o json shard describe "$STREAM/0" | json 'j["state"]')" = Active ]; }
followers_caught_up() {
  [ "$("$CTL" -o json shard describe "$STREAM/0" | json 'all(x["caught_up"] for x in j["replicas"])')" = true ]
}

status=0
for R in 1 3; do
echo
if [ "$R" = 1 ]; then
  echo "== broker: single-copy produce through the real broker on loopback (1 shard, 1 replica, acks default) =="
else
  echo "== broker: R=3 quorum produce through three real brokers on loopback (1 shard, 3 replicas, acks quorum) =="
fi
for mode in "${MODES[@]}"; do
  D="$T/$mode"
  mkdir -p "$D/runtime"
  pick_ports
  CP_ADDR=127.0.0.1:$PORT_BASE
  export FELIX_CONTROL_PLANE=http://$CP_ADDR
  export FELIX_TOKEN_FILE=$D/cp.db.admin-token
  export FELIX_RUNTIME_DIR=$D/runtime
  export FELIX_BOOT_ID_FILE=$D/boot_id
  echo "boot-bench-$RANDOM" >"$FELIX_BOOT_ID_FILE"
  unset FELIX_DATA_DIR FELIX_DURABLE_FSYNC_MODE FELIX_DURABLE_SEGMENT_BYTES FELIX_DURABLE_FSYNC_INTERVAL_MS

  "$BROKER" control-plane --listen "$CP_ADDR" --db "$D/cp.db" 2>>"$D/cp.log" &
  PIDS+=($!)
  wait_for 10 test -s "$D/cp.db.broker-token" || fail "the control plane did not start"
  wait_for 10 "$CTL" cluster status || fail "the control plane does not answer on $CP_ADDR"

  for n in $(seq 1 "$R"); do
    "$BROKER" run --id "b$n" --data-dir "$D/b$n" --listen "127.0.0.1:$((PORT_BASE + n))" \
      --http "127.0.0.1:$((PORT_BASE + 3 + n))" --control-plane "$FELIX_CONTROL_PLANE" \
      --token-file "$D/cp.db.broker-token" --fsync-mode "$mode" 2>>"$D/b$n.log" &
    PIDS+=($!)
  done
  wait_for 20 all_alive || fail "the brokers did not register as alive"
  got_mode=$("$CTL" -o json broker list | json 'j[0]["fsync_mode"]')
  [ "$got_mode" = "$mode" ] || fail "the broker reports fsync mode '$got_mode', not '$mode'"

  "$CTL" stream create "$STREAM" --shards 1 --replicas "$R" >/dev/null || fail "stream create failed"
  wait_for 30 shard_active || fail "shard $STREAM/0 did not become Active within 30 s"
  wait_for 30 followers_caught_up || fail "the followers of $STREAM/0 did not catch up within 30 s"
  leader=$("$CTL" -o json shard describe "$STREAM/0" | json 'j["leader"]')
  addr=$("$CTL" -o json broker list | json "[b['address'] for b in j if b['id'] == '$leader'][0]")
  [ -n "$addr" ] || fail "no address for leader $leader"

  echo
  # In the background and waited for, so that a signal reaches the trap at
  # once instead of after the whole table; the trap kills it too.
  "$BENCH" "$addr" "$STREAM" 0 "$mode R=$R" &
  PIDS+=($!)
  bench_rc=0
  wait $! || bench_rc=$?
  if [ $bench_rc -ne 0 ]; then
    status=1
    echo "run-broker-bench: broker_bench failed under $mode; last lines of the broker's log:" >&2
    tail -n 20 "$D/$leader.log" >&2 || true
  fi
  stop_all
  rm -rf "$D"
done
done

echo
echo "records/s and MB/s count acknowledged records and their payload bytes (1 MB = 10^6 B); p50_us/p99_us"
echo "are per-publish (one batch) round trips on one connection; conns = concurrent connections, one"
echo "thread each (the broker answers one request at a time per connection); failed must be 0."
exit $status
