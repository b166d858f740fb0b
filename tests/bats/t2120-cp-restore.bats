#!/usr/bin/env bats
# A control-plane database restored from a backup (DESIGN.md §4.8, the
# model's Finding 6): the restored store pins a deposed leader and lacks a
# generation the copies promised. The control plane waits — without a time
# bound — for inventories built for its new instance from a majority of the
# copies it names, accepts no report and hands out no ballot meanwhile, then
# fails the shard over above every generation seen. Nothing acknowledged is
# lost. Brokers stop with SIGKILL on the same boot (ids kept), in the default
# periodic mode.

load replication

setup() { cluster_init "$BATS_TEST_TMPDIR/c"; }

teardown() {
  cluster_teardown
  if [ -z "${BATS_TEST_COMPLETED:-}" ]; then tail -n 30 "$C"/*.log >&3 2>/dev/null || true; fi
}

# cp_backup / cp_restore — the operator's copy of the stopped control
# plane's database files, and putting it back.
cp_backup() { mkdir -p "$C/backup" && cp "$C"/cp.db* "$C/backup/"; }
cp_restore() { rm -f "$C"/cp.db* && cp "$C"/backup/cp.db* "$C/"; }

# restored_cp_start — the control plane on the restored database; notes how
# many start-up leases cp.log has seen, for lease_passed.
restored_cp_start() {
  LEASES_BEFORE=$(grep -c "a lease has passed since the start" "$C/cp.log" || true)
  cp_start
}
# lease_passed — the restored control plane's first lease is over.
lease_passed() { [ "$(grep -c "a lease has passed since the start" "$C/cp.log")" -gt "$LEASES_BEFORE" ]; }

# history_after_backup — records 1..20 under generation 1 on A, the backup,
# then what the backup will not know: A killed, generation 2 on another,
# records 21..40, A back (same boot, ids kept) as a caught-up follower.
history_after_backup() {
  rcluster_up
  produce_acked 1 20
  A=$(leader_of)
  stop_process cp TERM
  cp_backup # generation 1, pinned to A
  cp_start
  stop_process "$A" KILL
  wait_until 60 generation_above r/0 1
  wait_until 60 shard_is r/0 Active
  produce_acked 21 40
  rbroker_start "${A#b}"
  wait_until 60 caught_up "$A"
}

shard_field() { "$CTL" -o json shard describe r/0 | jget "j['$1']"; }
waiting() { [ "$(shard_field waiting_for_inventories)" = true ]; }
# waits_for_exactly B... — the shard waits for the inventories of exactly these brokers.
waits_for_exactly() {
  [ "$(shard_field 'waiting_for' | python3 -c 'import json,sys; print(" ".join(sorted(json.load(sys.stdin))))')" = "$(printf '%s\n' "$@" | sort | tr '\n' ' ' | sed 's/ $//')" ]
}

@test "a restored control-plane database: the shard waits for the copies it names, then fails over above every generation seen; nothing acknowledged is lost" {
  history_after_backup
  produce_acked 41 50
  acked_readable
  set -- $(others_than "$A")
  stop_process cp TERM
  stop_process "$1" KILL
  stop_process "$2" KILL
  cp_restore
  restored_cp_start
  # The restored store pins A at generation 1; only A's inventory can come.
  wait_until 30 bash -c "[ \$(grep -c 'msg=registered ' '$C/$A.log') -ge 3 ]" # the restored store did not know its incarnation
  waiting
  [ "$(shard_field generation)" = 1 ]
  wait_until 30 lease_passed
  waiting # not bounded in time: two of the three named copies have said nothing
  [ "$(shard_field generation)" = 1 ]
  run -0 "$CTL" shard describe r/0
  assert_line --regexp "^Waiting for: +inventories from( b[123]){2}$"
  assert_line --regexp "^Seen generation: +2 \(a copy promised it"
  run -0 "$CTL" cluster status
  assert_line --regexp "^Waiting: +1 shard\(s\) wait for their copies' inventories"
  [ "$(shard_field seen_generation)" -ge 2 ] # A's ballot promised generation 2
  rbroker_start "${1#b}"
  rbroker_start "${2#b}"
  wait_until 60 generation_above r/0 2
  run ! waiting
  wait_until 60 grep -q "above the stored 1 (a restored control-plane database?)" "$C/cp.log"
  wait_until 60 shard_is r/0 Active
  acked_readable
  produce_acked 51 70
  acked_readable
}

# payloads of shard N of stream late, as consumers can read them now
late_payloads() { "$CTL" -o json consume late --shard "$1" | jlines '__import__("base64").b64decode(j["payload_b64"]).decode()'; }

# abandon_as_shown STREAM/SHARD — the dry run, then acting on exactly what it showed.
abandon_as_shown() {
  run -0 "$CTL" -o json placement abandon "$1" --dry-run
  local g copy digest
  g=$(echo "$output" | jget 'j["generation"]')
  copy=$(echo "$output" | jget 'j["chosen"]["expect_copy"]')
  digest=$(echo "$output" | jget 'j["digest"]')
  run -0 "$CTL" placement abandon "$1" --yes --expect-generation "$g" --expect-copy "$copy" --expect-digest "$digest"
}

@test "stream adopt: a stream the restored database does not know comes back under its own uuid; abandon re-places each shard on its highest copy, nothing acknowledged lost" {
  rcluster_up
  stop_process cp TERM
  cp_backup # knows stream r only
  cp_start
  run -0 "$CTL" -o json stream create late --shards 2 --replicas 3
  uuid=$(echo "$output" | jget 'j["uuid"]')
  wait_until 60 bash -c "'$CTL' -o json stream describe late | grep -q '\"state\":\"Active\".*\"state\":\"Active\"'"
  seq 1 40 | "$CTL" produce late --shard 0 >/dev/null
  seq 101 130 | "$CTL" produce late --shard 1 >/dev/null
  for b in b1 b2 b3; do grep -qx "uuid=$uuid" "$C/$b"/shards/late_0-*/stream; done
  grep -qx "replicas=3" "$C/b1"/shards/late_1-*/stream
  stop_process cp TERM
  cp_restore
  restored_cp_start
  wait_until 60 brokers_alive 3
  run -3 "$CTL" stream describe late
  run -3 "$CTL" stream adopt nosuch
  [[ $output == *"no live broker lists a copy of stream nosuch"* ]]
  run -2 "$CTL" stream adopt late --uuid not-a-uuid
  [[ $output == *"--uuid"*"not-a-uuid"* ]]
  wait_until 30 "$CTL" stream adopt late
  run -0 "$CTL" -o json stream describe late
  [ "$(echo "$output" | jget 'j["uuid"]')" = "$uuid" ]
  [ "$(echo "$output" | jget 'j["replication_factor"]')" = 3 ]
  [ "$(echo "$output" | jget 'j["shard_count"]')" = 2 ]
  [ "$(echo "$output" | jget '[s["state"] for s in j["shards"]]')" = '["NoCaughtUpReplica", "NoCaughtUpReplica"]' ]
  [ "$(echo "$output" | jget 'j["shards"][0]["seen_generation"]')" -ge 1 ]
  run -4 "$CTL" stream adopt late
  [[ $output == *"stream late exists"* ]]
  "$CTL" placement history late/0 | grep -q "adopted from its copies"
  for k in 0 1; do
    wait_until 30 shard_is "late/$k" NoCaughtUpReplica
    abandon_as_shown "late/$k"
    wait_until 60 shard_is "late/$k" Active
  done
  [ "$(late_payloads 0 | tr '\n' ' ')" = "$(seq 1 40 | tr '\n' ' ')" ]
  [ "$(late_payloads 1 | tr '\n' ' ')" = "$(seq 101 130 | tr '\n' ' ')" ]
  seq 41 50 | "$CTL" produce late --shard 0 >/dev/null # and it takes writes again
  [ "$(late_payloads 0 | tr '\n' ' ')" = "$(seq 1 50 | tr '\n' ' ')" ]
}

