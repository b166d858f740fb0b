# replication.bash — helpers for the replication scenarios: three brokers
# with the power-cut recorder (tests/faults/), one "machine" (boot id file,
# ledger) per broker, an R=3 stream, and the checker of acknowledged records.

load cluster

FAULTS="$FELIX_BUILD/faults"

# rbroker_start N [flags] — broker bN under the sync recorder, on its own
# machine; while $C/rules.bN exists, its lines fail chosen files' calls
# (FELIX_FAULTS_FILE_RULES), and while $C/slow.bN exists, each of its syncs
# waits up to 60 s, a slow disk (FELIX_FAULTS_SLOW_SYNC_IF; tests/faults/README.md).
rbroker_start() {
  local n=$1
  shift
  [ -f "$C/boot_id.b$n" ] || echo "boot-$RANDOM-b$n" >"$C/boot_id.b$n"
  [ -f "$C/ledger.b$n" ] || : >"$C/ledger.b$n"
  FELIX_BOOT_ID_FILE="$C/boot_id.b$n" FELIX_FAULTS_LEDGER="$C/ledger.b$n" FELIX_FAULTS_ROOT="$C/b$n" \
    FELIX_FAULTS_FILE_RULES="$C/rules.b$n" FELIX_FAULTS_SLOW_SYNC_IF="$C/slow.b$n" FELIX_FAULTS_SLOW_SYNC_MS=60000 \
    LD_PRELOAD="$FAULTS/libfelix_faults.so" broker_start "$n" "$@"
}

# rcluster_up [flags for every broker] — control plane, b1..b3, stream r (1 shard, R=3).
rcluster_up() {
  cp_start
  local i
  for i in 1 2 3; do rbroker_start "$i" "$@"; done
  wait_until 60 brokers_alive 3
  run -0 "$CTL" stream create r --shards 1 --replicas 3
  wait_until 60 shard_is r/0 Active
  : >"$C/acked"
  : >"$C/seen"
}

# copy_holds BROKER N — its copy of r/0 holds exactly N producer records, read
# offline from its segment (generation-start markers are not counted).
copy_holds() {
  local seg
  seg=$(ls "$C/$1"/shards/r_0-*/00000000000000000000.log) || return 1
  [ "$("$FELIX_BUILD/felix-inspect" --json dump "$seg" | grep -c '"payload_len":[1-9]')" -eq "$2" ]
}

leader_of() { "$CTL" -o json shard describe r/0 | jget 'j["leader"] or ""'; }
others_than() { local f; for f in b1 b2 b3; do [ "$f" = "$1" ] || echo "$f"; done; }
replica_field() { "$CTL" -o json shard describe r/0 | jget "[x['$2'] for x in j['replicas'] if x['broker'] == '$1'][0]"; }
caught_up() { [ "$(replica_field "$1" caught_up)" = true ]; }
is_stranger() { [ "$(replica_field "$1" stranger)" = true ]; }
shard_hwm() { "$CTL" -o json shard describe r/0 | jget 'j["hwm"]'; }
hwm_at_least() { [ "$(shard_hwm)" -ge "$1" ]; }
not_alive() { [ "$("$CTL" -o json broker list | jget "[b['alive'] for b in j if b['id'] == '$1'][0]")" = false ]; }
pause() { kill -STOP "$(pid_of "$1")"; }
resume() { kill -CONT "$(pid_of "$1")"; }
# log_since LINE FILE PATTERN — PATTERN is in FILE from line LINE on (this start's lines).
log_since() { tail -n +"$1" "$2" | grep -q "$3"; }
leader_is_not() { local l; l=$(leader_of); [ -n "$l" ] && [ "$l" != "$1" ]; }

# stuck_not_served_short — after `run "$CTL" consume r ...` on a shard no copy
# can serve: exit 1 with the NoCaughtUpReplica error, and no record printed
# (any failure used to pass, a crash or an unreachable broker included).
stuck_not_served_short() {
  [ "$status" -eq 1 ] || fail "consume exited $status (1 expected): $output"
  [[ $output == *"shard r/0 is NoCaughtUpReplica: no copy can serve it"* ]] || fail "not the NoCaughtUpReplica error: $output"
  [[ $output != *'"offset"'* ]] || fail "a record was served: $output"
}

# power_cut N — machine N loses power: SIGKILL, every unsynced byte of its
# data directory is lost, every directory entry no directory sync covered is
# undone, and it boots with a new boot id (tests/faults/README.md). With
# CUT_SEED set, the cut is the seeded one a disk could leave instead of the
# worst case (part of the unsynced tail written back, from a page boundary).
power_cut() {
  stop_process "b$1" KILL
  cut_power "b$1" "$C/b$1" --boot-id-file "$C/boot_id.b$1" ${CUT_SEED:+--seed "$CUT_SEED"}
}

# promise_on_disk BROKER G — after a power cut, BROKER's copy of r/0 still
# holds on disk the promise (ballot) and the generation history it had made
# for generation G: both are written through `.NAME.tmp`, synced, renamed and
# their directory synced, so a cut can undo neither.
promise_on_disk() {
  local out
  out=$("$FELIX_BUILD/felix-inspect" --json ballot "$C/$1"/shards/r_0-*) || fail "no readable ballot on $1: $out"
  [ "$(echo "$out" | jget 'j["generation"]')" -ge "$2" ] || fail "$1's ballot went back below generation $2: $out"
  [ "$(echo "$out" | jget 'max(x["generation"] for x in j["generations"])')" -ge "$2" ] ||
    fail "$1's generation history went back below generation $2: $out"
}

