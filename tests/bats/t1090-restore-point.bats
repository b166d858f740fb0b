#!/usr/bin/env bats
# t1090 — felix-broker restore-point create|list|verify|restore on data
# directories built by felix-mkdata: the restore point's layout and manifest,
# hard links, verification naming each damaged file, a restore that changes
# nothing when the point is corrupt or the directory is locked, new identities
# after a restore, interrupted creates, the terminal progress line, the
# completions, and no leaks under valgrind. The cluster scenarios are t2130.

load helpers

BROKER="$FELIX_BUILD/felix-broker"
COMP_DIR="$REPO_ROOT/completions"

rp() { "$BROKER" restore-point "$@"; }

# A data directory with two shards of orders (several segments each) and one
# of audit.
make_dir() {
  mkdata "$1" orders 0 400 --segment-bytes 4096 --generation 3 --leader b1 >/dev/null
  mkdata "$1" orders 1 30 >/dev/null
  mkdata "$1" audit 0 5 >/dev/null
}

shard_of() { ls -d "$1"/shards/"$2"_"$3"-*; }

@test "create copies every shard, hard-links sealed segments and writes the manifest last" {
  make_dir d
  mkdir pts
  run -0 rp create --data-dir d --to pts/one
  assert_output --partial "restore point pts/one: 3 shards"
  [ -f pts/one/manifest.json ]
  src=$(shard_of d orders 0)
  dst=pts/one/shards/$(basename "$src")
  [ "$(stat -c %i "$(seg "$src" 0)")" = "$(stat -c %i "$(seg "$dst" 0)")" ] || fail "sealed segment not hard-linked"
  newest=$(ls "$src"/*.log | tail -n 1)
  [ "$(stat -c %i "$newest")" != "$(stat -c %i "$dst/$(basename "$newest")")" ] || fail "the newest segment was linked"
  cmp "$newest" "$dst/$(basename "$newest")"
  [ ! -e "$(seg "$dst" 0 .index)" ]
  for f in ballot generations; do cmp "$src/$f" "$dst/$f"; done
  run -0 jget 'j["version"]' <pts/one/manifest.json
  assert_output 1
  run -0 jget '[(s["stream"], s["shard"], s["end_offset"], s["ballot_generation"]) for s in j["shards"]]' <pts/one/manifest.json
  assert_output '[["audit", 0, 6, 1], ["orders", 0, 401, 3], ["orders", 1, 31, 1]]'
}

@test "create --json and --shard: one shard, the summary names its files and bytes" {
  make_dir d
  run -0 rp create --data-dir d --to one --shard orders/1 --json
  assert_json
  summary=$output
  run -0 jget '[s["stream"] + "/" + str(s["shard"]) for s in j["shards"]]' <<<"$summary"
  assert_output '["orders/1"]'
  bytes=$(jget 'j["bytes"]' <<<"$summary")
  [ "$bytes" -eq "$(find one/shards -type f -printf '%s\n' | paste -sd+ | bc)" ]
  run -0 rp list --from one --json
  [ "$(jget 'j[0]["files"]' <<<"$output")" -eq 3 ]
  [ "$(jget 'j[0]["bytes"]' <<<"$output")" -eq "$bytes" ]
  run -3 rp create --data-dir d --to two --shard nosuch/0
  assert_output --partial "--shard nosuch/0"
  [ ! -e two/manifest.json ]
}

@test "list shows complete points only; an interrupted create is named and started over" {
  make_dir d
  mkdir pts
  rp create --data-dir d --to pts/a >/dev/null
  mkdir -p pts/b/shards/leftover && : >pts/b/.manifest.json.tmp && : >pts/b/.felix-restore-point
  run -0 --separate-stderr rp list --from pts
  assert_line --index 0 --regexp '^PATH +CREATED +BROKER +STORAGE-ID +SHARDS +BYTES$'
  assert_line --index 1 --regexp "^pts/a +[0-9T:Z-]+ +- +$(cat d/storage-id) +3 +[0-9]+$"
  [ "${#lines[@]}" -eq 2 ]
  [[ $stderr == *"pts/b: incomplete (no manifest.json"* ]] || fail "no warning for pts/b: $stderr"
  run -3 rp verify --from pts/b
  assert_output --partial "no manifest.json"
  run -3 rp restore --from pts/b --data-dir r
  [ ! -e r/storage-id ]
  run -0 rp create --data-dir d --to pts/b
  [ ! -e pts/b/shards/leftover ]
  run -0 rp verify --from pts/b
  run -0 rp list --from pts --json
  run -0 jget '[p["path"] for p in j]' <<<"$output"
  assert_output '["pts/a", "pts/b"]'
}

@test "create refuses a complete point, a foreign non-empty --to, and a --to inside the data dir" {
  make_dir d
  rp create --data-dir d --to one >/dev/null
  before=$(snapshot one)
  run -4 rp create --data-dir d --to one
  assert_output --partial "already holds a complete restore point"
  [ "$before" = "$(snapshot one)" ]
  mkdir other && : >other/notes.txt
  run -4 rp create --data-dir d --to other
  assert_output --partial "is not empty and is not an interrupted restore point"
  run -2 rp create --data-dir d --to d/inside
  assert_output --partial "lies inside --data-dir"
  mkdir outer && mv d outer/d && before=$(snapshot outer)
  run -2 rp create --data-dir outer/d --to outer
  assert_output --partial "--data-dir outer/d lies inside --to outer"
  run -3 rp create --data-dir outer/d/shards --to outer/d
  [ "$before" = "$(snapshot outer)" ] || fail "create changed the directory holding the data"
  [ "$before" = "$(snapshot outer)" ] || fail "create changed the directory holding the data"
  mkdir -p lookalike/shards/x
  run -4 rp create --data-dir outer/d --to lookalike # a shards/ without the marker is not a create's
  assert_output --partial "is not empty and is not an interrupted restore point"
  [ -d lookalike/shards/x ]
  run -3 rp create --data-dir nosuch --to x
  assert_output --partial "--data-dir nosuch does not exist"
  mkdir empty
  run -3 rp create --data-dir empty --to y
  assert_output --partial "not a data directory"
  run -3 rp create --data-dir outer/d --to no/parent/here
  assert_output --partial "its parent must exist"
}

@test "create refuses a source segment with damage recovery would not repair, naming file and byte" {
  mkdata d orders 0 400 --segment-bytes 4096 >/dev/null
  s=$(shard_of d orders 0)
  flip_byte "$(seg "$s" 0)" 100
  run -6 rp create --data-dir d --to one
  assert_output --regexp "$(seg "$s" 0): byte [0-9]+: "
  [ ! -e one/manifest.json ]
}

@test "verify names every damaged, missing and unexpected file and exits 6" {
  make_dir d
  rp create --data-dir d --to one >/dev/null
  run -0 rp verify --from one
  assert_output --partial "ok, every file matches its manifest"
  o=one/shards/$(basename "$(shard_of d orders 0)")
  a=one/shards/$(basename "$(shard_of d audit 0)")
  flip_byte "$(seg "$o" 0)" 200
  rm "$a/generations"
  : >"$a/stray"
  run -6 --separate-stderr rp verify --from one
  assert_line --regexp "^$(seg "$o" 0): crc32: CRC-32 [0-9a-f]{8}, the manifest says [0-9a-f]{8}$"
  assert_line --partial "$a/generations: missing: "
  assert_line --partial "$a/stray: unexpected: "
  [[ $stderr == *"does not match its manifest: 3 problems"* ]] || fail "stderr: $stderr"
  run -6 --separate-stderr rp verify --from one --json
  assert_json
  run -0 jget '(j["ok"], sorted(p["kind"] for p in j["problems"]))' <<<"$output"
  assert_output '[false, ["crc32", "missing", "unexpected"]]'
  run -0 rp verify --from one --shard orders/1
}

@test "a shard of more than 4096 segments verifies and restores whole" {
  mkdata d many 0 4200 --segment-bytes 64 >/dev/null
  run -0 rp create --data-dir d --to one
  run -0 rp verify --from one
  run -0 rp restore --from one --data-dir r
  run -0 inspect verify r
  [ "$(ls r/shards/many_0-*/*.log | wc -l)" -gt 4096 ]
}

