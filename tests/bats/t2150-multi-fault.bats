#!/usr/bin/env bats
# t2150 — review round 5, items 3 to 7: sequences of combined faults that once
# lost acknowledged records. Real processes, three brokers, R=3, quorum, the
# default periodic fsync mode; a pause is SIGSTOP, a destroyed machine a new
# broker under the old id on an empty directory.

load replication

setup() { cluster_init "$BATS_TEST_TMPDIR/c"; }

teardown() {
  cluster_teardown
  if [ -z "${BATS_TEST_COMPLETED:-}" ]; then tail -n 30 "$C"/*.log >&3 2>/dev/null || true; fi
}

two_live_copies() { "$CTL" -o json placement abandon r/0 --dry-run | grep -q '"live":true.*"live":true'; }
max_hwm() { "$CTL" -o json shard describe r/0 | jget 'j["max_hwm"]'; }

# publish_count LINE SECONDS — how many records one publish had acknowledged
# within SECONDS (felixctl gives up at the limit: 0).
publish_count() {
  local out
  out=$(echo "$1" | timeout "$2" "$CTL" -o json produce r --shard 0 2>>"$C/produce.log") || true
  echo "${out:-{\"count\": 0\}}" | jget 'j["count"]' 2>/dev/null || echo 0
}

# five_then_stop_follower — an R=3 cluster, records 1..5 acknowledged, and the
# caught-up follower F stopped cleanly (its next start keeps the ids); L is the
# leader and W the other follower.
five_then_stop_follower() {
  rcluster_up
  produce_acked 1 5
  L=$(leader_of)
  read -r F W <<<"$(others_than "$L" | tr '\n' ' ')"
  wait_until 30 caught_up "$F"
  stop_process "$F" TERM
}

@test "3: a follower's HWM does not survive truncation: after an abandon the next leader acknowledges only what a majority holds" {
  rcluster_up
  produce_acked 1 5
  wait_until 30 hwm_at_least 6
  L=$(leader_of)
  read -r F W <<<"$(others_than "$L" | tr '\n' ' ')"
  wait_until 30 caught_up "$W"
  stop_process "$W" KILL # W keeps 5 records (a paused one would read the rest from its socket)
  produce_acked 6 99
  wait_until 30 hwm_at_least 100
  produce_acked 100 100 # this shipment tells F the HWM 100
  wait_until 30 hwm_at_least 101
  wait_until 30 caught_up "$F"
  pause "$F" # F, with HWM 100 in memory, is cut off past a lease
  wait_until 30 not_alive "$F"
  stop_process "$L" KILL
  rm -rf "${C:?}/$L" # L's machine is destroyed: a new broker under its id, empty
  rbroker_start "${W#b}" # same boot: ids kept, 5 records
  rbroker_start "${L#b}"
  wait_until 60 shard_is r/0 NoCaughtUpReplica
  wait_until 30 grep -q "copy .* of r/0 on $L joins as a stranger" "$C/cp.log"
  wait_until 30 two_live_copies
  run -0 "$CTL" -o json placement abandon r/0 --dry-run
  [ "$(echo "$output" | jget 'j["chosen"]["broker"]')" = "$W" ]
  [ "$(echo "$output" | jget 'j["records_at_risk"]')" -ge 95 ] # records 6..100
  g=$(echo "$output" | jget 'j["generation"]')
  copy=$(echo "$output" | jget 'j["chosen"]["expect_copy"]')
  digest=$(echo "$output" | jget 'j["digest"]')
  run -0 "$CTL" placement abandon r/0 --yes --expect-generation "$g" --expect-copy "$copy" --expect-digest "$digest"
  [[ $output == *"re-placed r/0 on $W"* ]] || fail "$output"
  wait_until 60 shard_is r/0 Active
  [ "$(leader_of)" = "$W" ]
  seq 1 5 >"$C/acked" # the operator gave up 6..100; from here nothing acknowledged is lost
  : >"$C/seen"
  resume "$F"
  wait_until 60 grep -q "msg=\"truncated a divergent suffix\" shard=r_0-[0-9a-f]* offset=0" "$C/$F.log" # not named by the abandon: copied from the start
  wait_until 60 caught_up "$F"
  wait_until 30 caught_up "$L"
  g=$(shard_generation r/0)
  pause "$L" # L is dead to the control plane: F is the only copy it can place the shard on
  wait_until 30 not_alive "$L"
  stop_process "$W" KILL
  wait_until 60 generation_above r/0 "$g"
  [ "$(leader_of)" = "$F" ]
  resume "$L" # its promise completes F's fence
  wait_until 30 grep -q 'msg=leading shard=r_0-[0-9a-f]* generation=' "$C/$F.log"
  wait_until 30 shard_is r/0 Active
  kill -0 "$(pid_of "$F")" || fail "$F died when it started to lead: $(tail -n 3 "$C/$F.log")"
  [ "$(leader_of)" = "$F" ] || fail "the shard is Active on $(leader_of), not on $F: $(grep -m1 'did not complete' "$C/cp.log")"
  pause "$L"
  # F alone holds what it writes now: nothing may be acknowledged (once, its
  # HWM 100 "covered" offsets 8..99 and it acknowledged them on its own copy).
  [ "$(publish_count alone 4)" -eq 0 ] || fail "acknowledged with only $F holding it"
  # F's log: S1, records 1..5, W's start record, its own (offsets 0..7).
  [ "$(max_hwm)" -le 8 ] || fail "an HWM beyond F's log was accepted: $("$CTL" shard describe r/0)"
  resume "$L"
  wait_until 60 caught_up "$L"
  produce_acked 101 120
  acked_readable
}

@test "7: a fence stuck past a lease is never completed by the next assignment's members (an abandon's)" {
  LONG=(--fsync-interval-ms 600000)
  rcluster_up "${LONG[@]}"
  produce_acked 1 20
  wait_until 30 hwm_at_least 21
  L=$(leader_of)
  read -r F W <<<"$(others_than "$L" | tr '\n' ' ')"
  wait_until 30 caught_up "$F"
  wait_until 30 caught_up "$W"
  stop_process "$F" KILL # same boot: F keeps its ids and all 20 records
  power_cut "${L#b}"     # L and W lose their unsynced records and come back as strangers
  power_cut "${W#b}"
  rbroker_start "${L#b}" "${LONG[@]}"
  rbroker_start "${W#b}" "${LONG[@]}"
  wait_until 60 grep -q "copy .* of r/0 on $L joins as a stranger" "$C/cp.log"
  wait_until 60 grep -q "copy .* of r/0 on $W joins as a stranger" "$C/cp.log"
  wait_until 30 not_alive "$F"
  rbroker_start "${F#b}" "${LONG[@]}"
  # F is placed at a new generation G, but no other copy is named (both are
  # strangers): its fence cannot count their answers and stays stuck.
  wait_until 60 grep -Eq "the fence of generation [0-9]+ on $F did not complete within a lease" "$C/cp.log"
  G=$(grep -Eo "the fence of generation [0-9]+ on $F did not complete" "$C/cp.log" | tail -n 1 | awk '{print $5}')
  [ "$(shard_generation r/0)" -eq "$G" ]
  run -0 "$CTL" -o json placement abandon r/0 --dry-run
  [ "$(echo "$output" | jget 'j["chosen"]["broker"]')" = "$F" ]
  g=$(echo "$output" | jget 'j["generation"]')
  copy=$(echo "$output" | jget 'j["chosen"]["expect_copy"]')
  digest=$(echo "$output" | jget 'j["digest"]')
  run -0 "$CTL" placement abandon r/0 --yes --expect-generation "$g" --expect-copy "$copy" --expect-digest "$digest"
  wait_until 60 shard_is r/0 Active
  [ "$(leader_of)" = "$F" ]
  # The abandon's assignment names every live copy; counted against those
  # members, the stuck generation-G fence would complete and serve.
  run grep "msg=leading shard=r_0-[0-9a-f]* generation=$G " "$C/$F.log"
  [ "$status" -eq 1 ] || fail "generation $G was led after the abandon: $output"
  grep -q "msg=leading shard=r_0-[0-9a-f]* generation=$((G + 1)) " "$C/$F.log"
  acked_readable # the abandon chose the copy holding all 20: nothing at risk, nothing lost
  produce_acked 21 40
  acked_readable
}

@test "4: a failed periodic flush removes the boot token at once: a SIGKILL right after it still rotates the ids on the same boot" {
  rcluster_up
  L=$(leader_of)
  read -r F W <<<"$(others_than "$L" | tr '\n' ' ')"
  stop_process "$F" TERM
  # While $C/fail-sync exists, every sync of this process fails with EIO; its
  # flusher runs every 3.25 s (off the 500 ms beat of the broker's own check), so
  # what it is sent stays unsynced for a while.
  FELIX_FAULTS_FAIL_SYNC_IF="$C/fail-sync" rbroker_start "${F#b}" --fsync-interval-ms 3250
  wait_until 30 caught_up "$F"
  produce_acked 1 20
  pid=$(pid_of "$F")
  # The moment F's flusher sees the error, F is killed: no timer of its own
  # and no later append may act first (10 ms polls, at most 30 s).
  (for _ in $(seq 1 3000); do grep -q "^fail " "$C/ledger.$F" && break; sleep 0.01; done; kill -9 "$pid" 2>/dev/null) &
  killer=$!
  touch "$C/fail-sync"
  wait "$killer" || true # F may have gone first, failing closed on its own
  wait_exit "$pid" 30
  grep -q '^fail ' "$C/ledger.$F" || fail "no sync of $F failed"
  rm -f "$C/fail-sync"
  lines=$(wc -l <"$C/$F.log")
  rbroker_start "${F#b}" # the same boot: only the token could vouch for its page cache, and it must be gone
  wait_until 60 log_since "$((lines + 1))" "$C/$F.log" 'msg=registered' 
  tail -n +"$((lines + 1))" "$C/$F.log" | grep -q 'msg="storage id rotated"' ||
    fail "$F kept its ids after a failed sync: $(tail -n +"$((lines + 1))" "$C/$F.log" | grep -m1 'storage id')"
  wait_until 60 grep -q "copy .* of r/0 on $F joins as a stranger" "$C/cp.log"
  wait_until 60 caught_up "$F"
  produce_acked 21 40
  acked_readable
}

@test "4: a copy refused at start for corruption (not a failed sync) is refused alone: the broker keeps its storage id and token" {
  cluster_up 1
  run -0 "$CTL" stream create a --shards 1 --replicas 1
  run -0 "$CTL" stream create z --shards 1 --replicas 1
  wait_until 60 shard_is a/0 Active
  wait_until 60 shard_is z/0 Active
  seq 1 50 | "$CTL" produce a --shard 0 >/dev/null
  seq 1 50 | "$CTL" produce z --shard 0 >/dev/null
  stop_process b1 KILL # the same boot: the page cache holds everything
  seg=$(ls "$C"/b1/shards/a_0-*/00000000000000000000.log)
  flip_byte "$seg" 44 # the first record's checksum, with intact records after it: not a torn tail
  lines=$(wc -l <"$C/b1.log")
  broker_start 1
  wait_until 60 log_since "$((lines + 1))" "$C/b1.log" 'msg=registered'
  log_since "$((lines + 1))" "$C/b1.log" 'shard copy refused' || fail "the corrupt copy was not refused"
  log_since "$((lines + 1))" "$C/b1.log" 'msg="storage id kept"' ||
    fail "one corrupt copy rotated the broker's ids: $(tail -n +"$((lines + 1))" "$C/b1.log" | grep -m1 'storage id')"
  wait_until 60 shard_is z/0 Active
  run -0 "$CTL" -o json consume z --shard 0
  [ "$(echo "$output" | grep -c '"offset"')" -eq 50 ]
}

