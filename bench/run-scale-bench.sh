#!/usr/bin/env bash
# run-scale-bench.sh — the scale half of `make bench` (review 5, item 1): one
# control plane and three brokers on loopback (the plain build), one stream of
# SHARDS shards (default 1024), R=3. It prints:
#   - the time from `stream create` until every shard is Active;
#   - over HOLD_S idle seconds (default 300): lease lapses, generations issued,
#     and the CPU the control plane and each broker used (% of one core);
#   - after kill -9 of the broker leading most shards: the time until every
#     shard is Active on another broker.
# Bounded: SETTLE_S (default 900) for the settling, FAILOVER_S (default 120)
# for the failover; past either it says how far it got and exits 1.
# Everything it started is killed by pid and its directory removed on every
# exit path (trap).

# shellcheck disable=SC2317 # functions reached through trap
set -euo pipefail

BUILD=${BUILD:-build}
BROKER="$BUILD/felix-broker"
CTL="$BUILD/felixctl"
SHARDS=${SHARDS:-1024}
HOLD_S=${HOLD_S:-300}
SETTLE_S=${SETTLE_S:-900}
FAILOVER_S=${FAILOVER_S:-120}
LEASE_MS=${LEASE_MS:-5000}

for bin in "$BROKER" "$CTL"; do
  [ -x "$bin" ] || { echo "run-scale-bench: error: $bin not built (make bench builds it)" >&2; exit 1; }
done

T=$(mktemp -d "${TMPDIR:-/tmp}/felix-scale-bench.XXXXXX")
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do # disowned: waited for by pid, without a job notice
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

now() { date +%s.%N; }
since() { python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$(now)"; }
# cpu PID — user+system clock ticks the process has used.
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
ticks_per_s=$(getconf CLK_TCK)

base=$((10000 + RANDOM % 20000))
export FELIX_CONTROL_PLANE=http://127.0.0.1:$base
export FELIX_TOKEN_FILE=$T/cp.db.admin-token
export FELIX_RUNTIME_DIR=$T/runtime
"$BROKER" control-plane --listen "127.0.0.1:$base" --db "$T/cp.db" --lease-ms "$LEASE_MS" 2>"$T/cp.log" &
PIDS+=($!)
disown $!
for _ in $(seq 1 100); do [ -s "$T/cp.db.broker-token" ] && break; sleep 0.1; done
for n in 1 2 3; do
  echo "boot-scale-$RANDOM" >"$T/boot.$n"
  FELIX_BOOT_ID_FILE=$T/boot.$n "$BROKER" run --id "b$n" --data-dir "$T/b$n" --listen "127.0.0.1:$((base + 10 + n))" \
    --http "127.0.0.1:$((base + 20 + n))" --control-plane "$FELIX_CONTROL_PLANE" \
    --token-file "$T/cp.db.broker-token" 2>"$T/b$n.log" &
  PIDS+=($!)
  disown $!
done

# summary [BROKER] — "ACTIVE GENSUM ACTIVE_OFF_BROKER TOTAL", or "- - - -" when the list does not answer in 10 s.
summary() {
  timeout 10 "$CTL" -o json shard list 2>/dev/null | python3 -c '
import json, sys
j = json.load(sys.stdin); off = sys.argv[1]
print(sum(s["state"] == "Active" for s in j), sum(s["generation"] for s in j),
      sum(s["state"] == "Active" and s["leader"] != off for s in j), len(j))' "${1:-none}" 2>/dev/null || echo "- - - -"
}
count() { grep -c "$1" "$T/cp.log" || true; }

# until_all LIMIT_S FIELD [BROKER] — waits (polls every 0.5 s, at most LIMIT_S
# seconds from now) until field FIELD of summary equals SHARDS; prints the
# seconds it took, or fails.
until_all() {
  local t
  t=$(now)
  while [ "$(since "$t" | cut -d. -f1)" -lt "$1" ]; do
    [ "$(summary "${3:-none}" | cut -d' ' -f"$2")" = "$SHARDS" ] && { since "$t"; return 0; }
    sleep 0.5
  done
  return 1
}

for _ in $(seq 1 100); do
  [ "$("$CTL" -o json broker list 2>/dev/null | python3 -c 'import json,sys; print(sum(b["alive"] for b in json.load(sys.stdin)))' 2>/dev/null)" = 3 ] && break
  sleep 0.2
done
echo "== scale: one stream of $SHARDS shards, R=3, three brokers and a control plane on loopback (lease $LEASE_MS ms) =="
"$CTL" stream create scale --shards "$SHARDS" --replicas 3 >/dev/null
settled=$(until_all "$SETTLE_S" 1) || true
if [ -z "$settled" ]; then
  read -r active _ _ _ <<<"$(summary)"
  echo "not settled within $SETTLE_S s: $active of $SHARDS Active, $(count 'did not complete') fence timeouts, $(count 'lease lapsed') lease lapses"
  exit 1
fi
echo "every shard Active after      $settled s ($(count 'did not complete') fence timeouts, $(count 'lease lapsed') lease lapses on the way)"

read -r _ gens _ _ <<<"$(summary)"
lapsed=$(count 'lease lapsed')
c0=$(cpu "${PIDS[0]}")
b0=()
for n in 1 2 3; do b0+=("$(cpu "${PIDS[$n]}")"); done
t1=$(now)
sleep "$HOLD_S"
held=$(since "$t1")
c1=$(cpu "${PIDS[0]}")
read -r active now _ _ <<<"$(summary)"
pct() { python3 -c "import sys; print('%.1f' % ((float(sys.argv[2]) - float(sys.argv[1])) * 100 / float(sys.argv[3]) / float(sys.argv[4])))" "$@"; }
echo "idle for                      $held s: $((now - gens)) generations issued, $(($(count 'lease lapsed') - lapsed)) lease lapses, $active of $SHARDS Active at the end"
line="idle CPU (% of one core)      control plane $(pct "$c0" "$c1" "$ticks_per_s" "$held")"
for n in 1 2 3; do line="$line, b$n $(pct "${b0[$((n - 1))]}" "$(cpu "${PIDS[$n]}")" "$ticks_per_s" "$held")"; done
echo "$line"

victim=$("$CTL" -o json shard list | python3 -c '
import collections, json, sys
print(collections.Counter(s["leader"] for s in json.load(sys.stdin)).most_common(1)[0][0])')
led=$("$CTL" -o json shard list | python3 -c 'import json,sys; print(sum(s["leader"] == sys.argv[1] for s in json.load(sys.stdin)))' "$victim")
kill -KILL "${PIDS[${victim#b}]}"
moved=$(until_all "$FAILOVER_S" 3 "$victim") || true
if [ -z "$moved" ]; then
  read -r _ _ off _ <<<"$(summary "$victim")"
  echo "failover: after kill -9 of $victim (leader of $led), $off of $SHARDS Active elsewhere within $FAILOVER_S s"
  exit 1
fi
echo "failover                      kill -9 of $victim (leader of $led shards): every shard Active elsewhere after $moved s (three leases: $((3 * LEASE_MS / 1000)) s)"