@test "a manifest of an unknown version or with bad JSON is a clear error" {
  make_dir d
  rp create --data-dir d --to one >/dev/null
  sed -i 's/"version":\t1/"version":\t9/' one/manifest.json
  run -1 rp verify --from one
  assert_output --partial "one/manifest.json: version 9 is not one this felix-broker reads (it reads 1)"
  run -1 rp restore --from one --data-dir r
  [ ! -e r/storage-id ]
  printf '{"format": "felix-restore-point",' >one/manifest.json
  run -6 rp verify --from one
  assert_output --regexp "one/manifest.json: byte [0-9]+: not a JSON object"
}

@test "restore of a corrupt point changes nothing in the data directory" {
  make_dir d
  rp create --data-dir d --to one >/dev/null
  make_dir target
  before=$(snapshot target)
  flip_byte "$(seg "one/shards/$(basename "$(shard_of d orders 1)")" 0)" 40
  run -6 --separate-stderr rp restore --from one --data-dir target
  assert_output --partial ": crc32: "
  [[ $stderr == *"nothing was restored"* ]] || fail "stderr: $stderr"
  [ "$before" = "$(snapshot target)" ] || fail "restore changed the data directory"
}

@test "restore refuses a directory another process holds the lock of, naming its pid" {
  make_dir d
  rp create --data-dir d --to one >/dev/null
  make_dir target
  : >target/lock
  flock target/lock sleep 30 &
  holder=$!
  wait_until 10 flock_held target/lock
  before=$(snapshot target)
  run -4 rp restore --from one --data-dir target
  kill "$holder"
  assert_output --partial "pid"
  [ "$before" = "$(snapshot target)" ]
}