@test "a restored database and two destroyed brokers: the shard waits for copies that will never answer; abandon needs --above-generation and issues above it" {
  history_after_backup # A holds every acknowledged record
  set -- $(others_than "$A")
  stop_process cp TERM
  for b in "$1" "$2"; do
    stop_process "$b" KILL
    rm -rf "${C:?}/$b" # destroyed: a new broker under the same id on an empty directory
  done
  cp_restore
  restored_cp_start
  rbroker_start "${1#b}"
  rbroker_start "${2#b}"
  wait_until 60 brokers_alive 3
  wait_until 30 lease_passed
  # Only A's copy is one the restored store names: once A's inventory for
  # this instance is in (A may still be registering again), the shard waits
  # for the other two alone.
  wait_until 30 waits_for_exactly "$1" "$2"
  run "$CTL" -o json placement abandon r/0 --dry-run
  [ "$status" -eq 0 ] || fail "dry run: $output"
  [ "$(echo "$output" | jget 'sorted(j["waiting_for"])')" = "$(python3 -c "import json,sys; print(json.dumps(sorted(sys.argv[1:])))" "$1" "$2")" ]
  [ "$(echo "$output" | jget 'j["chosen"]["broker"]')" = "$A" ]
  g=$(echo "$output" | jget 'j["generation"]')
  copy=$(echo "$output" | jget 'j["chosen"]["expect_copy"]')
  digest=$(echo "$output" | jget 'j["digest"]')
  run -4 "$CTL" placement abandon r/0 --yes --expect-generation "$g" --expect-copy "$copy" --expect-digest "$digest"
  [[ $output == *"still waits for inventories from 2 of its replicas"* ]]
  [[ $output == *"--above-generation"* ]]
  run -0 "$CTL" placement abandon r/0 --yes --expect-generation "$g" --expect-copy "$copy" --expect-digest "$digest" \
    --above-generation 2 # A's ballot and the old history say 2
  wait_until 60 shard_is r/0 Active
  [ "$(shard_generation r/0)" -ge 3 ]
  acked_readable
  produce_acked 41 60
  acked_readable
}

