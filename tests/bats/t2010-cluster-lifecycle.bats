#!/usr/bin/env bats
# Broker and control-plane lifecycle with real processes: drain, SIGKILL on
# the same boot, a simulated machine restart, control-plane restarts, and the
# directory lock. Every broker runs in the default periodic fsync mode.

load cluster

setup() {
  cluster_init "$BATS_TEST_TMPDIR/c"
  cluster_up 2
  run -0 "$CTL" stream create s --shards 2 --replicas 1
  wait_until 60 shard_is s/0 Active
  wait_until 60 shard_is s/1 Active
  LEADER=$("$CTL" -o json shard describe s/0 | jget 'j["leader"]')
  N=${LEADER#b}
}

teardown() {
  cluster_teardown
  if [ -z "${BATS_TEST_COMPLETED:-}" ]; then tail -n 40 "$C"/*.log >&3 2>/dev/null || true; fi
}

storage_id_of() { "$CTL" -o json broker list | jget "[b['storage_id'] for b in j if b['id'] == '$1'][0]"; }
produce_n() { seq 1 "$1" | "$CTL" produce s --shard 0 >/dev/null 2>&1; }
consumed() { "$CTL" consume s --shard 0 2>/dev/null | wc -l; }
incarnation_changed() { [ "$("$CTL" -o json broker list | jget "[b['incarnation'] for b in j if b['id'] == '$1'][0]")" != "$2" ]; }

@test "SIGTERM drains to state=stopped, exits 0, and a restart keeps the storage id" {
  produce_n 100
  sid=$(storage_id_of "$LEADER")
  pid=$(pid_of "$LEADER")
  kill -TERM "$pid"
  wait_exit "$pid" 30
  grep -q 'msg="drained: run-state state=stopped"' "$C/$LEADER.log"
  grep -q '^state=stopped$' "$C/$LEADER/run-state"
  run -0 "$FELIX_BUILD/felix-inspect" --json run-state "$C/$LEADER"
  [ "$(echo "$output" | jget 'j["next_start"]["rotate"]')" = false ]
  broker_start "$N"
  wait_until 60 generation_above s/0 1
  wait_until 60 shard_is s/0 Active
  [ "$(storage_id_of "$LEADER")" = "$sid" ]
  [ "$(consumed)" -eq 100 ]
}

# A live broker's directory: state=running, as after a crash, but its pid
# holds the lock. felix-inspect must say it runs, not that it crashed.
@test "felix-inspect on a running broker's directory says running now and what its death would decide" {
  pid=$(pid_of "$LEADER")
  run -0 "$FELIX_BUILD/felix-inspect" "$C/$LEADER"
  assert_line --regexp "^last run:     running now \(pid $pid, since [0-9-]+T[0-9:]+Z, fsync_mode=periodic, boot [^ ]+ from file\)$"
  refute_line --partial "last run:     crashed"
  refute_line --partial "next start:"
  assert_line --regexp "^if it dies:   with the machine up: keep the storage id — "
  assert_line --regexp "^              with the machine down: ROTATE the storage id — "
  assert_line "lock:         held by the broker running now, pid $pid (what you see may change under you)"
  run -0 "$FELIX_BUILD/felix-inspect" --json run-state "$C/$LEADER"
  [ "$(jget 'j["last_run"]' <<<"$output")" = running ]
  [ "$(jget 'j["locked_by_pid"]' <<<"$output")" = "$pid" ]
  [ "$(jget 'j["next_start"]' <<<"$output")" = null ]
  [ "$(jget 'j["if_it_dies_now"]["machine_up"]["rotate"]' <<<"$output")" = false ]
  [ "$(jget 'j["if_it_dies_now"]["machine_down"]["rotate"]' <<<"$output")" = true ]
  # seen from another boot, the same pid is not that run (pids are reused: a
  # broker is pid 1 in every container), whatever holds the lock now
  echo "boot-other-$RANDOM" >"$C/other_boot"
  FELIX_BOOT_ID_FILE="$C/other_boot" run -0 "$FELIX_BUILD/felix-inspect" "$C/$LEADER"
  refute_line --partial "running now"
  assert_line --regexp "^last run:     crashed \(state=running"
  # killed, the same directory is a crash, and the verdict is the machine-up one
  kill -KILL "$pid"
  wait_exit "$pid" 30
  run -0 "$FELIX_BUILD/felix-inspect" "$C/$LEADER"
  assert_line --regexp "^last run:     crashed \(state=running, fsync_mode=periodic"
  assert_line --regexp "^next start:   keep the storage id — crashed on this same boot with the boot token present"
}

@test "SIGKILL on the same boot keeps the storage id and loses no acknowledged record" {
  produce_n 500
  sid=$(storage_id_of "$LEADER")
  inc=$("$CTL" -o json broker list | jget "[b['incarnation'] for b in j if b['id'] == '$LEADER'][0]")
  stop_process "$LEADER" KILL
  grep -q '^state=running$' "$C/$LEADER/run-state"
  broker_start "$N"
  wait_until 60 incarnation_changed "$LEADER" "$inc"
  wait_until 60 generation_above s/0 1
  wait_until 60 shard_is s/0 Active
  [ "$(storage_id_of "$LEADER")" = "$sid" ]
  this_start_says "$LEADER" 'msg="storage id kept"' || fail "$LEADER's latest start did not say storage id kept: $(grep 'msg="storage id' "$C/$LEADER.log")"
  [ "$(consumed)" -eq 500 ]
  seq 501 510 | "$CTL" produce s --shard 0
  [ "$(consumed)" -eq 510 ]
}

@test "SIGKILL and a new boot id under periodic bring the broker back under a new storage id" {
  produce_n 20
  sid=$(storage_id_of "$LEADER")
  stop_process "$LEADER" KILL
  echo "boot-$RANDOM-two" >"$FELIX_BOOT_ID_FILE"
  broker_start "$N"
  wait_until 60 bash -c "[ \"\$('$CTL' -o json broker list | python3 -c 'import json,sys; print([b[\"storage_id\"] for b in json.load(sys.stdin) if b[\"id\"] == \"$LEADER\"][0])')\" != '$sid' ]"
  new=$(storage_id_of "$LEADER")
  [ "$new" != "$sid" ]
  [ "$(cat "$C/$LEADER/storage-id")" = "$new" ]
  this_start_says "$LEADER" 'msg="storage id rotated"' || fail "$LEADER's latest start did not say storage id rotated: $(grep 'msg="storage id' "$C/$LEADER.log")"
  run -0 "$CTL" broker list
  assert_output --partial "$new"
  # one replica, its only copy now a stranger: the shard waits, never serves a short copy
  wait_until 60 shard_is s/0 NoCaughtUpReplica
  # Waiting cannot change NoCaughtUpReplica (an operator decides): produce
  # fails at once, naming it, whatever --wait (timeout would exit 124).
  run timeout 20 "$CTL" produce s --shard 0 --wait 60s <<<"never-written"
  [ "$status" -eq 1 ] || fail "produce exited $status (1 expected, 124: it waited): $output"
  [[ $output == *"shard s/0 is NoCaughtUpReplica: no copy can serve it"* ]] || fail "$output"
  [[ $output == *"placement abandon s/0"* ]] || fail "no hint naming the way out: $output"
}

@test "a control-plane restart loses no stream, shard or generation" {
  produce_n 10
  before=$("$CTL" -o json shard list | jget '[(s["stream"], s["shard"], s["generation"], s["leader"]) for s in j]')
  streams=$("$CTL" -o json stream list | jget '[(s["name"], s["uuid"]) for s in j]')
  stop_process cp TERM
  cp_start
  wait_until 60 brokers_alive 2
  [ "$("$CTL" -o json stream list | jget '[(s["name"], s["uuid"]) for s in j]')" = "$streams" ]
  [ "$("$CTL" -o json shard list | jget '[(s["stream"], s["shard"], s["generation"], s["leader"]) for s in j]')" = "$before" ]
  [ "$(consumed)" -eq 10 ]
  seq 1 5 | "$CTL" produce s --shard 0
  [ "$(consumed)" -eq 15 ]
}

@test "a second broker on the same data directory is refused, naming the holder's pid" {
  pid=$(pid_of b1)
  run -4 "$BROKER" run --id b9 --data-dir "$C/b1" --listen 127.0.0.1:$((PORT_BASE + 39)) --http 127.0.0.1:$((PORT_BASE + 38)) \
    --control-plane "$FELIX_CONTROL_PLANE" --token-file "$C/cp.db.broker-token"
  assert_output --partial "pid $pid"
}

@test "a second SIGTERM during a drain is logged and ignored; the drain still ends in state=stopped" {
  stop_process "$LEADER" TERM
  FELIX_TEST_SLOW_DRAIN_MS=1500 broker_start "$N"
  wait_until 60 generation_above s/0 1
  pid=$(pid_of "$LEADER")
  kill -TERM "$pid"
  wait_until 10 this_start_says "$LEADER" 'msg=draining' # the first stop's line is in the log too
  kill -TERM "$pid"
  wait_exit "$pid" 30
  this_start_says "$LEADER" 'already draining: signal ignored' || fail "$(tail -n 5 "$C/$LEADER.log")"
  grep -q '^state=stopped$' "$C/$LEADER/run-state"
}

@test "a drain that outlives FELIX_SHUTDOWN_DRAIN_TIMEOUT_MS exits without writing state=stopped" {
  stop_process "$LEADER" TERM
  FELIX_TEST_SLOW_DRAIN_MS=5000 FELIX_SHUTDOWN_DRAIN_TIMEOUT_MS=300 broker_start "$N"
  wait_until 60 generation_above s/0 1
  pid=$(pid_of "$LEADER")
  kill -TERM "$pid"
  wait_exit "$pid" 10
  grep -q 'msg="drain timed out' "$C/$LEADER.log"
  grep -q '^state=running$' "$C/$LEADER/run-state"
}