@test "list shows sizes in binary units on a terminal and in bytes otherwise and in JSON" {
  make_dir d
  mkdir pts
  rp create --data-dir d --to pts/one >/dev/null
  bytes=$(rp list --from pts --json | jget 'j[0]["bytes"]')
  [ "$bytes" -gt 1024 ]
  run -0 rp list --from pts
  assert_line --regexp "^pts/one .* $bytes\$"
  run -0 script -qec "$BROKER restore-point list --from pts" /dev/null
  assert_output --regexp 'pts/one .* [0-9.]+ KiB'
  refute_output --partial " $bytes"
}

# Scripts keep the N newest points; --older-than removes only those older
# still. A point being pruned is renamed out of the listing first, and an
# incomplete point (an interrupted create) is never touched.
@test "prune keeps the N newest points, --older-than spares young ones, --dry-run removes nothing" {
  make_dir d
  mkdir pts
  for i in 1 2 3 4; do rp create --data-dir d --to "pts/p$i" >/dev/null; done
  mkdir -p pts/half/shards # an interrupted create
  run -0 rp prune --from pts --keep 2 --dry-run
  assert_line --regexp "^would remove pts/p2 \(created [0-9T:-]+Z, [0-9.]+ KiB\)$"
  assert_line --regexp "^would remove pts/p1 "
  assert_line --regexp "^kept pts/p4 "
  [ -d pts/p1 ] && [ -d pts/p2 ] || fail "--dry-run removed a point"
  run -0 rp prune --from pts --keep 1 --older-than 1d # all younger than a day: none goes
  [ -d pts/p1 ] && [ -d pts/p2 ] && [ -d pts/p3 ] || fail "--older-than removed a young point"
  run -0 --separate-stderr rp prune --from pts --keep 2 --json
  [ "$(jget 'j["kept"]' <<<"$output")" = '["pts/p4", "pts/p3"]' ]
  [ "$(jget 'j["removed"]' <<<"$output")" = '["pts/p2", "pts/p1"]' ]
  [[ $stderr == *"pts/half: incomplete (no manifest.json; an interrupted create), left alone"* ]] || fail "$stderr"
  [ ! -e pts/p1 ] && [ ! -e pts/p2 ] && [ -d pts/p3 ] && [ -d pts/p4 ] && [ -d pts/half ] || fail "$(ls -a pts)"
  [ -z "$(ls -A pts | grep '^\.')" ] || fail "left behind: $(ls -A pts)"
  run -0 rp verify --from pts/p4
  run -0 rp prune --from pts --keep 1 --older-than 0s
  [ ! -e pts/p3 ] && [ -d pts/p4 ] || fail "prune --older-than 0s: $(ls -a pts)"
  for bad in "--keep 0" "--keep x" "--keep 1 --older-than 3w" "--keep 1 --older-than -1d"; do
    run -2 --separate-stderr rp prune --from pts $bad
    [[ $stderr == *"is not"* ]] || fail "$bad: $stderr"
  done
  run -2 --separate-stderr rp prune --from pts
  [[ $stderr == *"--keep is required"* ]] || fail "$stderr"
  [ -d pts/p4 ]
}

