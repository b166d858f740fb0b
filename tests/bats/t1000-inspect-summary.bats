#!/usr/bin/env bats
# t1000 — felix-inspect DATADIR: the one-screen summary, human and --json.

load helpers

teardown() {
  # The lock holder of the lock test: flock(1) and the sleep it runs.
  if [ -n "${LOCK_PID:-}" ]; then
    kill $(cat "/proc/$LOCK_PID/task/$LOCK_PID/children" 2>/dev/null) "$LOCK_PID" 2>/dev/null || true
    wait "$LOCK_PID" 2>/dev/null || true
  fi
}

@test "summary of a clean directory names storage id, last run, verdict, lock, shard and 0 problems" {
  shard=$(mkdata d orders 3 20 --segment-bytes 512)
  sid=$(cat d/storage-id)
  run -0 inspect d
  assert_line "data directory d"
  assert_line "storage id:   $sid"
  assert_line --regexp "^last run:     stopped \(state=stopped, fsync_mode=periodic, boot $BOOT_ID from file, pid [0-9]+, since [0-9-]+T[0-9:]+Z\)$"
  assert_line "this boot:    $BOOT_ID (same boot as the last run), boot token absent: no $W/run/$sid.$BOOT_ID.ok (runtime directory $W/run; if the broker uses another, set FELIX_RUNTIME_DIR to it)"
  assert_line "next start:   keep the storage id — last run stopped cleanly"
  assert_line "lock:         not held"
  assert_line "shards:       1"
  assert_line "  $(basename "$shard")"
  assert_line "    ballot: generation 1, no leader"
  assert_line "    generations: 1@0"
  assert_line --regexp "^    [0-9]+ segment\(s\), offsets \[0, 21\), 21 record\(s\), [0-9]+ bytes$"
  assert_line "problems:     0"
}

@test "summary --json has the run-state fields, locked_by_pid null, every shard and problem_count 0" {
  shard=$(mkdata d orders 3 20 --segment-bytes 512)
  run -0 inspect --json d
  assert_json
  [ "$(jget 'j["storage_id"]' <<<"$output")" = "$(cat d/storage-id)" ]
  [ "$(jget 'j["last_run"]' <<<"$output")" = stopped ]
  [ "$(jget 'j["fsync_mode"]' <<<"$output")" = periodic ]
  [ "$(jget 'j["boot_id"]' <<<"$output")" = "$BOOT_ID" ]
  [ "$(jget 'j["current_boot_id"]' <<<"$output")" = "$BOOT_ID" ]
  [ "$(jget 'j["next_start"]["rotate"]' <<<"$output")" = false ]
  [ "$(jget 'j["next_start"]["reason"]' <<<"$output")" = "last run stopped cleanly" ]
  [ "$(jget 'j["locked_by_pid"]' <<<"$output")" = null ]
  [ "$(jget 'j["problem_count"]' <<<"$output")" = 0 ]
  [ "$(jget 'len(j["shards"])' <<<"$output")" = 1 ]
  [ "$(jget 'j["shards"][0]["dir"]' <<<"$output")" = "$(basename "$shard")" ]
  [ "$(jget 'j["shards"][0]["stream"]' <<<"$output")" = orders ]
  [ "$(jget 'j["shards"][0]["shard"]' <<<"$output")" = 3 ]
  [ "$(jget 'j["shards"][0]["start_offset"]' <<<"$output")" = 0 ]
  [ "$(jget 'j["shards"][0]["end_offset"]' <<<"$output")" = 21 ]
  [ "$(jget 'j["shards"][0]["records"]' <<<"$output")" = 21 ]
  [ "$(jget 'j["shards"][0]["segment_count"]' <<<"$output")" = "$(ls "$shard"/*.log | wc -l)" ]
  [ "$(jget 'j["shards"][0]["bytes"]' <<<"$output")" = "$(cat "$shard"/*.log | wc -c)" ]
  [ "$(jget 'j["shards"][0]["ballot"]["generation"]' <<<"$output")" = 1 ]
  [ "$(jget 'j["shards"][0]["ballot"]["leader"]' <<<"$output")" = null ]
  [ "$(jget 'j["shards"][0]["generations"]' <<<"$output")" = '[{"generation": 1, "start_offset": 0}]' ]
  [ "$(jget 'j["shards"][0]["problems"]' <<<"$output")" = '[]' ]
}

