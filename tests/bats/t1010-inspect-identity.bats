#!/usr/bin/env bats
# t1010 — storage-id and run-state: the identity table of DESIGN.md §3.3 as far
# as it can be reached offline (felix-inspect cannot sync, so the same-boot row
# with a token says "kept if the sync at start succeeds": needs_sync true).

load helpers

# verdict DATADIR — prints "rotate=<bool> needs_sync=<bool> last_run=<name>".
verdict() {
  inspect --json run-state "$1" |
    jget '"rotate=%s needs_sync=%s last_run=%s" % (str(j["next_start"]["rotate"]).lower(), str(j["next_start"]["needs_sync"]).lower(), j["last_run"])'
}

reason() { inspect --json run-state "$1" | jget 'j["next_start"]["reason"]'; }

token() { mkdir -p "$FELIX_RUNTIME_DIR" && : >"$FELIX_RUNTIME_DIR/$(cat "$1"/storage-id).$2.ok"; }

@test "storage-id prints the 32-hex id of the storage-id file" {
  mkdata d orders 0 1 >/dev/null
  run -0 inspect storage-id d
  assert_output "$(cat d/storage-id)"
  assert_output --regexp '^[0-9a-f]{32}$'
}

@test "storage-id --json prints {storage_id}" {
  mkdata d orders 0 1 >/dev/null
  run -0 inspect --json storage-id d
  assert_output "{\"storage_id\":\"$(cat d/storage-id)\"}"
}

@test "storage-id of a directory without storage-id exits 3 with a hint" {
  mkdir d
  run -3 --separate-stderr inspect storage-id d
  assert_equal "$output" ""
  [ "${stderr_lines[0]}" = "felix-inspect: error: d has no storage-id file" ]
  [ "${stderr_lines[1]}" = "felix-inspect: hint: a broker creates it at its first start" ]
}

@test "storage-id that is malformed exits 6 naming the file and byte" {
  mkdata d orders 0 1 >/dev/null
  overwrite d/storage-id 5 X
  run -6 --separate-stderr inspect storage-id d
  assert_equal "$stderr" "felix-inspect: error: d/storage-id: byte 5: expected a lowercase hex character"
  printf '%s\n\n' "$(head -c 32 d/storage-id | tr X a)" >d/storage-id
  run -6 --separate-stderr inspect storage-id d
  assert_equal "$stderr" "felix-inspect: error: d/storage-id: byte 33: unexpected data after the storage id"
}

@test "run-state, no storage-id: created now, no rotation" {
  mkdir -p d/shards
  [ "$(verdict d)" = "rotate=false needs_sync=false last_run=unrecorded" ]
  [ "$(reason d)" = "no storage-id file: the next start creates a new storage id" ]
  run -0 inspect --json run-state d
  [ "$(jget 'j["storage_id"]' <<<"$output")" = null ]
}

@test "run-state, storage-id loaded and no run-state file: rotate" {
  mkdata d orders 0 1 --run-state none >/dev/null
  [ ! -e d/run-state ]
  [ "$(verdict d)" = "rotate=true needs_sync=false last_run=unrecorded" ]
  [ "$(reason d)" = "no run-state file: nothing says the last stop was safe" ]
  run -0 inspect run-state d
  assert_line "last run:     unrecorded (no run-state file)"
  assert_line "next start:   ROTATE the storage id — no run-state file: nothing says the last stop was safe"
}

@test "run-state, stopped cleanly: keep, in every fsync mode" {
  for mode in none periodic on_commit; do
    rm -rf d
    mkdata d orders 0 1 --run-state stopped --fsync-mode "$mode" --boot-id boot-other >/dev/null
    [ "$(verdict d)" = "rotate=false needs_sync=false last_run=stopped" ]
    [ "$(reason d)" = "last run stopped cleanly" ]
  done
}

@test "run-state, crashed under periodic on another boot: rotate" {
  mkdata d orders 0 1 --run-state running --fsync-mode periodic --boot-id boot-other >/dev/null
  [ "$(verdict d)" = "rotate=true needs_sync=false last_run=crashed" ]
  [ "$(reason d)" = "crashed under a relaxed fsync mode on another boot: the page cache went down with the machine" ]
  run -0 inspect run-state d
  assert_line --regexp "^last run:     crashed \(state=running, fsync_mode=periodic, boot boot-other from file, pid [0-9]+, since .*Z\)$"
  assert_line "this boot:    $BOOT_ID, boot token absent: no $W/run/$(cat d/storage-id).$BOOT_ID.ok (runtime directory $W/run; if the broker uses another, set FELIX_RUNTIME_DIR to it)"
  assert_line --partial "next start:   ROTATE the storage id — crashed under a relaxed fsync mode on another boot"
}