# The runbook's cron script (docs/examples/felix-backup.sh), end to end.
@test "the runbook's backup script creates, verifies, copies off and prunes; a failed step prunes nothing" {
  make_dir d
  backup() { FELIX_BROKER="$BROKER" FELIX_DATA_DIR="$W/d" POINTS="$W/local" COPY_TO="$W/off" KEEP=2 NAME=$1 \
    sh "$REPO_ROOT/docs/examples/felix-backup.sh"; }
  for n in p1 p2 p3; do run -0 backup "$n"; done
  assert_line "felix-backup: done: p3, the newest 2 kept in $W/local and $W/off"
  for side in local off; do
    [ "$(ls -A "$side" | tr '\n' ' ')" = "p2 p3 " ] || fail "$side holds: $(ls -A "$side")"
    run -0 rp verify --from "$side/p3"
  done
  diff <(inspect --json dump "$(seg "$(shard_of off/p3 orders 1)" 0)") <(inspect --json dump "$(seg "$(shard_of d orders 1)" 0)")
  : >blocked
  run -1 env FELIX_BROKER="$BROKER" FELIX_DATA_DIR="$W/d" POINTS="$W/local" COPY_TO="$W/blocked/off" KEEP=1 NAME=p4 \
    sh "$REPO_ROOT/docs/examples/felix-backup.sh"
  [ "$(ls -A local | tr '\n' ' ')" = "p2 p3 " ] || fail "a failed run pruned: $(ls -A local)"
  # a step after the point exists fails (the copy's verify, by a broker that
  # refuses exactly that): exit 1 naming it, and neither side pruned
  printf '#!/bin/sh\n[ "$2 $3" = "verify --from" ] && [ "$4" = "%s" ] && { echo "bad copy" >&2; exit 6; }\nexec "%s" "$@"\n' \
    "$W/off/p5" "$BROKER" >flaky-broker
  chmod +x flaky-broker
  run -1 --separate-stderr env FELIX_BROKER="$W/flaky-broker" FELIX_DATA_DIR="$W/d" POINTS="$W/local" COPY_TO="$W/off" KEEP=1 NAME=p5 \
    sh "$REPO_ROOT/docs/examples/felix-backup.sh"
  [[ $stderr == *"felix-backup: FAILED: verify of the copy $W/off/p5"* ]] || fail "$stderr"
  for side in local off; do
    [ "$(ls -A "$side" | tr '\n' ' ')" = "p2 p3 p5 " ] || fail "a failed run pruned $side: $(ls -A "$side")"
  done
  run -0 rp verify --from local/p5
}

