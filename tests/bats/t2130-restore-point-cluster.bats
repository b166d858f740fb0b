#!/usr/bin/env bats
# t2130 — restore points with real brokers (issue 5): a backup taken under
# load holds every record acknowledged before it started and nothing that was
# never written; the stuck-shard recovery end to end (every copy lost, the
# restore point written onto one broker, `placement abandon`, the shard
# serves the restored records). Three brokers, R=3, quorum, the default
# periodic fsync mode, small segments so that sealed segments are hard-linked.

load replication

RP() { "$BROKER" restore-point "$@"; }

setup() {
  cluster_init "$BATS_TEST_TMPDIR/c"
  export FELIX_DURABLE_SEGMENT_BYTES=8192
}

teardown() {
  cluster_teardown
  if [ -z "${BATS_TEST_COMPLETED:-}" ]; then tail -n 30 "$C"/*.log >&3 2>/dev/null || true; fi
}

# restored_records DIR — "offset payload" of every producer record in the
# r/0 copy of data directory DIR, read offline from its segments.
restored_records() {
  local s
  for s in "$1"/shards/r_0-*/*.log; do
    "$FELIX_BUILD/felix-inspect" --json dump "$s"
  done | python3 -c 'import json,sys,base64
for l in sys.stdin:
    j = json.loads(l)
    if j["payload_len"]: print(j["offset"], base64.b64decode(j["payload_b64"]).decode())'
}

# produce_load FROM — batches of 50 records from FROM on, until $C/stop
# exists (at most 400 batches).
produce_load() {
  local i from=$1
  for i in $(seq 0 399); do
    [ -e "$C/stop" ] && return 0
    produce_acked $((from + i * 50)) $((from + i * 50 + 49)) || return 1
  done
}

@test "a backup taken under load holds every record acknowledged before it started, as the cluster serves them" {
  rcluster_up
  produce_acked 1 300
  wait_until 30 hwm_at_least 301
  L=$(leader_of)
  cp "$C/acked" "$C/acked.before"
  produce_load 301 &
  producer=$!
  wait_until 60 hwm_at_least 800 # the backup runs while records arrive
  run -0 RP create --data-dir "$C/$L" --to "$C/point" --json
  summary=$output
  : >"$C/stop"
  wait "$producer"
  [ "$(jget 'j["linked_files"]' <<<"$summary")" -gt 0 ] || fail "no sealed segment was hard-linked: $summary"
  [ "$(jget 'j["broker_id"]' <<<"$summary")" = "$L" ]
  [ "$(jget 'j["broker_was_running"]' <<<"$summary")" = true ]
  acked_readable # the live cluster lost nothing to the backup
  run -0 RP verify --from "$C/point" # the brokers wrote nothing into the linked files
  run -0 RP restore --from "$C/point" --data-dir "$C/restored"
  restored_records "$C/restored" >"$C/restored.txt"
  python3 - "$C/acked.before" "$C/restored.txt" "$C/read.now" <<'PY'
import sys
before = [l.strip() for l in open(sys.argv[1]) if l.strip()]
restored = [l.split(" ", 1) for l in open(sys.argv[2]).read().splitlines() if l]
live = dict(l.split(" ", 1) for l in open(sys.argv[3]).read().splitlines() if l)
vals = [v for _, v in restored]
missing = [a for a in before if a not in vals]
differ = [(o, v, live.get(o)) for o, v in restored if live.get(o) != v]
offsets = [int(o) for o, _ in restored]
if missing or differ or offsets != sorted(offsets) or len(restored) < len(before):
    print("restored", len(restored), "missing", missing[:10], "differ from the cluster", differ[:10], file=sys.stderr)
    sys.exit(1)
PY
}

# abandon_would_choose BROKER — the dry run of abandon picks BROKER's copy.
abandon_would_choose() {
  local out
  out=$("$CTL" -o json placement abandon r/0 --dry-run 2>/dev/null) || return 1
  [ "$(jget 'j["chosen"]["broker"]' <<<"$out")" = "$1" ]
}

@test "every copy lost: restore onto one broker, placement abandon, and the shard serves the restored records" {
  rcluster_up
  produce_acked 1 120
  wait_until 30 hwm_at_least 121
  acked_readable
  cp "$C/read.now" "$C/read.backup"
  L=$(leader_of)
  run -0 RP create --data-dir "$C/$L" --to "$C/point"
  produce_acked 121 160 # acknowledged after the backup: the operator will give these up
  for n in 1 2 3; do stop_process "b$n" KILL; done
  for n in 1 2 3; do rm -rf "${C:?}/b$n"; done # every copy is gone
  run -0 RP restore --from "$C/point" --data-dir "$C/b1"
  new_sid=$(cat "$C/b1/storage-id")
  for n in 1 2 3; do rbroker_start "$n"; done # b2, b3 replaced on empty directories
  wait_until 60 brokers_alive 3
  [ "$("$CTL" -o json broker list | jget "[b['storage_id'] for b in j if b['id'] == 'b1'][0]")" = "$new_sid" ]
  wait_until 60 shard_is r/0 NoCaughtUpReplica
  wait_until 30 grep -q "copy .* of r/0 on b1 joins as a stranger" "$C/cp.log"
  run "$CTL" consume r --shard 0 --count 1
  stuck_not_served_short # exit 1 naming NoCaughtUpReplica, no record printed
  wait_until 30 abandon_would_choose b1
  run -0 "$CTL" -o json placement abandon r/0 --dry-run
  g=$(jget 'j["generation"]' <<<"$output")
  copy=$(jget 'j["chosen"]["expect_copy"]' <<<"$output")
  digest=$(jget 'j["digest"]' <<<"$output")
  run -0 "$CTL" placement abandon r/0 --yes --expect-generation "$g" --expect-copy "$copy" --expect-digest "$digest"
  wait_until 60 shard_is r/0 Active
  # what the backup held is served at the offsets it had; what came after it was given up
  seq 1 120 >"$C/acked"
  cp "$C/read.backup" "$C/seen"
  acked_readable
  [ "$(wc -l <"$C/read.now")" -eq 120 ]
  produce_acked 161 200 # and the shard takes writes again, replicated to the new copies
  acked_readable
  wait_until 60 caught_up b2
  wait_until 60 caught_up b3
}