@test "run-state, crashed under none on another boot: rotate (none is relaxed too)" {
  mkdata d orders 0 1 --run-state running --fsync-mode none --boot-id boot-other >/dev/null
  [ "$(verdict d)" = "rotate=true needs_sync=false last_run=crashed" ]
}

@test "run-state, crashed under periodic on another boot: a token of the old boot does not help" {
  mkdata d orders 0 1 --run-state running --fsync-mode periodic --boot-id boot-other >/dev/null
  token d boot-other
  [ "$(verdict d)" = "rotate=true needs_sync=false last_run=crashed" ]
}

@test "run-state, crashed under on_commit on another boot: keep" {
  mkdata d orders 0 1 --run-state running --fsync-mode on_commit --boot-id boot-other >/dev/null
  [ "$(verdict d)" = "rotate=false needs_sync=false last_run=crashed" ]
  [ "$(reason d)" = "crashed under on_commit on another boot: everything it held was synced" ]
  run -0 inspect run-state d
  assert_line "next start:   keep the storage id — crashed under on_commit on another boot: everything it held was synced"
}

@test "run-state, crashed on this boot without the boot token: rotate" {
  mkdata d orders 0 1 --run-state running --boot-id "$BOOT_ID" >/dev/null
  [ "$(verdict d)" = "rotate=true needs_sync=false last_run=crashed" ]
  [ "$(reason d)" = "crashed on this same boot, and this boot's token is missing (a sync failed, or the runtime directory was lost)" ]
  run -0 inspect --json run-state d
  [ "$(jget 'j["boot_token_present"]' <<<"$output")" = false ]
  run -0 inspect run-state d
  assert_line "this boot:    $BOOT_ID (same boot as the last run), boot token absent: no $W/run/$(cat d/storage-id).$BOOT_ID.ok (runtime directory $W/run; if the broker uses another, set FELIX_RUNTIME_DIR to it)"
}

@test "run-state, crashed on this boot with the boot token present: keep if the sync succeeds (needs_sync)" {
  mkdata d orders 0 1 --run-state running --boot-id "$BOOT_ID" >/dev/null
  token d "$BOOT_ID"
  [ "$(verdict d)" = "rotate=false needs_sync=true last_run=crashed" ]
  [ "$(reason d)" = "crashed on this same boot with the boot token present: kept if the data-directory sync at start succeeds" ]
  run -0 inspect --json run-state d
  [ "$(jget 'j["boot_token_present"]' <<<"$output")" = true ]
  run -0 inspect run-state d
  assert_line "this boot:    $BOOT_ID (same boot as the last run), boot token present ($W/run/$(cat d/storage-id).$BOOT_ID.ok)"
}

@test "run-state, crashed on this boot under on_commit with the token: keep if the sync succeeds" {
  mkdata d orders 0 1 --run-state running --fsync-mode on_commit --boot-id "$BOOT_ID" >/dev/null
  token d "$BOOT_ID"
  [ "$(verdict d)" = "rotate=false needs_sync=true last_run=crashed" ]
}

@test "run-state, crashed on this boot: a token named for another storage id does not count" {
  mkdata d orders 0 1 --run-state running --boot-id "$BOOT_ID" >/dev/null
  mkdir -p "$FELIX_RUNTIME_DIR"
  : >"$FELIX_RUNTIME_DIR/0123456789abcdef0123456789abcdef.$BOOT_ID.ok"
  [ "$(verdict d)" = "rotate=true needs_sync=false last_run=crashed" ]
}

@test "run-state, crashed on this boot with the runtime directory missing: rotate" {
  mkdata d orders 0 1 --run-state running --boot-id "$BOOT_ID" >/dev/null
  export FELIX_RUNTIME_DIR="$W/no/such/runtime"
  [ "$(verdict d)" = "rotate=true needs_sync=false last_run=crashed" ]
  [ ! -e "$W/no" ]
}