@test "restore writes new storage and copy ids, leader=none, and a run-state naming the point" {
  make_dir d
  rp create --data-dir d --to one >/dev/null
  run -0 rp restore --from one --data-dir r --json
  assert_json
  new=$(jget 'j["storage_id"]' <<<"$output")
  [ "$new" = "$(cat r/storage-id)" ]
  [ "$new" != "$(cat d/storage-id)" ]
  run -0 jget 'j["previous_storage_id"]' <<<"$output"
  assert_output null
  for s in r/shards/*; do
    grep -qx "leader=none" "$s/ballot"
    grep -qx "storage_id=$new" "$s/ballot"
    src=d/shards/$(basename "$s")
    [ "$(grep copy_id= "$s/ballot")" != "$(grep copy_id= "$src/ballot")" ]
    grep -qx "$(grep generation= "$src/ballot")" "$s/ballot"
    cmp "$src/generations" "$s/generations"
  done
  # run-state says restored, by which command, and claims no run
  grep -qx "state=restored" r/run-state
  grep -qx "restored_from=$W/one" r/run-state
  grep -qx "restored_by=felix-broker restore-point restore --from one --data-dir r" r/run-state
  run grep -E "^(fsync_mode|pid|boot_id|boot_id_source|broker_id)=" r/run-state
  assert_failure 1
  run -0 inspect verify r
  run -0 inspect run-state r
  assert_line "last run:     none since the restore (state=restored)"
  assert_line --regexp "^restored:     from $W/one at [0-9-]+T[0-9:]+Z by felix-broker restore-point restore --from one --data-dir r: every copy is new to the control plane$"
  assert_line "next start:   keep the storage id — restored from a restore point, no run since: the restore synced every file and its storage id is already new"
  refute_line --partial "fsync_mode"
  run -0 inspect --json run-state r
  for k in fsync_mode pid boot_id broker_id; do
    [ "$(jget "j['$k']" <<<"$output")" = null ] || fail "$k is claimed: $output"
  done
  [ "$(jget 'j["last_run"]' <<<"$output")" = restored ]
  [ "$(jget 'j["restored_by"]' <<<"$output")" = "felix-broker restore-point restore --from one --data-dir r" ]
  # a command longer than the field is cut between UTF-8 characters, marked "..."
  # (two paths one byte apart: one of them puts the cut inside a character)
  e60=$(printf 'é%.0s' $(seq 1 60)) # 120 bytes: under NAME_MAX per component
  for pad in "" x; do
    long="$W/$pad$e60/$e60/$e60/$e60/$e60"
    mkdir -p "$(dirname "$long")"
    run -0 rp restore --from one --data-dir "$long"
    by=$(sed -n 's/^restored_by=//p' "$long/run-state")
    [[ $by == *... ]] || fail "not marked as cut: $by"
    iconv -f UTF-8 -t UTF-8 <<<"$by" >/dev/null || fail "restored_by is not valid UTF-8 (pad '$pad')"
    run -0 inspect --json run-state "$long"
    python3 -c 'import json, sys; json.loads(sys.stdin.buffer.read().decode("utf-8"))' <<<"$output" || fail "invalid JSON/UTF-8: $output"
  done
  # the restored records are the source's, byte for byte
  for s in r/shards/*; do
    diff <(inspect --json dump "$(seg "$s" 0)") <(inspect --json dump "$(seg "d/shards/$(basename "$s")" 0)")
  done
  [ -z "$(ls -A r/shards | grep '^\.')" ] || fail "leftovers: $(ls -A r/shards)"
  mkdir "$W/bad
name" && cp -r one/. "$W/bad
name/"
  run -2 rp restore --from "$W/bad
name" --data-dir r
  assert_output --partial "control character"
  # a second run gives the same shards under yet another storage id
  run -0 rp restore --from one --data-dir r --json
  [ "$(jget 'j["previous_storage_id"]' <<<"$output")" = "$new" ]
  [ "$(cat r/storage-id)" != "$new" ]
  run -0 inspect verify r
}

@test "restore --shard writes only that shard; the other copies of the directory become new copies" {
  make_dir d
  rp create --data-dir d --to one >/dev/null
  make_dir target
  audit_ballot=$(cat "$(shard_of target audit 0)/ballot")
  run -0 rp restore --from one --data-dir target --shard orders/1
  assert_output --partial "restored 1 shard"
  [ "$(cat "$(shard_of target audit 0)/ballot")" = "$audit_ballot" ]
  run ! grep -qx "storage_id=$(cat target/storage-id)" "$(shard_of target audit 0)/ballot"
  grep -qx "storage_id=$(cat target/storage-id)" "$(shard_of target orders 1)/ballot"
  run -3 rp restore --from one --data-dir target --shard nosuch/3
  assert_output --partial "--shard nosuch/3"
}

@test "a full disk: create takes back what it wrote, restore names the file and leaves a directory that rotates its id" {
  make_dir d
  rp create --data-dir d --to one >/dev/null
  make_dir target
  : >full
  full() { FELIX_FAULTS_ENOSPC_IF="$W/full" FELIX_FAULTS_ENOSPC_MIN=100 LD_PRELOAD="$FELIX_BUILD/faults/libfelix_faults.so" "$@"; }
  run -1 full "$BROKER" restore-point create --data-dir d --to two
  assert_output --regexp "write two/shards/[a-z_0-9-]+/[0-9]+\.log at byte 0: No space left on device"
  [ ! -e two ] || fail "create left $(ls -R two)"
  ballots=$(cat target/shards/*/ballot)
  run -1 full "$BROKER" restore-point restore --from one --data-dir target
  assert_output --regexp "write target/shards/\.new-[a-z_0-9-]+/[0-9]+\.log at byte 0: No space left on device"
  assert_output --partial "puts every old copy back, and the directory gets a new storage id"
  [ "$(ls -A target/shards | grep -c '^\.')" -eq 0 ] || fail "a staging directory was left: $(ls -A target/shards)"
  [ "$(cat target/shards/*/ballot)" = "$ballots" ]
  run -0 inspect run-state target
  assert_output --partial "next start:   ROTATE"
  run -0 rp restore --from one --data-dir target # once there is room, a second run completes it
  run -0 inspect verify target
}

