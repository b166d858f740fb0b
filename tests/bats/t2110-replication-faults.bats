#!/usr/bin/env bats
# Replication under faults (issue 4's scenarios): three brokers, R=3, quorum,
# the default periodic fsync mode unless a test says otherwise; a power cut is
# SIGKILL plus tests/faults/powercut. A broker whose unsynced tail must be
# lost runs periodic with a long interval (--fsync-interval-ms 600000).
# Every test ends with the checker: each acknowledged record readable, no
# committed record gone or moved — or the shard explicitly stuck.

load replication

LONG=(--fsync-interval-ms 600000)

setup() { cluster_init "$BATS_TEST_TMPDIR/c"; }

teardown() {
  cluster_teardown
  if [ -z "${BATS_TEST_COMPLETED:-}" ]; then tail -n 30 "$C"/*.log >&3 2>/dev/null || true; fi
}

@test "5: two of three brokers SIGKILLed on the same boot keep their ids and the shard works again, nothing lost" {
  rcluster_up
  produce_acked 1 300
  L=$(leader_of)
  set -- $(others_than "$L")
  F=$1
  sid_l=$("$CTL" -o json broker list | jget "[b['storage_id'] for b in j if b['id'] == '$L'][0]")
  stop_process "$L" KILL
  stop_process "$F" KILL
  rbroker_start "${L#b}"
  rbroker_start "${F#b}"
  wait_until 60 brokers_alive 3
  wait_until 60 generation_above r/0 1
  wait_until 60 shard_is r/0 Active
  [ "$("$CTL" -o json broker list | jget "[b['storage_id'] for b in j if b['id'] == '$L'][0]")" = "$sid_l" ]
  grep -q 'msg="storage id kept"' "$C/$L.log"
  acked_readable
  produce_acked 301 400
  acked_readable
}

# An idle shard: one record acknowledged by the leader and follower V while
# W lags (stopped); V loses power; the leader dies.
idle_shard_record_on_leader_and_victim() {
  rcluster_up "${LONG[@]}"
  L=$(leader_of)
  set -- $(others_than "$L")
  V=$1 W=$2
  stop_process "$W" KILL # lags: it never receives the record (a stopped process would, from its socket buffer)
  produce_acked 1 1
  wait_until 30 hwm_at_least 2 # the start record and the record: reported, measured
  wait_until 30 caught_up "$V"
  power_cut "${V#b}"
  stop_process "$L" KILL
  rbroker_start "${V#b}" "${LONG[@]}"
  rbroker_start "${W#b}" "${LONG[@]}" # same boot: ids kept, one record short
}

@test "1: a follower that lost its tail in a power cut is never promoted: NoCaughtUpReplica, healed by the old leader" {
  idle_shard_record_on_leader_and_victim
  g=$(shard_generation r/0)
  wait_until 60 shard_is r/0 NoCaughtUpReplica
  wait_until 30 is_stranger "$V"
  wait_until 30 brokers_alive 2
  wait_until 30 grep -q "copy .* of r/0 on $V joins as a stranger" "$C/cp.log"
  grep -q 'msg="storage id rotated"' "$C/$V.log"
  run -0 "$CTL" -o json shard describe r/0
  detail=$(echo "$output" | jget 'j["detail"]')
  [[ $detail == *"$V: a stranger"* ]] || fail "$detail"
  [[ $detail == *"$L: lease lapsed"* ]] || fail "$detail"
  [[ $detail == *"$W: "* ]] || fail "$detail"
  [ "$(shard_generation r/0)" -eq "$g" ] # nothing durable changed
  rbroker_start "${L#b}" "${LONG[@]}"  # same boot: ids kept, its copy holds the record
  wait_until 60 generation_above r/0 "$g"
  wait_until 60 shard_is r/0 Active
  acked_readable
  produce_acked 2 20
  acked_readable
}

@test "4: the fence never counts a follower whose copy id changed; the leader-elect waits instead of serving short" {
  rcluster_up "${LONG[@]}"
  L=$(leader_of)
  set -- $(others_than "$L")
  V=$1 E=$2
  produce_acked 1 50
  wait_until 30 caught_up "$V"
  wait_until 30 caught_up "$E"
  power_cut "${V#b}"
  stop_process "$L" KILL
  rbroker_start "${V#b}" "${LONG[@]}"
  wait_until 30 is_stranger "$V"
  # Only E is eligible; its fence needs two counted copies and V's does not count.
  wait_until 60 shard_is r/0 Fencing
  [ "$(leader_of)" = "$E" ]
  wait_until 30 grep -q "msg=fencing shard=r_0-[0-9a-f]* generation=$(shard_generation r/0)" "$C/$E.log"
  # It asked both others: b$V answered under a copy id the assignment does not name.
  run "$CTL" consume r --shard 0 --count 1
  [ "$status" -ne 0 ]
  ! grep -q "msg=leading shard=r_0-[0-9a-f]* generation=$(shard_generation r/0)" "$C/$E.log"
  shard_is r/0 Fencing
  rbroker_start "${L#b}" "${LONG[@]}"  # same boot: its named copy answers and counts
  wait_until 60 shard_is r/0 Active
  acked_readable
}
