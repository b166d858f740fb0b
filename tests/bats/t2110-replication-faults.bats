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
  this_start_says "$L" 'msg="storage id kept"' || fail "$L's latest start did not say storage id kept: $(grep 'msg="storage id' "$C/$L.log")"
  acked_readable
  produce_acked 301 400
  acked_readable
}

# An idle shard: one record acknowledged by the leader and follower V while
# W lags (stopped); V loses power; the leader dies. Brokers run with the
# caller's FL flags.
idle_shard_record_on_leader_and_victim() {
  rcluster_up "${FL[@]}"
  L=$(leader_of)
  set -- $(others_than "$L")
  V=$1 W=$2
  stop_process "$W" KILL # lags: it never receives the record (a stopped process would, from its socket buffer)
  produce_acked 1 1
  wait_until 30 hwm_at_least 2 # the start record and the record: reported, measured
  wait_until 30 caught_up "$V"
  power_cut "${V#b}"
  stop_process "$L" KILL
  rbroker_start "${V#b}" "${FL[@]}"
  rbroker_start "${W#b}" "${FL[@]}" # same boot: ids kept, one record short
}

# scenario_1 [broker flags] — a follower that lost its tail in a power cut is
# never promoted: NoCaughtUpReplica, healed by the old leader
scenario_1() {
  local FL=("$@")
  idle_shard_record_on_leader_and_victim
  g=$(shard_generation r/0)
  wait_until 60 shard_is r/0 NoCaughtUpReplica
  wait_until 30 is_stranger "$V"
  wait_until 30 brokers_alive 2
  wait_until 30 grep -q "copy .* of r/0 on $V joins as a stranger" "$C/cp.log"
  this_start_says "$V" 'msg="storage id rotated"' || fail "$V's latest start did not say storage id rotated: $(grep 'msg="storage id' "$C/$V.log")"
  run -0 "$CTL" -o json shard describe r/0
  detail=$(echo "$output" | jget 'j["detail"]')
  [[ $detail == *"$V: a stranger"* ]] || fail "$detail"
  [[ $detail == *"$L: lease lapsed"* ]] || fail "$detail"
  [[ $detail == *"$W: "* ]] || fail "$detail"
  [ "$(shard_generation r/0)" -eq "$g" ] # nothing durable changed
  rbroker_start "${L#b}" "${FL[@]}"  # same boot: ids kept, its copy holds the record
  wait_until 60 generation_above r/0 "$g"
  wait_until 60 shard_is r/0 Active
  acked_readable
  produce_acked 2 20
  acked_readable
}

@test "1: a follower that lost its tail in a power cut is never promoted: NoCaughtUpReplica, healed by the old leader" {
  scenario_1 "${LONG[@]}"
}

@test "1 at the default flush interval: a follower whose tail was partly synced still comes back a stranger, never promoted; healed by the old leader" {
  scenario_1
}

# scenario_4 [broker flags] — the fence never counts a follower whose copy id
# changed; the leader-elect waits instead of serving short
scenario_4() {
  local FL=("$@")
  rcluster_up "${FL[@]}"
  L=$(leader_of)
  set -- $(others_than "$L")
  V=$1 E=$2
  produce_acked 1 50
  wait_until 30 caught_up "$V"
  wait_until 30 caught_up "$E"
  power_cut "${V#b}"
  stop_process "$L" KILL
  rbroker_start "${V#b}" "${FL[@]}"
  wait_until 30 is_stranger "$V"
  # Only E is eligible; its fence needs two counted copies and V's does not count.
  wait_until 60 shard_is r/0 Fencing
  [ "$(leader_of)" = "$E" ] || [ "$(leader_of)" = "" ]
  wait_until 30 grep -q "msg=fencing shard=r_0-[0-9a-f]* generation=$(shard_generation r/0)" "$C/$E.log"
  # It asked both others: b$V answered under a copy id the assignment does not name.
  # One try (--wait 0): retrying for the default 10 s would outlast the
  # fence, which times out after a lease (NoCaughtUpReplica below).
  run "$CTL" consume r --shard 0 --count 1 --wait 0
  # Not served (exit 1, no record): felixctl sees the shard Fencing, or the
  # leader-elect it reached refuses while it fences.
  [ "$status" -eq 1 ] && [[ $output != *'"offset"'* ]] || fail "consume exited $status (1 expected): $output"
  [[ $output == *"has no leader (state Fencing)"* || $output == *"could not fetch now"* ]] || fail "$output"
  run ! grep -q "msg=leading shard=r_0-[0-9a-f]* generation=$(shard_generation r/0)" "$C/$E.log"
  shard_is r/0 Fencing || shard_is r/0 NoCaughtUpReplica # after a lease the fence times out: E is passed over
  rbroker_start "${L#b}" "${FL[@]}"  # same boot: its named copy answers and counts
  wait_until 60 shard_is r/0 Active
  acked_readable
}

@test "4: the fence never counts a follower whose copy id changed; the leader-elect waits instead of serving short" {
  scenario_4 "${LONG[@]}"
}

@test "4 at the default flush interval: a partly synced follower's new copy id is never counted in the fence" {
  scenario_4
}