@test "a copy restored by hand below its floor is a stranger from its registration on: the registration carries the inventory" {
  five_then_stop_follower
  snap="$BATS_TEST_TMPDIR/snapshot"
  cp -a "$C/$F/shards" "$snap"
  rbroker_start "${F#b}"
  produce_acked 6 20
  wait_until 30 hwm_at_least 21
  wait_until 30 caught_up "$F" # measured at 21: its floor rises there
  stop_process "$F" TERM
  rm -rf "${C:?}/$F/shards"
  cp -a "$snap" "$C/$F/shards" # the copy of five records, same copy id and storage id
  lines=$(($(wc -l <"$C/cp.log") + 1))
  rbroker_start "${F#b}"
  # Only the inventory sent with a registration is checked against the floor
  # (§4.5): a registration without it lets the short copy be counted.
  wait_until 30 log_since "$lines" "$C/cp.log" "on $F holds [0-9]* below its floor [0-9]* under unchanged ids"
  # A stranger until an active leader measures it (the leader may copy the
  # missing records and trust it within a poll: is_stranger would race).
  wait_until 60 log_since "$lines" "$C/cp.log" "on $F: stranger copy .* trusted"
  produce_acked 21 30
  acked_readable
}

# ballot_copy_id BROKER — the copy id in its r/0 directory's ballot.
ballot_copy_id() { sed -n 's/^copy_id=//p' "$C/$1"/shards/r_0-*/ballot; }
replica_copy_is() { [ "$(replica_field "$1" copy_id)" = "$2" ]; }
is_refused() { [ "$(replica_field "$1" refused)" = true ]; }
not_refused() { [ "$(replica_field "$1" refused)" = false ]; }