@test "summary --json writes a generation above 2^53 exactly (a double would print 9007199254740992)" {
  mkdata d orders 0 5 --generation 9007199254740993 >/dev/null
  run -0 inspect --json d
  assert_json
  [ "$(jget 'j["shards"][0]["ballot"]["generation"]' <<<"$output")" = 9007199254740993 ] || fail "$output"
  [ "$(jget 'j["shards"][0]["generations"][0]["generation"]' <<<"$output")" = 9007199254740993 ] || fail "$output"
  [[ $output != *9007199254740992* ]] || fail "rounded: $output"
  run -0 inspect d
  assert_line "    ballot: generation 9007199254740993, no leader"
}

@test "summary lists every shard of the directory, sorted by directory name" {
  a=$(mkdata d payments 1 3)
  b=$(mkdata d orders 0 5)
  c=$(mkdata d orders 1 7)
  run -0 inspect d
  assert_line "shards:       3"
  [ "$(grep -E '^  [a-z]' <<<"$output" | sed 's/^  //' | tr '\n' ' ')" = \
    "$(printf '%s\n' "$(basename "$b")" "$(basename "$c")" "$(basename "$a")" | LC_ALL=C sort | tr '\n' ' ')" ]
  run -0 inspect --json d
  [ "$(jget '[s["records"] for s in j["shards"]]' <<<"$output")" = "[6, 8, 4]" ]
  [ "$(jget '[s["stream"] + "/" + str(s["shard"]) for s in j["shards"]]' <<<"$output")" = '["orders/0", "orders/1", "payments/1"]' ]
}

@test "a directory with none of a data directory's files is not one: exit 3, named, with a hint" {
  mkdir d
  echo notes >d/README
  for args in "d" "run-state d" "--json d"; do
    run -3 --separate-stderr inspect $args
    assert_equal "$output" ""
    [ "${stderr_lines[0]}" = "felix-inspect: error: d is not a Felix data directory: it has no storage-id, run-state or shards/" ] ||
      fail "inspect $args: ${stderr_lines[*]}"
    [ "${stderr_lines[1]}" = "felix-inspect: hint: give the directory a broker runs on (its --data-dir or FELIX_DATA_DIR)" ]
  done
  run -3 inspect /tmp
}

@test "a partly made data directory lists what is missing and says what the next start does" {
  mkdata d orders 0 2 >/dev/null
  rm d/storage-id d/run-state
  run -0 inspect d
  assert_line "storage id:   (none: created at next start)"
  assert_line "missing:      storage-id, run-state (a broker's start creates each; felix-storage(5))"
  assert_line "last run:     unrecorded (no run-state file)"
  assert_line "next start:   keep the storage id — no storage-id file: the next start creates a new storage id"
  assert_line "shards:       1"
  run -0 inspect --json d
  [ "$(jget 'j["storage_id"]' <<<"$output")" = null ]
  [ "$(jget 'j["missing"]' <<<"$output")" = '["storage-id", "run-state"]' ]
  mkdata e orders 0 2 >/dev/null
  run -0 inspect --json e
  [ "$(jget 'j["missing"]' <<<"$output")" = '[]' ]
  run -0 inspect e
  refute_line --partial "missing:"
}

@test "summary of a damaged shard exits 6 and prints a PROBLEM line with file and byte" {
  shard=$(mkdata d orders 0 20 --segment-bytes 512)
  rm "$(seg "$shard" 0 .index)"
  run -6 inspect d
  assert_line "    PROBLEM $(seg "$shard" 0 .index): byte 0: missing_index (repaired at next start): index file missing; rebuilt at next start"
  assert_line "problems:     1 (felix-inspect verify shows each one)"
  run -6 inspect --json d
  [ "$(jget 'j["problem_count"]' <<<"$output")" = 1 ]
  [ "$(jget 'j["shards"][0]["problems"][0]["kind"]' <<<"$output")" = missing_index ]
  [ "$(jget 'j["shards"][0]["problems"][0]["repairable"]' <<<"$output")" = true ]
}