# scenario_2 [broker flags] — a follower that lost its tail reconnects to the
# live leader first: copied again, caught up under its new id, then failover
# keeps the record
scenario_2() {
  local FL=("$@")
  rcluster_up "${FL[@]}"
  L=$(leader_of)
  set -- $(others_than "$L")
  V=$1 W=$2
  stop_process "$W" KILL
  produce_acked 1 1
  wait_until 30 hwm_at_least 2
  wait_until 30 caught_up "$V"
  power_cut "${V#b}"
  rbroker_start "${V#b}" "${FL[@]}"
  wait_until 30 grep -q "copy .* of r/0 on $V joins as a stranger" "$C/cp.log"
  wait_until 60 grep -q "on $V: stranger copy .* trusted" "$C/cp.log"
  wait_until 30 caught_up "$V"
  rbroker_start "${W#b}" "${FL[@]}"
  stop_process "$L" KILL
  wait_until 60 leader_is_not "$L"
  wait_until 60 shard_is r/0 Active
  acked_readable
}

@test "2: a follower that lost its tail reconnects to the live leader first: copied again, caught up under its new id, then failover keeps the record" {
  scenario_2 "${LONG[@]}"
}

@test "2 at the default flush interval: a partly synced follower is copied again under its new id, then failover keeps the record" {
  scenario_2
}

# scenario_3 LEADER_FLAGS... -- FOLLOWER_FLAGS...: the leader loses power
# and restarts at once; a caught-up copy leads at a new generation with every
# acknowledged record and no acknowledged offset is reused.
scenario_3() {
  local lf=() ff=()
  while [ "$1" != -- ]; do lf+=("$1"); shift; done
  shift
  ff=("$@")
  rcluster_up "${ff[@]}"
  L=$(leader_of)
  stop_process "$L" KILL
  rbroker_start "${L#b}" "${lf[@]}"
  wait_until 60 shard_is r/0 Active
  L=$(leader_of)
  produce_acked 1 200
  acked_readable
  local f
  for f in $(others_than "$L"); do wait_until 30 caught_up "$f"; done
  g=$(shard_generation r/0)
  power_cut "${L#b}"
  promise_on_disk "$L" "$g"
  rbroker_start "${L#b}" "${lf[@]}"
  wait_until 60 generation_above r/0 "$g"
  wait_until 60 shard_is r/0 Active
  acked_readable
  produce_acked 201 260
  acked_readable
}

@test "3: a leader loses power and restarts at once: a caught-up follower leads at a new generation, no acknowledged offset reused" {
  scenario_3 "${LONG[@]}" --
  wait_until 60 leader_is_not "$L"
  this_start_says "$L" 'msg="storage id rotated"' || fail "$L's latest start did not say storage id rotated: $(grep 'msg="storage id' "$C/$L.log")"
}

@test "3 at the default flush interval: a leader loses power with part of its log synced; a caught-up follower leads, nothing acknowledged is lost" {
  scenario_3 --
  wait_until 60 leader_is_not "$L"
  this_start_says "$L" 'msg="storage id rotated"' || fail "$L's latest start did not say storage id rotated: $(grep 'msg="storage id' "$C/$L.log")"
}

@test "3 seeded: a leader's power cut leaves what a disk could (part of its unsynced log written back, from a page boundary); nothing acknowledged is lost" {
  CUT_SEED=1 scenario_3 "${LONG[@]}" --
  grep -q "(seeded)" "$C/powercut.log" || fail "the cut was not seeded: $(cat "$C/powercut.log")"
}

@test "3 none: under fsync_mode none a leader's power cut loses its whole unsynced log; the ids rotate and nothing acknowledged is lost" {
  scenario_3 --fsync-mode none -- --fsync-mode none
  wait_until 60 leader_is_not "$L"
  this_start_says "$L" 'msg="storage id rotated"' || fail "$L's latest start did not say storage id rotated: $(grep 'msg="storage id' "$C/$L.log")"
}

@test "3 on_commit: the leader's synced copy keeps its ids across the power cut; nothing acknowledged is lost" {
  scenario_3 --fsync-mode on_commit -- --fsync-mode on_commit
  this_start_says "$L" 'msg="storage id kept"' || fail "$L's latest start did not say storage id kept: $(grep 'msg="storage id' "$C/$L.log")"
}

@test "3 mixed: an on_commit leader with periodic followers loses power; nothing acknowledged is lost" {
  scenario_3 --fsync-mode on_commit --
  this_start_says "$L" 'msg="storage id kept"' || fail "$L's latest start did not say storage id kept: $(grep 'msg="storage id' "$C/$L.log")"
}

@test "1 on_commit: the follower's synced copy survives the power cut with its ids and heals the shard with no operator" {
  rcluster_up --fsync-mode on_commit
  L=$(leader_of)
  set -- $(others_than "$L")
  V=$1 W=$2
  stop_process "$W" KILL
  produce_acked 1 1
  wait_until 30 hwm_at_least 2
  wait_until 30 caught_up "$V"
  power_cut "${V#b}"
  stop_process "$L" KILL
  rbroker_start "${V#b}" --fsync-mode on_commit
  rbroker_start "${W#b}" --fsync-mode on_commit
  wait_until 60 generation_above r/0 1
  wait_until 60 shard_is r/0 Active
  this_start_says "$V" 'msg="storage id kept"' || fail "$V's latest start did not say storage id kept: $(grep 'msg="storage id' "$C/$V.log")"
  [ "$(leader_of)" = "$V" ] # the only copy that holds the record
  acked_readable
}