# Generations near 2^53 pass through the broker, the control plane and
# felixctl with every digit: the broker parsed its own inventory again and
# printed 2^53 - 1 as 9.00719925474099e+15, which the control plane took
# for 9007199254740990. The largest generation is 2^53 - 1, which every JSON
# reader keeps exactly: a shard whose copies reached it has no next one, and
# the control plane says so instead of issuing 2^53, which no broker could
# read (helper-30: the shard was stuck), or aborting (helper-31).
@test "a copy at generation 2^53-2 keeps every digit through the control plane and felixctl and is led again at 2^53-1; a shard at 2^53-1 is told to have no generation left, and the control plane goes on" {
  top=9007199254740990
  "$FELIX_BUILD/tools/felix-mkdata" "$C/b1" big 0 5 --generation "$top" --stream-file 1/1/quorum >/dev/null
  "$FELIX_BUILD/tools/felix-mkdata" "$C/b2" over 0 5 --generation $((top + 1)) --stream-file 1/1/quorum >/dev/null
  cp_start
  broker_start 1
  broker_start 2
  wait_until 60 brokers_alive 2
  wait_until 30 "$CTL" stream adopt big
  wait_until 30 shard_is big/0 NoCaughtUpReplica
  run -0 "$CTL" -o json shard describe big/0
  [ "$(jget 'j["seen_generation"]' <<<"$output")" = "$top" ] || fail "$output"
  run -0 "$CTL" -o yaml shard describe big/0
  assert_line "seen_generation: $top"
  # The way out is open: abandon issues 2^53 - 1, and the broker leads at it.
  run -0 "$CTL" -o json placement abandon big/0 --dry-run
  copy=$(jget 'j["chosen"]["expect_copy"]' <<<"$output")
  digest=$(jget 'j["digest"]' <<<"$output")
  g=$(shard_generation big/0)
  run -0 "$CTL" placement abandon big/0 --yes --expect-generation "$g" --expect-copy "$copy" --expect-digest "$digest"
  wait_until 60 shard_is big/0 Active
  [ "$(shard_generation big/0)" = "$((top + 1))" ] || fail "generation $(shard_generation big/0)"
  wait_until 30 this_start_says b1 "msg=leading shard=big_0-[0-9a-f]* generation=$((top + 1)) "
  run -0 "$CTL" produce big --shard 0 <<<"after"
  # b2's copy is at 2^53 - 1: adopted, but nothing can lead it, and the abandon says why.
  wait_until 30 "$CTL" stream adopt over
  wait_until 30 shard_is over/0 NoCaughtUpReplica
  run -0 "$CTL" -o json placement abandon over/0 --dry-run
  copy=$(jget 'j["chosen"]["expect_copy"]' <<<"$output")
  digest=$(jget 'j["digest"]' <<<"$output")
  g=$(shard_generation over/0)
  run -4 "$CTL" placement abandon over/0 --yes --expect-generation "$g" --expect-copy "$copy" --expect-digest "$digest"
  [[ $output == *"over/0 has no generation left above $((top + 1))"* ]] || fail "$output"
  shard_is over/0 NoCaughtUpReplica
  # and big/0, led at 2^53 - 1, stays served; the control plane never aborted
  run -0 "$CTL" produce big --shard 0 <<<"still"
  kill -0 "$(pid_of cp)" || fail "the control plane exited"
}