@test "felix-inspect names what an interrupted restore left, and the broker's next start would settle" {
  make_dir d
  o=$(basename "$(shard_of d orders 0)")
  mv "d/shards/$o" "d/shards/.replaced-$o"
  printf 'storage_id=%s\ncopy=%s existed\n' 0123456789abcdef0123456789abcdef "$o" >d/shards/.restore-journal
  run -0 inspect d
  assert_line "leftover:     shards/.replaced-$o: a copy a restore moved aside: the next start removes it or puts it back"
  assert_line --partial "leftover:     shards/.restore-journal: journal of a restore that stopped midway"
  run -0 inspect --json d
  [ "$(jget 'sorted(j["leftovers"])' <<<"$output")" = "[\".replaced-$o\", \".restore-journal\"]" ]
  run -4 rp create --data-dir d --to one
  assert_output --partial "a restore stopped midway here"
}

@test "progress goes to stderr on a terminal only" {
  mkdata d orders 0 3000 --payload-size 200 >/dev/null
  run -0 --separate-stderr rp create --data-dir d --to quiet
  [ -z "$stderr" ] || fail "stderr not empty without a terminal: $stderr"
  run -0 script -qec "$BROKER restore-point create --data-dir d --to loud" /dev/null
  assert_output --regexp "create: [0-9.]+ [KM]i?B / [0-9.]+ [KM]i?B +100% +[0-9.]+ [KMG]?i?B/s +ETA 0s"
  run -0 script -qec "$BROKER restore-point verify --from loud" /dev/null
  assert_output --partial "verify: "
  assert_output --partial "ETA"
}

