#!/usr/bin/env bats
# t3100 — one JSON vocabulary: every felixctl command's -o json answer, every
# felix-inspect and felix-broker restore-point --json answer, taken from a
# real cluster, validates
# against its schema in docs/json/ (python3-
# jsonschema), and across all of them keys are snake_case, a key name has
# one type, and times are RFC 3339 with microseconds (tests/bats/json_vocab.py).

load cluster

SCHEMAS="$REPO_ROOT/docs/json"
CHECK="$REPO_ROOT/tests/bats/json_vocab.py"

setup_file() {
  export BATS_NO_PARALLELIZE_WITHIN_FILE=true
}

setup() {
  cluster_init "$BATS_TEST_TMPDIR/c"
  W=$BATS_TEST_TMPDIR/w
  mkdir -p "$W/out"
  export FELIX_CONFIG="$W/config"
  python3 -c 'import jsonschema' || fail "python3-jsonschema is not installed (scripts/deps.sh)"
}

teardown() {
  cluster_teardown
  if [ -z "${BATS_TEST_COMPLETED:-}" ]; then tail -n 30 "$C"/*.log >&3 2>/dev/null || true; fi
}

not_alive() { [ "$("$CTL" -o json broker list | jget "[b['alive'] for b in j if b['id'] == '$1'][0]")" = false ]; }

# inspect_save FILE ARGS... — felix-inspect --json ARGS into $W/out/FILE
inspect_save() {
  local file=$1
  shift
  "$FELIX_BUILD/felix-inspect" --json "$@" >"$W/out/$file" || fail "felix-inspect --json $* exited $?"
}

# rp_save FILE ARGS... — felix-broker restore-point ARGS --json into $W/out/FILE
rp_save() {
  local file=$1
  shift
  "$BROKER" restore-point "$@" --json >"$W/out/$file" || fail "restore-point $* --json exited $?"
}

# save NAME ARGS... — felixctl -o json ARGS into $W/out/NAME.json
save() {
  local name=$1
  shift
  "$CTL" -o json "$@" >"$W/out/$name.json" || fail "felixctl -o json $* exited $?"
}

@test "every command's JSON (felixctl's, felix-inspect's, restore-point's) validates against docs/json/COMMAND.json; snake_case, one type per key, RFC 3339 µs times" {
  cluster_up 3
  save stream-create stream create s --shards 2 --replicas 3
  wait_until 60 shard_is s/0 Active
  wait_until 60 shard_is s/1 Active
  seq 1 5 | "$CTL" -o json produce s --shard 0 >"$W/out/produce.jsonl"
  "$CTL" -o json consume s --shard 0 >"$W/out/consume.jsonl"
  save cluster-status cluster status
  save broker-list broker list
  save broker-describe broker describe b1
  save stream-list stream list
  save stream-describe stream describe s
  save shard-list shard list
  save shard-describe shard describe s/0
  save placement-history placement history s/0
  save config-set-context config set-context here --control-plane "$FELIX_CONTROL_PLANE"
  save config-use-context config use-context here
  save config-get-contexts config get-contexts
  save version version
  # felix-inspect's answers: a live broker's directory and its copy of s/0
  local copy
  copy=$(ls -d "$C"/b1/shards/s_0-*)
  inspect_save inspect-summary.json "$C/b1"
  inspect_save inspect-run-state.json run-state "$C/b1"
  inspect_save inspect-storage-id.json storage-id "$C/b1"
  inspect_save inspect-segments.json segments "$copy"
  inspect_save inspect-dump.jsonl dump "$copy/00000000000000000000.log"
  inspect_save inspect-index.json index "$copy/00000000000000000000.index"
  inspect_save inspect-verify.json verify "$C/b1"
  inspect_save inspect-ballot.json ballot "$copy"
  # felix-broker restore-point's: a point of b1's live directory, listed, verified, restored, pruned
  mkdir "$W/points"
  rp_save restore-point-create.json create --data-dir "$C/b1" --to "$W/points/p1"
  rp_save restore-point-list.json list --from "$W/points"
  rp_save restore-point-verify.json verify --from "$W/points/p1"
  rp_save restore-point-restore.json restore --from "$W/points/p1" --data-dir "$W/restored"
  rp_save restore-point-prune.json prune --from "$W/points" --keep 1 --dry-run
  # a control plane that lost its database knows no stream: adopt brings s back
  stop_process cp TERM
  rm -f "$CP_DB" "$CP_DB-wal" "$CP_DB-shm" # its token files stay: the brokers keep theirs
  cp_start
  wait_until 60 brokers_alive 3
  wait_until 60 bash -c "'$CTL' -o json stream adopt s >'$W/out/stream-adopt.json'"
  # a stuck shard for the abandon: every copy of s/1 cut from under its brokers
  stop_process b3 KILL
  wait_until 30 not_alive b3
  save stream-delete stream delete s --yes
  run -0 "$CTL" stream create r --shards 1 --replicas 1
  wait_until 60 shard_is r/0 Active
  seq 1 3 | "$CTL" produce r >/dev/null
  b=$("$CTL" -o json shard describe r/0 | jget 'j["leader"]')
  stop_process "$b" KILL
  rm -rf "${C:?}/$b"
  broker_start "${b#b}"
  wait_until 60 shard_is r/0 NoCaughtUpReplica
  wait_until 30 bash -c "'$CTL' -o json placement abandon r/0 --dry-run >'$W/out/placement-abandon.json'"
  run python3 "$CHECK" "$SCHEMAS" "$W/out"
  [ "$status" -eq 0 ] || fail "$output"
  # each schema but defs.json was used: a command and its schema never drift apart
  for f in "$SCHEMAS"/*.json; do
    n=${f##*/}
    [ "$n" = defs.json ] || [ -e "$W/out/${n%.json}.json" ] || [ -e "$W/out/${n%.json}.jsonl" ] || fail "no answer checked against $n"
  done
}