# cp_own_disk — before rcluster_up: the control plane's database on a disk
# of its own ($C/cp) under the sync recorder, so that cp_power_cut can cut it.
cp_own_disk() {
  CP_DB=$C/cp/cp.db
  CP_LEDGER=$C/ledger.cp
  mkdir -p "$C/cp"
  : >"$CP_LEDGER"
  export FELIX_TOKEN_FILE=$CP_DB.admin-token
}

# cp_power_cut — the control plane's machine loses power (cp_own_disk).
cp_power_cut() {
  stop_process cp KILL
  cut_power cp "$C/cp"
}

# cut_power NAME ROOT [powercut flags] — after NAME was killed: asserts that
# its ledger saw syncs (a bypass of libc could not pass silently), cuts ROOT.
# What survives is durable: the next run's ledger starts with a `sync` record
# of every file left (its size), so a second cut keeps them (a cut during the
# next start's recovery loses only what that start wrote). The keep area holds
# the inodes of deleted files until the cut, so none is reused within a run.
cut_power() {
  local name=$1 root=$2
  shift 2
  local base=0 # the baseline records an earlier cut wrote are not this run's syncs
  [ -f "$C/ledger.$name.base" ] && base=$(cat "$C/ledger.$name.base")
  [ "$(tail -n +$((base + 1)) "$C/ledger.$name" | grep -c '^sync \|^dirsync \|^syncfs \|^slow ')" -gt 0 ] ||
    fail "the ledger of $name saw no sync"
  sh "$REPO_ROOT/tests/faults/cut-power.sh" "$C/ledger.$name" "$root" "$@" >"$C/ledger.$name.base" 2>>"$C/powercut.log"
}

# produce_acked FROM TO [ACKS] — publishes FROM..TO, one record each; appends to
# $C/acked exactly the records the broker acknowledged (felixctl reports how
# many of the lines were, in order, even when it fails).
produce_acked() {
  local out n
  out=$(seq "$1" "$2" | "$CTL" -o json produce r --shard 0 ${3:+--acks "$3"} 2>>"$C/produce.log") || true
  n=$(echo "$out" | jget 'sum(x["count"] for x in [j])' 2>/dev/null || echo 0)
  seq "$1" "$2" | head -n "${n:-0}" >>"$C/acked"
  [ "${n:-0}" -eq $(($2 - $1 + 1)) ]
}

# read_all — offset and payload of every record consumers can read now; fails
# (its error in $C/consume.log) when the consume itself fails.
read_all() {
  "$CTL" -o json consume r --shard 0 >"$C/consume.out" 2>>"$C/consume.log" || return 1
  python3 -c 'import json,sys,base64
for l in open(sys.argv[1]):
    j = json.loads(l); print(j["offset"], base64.b64decode(j["payload_b64"]).decode())' "$C/consume.out"
}

# check_read — compares $C/read.now with what was acknowledged and seen:
# prints what is missing, duplicated or moved and fails on any of them.
check_read() {
  python3 - "$C/acked" "$C/seen" "$C/read.now" <<'PY'
import sys
acked = [l.strip() for l in open(sys.argv[1]) if l.strip()]
seen = dict(l.split(" ", 1) for l in open(sys.argv[2]).read().splitlines() if l)
now = dict(l.split(" ", 1) for l in open(sys.argv[3]).read().splitlines() if l)
vals = list(now.values())
missing = [a for a in acked if a not in vals]
dups = sorted({v for v in vals if vals.count(v) > 1})
moved = [o for o, v in seen.items() if now.get(o) != v]
if missing or dups or moved:
    print("read", len(vals), "records; missing", len(missing), missing[:10], "duplicated", dups[:10],
          "moved or gone", moved[:10], file=sys.stderr)
    sys.exit(1)
PY
}

# read_settled — one read that succeeded and holds every acknowledged record.
# Right after a move the new leader may not yet serve, or its HWM may not yet
# cover what its predecessor acknowledged: that is a wait, not a loss.
read_settled() { read_all >"$C/read.now" && check_read 2>/dev/null; }

# lost_records — how many acknowledged records ($C/acked) a settled read does
# not find now (waits up to 30 s for a read to succeed).
lost_records() {
  wait_until 30 read_all >"$C/read.now" || return 1
  python3 -c 'import sys
acked = [l.strip() for l in open(sys.argv[1]) if l.strip()]
held = {l.split(" ", 1)[1] for l in open(sys.argv[2]).read().splitlines() if l}
print(sum(1 for a in acked if a not in held))' "$C/acked" "$C/read.now"
}

# acked_readable — every acknowledged record can be read exactly once, and
# every record read before is still read at the same offset (a committed
# record never disappears, an acknowledged offset is never reused). Waits up
# to 30 s for a read that settles; then judges the last read strictly.
acked_readable() {
  local i
  for i in $(seq 1 150); do
    read_settled && break
    sleep 0.2
  done
  if ! check_read; then
    echo "last consume error: $(tail -n 2 "$C/consume.log" 2>/dev/null)" >&2
    "$CTL" shard describe r/0 >&2 || true
    return 1
  fi
  cp "$C/read.now" "$C/seen"
}