@test "8: a shard directory copied in by hand under an unchanged storage id is a stranger, measured and trusted again" {
  five_then_stop_follower
  produce_acked 6 20
  wait_until 30 hwm_at_least 21
  wait_until 30 caught_up "$W"
  stop_process "$W" TERM
  # The operator "repairs" F with W's directory: F's storage id stays, the
  # copy's ballot names W's, so F's start gives it a new copy id.
  rm -rf "$C/$F"/shards/r_0-*
  cp -a "$C/$W"/shards/r_0-* "$C/$F/shards/"
  rbroker_start "${W#b}"
  lines=$(($(wc -l <"$C/cp.log") + 1))
  rbroker_start "${F#b}"
  wait_until 30 grep -q "new copy id: the copy was made under another storage id" "$C/$F.log"
  new=$(ballot_copy_id "$F")
  wait_until 30 replica_copy_is "$F" "$new" # once, the slot named the old copy for good
  log_since "$lines" "$C/cp.log" "copy $new of r/0 on $F replaces copy [0-9a-f]* under the same storage id" ||
    fail "no copy_replaced event: $(tail -n +"$lines" "$C/cp.log" | grep "$F")"
  wait_until 60 caught_up "$F" # measured by the leader: named again
  [ "$(replica_field "$F" stranger)" = false ]
  produce_acked 21 30
  wait_until 30 caught_up "$F"
  g=$(shard_generation r/0)
  pause "$W"
  wait_until 30 not_alive "$W"
  stop_process "$L" KILL # F is the only live copy: trusted, it takes the shard
  wait_until 60 generation_above r/0 "$g"
  [ "$(leader_of)" = "$F" ]
  resume "$W"
  wait_until 60 shard_is r/0 Active
  acked_readable
}