# caught_up_follower N [flags for every broker] — an R=3 cluster with records
# 1..N acknowledged; L is the leader and F a follower that holds them all.
caught_up_follower() {
  local n=$1
  shift
  rcluster_up "$@"
  L=$(leader_of)
  F=$(others_than "$L" | head -n 1)
  produce_acked 1 "$n"
  wait_until 30 caught_up "$F"
}

@test "6: a follower whose data directory was wiped while stopped is a stranger, copied at once, then trusted" {
  caught_up_follower 300
  stop_process "$F" TERM
  rm -rf "${C:?}/$F"
  rbroker_start "${F#b}"
  wait_until 30 grep -q "copy .* of r/0 on $F joins as a stranger" "$C/cp.log"
  wait_until 60 grep -q "on $F: stranger copy .* trusted" "$C/cp.log"
  wait_until 30 caught_up "$F"
  copy_holds "$F" 300
  acked_readable
}

@test "6: a follower's shard directory deleted while it runs: the copy is refused, a new one made at once, copied and trusted" {
  caught_up_follower 200
  old=$(replica_field "$F" copy_id)
  rm -rf "$C/$F"/shards/r_0-*
  wait_until 30 grep -q "copy $old of r/0 on $F is gone" "$C/cp.log"
  wait_until 30 grep -q "copy .* of r/0 on $F joins as a stranger" "$C/cp.log"
  wait_until 60 grep -q "on $F: stranger copy .* trusted" "$C/cp.log"
  wait_until 30 caught_up "$F"
  [ "$(replica_field "$F" copy_id)" != "$old" ]
  produce_acked 201 250
  wait_until 30 copy_holds "$F" 250
  acked_readable
}

@test "6: a follower's shard directory deleted just before SIGTERM: the drain still stops cleanly, the ids stay, the copy comes back new" {
  caught_up_follower 200 --fsync-interval-ms 5000 # the follower's last records are still unsynced when the drain flushes
  old=$(replica_field "$F" copy_id)
  lines=$(($(wc -l <"$C/$F.log") + 1))
  # Within the broker's 500 ms check: the drain's own flush meets the deletion
  # first. Once, that failed the broker closed (run-state left at running, so
  # the next start after a reboot would rotate every copy's ids).
  rm -rf "$C/$F"/shards/r_0-* && kill -TERM "$(pid_of "$F")"
  wait_exit "$(pid_of "$F")" 30
  log_since "$lines" "$C/$F.log" "drained: run-state state=stopped" || fail "$(tail -n +"$lines" "$C/$F.log" | grep -E 'error|warn')"
  grep -q '^state=stopped' "$C/$F/run-state" || fail "$(cat "$C/$F/run-state")"
  lines=$(($(wc -l <"$C/$F.log") + 1))
  rbroker_start "${F#b}"
  wait_until 30 log_since "$lines" "$C/$F.log" "storage id kept"
  wait_until 60 caught_up "$F"
  [ "$(replica_field "$F" copy_id)" != "$old" ]
  produce_acked 201 250
  wait_until 30 copy_holds "$F" 250
  acked_readable
}

scenario_7() {
  rcluster_up "$@"
  L=$(leader_of)
  produce_acked 1 100
  g=$(shard_generation r/0)
  kill -STOP "$(pid_of "$L")"
  wait_until 60 generation_above r/0 "$g"
  wait_until 60 shard_is r/0 Active
  produce_acked 101 200
  kill -CONT "$(pid_of "$L")"
  wait_until 30 grep -q 'msg="stopped leading"' "$C/$L.log"
  produce_acked 201 300
  acked_readable
}

@test "7: a leader paused past its lease is replaced; resumed, it acknowledges nothing and every acknowledged record survives" {
  scenario_7
}

@test "7 on_commit: a paused on_commit leader is replaced; resumed, it acknowledges nothing" {
  scenario_7 --fsync-mode on_commit
}

