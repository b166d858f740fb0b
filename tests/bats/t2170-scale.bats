#!/usr/bin/env bats
# t2170 — review round 5, item 1 at scale: one stream of 256 shards, R=3, on
# three healthy brokers reaches Active, stays there through idle leases (no
# lease lapses, no new generation, every broker alive at every poll), and the
# shards a killed broker led are Active elsewhere within three leases. The
# brokers and the control plane are the plain build (asserts on, no
# sanitizers): this suite is about what one machine carries, and the
# sanitizers' cost would be measured instead. The 1,024-shard figures are
# `make bench`'s (bench/run-scale-bench.sh).

load cluster

BROKER="$FELIX_BUILD/felix-broker"
SHARDS=256

setup() { cluster_init "$BATS_TEST_TMPDIR/c"; }

teardown() {
  cluster_teardown
  if [ -z "${BATS_TEST_COMPLETED:-}" ]; then tail -n 20 "$C"/*.log >&3 2>/dev/null || true; fi
}

# shard_summary — "ACTIVE GENSUM ACTIVE_NOT_ON_BROKER" over every shard of s.
shard_summary() {
  "$CTL" -o json shard list | jget "'%d %d %d' % (sum(1 for s in j if s['state'] == 'Active'), sum(s['generation'] for s in j), sum(1 for s in j if s['state'] == 'Active' and s['leader'] != '${1:-none}'))"
}
all_active() { [ "$(shard_summary | cut -d' ' -f1)" -eq "$SHARDS" ]; }
all_active_off() { [ "$(shard_summary "$1" | cut -d' ' -f3)" -eq "$SHARDS" ]; }
lapses() { grep -c 'lease lapsed' "$C/cp.log" || true; }

@test "1: 256 shards settle on three idle brokers, stay put through idle leases, and a killed broker's shards move within three leases" {
  cluster_up 3
  run -0 "$CTL" stream create s --shards "$SHARDS" --replicas 3
  wait_until 180 all_active
  read -r _ gens _ <<<"$(shard_summary)"
  [ "$(lapses)" -eq 0 ] || fail "lease lapses while settling: $(grep -m3 'lease lapsed' "$C/cp.log")"
  # Idle: three leases (15 polls of one second; no records). Every poll: all
  # brokers alive, no shard moved, no lapse.
  for i in $(seq 1 15); do
    brokers_alive 3 || fail "poll $i: $(alive_count) of 3 brokers alive"
    read -r active now _ <<<"$(shard_summary)"
    [ "$active" -eq "$SHARDS" ] && [ "$now" -eq "$gens" ] ||
      fail "poll $i: $active of $SHARDS Active, generation sum $now (was $gens): $(grep -m3 'event=generation' <(tail -n 50 "$C/cp.log"))"
    [ "$(lapses)" -eq 0 ] || fail "poll $i: a lease lapsed: $(grep -m1 'lease lapsed' "$C/cp.log")"
    sleep 1
  done
  led=$("$CTL" -o json shard list | jget "sum(1 for s in j if s['leader'] == 'b1')")
  [ "$led" -gt 0 ] || fail "b1 leads no shard"
  stop_process b1 KILL
  wait_until 15 all_active_off b1 # three leases of 5 s
}