@test "8: two directories of one copy on a broker are both refused, never served, until one is moved away" {
  five_then_stop_follower
  dir=$(basename "$C/$F"/shards/r_0-*)
  twin="r_00-${dir##*-}" # parses as shard 0 too
  cp -a "$C/$F/shards/$dir" "$C/$F/shards/$twin"
  rbroker_start "${F#b}"
  wait_until 30 grep -q "directories .* hold one copy id .*: both refused until one is moved away" "$C/$F.log"
  grep -q "shard copy refused.*$twin.*does not match its ballot" "$C/$F.log" || fail "the misnamed $twin was not named: $(grep refused "$C/$F.log")"
  wait_until 30 is_refused "$F"
  produce_acked 6 10 # the two others are a quorum
  run -0 "$CTL" -o json shard describe r/0
  [ "$(echo "$output" | jget 'j["replicas"][[x["broker"] for x in j["replicas"]].index("'"$F"'")]["caught_up"]')" = false ]
  stop_process "$F" TERM
  mv "$C/$F/shards/$twin" "$BATS_TEST_TMPDIR/"
  rbroker_start "${F#b}"
  wait_until 30 not_refused "$F"
  wait_until 60 caught_up "$F"
  acked_readable
}

@test "8: a shard directory renamed to another shard's name is refused; the shard's copy is missing, so a new one is made" {
  five_then_stop_follower
  dir=$(basename "$C/$F"/shards/r_0-*)
  grep -q '^shard=0$' "$C/$F/shards/$dir/ballot" || fail "the ballot records no shard index: $(cat "$C/$F/shards/$dir/ballot")"
  mv "$C/$F/shards/$dir" "$C/$F/shards/r_1-${dir##*-}" # as if it held shard 1
  lines=$(($(wc -l <"$C/cp.log") + 1))
  rbroker_start "${F#b}"
  wait_until 30 grep -q "shard copy refused.*r_1-.*does not match its ballot (stream uuid [-0-9a-f]*, shard 0)" "$C/$F.log"
  wait_until 30 log_since "$lines" "$C/cp.log" "of r/0 on $F is missing from its registration's inventory"
  wait_until 60 caught_up "$F" # a new copy, copied from the leader
  produce_acked 6 10
  acked_readable
}

@test "8: a copy whose ballot cannot be read at one start (EMFILE) is not taken for deleted: R=1 is Active again once it reads" {
  cp_start
  rbroker_start 1
  wait_until 60 brokers_alive 1
  run -0 "$CTL" stream create r --shards 1 --replicas 1
  wait_until 60 shard_is r/0 Active
  : >"$C/acked"
  : >"$C/seen"
  produce_acked 1 5
  stop_process b1 TERM
  echo "open EMFILE */shards/r_0-*/ballot" >"$C/rules.b1"
  lines=$(($(wc -l <"$C/cp.log") + 1))
  blines=$(($(wc -l <"$C/b1.log") + 1))
  rbroker_start 1
  wait_until 30 log_since "$blines" "$C/b1.log" "shard copy refused"
  wait_until 30 log_since "$lines" "$C/cp.log" "b1 registered as incarnation"
  # Once, the copy it could not read counted as deleted: forgotten, a stranger
  # no R=1 leader can ever measure, the shard stuck for an operator's abandon.
  run ! log_since "$lines" "$C/cp.log" "of r/0 on b1 is missing from its registration's inventory"
  stop_process b1 TERM
  rm -f "$C/rules.b1"
  rbroker_start 1
  wait_until 60 shard_is r/0 Active
  [ "$(replica_field b1 stranger)" = false ]
  produce_acked 6 10
  acked_readable
}