@test "usage: --help, unknown commands and flags, missing values (exit 2)" {
  run -0 rp --help
  for w in create list verify restore --data-dir --to --from --shard --json; do assert_output --partial -- "$w"; done
  run -0 rp create --help
  assert_output --partial "usage: felix-broker restore-point create"
  run -2 rp
  run -2 rp frobnicate
  assert_output --partial "unknown restore-point command 'frobnicate'"
  run -2 rp create --to x
  assert_output --partial "--data-dir is required"
  run -2 rp list
  assert_output --partial "--from is required"
  run -2 rp list --from x --shard a/1
  assert_output --partial "unknown option --shard for this command"
  run -2 rp verify --from x --shard orders
  assert_output --partial "--shard: 'orders' is not STREAM/N"
  run -2 rp restore --from
  assert_output --partial "--from needs a value"
  FELIX_DATA_DIR=nowhere run -3 rp create --to x
  assert_output --partial "--data-dir nowhere does not exist"
}

@test "bash, zsh and fish complete restore-point commands, flags and --shard names" {
  make_dir d
  run -0 bash -c "source '$COMP_DIR/felix-broker.bash'; COMP_WORDS=(felix-broker restore-point ''); COMP_CWORD=2; _felix_broker; printf '%s\n' \"\${COMPREPLY[@]}\""
  for w in create list verify restore prune; do assert_line "$w"; done
  run -0 bash -c "source '$COMP_DIR/felix-broker.bash'; COMP_WORDS=(felix-broker restore-point prune --); COMP_CWORD=3; _felix_broker; printf '%s\n' \"\${COMPREPLY[@]}\""
  for w in --from --keep --older-than --dry-run --json --help; do assert_line -- "$w"; done
  run -0 bash -c "source '$COMP_DIR/felix-broker.bash'; COMP_WORDS=(felix-broker restore-point restore --); COMP_CWORD=3; _felix_broker; printf '%s\n' \"\${COMPREPLY[@]}\""
  for w in --from --data-dir --shard --json --help; do assert_line -- "$w"; done
  refute_line -- --to
  run -0 bash -c "source '$COMP_DIR/felix-broker.bash'; COMP_WORDS=(felix-broker restore-point create --data-dir d --shard o); COMP_CWORD=6; _felix_broker; printf '%s\n' \"\${COMPREPLY[@]}\""
  assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "orders/0 orders/1 "
  run -0 zsh -n "$COMP_DIR/_felix-broker"
  for w in restore-point create list verify restore prune --to --from --shard --json --keep --older-than --dry-run _felix_broker_shards; do
    grep -qF -- "$w" "$COMP_DIR/_felix-broker" || fail "_felix-broker does not mention $w"
  done
  run -0 fish --no-config -c "source '$COMP_DIR/felix-broker.fish'; complete -C 'felix-broker restore-point '"
  for w in create list verify restore prune; do assert_line --partial "$w"; done
  run -0 fish --no-config -c "source '$COMP_DIR/felix-broker.fish'; complete -C 'felix-broker restore-point prune --'"
  for w in --keep --older-than --dry-run; do assert_line --partial -- "$w"; done
  run -0 fish --no-config -c "source '$COMP_DIR/felix-broker.fish'; complete -C 'felix-broker restore-point verify --from d --shard '"
  assert_line --partial "orders/0"
  assert_line --partial "audit/0"
}

@test "valgrind: create, list, verify and restore leak nothing" {
  command -v valgrind >/dev/null || fail "valgrind is not installed (make deps)"
  make_dir d
  vg() { valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=99 "$BROKER" restore-point "$@"; }
  run -0 vg create --data-dir d --to one
  run -0 vg list --from . --json
  run -0 vg verify --from one
  run -0 vg restore --from one --data-dir r
  flip_byte "$(seg "one/shards/$(basename "$(shard_of d orders 1)")" 0)" 40
  run -6 vg verify --from one --json
  run -6 vg restore --from one --data-dir r
}