@test "summary notes a shard whose ballot was made under another storage id" {
  mkdata a orders 0 2 >/dev/null
  mkdata d payments 0 2 >/dev/null
  cp -a a/shards/orders_0-* d/shards/
  run -0 inspect d
  assert_line "    note: the ballot's storage id differs from the directory's: the next start makes a new copy id"
  [ "$(grep -c "note: the ballot's storage id differs" <<<"$output")" -eq 1 ]
}

@test "summary with a malformed run-state exits 6 naming the file and byte, with a verify hint" {
  mkdata d orders 0 2 >/dev/null
  sed -i 's/^state=stopped$/state=paused/' d/run-state
  run -6 --separate-stderr inspect d
  assert_equal "$output" ""
  [ "${stderr_lines[0]}" = "felix-inspect: error: d/run-state: byte 0: state=paused is not running, stopped or restored" ]
  [ "${stderr_lines[1]}" = "felix-inspect: hint: felix-inspect verify DATADIR lists every problem" ]
}

@test "summary names the lock holder's pid, and a holder run-state does not name is not called the broker" {
  mkdata d orders 0 2 >/dev/null
  flock d/lock sleep 30 >/dev/null 2>&1 3>&- &
  LOCK_PID=$!
  wait_until 5 flock_held d/lock
  run -0 inspect d
  assert_line "lock:         held by pid $LOCK_PID (what you see may change under you)"
  assert_line "in use:       pid $LOCK_PID holds the directory lock, but run-state names no run of it (a restore, or a start before it wrote run-state)"
  assert_line --partial "next start:   keep the storage id"
  run -0 inspect --json d
  [ "$(jget 'j["locked_by_pid"]' <<<"$output")" = "$LOCK_PID" ]
  [ "$(jget 'j["last_run"]' <<<"$output")" = stopped ]
}

# running_dir [PREFIX...] — d's run-state says running, and flock (run under
# PREFIX, e.g. in another pid namespace; LOCK_PID) holds its lock.
running_dir() {
  mkdata d orders 0 2 --run-state running >/dev/null
  "$@" flock d/lock sleep 30 >/dev/null 2>&1 3>&- &
  LOCK_PID=$!
  wait_until 5 flock_held d/lock
}

# A broker's own run: run-state says running with the pid that holds the
# lock. (t2010 does this with a real broker; here the holder is flock, and
# run-state is made to name it.)
@test "summary of a directory whose run is alive says running now and what a death would decide" {
  running_dir
  sed -i "s/^pid=.*/pid=$LOCK_PID/" d/run-state
  sid=$(cat d/storage-id)
  mkdir -p "$FELIX_RUNTIME_DIR" && : >"$FELIX_RUNTIME_DIR/$sid.$BOOT_ID.ok"
  run -0 inspect d
  assert_line --regexp "^last run:     running now \(pid $LOCK_PID, since [0-9-]+T[0-9:]+Z, fsync_mode=periodic, boot $BOOT_ID from file\)$"
  refute_line --partial "last run:     crashed"
  refute_line --partial "next start:"
  assert_line "if it dies:   with the machine up: keep the storage id — crashed on this same boot with the boot token present: kept if the data-directory sync at start succeeds"
  assert_line "              with the machine down: ROTATE the storage id — crashed under a relaxed fsync mode on another boot: the page cache went down with the machine"
  assert_line "lock:         held by the broker running now, pid $LOCK_PID (what you see may change under you)"
  run -0 inspect --json d
  [ "$(jget 'j["last_run"]' <<<"$output")" = running ]
  [ "$(jget 'j["next_start"]' <<<"$output")" = null ]
  [ "$(jget 'j["if_it_dies_now"]["machine_up"]["rotate"]' <<<"$output")" = false ]
  [ "$(jget 'j["if_it_dies_now"]["machine_up"]["needs_sync"]' <<<"$output")" = true ]
  [ "$(jget 'j["if_it_dies_now"]["machine_down"]["rotate"]' <<<"$output")" = true ]
  # without its boot token, a death with the machine up rotates too
  rm "$FELIX_RUNTIME_DIR/$sid.$BOOT_ID.ok"
  run -0 inspect d
  assert_line "if it dies:   with the machine up: ROTATE the storage id — crashed on this same boot, and this boot's token is missing (a sync failed, or the runtime directory was lost)"
  # on_commit: a death with the machine down keeps it (everything was synced)
  sed -i "s/^fsync_mode=.*/fsync_mode=on_commit/" d/run-state
  run -0 inspect --json d
  [ "$(jget 'j["if_it_dies_now"]["machine_down"]["rotate"]' <<<"$output")" = false ]
  # the holder gone, the same file is a crash
  kill $(cat "/proc/$LOCK_PID/task/$LOCK_PID/children" 2>/dev/null) "$LOCK_PID"
  wait "$LOCK_PID" 2>/dev/null || true
  LOCK_PID=
  wait_until 5 bash -c "! grep -q 'FLOCK .*:$(stat -c %i d/lock) ' /proc/locks"
  run -0 inspect d
  assert_line --regexp "^last run:     crashed \(state=running, fsync_mode=on_commit"
  assert_line --partial "next start:   ROTATE the storage id"
}

# A broker in a container is pid 1 there and another pid on the host; run-
# state has the pid it saw. From the host, the holder's own pid (NSpid)
# names the run: running now, not "crashed" beside a foreign lock holder.
@test "from the host, a run in a container's pid namespace is running now, with both pids" {
  running_dir unshare --pid --fork --kill-child
  sed -i "s/^pid=.*/pid=1/" d/run-state # flock is pid 1 in its namespace
  run -0 inspect --json d
  [ "$(jget 'j["last_run"]' <<<"$output")" = running ] || fail "$output"
  host_pid=$(jget 'j["locked_by_pid"]' <<<"$output")
  [ "$host_pid" -gt 1 ] || fail "locked_by_pid $host_pid"
  run -0 inspect d
  assert_line --regexp "^last run:     running now \(pid 1 in its pid namespace, $host_pid here; since [0-9-]+T[0-9:]+Z, fsync_mode=periodic, boot $BOOT_ID from file\)$"
  refute_line --partial "in use:"
}

# From inside a container, /proc/locks lists only the locks its own
# processes hold: a broker alive on the host is unseen. felix-inspect says it
# cannot tell, and what a start would decide if the run crashed.
@test "from a container's pid namespace, a run nobody there holds the lock of is unknown, not crashed" {
  running_dir
  sed -i "s/^pid=.*/pid=$LOCK_PID/" d/run-state
  run -0 unshare --pid --fork --mount-proc "$INSPECT" d
  assert_line --regexp "^last run:     unknown: run-state says running \(pid $LOCK_PID, since [0-9-]+T[0-9:]+Z, boot $BOOT_ID from file\),$"
  assert_line --partial "it crashed, or it runs"
  assert_line --partial "if crashed:   ROTATE the storage id — crashed on this same boot, and this boot's token is missing"
  assert_line "lock:         not held by any process this pid namespace sees"
  refute_line --partial "last run:     crashed"
  run -0 unshare --pid --fork --mount-proc "$INSPECT" --json run-state d
  [ "$(jget 'j["last_run"]' <<<"$output")" = unknown ] || fail "$output"
  # on the host, where every lock is seen, it is running
  run -0 inspect --json run-state d
  [ "$(jget 'j["last_run"]' <<<"$output")" = running ] || fail "$output"
}

@test "summary says the lock is not held when the lock file exists but nobody holds it" {
  mkdata d orders 0 2 >/dev/null
  : >d/lock
  run -0 inspect d
  assert_line "lock:         not held"
  run -0 inspect --json d
  [ "$(jget 'j["locked_by_pid"]' <<<"$output")" = null ]
}