@test "run-state, crashed under a relaxed mode with no boot id recorded: rotate" {
  mkdata d orders 0 1 --run-state running --fsync-mode periodic --boot-id "$BOOT_ID" >/dev/null
  token d "$BOOT_ID"
  sed -i '/^boot_id/d' d/run-state
  [ "$(verdict d)" = "rotate=true needs_sync=false last_run=crashed" ]
  [ "$(reason d)" = "crashed under a relaxed fsync mode and the boot id was not recorded" ]
  run -0 inspect --json run-state d
  [ "$(jget 'j["boot_id"]' <<<"$output")" = null ]
  run -0 inspect run-state d
  assert_line --regexp "^last run:     crashed \(state=running, fsync_mode=periodic, boot unrecorded, pid"
}

@test "run-state, crashed under on_commit with no boot id recorded: decided by this boot's token" {
  mkdata d orders 0 1 --run-state running --fsync-mode on_commit --boot-id "$BOOT_ID" >/dev/null
  sed -i '/^boot_id/d' d/run-state
  [ "$(verdict d)" = "rotate=true needs_sync=false last_run=crashed" ]
  token d "$BOOT_ID"
  [ "$(verdict d)" = "rotate=false needs_sync=true last_run=crashed" ]
}

@test "run-state --json has every fixed field with the recorded values" {
  mkdata d orders 0 1 --run-state running --fsync-mode on_commit --boot-id boot-other >/dev/null
  run -0 inspect --json run-state d
  assert_json
  [ "$(jget 'sorted(j)' <<<"$output")" = '["boot_id", "boot_id_source", "boot_token_path", "boot_token_present", "broker_id", "changed_at", "current_boot_id", "fsync_mode", "if_it_dies_now", "last_run", "locked_by_pid", "missing", "next_start", "pid", "restored_by", "restored_from", "storage_id"]' ]
  [ "$(jget 'j["storage_id"]' <<<"$output")" = "$(cat d/storage-id)" ]
  [ "$(jget 'j["fsync_mode"]' <<<"$output")" = on_commit ]
  [ "$(jget 'j["boot_id"]' <<<"$output")" = boot-other ]
  [ "$(jget 'j["boot_id_source"]' <<<"$output")" = file ]
  [ "$(jget 'j["current_boot_id"]' <<<"$output")" = "$BOOT_ID" ]
  [ "$(jget 'j["pid"]' <<<"$output")" = "$(sed -n 's/^pid=//p' d/run-state)" ]
  since=$(sed -n 's/^since=//p' d/run-state) # to the second; JSON times carry microseconds
  [ "$(jget 'j["changed_at"]' <<<"$output")" = "${since%Z}.000000Z" ] || fail "$output"
  [ "$(jget 'sorted(j["next_start"])' <<<"$output")" = '["needs_sync", "reason", "rotate"]' ]
}

@test "run-state reads the current boot id from the kernel when FELIX_BOOT_ID_FILE is unset" {
  unset FELIX_BOOT_ID_FILE
  mkdata d orders 0 1 >/dev/null
  run -0 inspect --json run-state d
  [ "$(jget 'j["current_boot_id"]' <<<"$output")" = "$(cat /proc/sys/kernel/random/boot_id)" ]
  [ "$(jget 'j["boot_id_source"]' <<<"$output")" = kernel ]
}

@test "run-state that is malformed exits 6 naming the file and the byte of the bad key" {
  mkdata d orders 0 1 >/dev/null
  sed -i 's/^fsync_mode=periodic$/fsync_mode=sometimes/' d/run-state
  run -6 --separate-stderr inspect run-state d
  assert_equal "$output" ""
  # "state=stopped\n" is 14 bytes: fsync_mode starts at byte 14.
  assert_equal "$stderr" "felix-inspect: error: d/run-state: byte 14: fsync_mode=sometimes is not none, periodic or on_commit"
}

@test "run-state with an unknown key exits 6 naming the line's byte" {
  mkdata d orders 0 1 >/dev/null
  printf 'color=blue\n' >>d/run-state
  at=$(($(stat -c %s d/run-state) - 11))
  run -6 --separate-stderr inspect run-state d
  assert_equal "$stderr" "felix-inspect: error: d/run-state: line 7 (byte $at): unknown key 'color'"
}

@test "run-state of a missing directory exits 3" {
  run -3 --separate-stderr inspect run-state nosuch
  assert_equal "$stderr" "felix-inspect: error: data directory nosuch does not exist"
}