@test "7 leader acks: a leader acknowledging under its per-shard lease is paused past it and replaced; resumed, its lease has lapsed and it acknowledges nothing" {
  rcluster_up
  L=$(leader_of)
  produce_acked 1 100 leader # acks=leader on R=3: under the lease a heartbeat reply confirmed
  g=$(shard_generation r/0)
  kill -STOP "$(pid_of "$L")"
  wait_until 60 generation_above r/0 "$g"
  wait_until 60 shard_is r/0 Active
  produce_acked 101 200 leader
  kill -CONT "$(pid_of "$L")"
  # Straight to the resumed old leader, before it can hear of the new
  # generation: its lease counted on CLOCK_BOOTTIME lapsed while it was
  # stopped, its followers promised the new generation, so nothing commits.
  run -0 python3 "$BATS_TEST_DIRNAME/../tools/wire.py" publish-acks "127.0.0.1:$(broker_port "${L#b}")" r 0 2 stale-1 stale-2
  [[ $output != status=0* ]] || fail "the deposed leader acknowledged with acks=leader: $output"
  wait_until 30 grep -q 'msg="stopped leading"' "$C/$L.log"
  produce_acked 201 300 leader
  acked_readable
  ! grep -q ' stale-' "$C/seen" # what the old process took was never acknowledged, and is not served
}

@test "leader acks: within its lease the leader acknowledges what it alone holds (both followers stopped); a quorum publish waits" {
  rcluster_up
  L=$(leader_of)
  produce_acked 1 10
  set -- $(others_than "$L")
  kill -STOP "$(pid_of "$1")" "$(pid_of "$2")"
  wait_until 10 bash -c "'$CTL' -o json produce r --shard 0 --acks leader <<<'alone' >/dev/null 2>&1" # the lease is renewed each second
  echo alone >>"$C/acked"
  run timeout 3 python3 "$BATS_TEST_DIRNAME/../tools/wire.py" publish-acks "127.0.0.1:$(broker_port "${L#b}")" r 0 1 q-1
  [ "$status" -eq 124 ] || fail "a quorum publish with both followers stopped did not wait: status $status, $output"
  kill -CONT "$(pid_of "$1")" "$(pid_of "$2")"
  acked_readable # and the followers then hold it: committed
}

@test "9: a leader SIGKILLed and restarted within its lease with the same ids leads again only at a new generation" {
  rcluster_up
  L=$(leader_of)
  produce_acked 1 100
  g=$(shard_generation r/0)
  stop_process "$L" KILL
  rbroker_start "${L#b}"
  wait_until 60 generation_above r/0 "$g"
  wait_until 60 shard_is r/0 Active
  this_start_says "$L" 'msg="storage id kept"' || fail "$L's latest start did not say storage id kept: $(grep 'msg="storage id' "$C/$L.log")"
  # The restarted process never leads generation $g: it is another process.
  [ "$(grep -c "msg=leading shard=r_0-[0-9a-f]* generation=$g " "$C/$L.log")" -eq 1 ]
  acked_readable
  produce_acked 101 150
  acked_readable
}

@test "12: control-plane restart and pause: no failover, no generation reused, quorum writes go on while it is down" {
  rcluster_up
  produce_acked 1 100
  g=$(shard_generation r/0)
  L=$(leader_of)
  stop_process cp KILL
  # No control plane: felixctl cannot look the leader up, so publish straight
  # to it; replication and quorum acknowledgements go on.
  run -0 python3 "$BATS_TEST_DIRNAME/../tools/wire.py" publish "127.0.0.1:$(broker_port "${L#b}")" r 0 $(seq 101 200)
  [[ $output == status=0* ]] || fail "$output"
  seq 101 200 >>"$C/acked"
  cp_start
  wait_until 60 brokers_alive 3
  produce_acked 201 300
  kill -STOP "$(pid_of cp)"
  sleep 6 # the fault itself: the control plane stopped for longer than a 5 s lease (its lease clock stands still)
  kill -CONT "$(pid_of cp)"
  wait_until 30 brokers_alive 3
  [ "$(shard_generation r/0)" -eq "$g" ]
  shard_is r/0 Active
  acked_readable
}

# scenario_14 [broker flags] — a follower loses power under steady production:
# it rejoins as a stranger, is copied and trusted while production goes on
scenario_14() {
  local FL=("$@")
  rcluster_up "${FL[@]}"
  L=$(leader_of)
  set -- $(others_than "$L")
  F=$1
  ( for k in $(seq 0 19); do produce_acked $((k * 50 + 1)) $((k * 50 + 50)) || true; done ) &
  producer=$!
  wait_until 30 hwm_at_least 200
  power_cut "${F#b}"
  rbroker_start "${F#b}" "${FL[@]}"
  wait_until 60 grep -q "on $F: stranger copy .* trusted" "$C/cp.log"
  wait "$producer"
  wait_until 30 caught_up "$F"
  [ "$(wc -l <"$C/acked")" -eq 1000 ] # every publish was acknowledged: no operator, no outage
  acked_readable
}

@test "14: a follower loses power under steady production: it rejoins as a stranger, is copied and trusted while production goes on" {
  scenario_14 "${LONG[@]}"
}

@test "14 at the default flush interval: a follower loses power under steady production with part of its log synced; copied and trusted while production goes on" {
  scenario_14
}

# scenario_15 [broker flags] — a follower's syncs fail (EIO): it removes its
# boot token and exits; restarted on the same boot it comes back under a new
# id, a stranger, never trusted on its old one.
scenario_15() {
  local FL=("$@")
  rcluster_up
  L=$(leader_of)
  set -- $(others_than "$L")
  F=$1
  stop_process "$F" TERM
  # While $C/fail-sync exists, every sync of this process fails with EIO.
  FELIX_FAULTS_FAIL_SYNC_IF="$C/fail-sync" rbroker_start "${F#b}" "${FL[@]}"
  wait_until 30 caught_up "$F"
  old=$(replica_field "$F" copy_id)
  produce_acked 1 50
  touch "$C/fail-sync"
  produce_acked 51 60 # the leader and the other follower still make a quorum
  wait_exit "$(pid_of "$F")" 30
  grep -q 'boot token removed' "$C/$F.log"
  grep -q '^fail ' "$C/ledger.${F}"
  rm -f "$C/fail-sync"
  rbroker_start "${F#b}" "${FL[@]}" # the same boot, but no token: nothing vouches for its page cache
  wait_until 60 this_start_says "$F" 'msg="storage id rotated"'
  wait_until 60 grep -q "copy .* of r/0 on $F joins as a stranger" "$C/cp.log"
  [ "$(replica_field "$F" copy_id)" != "$old" ]
  wait_until 60 caught_up "$F"
  produce_acked 61 80
  acked_readable
}

@test "15: a sync error on an on_commit follower, then a restart on the same boot: a new id, never trusted on its old one" {
  scenario_15 --fsync-mode on_commit
}

@test "15 periodic: a failed periodic flush on a follower, then a restart on the same boot: a new id, never trusted on its old one" {
  scenario_15
}

@test "13: a rolling restart of all three brokers under steady production: nothing lost, each shard handed off" {
  rcluster_up
  # Each batch not wholly acknowledged is noted; the acknowledged lines are in $C/acked.
  ( for k in $(seq 0 29); do produce_acked $((k * 20 + 1)) $((k * 20 + 20)) || echo "$k" >>"$C/refused"; done ) &
  producer=$!
  for n in 1 2 3; do
    wait_until 30 shard_is r/0 Active
    led=$(leader_of)
    stop_process "b$n" TERM
    grep -q 'msg="drained: run-state state=stopped"' "$C/b$n.log"
    if [ "$led" = "b$n" ]; then
      grep -q 'msg="handed off every replicated shard it led"' "$C/b$n.log"
      grep -q "leader b$n drains: handing the shard off" "$C/cp.log"
    fi
    rbroker_start "$n"
    wait_until 60 brokers_alive 3
    wait_until 60 caught_up "b$n"
  done
  wait "$producer"
  # A hand-off refuses at most the batch in flight and one sent before the new
  # leader serves: two per restart (measured: 2 of 30 refused, 560 acknowledged).
  refused=$(wc -l <"$C/refused" 2>/dev/null || echo 0)
  [ "$refused" -le 6 ] || fail "$refused of 30 batches refused across three hand-offs"
  [ "$(wc -l <"$C/acked")" -ge $(((30 - refused) * 20)) ] || fail "fewer acknowledged than the batches that succeeded"
  run ! grep -q "lease of b[123] lapsed" "$C/cp.log" # every move was a hand-off, none waited for a lease
  acked_readable # publishes refused during a move were not acknowledged, and none acknowledged was lost
  produce_acked 601 700 # and after the restarts the shard takes writes with no operator
  acked_readable
}

@test "1 abandon: the stuck shard is re-placed by the operator on the copy with the fewest records at risk, which are reported" {
  local FL=("${LONG[@]}")
  idle_shard_record_on_leader_and_victim
  wait_until 60 shard_is r/0 NoCaughtUpReplica
  wait_until 30 brokers_alive 2
  wait_until 30 grep -q "copy .* of r/0 on $V joins as a stranger" "$C/cp.log"
  g=$(shard_generation r/0)
  run -4 "$CTL" placement abandon r/0 # no --yes: refused
  [[ $output == *"refusing to abandon r/0"* ]]
  run -0 "$CTL" -o json placement abandon r/0 --dry-run
  dry=$output
  [ "$(echo "$dry" | jget 'j["records_at_risk"]')" -eq 1 ] # the record only the dead leader holds
  copy=$(echo "$dry" | jget 'j["chosen"]["expect_copy"]')
  digest=$(echo "$dry" | jget 'j["digest"]')
  [ "$(shard_generation r/0)" -eq "$g" ] # a dry run changes nothing
  run -4 "$CTL" placement abandon r/0 --yes --expect-generation $((g + 7)) --expect-copy "$copy" --expect-digest "$digest"
  [[ $output == *"refused: the shard is at generation $g"* ]]
  run -4 "$CTL" placement abandon r/0 --yes --expect-generation "$g" --expect-copy "$copy" --expect-digest 0123456789abcdef
  [[ $output == *"refused: the live copies or the leader changed"* ]]
  run -0 "$CTL" placement abandon r/0 --yes --expect-generation "$g" --expect-copy "$copy" --expect-digest "$digest"
  [[ $output == *"re-placed r/0 on"* ]] || fail "$output"
  wait_until 60 shard_is r/0 Active
  run -0 "$CTL" placement history r/0
  [[ $output == *"1 committed records are at risk"* ]]
  run -4 "$CTL" placement abandon r/0 --yes --expect-generation "$g" --expect-copy "$copy" --expect-digest "$digest" # stale
  lost=$(lost_records)
  [ "$lost" -eq 1 ] || fail "$lost acknowledged records lost; the dry run stated 1 at risk"
  : >"$C/acked" # the operator accepted losing the record; from here nothing acknowledged is lost
  : >"$C/seen"
  produce_acked 2 50
  acked_readable
}

# whole_rack_cut [cp] — every broker (and with `cp` the control plane's
# machine too) loses power; brokers run with the caller's FL flags (LONG:
# nothing synced; none: the default 250 ms flush, part of the log synced).
whole_rack_cut() {
  [ "${1:-}" != cp ] || cp_own_disk
  rcluster_up "${FL[@]}"
  produce_acked 1 40
  wait_until 30 hwm_at_least 41
  g=$(shard_generation r/0)
  for n in 1 2 3; do power_cut "$n"; done
  if [ "${1:-}" = cp ]; then
    cp_power_cut
    CP_LINES=$(wc -l <"$C/cp.log") # the first start may have logged its lease already
    cp_start
    # synchronous=FULL: every committed control-plane transaction survives the
    # cut (the stream, the placement, the generation): this is a restart
    run -0 "$CTL" -o json cluster status
    [ "$(echo "$output" | jget 'j["streams_total"]')" = 1 ] || fail "the control plane's state did not survive: $output"
    [ "$(shard_generation r/0)" -ge "$g" ] || fail "generation $g forgotten: $(shard_generation r/0)"
  fi
  for n in 1 2 3; do rbroker_start "$n" "${FL[@]}"; done
  wait_until 60 brokers_alive 3
  for n in 1 2 3; do wait_until 30 grep -q "copy .* of r/0 on b$n joins as a stranger" "$C/cp.log"; done
}

# abandon_loses_what_was_stated [waiting] — the operator abandons the stuck
# shard: the loss is exactly the dry run's records at risk, and nothing after
# it is lost. `waiting`: the control plane still waits for the copies'
# inventories, so it refuses until given --above-generation, which the
# operator reads from the copies' ballots (felix-inspect ballot).
abandon_loses_what_was_stated() {
  run "$CTL" -o json placement abandon r/0 --dry-run
  [ "$status" -eq 0 ] || fail "the dry run exited $status: $output"
  g=$(echo "$output" | jget 'j["generation"]')
  copy=$(echo "$output" | jget 'j["chosen"]["expect_copy"]')
  risk=$(echo "$output" | jget 'j["records_at_risk"]')
  digest=$(echo "$output" | jget 'j["digest"]')
  # the offsets at risk are those from the chosen copy's log end to the
  # maximum HWM; offset 0 is generation 1's start record, not a producer's
  local start_at_risk
  start_at_risk=$(echo "$output" | jget '1 if [c for c in j["copies"] if c["broker"] == j["chosen"]["broker"]][0]["log_end"] == 0 else 0')
  local above=()
  if [ "${1:-}" = waiting ]; then
    [ "$(echo "$output" | jget 'len(j["waiting_for"])')" = 3 ] || fail "the dry run does not say the shard waits for all three: $output"
    run -4 "$CTL" placement abandon r/0 --yes --expect-generation "$g" --expect-copy "$copy" --expect-digest "$digest"
    [[ $output == *"still waits for inventories from 3 of its replicas"* && $output == *"--above-generation"* ]] ||
      fail "not the waiting refusal: $output"
    local top=0 n b
    for n in 1 2 3; do
      b=$("$FELIX_BUILD/felix-inspect" --json ballot "$C"/b$n/shards/r_0-* | jget 'j["generation"]') || fail "no ballot on b$n"
      [ "$b" -le "$top" ] || top=$b
    done
    above=(--above-generation "$top")
  fi
  run -0 "$CTL" placement abandon r/0 --yes --expect-generation "$g" --expect-copy "$copy" --expect-digest "$digest" "${above[@]}"
  wait_until 60 shard_is r/0 Active
  grep -q "$risk committed records are at risk" "$C/cp.log"
  lost=$(lost_records)
  # Under the 600 s interval nothing was synced: offsets 0..40 at risk, the
  # start record and records 1..40, every one acknowledged and now lost.
  [ "$lost" -eq $((risk - start_at_risk)) ] ||
    fail "$lost acknowledged records lost, $risk at risk stated ($start_at_risk of them the start record)"
  : >"$C/acked" # what the operator gave up is counted in the history; from here nothing is lost
  : >"$C/seen"
  produce_acked 41 80
  acked_readable
}

@test "11: the whole rack loses power: NoCaughtUpReplica with an estimate, never a silently short copy; abandon recovers it" {
  local FL=("${LONG[@]}")
  whole_rack_cut
  wait_until 60 shard_is r/0 NoCaughtUpReplica
  wait_until 30 bash -c "'$CTL' -o json shard describe r/0 | grep -q 'committed records are at risk'"
  run "$CTL" consume r --shard 0 --count 1
  stuck_not_served_short # exit 1 naming NoCaughtUpReplica, no record printed
  abandon_loses_what_was_stated
}

@test "11 at the default flush interval: the rack loses power with part of each log synced: still NoCaughtUpReplica (every copy rotated), abandon loses exactly the stated risk" {
  local FL=()
  whole_rack_cut
  wait_until 60 shard_is r/0 NoCaughtUpReplica
  run "$CTL" consume r --shard 0 --count 1
  stuck_not_served_short
  abandon_loses_what_was_stated
}

@test "11 with the control plane: its SQLite files are cut too; its state survives, the shard waits for copies that never come back, never served short; abandon recovers it" {
  local FL=("${LONG[@]}")
  whole_rack_cut cp
  # every copy it knew came back under a new storage id: none can answer the
  # wait for inventories (§4.8), so only the operator ends it
  wait_until 30 bash -c "'$CTL' -o json shard describe r/0 | grep -q '\"waiting_for_inventories\": *true'"
  run "$CTL" consume r --shard 0 --count 1
  [ "$status" -eq 1 ] && [[ $output != *'"offset"'* ]] || fail "consume exited $status (1 expected, no record): $output"
  wait_until 30 log_since "$((CP_LINES + 1))" "$C/cp.log" "a lease has passed since the start"
  abandon_loses_what_was_stated waiting
}

# A deposed leader L holding a longer tail of generation 1 that was never
# acknowledged (its followers were down), while generation 2 commits other
# records at the same offsets.
deposed_leader_with_a_longer_old_tail() {
  rcluster_up
  produce_acked 1 10
  wait_until 30 hwm_at_least 11
  L=$(leader_of)
  set -- $(others_than "$L")
  F=$1 W=$2
  wait_until 30 caught_up "$F"
  wait_until 30 caught_up "$W"
  stop_process "$F" KILL
  stop_process "$W" KILL
  seq 1001 1030 | timeout 5 "$CTL" produce r --shard 0 >/dev/null 2>>"$C/produce.log" || true # no quorum: never acknowledged
  wait_until 30 copy_holds "$L" 40
  stop_process "$L" KILL
  rbroker_start "${F#b}"
  rbroker_start "${W#b}"
  wait_until 60 generation_above r/0 1
  wait_until 60 shard_is r/0 Active
  produce_acked 11 30
  wait_until 30 hwm_at_least 32
  acked_readable
}

@test "10: a deposed leader's longer old-generation tail never beats the next generation's committed records" {
  deposed_leader_with_a_longer_old_tail
  rbroker_start "${L#b}" # same boot: ids kept, rank (1, 41) against the leader's (2, 32)
  wait_until 60 caught_up "$L"
  grep -q "msg=\"truncated a divergent suffix\" shard=r_0-[0-9a-f]* offset=11" "$C/$L.log"
  stop_process "$(leader_of)" KILL # the returned copy is now needed for any majority
  wait_until 60 generation_above r/0 2
  wait_until 60 shard_is r/0 Active
  acked_readable
  ! grep -q ' 10[0-9][0-9]$' "$C/seen" # the never-acknowledged tail is gone everywhere
}

@test "10 abandon: a deposed leader's old tail is not counted as kept: the records at risk are reported" {
  deposed_leader_with_a_longer_old_tail
  stop_process "$F" KILL
  stop_process "$W" KILL
  rm -rf "${C:?}/$W" # W's machine is destroyed: a new broker under its id on an empty directory
  rbroker_start "${L#b}"
  rbroker_start "${W#b}"
  wait_until 60 shard_is r/0 NoCaughtUpReplica
  wait_until 30 grep -q "copy .* of r/0 on $W joins as a stranger" "$C/cp.log"
  wait_until 30 bash -c "'$CTL' -o json placement abandon r/0 --dry-run | grep -q '\"live\":true.*\"live\":true'"
  run -0 "$CTL" -o json placement abandon r/0 --dry-run
  [ "$(echo "$output" | jget 'j["chosen"]["broker"]')" = "$L" ]
  risk=$(echo "$output" | jget 'j["records_at_risk"]')
  # Offsets 11..31: generation 2's start record and records 11..30 (only 0..10
  # are known to be on L, whose 11..40 are generation 1's unacknowledged tail).
  [ "$risk" -eq 21 ] || fail "stated $risk records at risk, 21 expected"
  g=$(echo "$output" | jget 'j["generation"]')
  copy=$(echo "$output" | jget 'j["chosen"]["expect_copy"]')
  digest=$(echo "$output" | jget 'j["digest"]')
  run -0 "$CTL" placement abandon r/0 --yes --expect-generation "$g" --expect-copy "$copy" --expect-digest "$digest"
  wait_until 60 shard_is r/0 Active
  lost=$(lost_records)
  # Exactly the stated risk less the one start record in it: records 11..30.
  [ "$lost" -eq $((risk - 1)) ] || fail "$lost acknowledged records lost, $risk at risk stated (one a start record)"
}

@test "8: a slow disk on an on_commit leader: no quorum for a lease moves the shard; the old copy keeps only the new leader's data" {
  rcluster_up --fsync-mode on_commit # each broker bN's disk is slow while $C/slow.bN exists
  produce_acked 1 50
  L=$(leader_of)
  g=$(shard_generation r/0)
  touch "$C/slow.$L" # its disk hangs: it cannot hold what it writes, so it acknowledges nothing (rule 2)
  run timeout 30 "$CTL" -o json produce r --shard 0 <<<"never-acked"
  # Its disk hangs: no answer within felixctl's 5 s (exit 5), and nothing acknowledged.
  [ "$status" -eq 5 ] || fail "produce exited $status (5 expected): $output"
  [[ $output == *"did not answer within"* ]] || fail "$output"
  [[ $output != *'"count": 1'* ]] || fail "acknowledged: $output"
  wait_until 60 generation_above r/0 "$g"
  wait_until 60 shard_is r/0 Active
  [ "$(leader_of)" != "$L" ]
  grep -q "leader $L lost: no quorum for" "$C/cp.log" || fail "not moved for want of a quorum"
  grep -q '^slow ' "$C/ledger.$L" || fail "no slow sync in the ledger"
  # Its own line says the leader's disk held it back: it held less than it wrote.
  line=$(grep -m1 'msg="no quorum: written records wait for a majority"' "$C/$L.log") || fail "no no-quorum line"
  [[ $line =~ \ end=([0-9]+)\ leader_held=([0-9]+)\  ]] && [ "${BASH_REMATCH[2]}" -lt "${BASH_REMATCH[1]}" ] || fail "$line"
  wait_until 10 this_start_says "$L" 'msg="a sync of the log has not returned: is the disk hung?" shard=r_0-[0-9a-f]* for_ms=[0-9]* unsynced_bytes=[0-9]* fsync_mode=on_commit acknowledged_unsynced=no'
  produce_acked 51 100
  rm -f "$C/slow.$L"
  wait_until 30 this_start_says "$L" 'msg="the stalled sync of the log returned" shard=r_0-'
  wait_until 60 caught_up "$L"
  acked_readable
  # The old leader's copy now holds exactly the new leader's records.
  wait_until 30 bash -c "cmp <('$FELIX_BUILD/felix-inspect' --json dump $C/$L/shards/r_0-*/00000000000000000000.log | cut -d, -f1,4-) \
    <('$FELIX_BUILD/felix-inspect' --json dump $C/$(leader_of)/shards/r_0-*/00000000000000000000.log | cut -d, -f1,4-)"
}

@test "8 periodic: a slow disk on a periodic leader: acknowledgements go on from the replicated page caches, no failover; its power cut during the hang loses nothing acknowledged" {
  rcluster_up # each broker bN's disk is slow while $C/slow.bN exists
  produce_acked 1 50
  L=$(leader_of)
  g=$(shard_generation r/0)
  touch "$C/slow.$L" # its disk hangs; periodic acknowledgements do not wait for it
  produce_acked 51 100 || fail "a periodic leader stopped acknowledging for its slow disk"
  wait_until 30 grep -q '^slow ' "$C/ledger.$L" # its flusher is held back
  produce_acked 101 150 || fail "a periodic leader stopped acknowledging for its slow disk"
  # Its acknowledgements hide the hang: its log and /metrics say it.
  wait_until 30 this_start_says "$L" 'msg="a sync of the log has not returned: is the disk hung?" shard=r_0-[0-9a-f]* for_ms=[0-9]* unsynced_bytes=[0-9]* fsync_mode=periodic acknowledged_unsynced=yes'
  wait_until 30 metric_above "${L#b}" 'felix_sync_in_flight_seconds{stream="r",shard="0"}' 2
  local f
  for f in $(others_than "$L"); do wait_until 30 caught_up "$f"; done
  [ "$(shard_generation r/0)" -eq "$g" ] && [ "$(leader_of)" = "$L" ] || fail "a slow disk alone moved the shard"
  power_cut "${L#b}" # during the hang: nothing since its last flush is on its disk
  rm -f "$C/slow.$L"
  rbroker_start "${L#b}"
  wait_until 60 generation_above r/0 "$g"
  wait_until 60 shard_is r/0 Active
  wait_until 30 this_start_says "$L" 'msg="storage id rotated"'
  acked_readable
  produce_acked 151 200
  acked_readable
}

@test "8 roll: a segment create hung under the log's lock holds the loop: the watchdog logs it and /metrics shows it meanwhile, and all goes on when the disk returns, nothing acknowledged lost" {
  FELIX_DURABLE_SEGMENT_BYTES=4096 rcluster_up # a roll every ~150 records
  produce_acked 1 50
  L=$(leader_of)
  # The next segment file's sync hangs: it runs on the leader's loop, under its log's lock.
  echo "fsync SLOW $C/$L/shards/r_0-*/.*.log.tmp" >"$C/rules.$L"
  produce_acked 51 400 || true # held at the roll: those acknowledged before it count
  wait_until 30 grep -q '^slow ' "$C/ledger.$L"
  wait_until 30 this_start_says "$L" 'msg="a sync of the log has not returned: is the disk hung?" shard=r_0-[0-9a-f]* for_ms=[0-9]* unsynced_bytes=[0-9]* fsync_mode=periodic acknowledged_unsynced=yes sync="segment create"'
  wait_until 30 this_start_says "$L" "msg=\"the broker's loop has not run: publishes, replication and its metrics wait\" for_ms=[0-9]*"
  # /metrics answers with the hang's figures, though the loop renders nothing.
  wait_until 30 metric_above "${L#b}" 'felix_sync_in_flight_seconds{stream="r",shard="0"}' 2
  wait_until 30 metric_above "${L#b}" 'felix_loop_stall_seconds' 2
  rm -f "$C/rules.$L"
  wait_until 30 this_start_says "$L" 'msg="the stalled sync of the log returned" shard=r_0-[0-9a-f]* sync="segment create" after_ms=[0-9]*'
  wait_until 30 this_start_says "$L" "msg=\"the broker's loop runs again\" after_ms=[0-9]*"
  wait_until 30 metric_below "${L#b}" 'felix_loop_stall_seconds' 1
  wait_until 30 metric_below "${L#b}" 'felix_sync_in_flight_seconds{stream="r",shard="0"}' 1
  produce_acked 401 450
  acked_readable
}

@test "16: two power cuts in a row, the second during recovery from the first: the follower rejoins as a stranger, nothing acknowledged is lost" {
  caught_up_follower 100
  power_cut "${F#b}"
  # Its disk hangs at the first sync of the next start (recovery's): the
  # second cut lands inside recovery, before the identity is decided.
  touch "$C/slow.$F"
  lines=$(($(wc -l <"$C/$F.log") + 1))
  rbroker_start "${F#b}" # slow while $C/slow.$F exists
  wait_until 30 grep -q '^slow ' "$C/ledger.$F"
  run ! log_since "$lines" "$C/$F.log" 'msg="storage id'
  power_cut "${F#b}"
  rm -f "$C/slow.$F"
  produce_acked 101 150 # the leader and the third copy go on
  rbroker_start "${F#b}"
  wait_until 30 this_start_says "$F" 'msg="storage id rotated"'
  wait_until 60 grep -q "copy .* of r/0 on $F joins as a stranger" "$C/cp.log"
  wait_until 60 caught_up "$F"
  [ "$(grep -c '^powercut: .* files cut' "$C/powercut.log")" -eq 2 ] || fail "$(cat "$C/powercut.log")"
  produce_acked 151 200
  wait_until 30 copy_holds "$F" 200
  acked_readable
}
