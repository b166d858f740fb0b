# helpers.bash — shared setup of the felix-inspect bats suites.
#
# Every test gets a fresh work directory ($W) under BATS_TEST_TMPDIR, its own
# runtime directory (FELIX_RUNTIME_DIR, not created) and a known boot id
# (FELIX_BOOT_ID_FILE), so nothing depends on the machine or on other tests.
# Data directories are built with felix-mkdata, through the library, never by
# hand-writing formats; only the corruption tests damage files afterwards.

bats_require_minimum_version 1.5.0
load /usr/lib/bats/bats-support/load
load /usr/lib/bats/bats-assert/load

FELIX_BUILD=${FELIX_BUILD:-"$BATS_TEST_DIRNAME/../../build"}
INSPECT="$FELIX_BUILD/felix-inspect"
MKDATA="$FELIX_BUILD/tools/felix-mkdata"
REPO_ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
BOOT_ID=boot-0000-current

setup() {
  [ -x "$INSPECT" ] || fail "felix-inspect not built at $INSPECT (run make all, or set FELIX_BUILD)"
  [ -x "$MKDATA" ] || fail "felix-mkdata not built at $MKDATA (run make all, or set FELIX_BUILD)"
  W="$BATS_TEST_TMPDIR/w"
  rm -rf "$W"
  mkdir -p "$W"
  export FELIX_RUNTIME_DIR="$W/run"
  export FELIX_BOOT_ID_FILE="$W/boot_id"
  export FELIX_CONFIG="$W/felixctl-config" # never the developer's own contexts
  echo "$BOOT_ID" >"$FELIX_BOOT_ID_FILE"
  unset FELIX_DATA_DIR FELIX_DURABLE_FSYNC_MODE FELIX_DURABLE_SEGMENT_BYTES FELIX_DURABLE_INDEX_SPACING_BYTES
  cd "$W" || return 1
}

inspect() { "$INSPECT" "$@"; }

# mkdata DATADIR STREAM SHARD RECORDS [felix-mkdata options]; prints the shard dir.
mkdata() { "$MKDATA" "$@"; }

# seg SHARDDIR BASE [SUFFIX] — path of the segment (or index) with that base offset.
seg() { printf '%s/%020d%s\n' "$1" "$2" "${3:-.log}"; }

# jget EXPR — reads one JSON document on stdin, evaluates the Python expression
# EXPR with the document bound to j, prints strings raw and anything else as
# JSON (true, false, null, numbers, lists).
jget() {
  python3 -c '
import json, sys
j = json.loads(sys.stdin.read())
v = eval(sys.argv[1], {"j": j})
print(v if isinstance(v, str) else json.dumps(v))' "$1"
}

# jlines EXPR — like jget for each line of a JSON-lines stream (dump --json).
jlines() {
  python3 -c '
import json, sys
for line in sys.stdin:
    if line.strip():
        j = json.loads(line)
        v = eval(sys.argv[1], {"j": j})
        print(v if isinstance(v, str) else json.dumps(v))' "$1"
}

# assert_json — the output is exactly one valid JSON document.
assert_json() {
  printf '%s' "$output" | python3 -c 'import json,sys; json.loads(sys.stdin.read())' ||
    fail "output is not one JSON document: $output"
}

# flip_byte FILE POSITION — inverts every bit of one byte in place.
flip_byte() {
  python3 -c '
import sys
path, pos = sys.argv[1], int(sys.argv[2])
with open(path, "r+b") as f:
    f.seek(pos); b = f.read(1)
    assert len(b) == 1, "position past the end of the file"
    f.seek(pos); f.write(bytes([b[0] ^ 0xFF]))' "$1" "$2"
}

# overwrite FILE POSITION TEXT — writes TEXT at POSITION without truncating.
overwrite() {
  printf '%s' "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# snapshot DIR — every entry with type, size and mode, and a digest of every
# regular file's bytes: two equal snapshots mean nothing was created, removed
# or changed.
snapshot() {
  (cd "$1" && find . -printf '%p %y %s %m\n' | LC_ALL=C sort &&
    find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum)
}

# wait_until SECONDS COMMAND... — polls COMMAND until it succeeds; fails the
# test after SECONDS.
wait_until() {
  local limit=$1 deadline=$((SECONDS + $1 + 1)) # SECONDS counts whole seconds: one more, never less than asked
  shift
  while ! "$@"; do
    # Wall clock, not a count of polls: a command that is itself slow (a
    # saturated control plane answering in seconds) once stretched a 180 s
    # wait to more than 15 minutes.
    [ "$SECONDS" -lt "$deadline" ] || fail "timed out after ${limit}s waiting for: $*"
    sleep 0.05
  done
}

# flock_held FILE — some process holds a flock(2) on FILE (as /proc/locks says).
flock_held() {
  [ -e "$1" ] || return 1
  local ino
  ino=$(stat -c %i "$1")
  grep -Eq "FLOCK .*:$ino " /proc/locks
}
