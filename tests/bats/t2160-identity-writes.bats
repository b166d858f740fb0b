#!/usr/bin/env bats
# t2160 — review round 5, item 5: a failed write of a copy's identity file
# (ballot, generations) on a follower and on the leader-elect of a new
# generation. The copy keeps in memory only what is on disk, is refused until
# it is reopened, and its broker's boot token goes at once; the shard goes on
# with the other copies and nothing acknowledged is lost. Once the copy is
# refused nothing reads its memory, so what the tests can see is the refusal,
# the token, the next start's rotation, what the copy holds on disk, and the
# control plane moving on without it. Real processes,
# three brokers, R=3, quorum, the default periodic fsync mode; the faults are
# the fault library's file rules ($C/rules.bN, tests/faults/README.md).

load replication

setup() { cluster_init "$BATS_TEST_TMPDIR/c"; }

teardown() {
  cluster_teardown
  if [ -z "${BATS_TEST_COMPLETED:-}" ]; then tail -n 30 "$C"/*.log >&3 2>/dev/null || true; fi
}

shard_dir() { echo "$C/$1"/shards/r_0-*; }
has_token() { compgen -G "$C/runtime/$(cat "$C/$1/storage-id").*.ok" >/dev/null; }
ballot_generation() { sed -n 's/^generation=//p' "$(shard_dir "$1")/ballot"; }
# records_held BROKER — every record of its copy on disk, generation-start markers included.
records_held() { "$FELIX_BUILD/felix-inspect" --json dump "$(shard_dir "$1")/00000000000000000000.log" | grep -c '"offset"'; }
refused_since() { log_since "$LINES" "$C/$1.log" 'msg="shard copy refused"'; }

# fail_file BROKER OP ERRNO FILE — from now on BROKER's OP of the copy's FILE
# (its temporary file .FILE.tmp, as every identity file is written) fails.
fail_file() { echo "$2 $3 */shards/r_0-*/.$4.tmp" >"$C/rules.$1"; }

# new_generation ROLE — the leader L is killed and the next generation G+1
# goes to F with F as ROLE: 'leader' (F is the leader-elect, W answers its
# fence) or 'follower' (W leads, F follows). The other one is paused while
# the control plane places the shard, so the choice is the test's, then
# resumed. Sets L F W G; LINES is where F's log stood before.
new_generation() {
  local other
  wait_until 30 caught_up "$F"
  wait_until 30 caught_up "$W"
  G=$(shard_generation r/0)
  LINES=$(($(wc -l <"$C/$F.log") + 1))
  if [ "$1" = leader ]; then other=$W; else other=$F; fi
  pause "$other"
  wait_until 30 not_alive "$other"
  stop_process "$L" KILL
  wait_until 60 generation_above r/0 "$G"
  if [ "$1" = leader ]; then [ "$(leader_of)" = "$F" ]; else [ "$(leader_of)" = "$W" ]; fi ||
    fail "generation $(shard_generation r/0) went to $(leader_of)"
  resume "$other"
}

# pick_roles — L the leader, F the copy that will fail, W the third.
pick_roles() {
  L=$(leader_of)
  read -r F W <<<"$(others_than "$L" | tr '\n' ' ')"
}

# failed_closed FILE — F refused its copy for FILE, its memory kept what is on
# disk (the ballot still at G or, for generations, no line of G+1 and no
# record of it), and F's boot token is gone while F runs on.
failed_closed() {
  wait_until 60 refused_since "$F"
  log_since "$LINES" "$C/$F.log" "msg=\"cannot write a copy's identity file: copy refused, boot token removed\".* file=$1" ||
    fail "$F refused its copy for another reason: $(tail -n +"$LINES" "$C/$F.log" | grep -m1 'copy refused')"
  run has_token "$F"
  [ "$status" -ne 0 ] || fail "$F still has its boot token after a failed write of $1"
  kill -0 "$(pid_of "$F")" || fail "$F exited: only the copy is failed closed"
}

# placed_elsewhere — the control plane reads F's inventory entry "refused"
# and moves the generation on at once, without waiting for the fence to time out.
placed_elsewhere() {
  wait_until 30 grep -q "leader $F lost: it refused its copy" "$C/cp.log"
}

# rejoins — the shard is Active on L and W (L restarted on the same boot:
# ids kept) and takes new records; then F, with the fault gone, restarts:
# without its token its ids rotate, its copy joins as a stranger and is
# copied; every acknowledged record is read back, exactly once.
rejoins() {
  rbroker_start "${L#b}"
  wait_until 90 shard_is r/0 Active
  [ "$(leader_of)" != "$F" ] || fail "the shard is Active on $F, whose copy is refused"
  produce_acked 11 20 || fail "records 11..20 were not all acknowledged: $(tail -n 2 "$C/produce.log")"
  acked_readable
  rm -f "$C/rules.$F"
  stop_process "$F" TERM
  local lines
  lines=$(($(wc -l <"$C/$F.log") + 1))
  rbroker_start "${F#b}"
  wait_until 60 log_since "$lines" "$C/$F.log" 'msg=registered'
  log_since "$lines" "$C/$F.log" 'msg="storage id rotated"' ||
    fail "$F kept its ids after a failed identity write: $(tail -n +"$lines" "$C/$F.log" | grep -m1 'storage id')"
  wait_until 90 caught_up "$F"
  produce_acked 21 30
  acked_readable
}

@test "5: a follower whose generations write fails (ENOSPC) is refused and never holds a record of the generation it could not record" {
  rcluster_up
  produce_acked 1 10
  pick_roles
  held=$(records_held "$F")
  fail_file "$F" write ENOSPC generations
  new_generation follower
  failed_closed generations
  grep -q "^failfile write ENOSPC .*/\.generations\.tmp$" "$C/ledger.$F" || fail "the fault never struck"
  # W shipped its start record of G+1 (the shipment F failed on) and ships it
  # again: the old code had taken the line in memory and appended it then
  # ("b2 holds 12 records, 11 before"); the refusal stops it.
  wait_until 30 grep -q "msg=leading shard=r_0-[0-9a-f]* generation=$((G + 1))" "$C/$W.log"
  [ "$(records_held "$F")" -eq "$held" ] ||
    fail "$F holds $(records_held "$F") records, $held before: records of generation $((G + 1)), whose line is not on disk"
  rejoins
}

@test "5: a leader-elect whose generations write fails (ENOSPC) at the end of its fence is refused; the shard goes on without it" {
  rcluster_up
  produce_acked 1 10
  pick_roles
  held=$(records_held "$F")
  fail_file "$F" write ENOSPC generations
  new_generation leader
  failed_closed generations
  placed_elsewhere
  [ "$(records_held "$F")" -eq "$held" ] || fail "$F wrote a start record of a generation it could not record"
  rejoins
}

@test "5: a follower whose ballot write fails (EIO on its fsync) keeps its old promise and is refused; it is never counted in the fence" {
  rcluster_up
  produce_acked 1 10
  pick_roles
  fail_file "$F" fsync EIO ballot
  new_generation follower
  failed_closed ballot
  grep -q "^failfile fsync EIO .*/\.ballot\.tmp$" "$C/ledger.$F" || fail "the fault never struck"
  # W leads generation G+1 only once a second copy promised it durably: L,
  # which is down, so W's fence cannot complete and the control plane gives
  # up on it after a lease. (The old code kept the assignment's promise in
  # memory and answered W's fence with it: W led at once.) Waiting for the
  # control plane's verdict, not for a moment, decides the race either way.
  wait_until 30 grep -q "the fence of generation $((G + 1)) on $W did not complete within a lease" "$C/cp.log"
  run grep -q "msg=leading shard=r_0-[0-9a-f]* generation=$((G + 1))" "$C/$W.log"
  [ "$status" -ne 0 ] || fail "W's fence completed with F's promise, which is not on disk"
  rejoins
}

@test "5: a leader-elect whose ballot write fails (EIO on its fsync) is refused at once; the control plane places the shard on another copy" {
  rcluster_up
  produce_acked 1 10
  pick_roles
  fail_file "$F" fsync EIO ballot
  new_generation leader
  failed_closed ballot
  placed_elsewhere
  run grep -q "msg=leading shard=r_0-[0-9a-f]* generation=" <(tail -n +"$LINES" "$C/$F.log")
  [ "$status" -ne 0 ] || fail "$F led with a ballot that is not on disk"
  rejoins
}

@test "5: a follower whose ballot is renamed into place but whose directory sync fails (EIO) is refused; the ballot on disk is ahead of memory, harmlessly" {
  rcluster_up
  produce_acked 1 10
  pick_roles
  dir=$(realpath "$(shard_dir "$F")")
  echo "fsync EIO $dir" >"$C/rules.$F" # the directory itself: the fsync after a rename
  new_generation follower
  failed_closed ballot
  grep -qx "failfile fsync EIO $dir" "$C/ledger.$F" || fail "the fault never struck"
  # The rename happened: the file names the promise memory gave up. Nobody
  # counted it (the copy answered STORAGE), and the copy is refused until its
  # next start reads it — a promise on disk that was never counted is harmless.
  [ "$(ballot_generation "$F")" -eq "$((G + 1))" ] || fail "the ballot on disk is at $(ballot_generation "$F")"
  rejoins
}