# Every field name a --help names for -o json is in that command's schema
# (tests/bats/help_json_keys.py): the help texts said id and ts after the
# answers had become event_id and occurred_at (found by helper-28).
@test "every field felixctl --help names for -o json is a field of the command's schema" {
  run -0 python3 "$REPO_ROOT/tests/bats/help_json_keys.py" "$CTL" "$SCHEMAS"
  [[ $output == *" names checked"* ]] || fail "$output"
  # and it goes red: a name the answers do not have
  mkdir -p "$W/schemas"
  cp "$SCHEMAS"/*.json "$W/schemas/"
  python3 - "$W/schemas/stream-delete.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
del s["properties"]["name"]
json.dump(s, open(sys.argv[1], "w"))
PY
  run -1 python3 "$REPO_ROOT/tests/bats/help_json_keys.py" "$CTL" "$W/schemas"
  assert_output --partial "felixctl stream delete --help names 'name' for -o json; docs/json/stream-delete.json has no such field"
}

@test "the vocabulary check goes red: a capitalised key, a key with two types, a time without microseconds or under another key, a schema violation" {
  mkdir -p "$W/bad"
  echo '{"version": "0.1.0", "Active": 1}' >"$W/bad/version.json"
  run -1 python3 "$CHECK" "$SCHEMAS" "$W/bad"
  assert_output --partial "key 'Active' is not snake_case"
  assert_output --partial "Additional properties are not allowed"
  echo '{"version": "2026-12-06T03:47:12.000000Z"}' >"$W/bad/version.json"
  run -1 python3 "$CHECK" "$SCHEMAS" "$W/bad"
  assert_output --partial "version = '2026-12-06T03:47:12.000000Z' is a time under a key not named *_at"
  rm "$W/bad/version.json"
  echo '{"offset": 1, "timestamp": "2026-12-06T03:47:12Z", "payload_b64": "eA=="}' >"$W/bad/consume.jsonl"
  echo '{"stream": "s", "shard": 0, "count": "1", "first_offset": 1, "last_offset": 1}' >"$W/bad/produce.jsonl"
  echo '[{"name": "s", "uuid": "u", "shard_count": 1, "replication_factor": 3, "acks": "quorum", "created_at": "2026-12-06T03:47:12.000000Z", "count": 2}]' >"$W/bad/stream-list.json"
  run -1 python3 "$CHECK" "$SCHEMAS" "$W/bad"
  assert_output --partial "timestamp = '2026-12-06T03:47:12Z' is not RFC 3339 with microseconds"
  assert_output --partial "key 'count' has 2 types"
  echo '{}' >"$W/bad/no-such-command.json"
  run -1 python3 "$CHECK" "$SCHEMAS" "$W/bad"
  assert_output --partial "no schema docs/json/no-such-command.json"
}
