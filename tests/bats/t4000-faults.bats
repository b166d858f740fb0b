#!/usr/bin/env bats
# t4000 — the power-cut tools of tests/faults (DESIGN.md §6 "Power cut"): the
# LD_PRELOAD sync recorder and the powercut command. Synced bytes survive,
# unsynced bytes are cut, files never synced disappear, renames are followed,
# syncs from worker threads are seen, injected sync errors are EIO, ledger
# records are whole lines even after SIGKILL, and a real felix data directory
# built under the recorder verifies after a power cut.

load helpers

FAULTS="$FELIX_BUILD/faults"
LIBFAULTS="$FAULTS/libfelix_faults.so"
POWERCUT="$FAULTS/powercut"
WRITER="$FAULTS/writer"

setup_file() {
  local f
  for f in "$LIBFAULTS" "$POWERCUT" "$WRITER"; do
    [ -e "$f" ] || {
      echo "# $f not built (run make all, or set FELIX_BUILD)" >&3
      return 1
    }
  done
}

# recorded CMD... — runs CMD under the recorder, ledger $W/ledger, root $W/d.
recorded() {
  FELIX_FAULTS_LEDGER="$W/ledger" FELIX_FAULTS_ROOT="$W/d" LD_PRELOAD="$LIBFAULTS" "$@"
}
writer() { recorded "$WRITER" "$@"; }
powercut() { "$POWERCUT" --ledger "$W/ledger" --root "$W/d" "$@"; }
devino() { stat -c '%d %i' "$1"; }
size() { stat -c %s "$1"; }

# ledger_has N — the ledger holds at least N lines.
ledger_has() { [ "$(wc -l <"$W/ledger")" -ge "$1" ]; }

setup_ledger() {
  mkdir -p "$W/d"
  : >"$W/ledger"
}

@test "synced bytes survive, the unsynced suffix is cut" {
  setup_ledger
  run -0 writer open d/a write 1000 fsync write 234
  assert_output "fsync: ok"
  assert_equal "$(size d/a)" 1234
  grep -qx "sync $(devino d/a) 1000" ledger
  run -0 powercut
  assert_line "cut $W/d/a from 1234 to 1000"
  assert_line "powercut: 1 files cut, 0 removed"
  assert_equal "$(size d/a)" 1000
  # the surviving bytes are the ones written
  assert_equal "$(head -c 26 d/a)" abcdefghijklmnopqrstuvwxyz
}

@test "the LAST sync counts; fdatasync is recorded like fsync; a fully synced file is untouched" {
  setup_ledger
  run -0 writer open d/a write 100 fsync write 100 fdatasync write 7 open d/b write 50 fsync
  assert_output $'fsync: ok\nfdatasync: ok\nfsync: ok'
  run -0 powercut
  assert_line "cut $W/d/a from 207 to 200"
  refute_line --partial "d/b"
  assert_line "powercut: 1 files cut, 0 removed"
  assert_equal "$(size d/a)" 200
  assert_equal "$(size d/b)" 50
}

@test "a file never synced disappears; an empty ledger removes everything" {
  setup_ledger
  mkdir -p d/sub
  run -0 writer open d/kept write 10 fsync open d/never write 10 open d/sub/never2 write 0
  run -0 powercut
  assert_line "removed $W/d/never"
  assert_line "removed $W/d/sub/never2"
  assert_line "powercut: 0 files cut, 2 removed"
  [ -f d/kept ]
  [ ! -e d/never ]
  [ ! -e d/sub/never2 ]
  [ -d d/sub ]
}

@test "renames are followed by (dev, inode): sync, write more, rename, power cut keeps the renamed file at the synced size" {
  setup_ledger
  run -0 writer open d/tmp write 300 fsync write 40 rename d/tmp d/final dirsync d
  assert_output $'fsync: ok\ndirsync: ok'
  grep -qx "dirsync $(devino d)" ledger
  run -0 powercut
  assert_line "cut $W/d/final from 340 to 300"
  assert_line "powercut: 1 files cut, 0 removed"
  [ ! -e d/tmp ]
  assert_equal "$(size d/final)" 300
}

@test "syncs from a worker thread are seen in the ledger" {
  setup_ledger
  run -0 writer open d/a write 64 thread-fsync write 10
  assert_output "thread-fsync: ok"
  grep -qx "sync $(devino d/a) 64" ledger
  run -0 powercut
  assert_equal "$(size d/a)" 64
}

@test "syncfs makes every file under FELIX_FAULTS_ROOT on that device durable at its size" {
  setup_ledger
  mkdir -p d/s
  printf 'x%.0s' {1..77} >d/s/other
  run -0 writer open d/a write 123 syncfs write 5
  assert_output "syncfs: ok"
  grep -qx "sync $(devino d/s/other) 77" ledger
  grep -qx "syncfs $(stat -c %d d/a)" ledger
  run -0 powercut
  assert_line "powercut: 1 files cut, 0 removed"
  assert_equal "$(size d/a)" 123
  assert_equal "$(size d/s/other)" 77
}

@test "FELIX_FAULTS_SLOW_SYNC_IF: while the file exists syncs are held back and recorded slow, then run and count" {
  setup_ledger
  touch slownow
  FELIX_FAULTS_SLOW_SYNC_IF="$W/slownow" FELIX_FAULTS_SLOW_SYNC_MS=100 run -0 writer open d/a write 10 fsync fdatasync
  assert_output $'fsync: ok\nfdatasync: ok'
  grep -qx "slow fsync $(devino d/a)" ledger
  grep -qx "slow fdatasync $(devino d/a)" ledger
  grep -qx "sync $(devino d/a) 10" ledger # held back, not lost
  rm slownow
  FELIX_FAULTS_SLOW_SYNC_IF="$W/slownow" run -0 writer open d/b write 5 fsync
  run ! grep -q "slow fsync $(devino d/b)" ledger
  grep -qx "sync $(devino d/b) 5" ledger
}

@test "FELIX_FAULTS_FAIL_SYNC_IF: while the file exists fsync/fdatasync/syncfs fail with EIO and nothing counts as synced" {
  setup_ledger
  touch failnow
  FELIX_FAULTS_FAIL_SYNC_IF="$W/failnow" run -0 writer open d/a write 10 fsync fdatasync thread-fsync syncfs dirsync d
  assert_output $'fsync: Input/output error\nfdatasync: Input/output error\nthread-fsync: Input/output error\nsyncfs: Input/output error\ndirsync: Input/output error'
  grep -qx "fail fsync $(devino d/a)" ledger
  grep -qx "fail fdatasync $(devino d/a)" ledger
  run grep -c '^sync ' ledger
  assert_output 0
  # switched off by removing the file
  rm failnow
  FELIX_FAULTS_FAIL_SYNC_IF="$W/failnow" run -0 writer open d/b write 10 fsync
  assert_output "fsync: ok"
  run -0 powercut
  assert_line "removed $W/d/a"
  assert_line "powercut: 0 files cut, 1 removed"
  [ -f d/b ]
}

@test "ledger records are whole lines even after SIGKILL of a process syncing from several threads" {
  setup_ledger
  # a simple command (not the writer function) so that $! is the writer itself
  FELIX_FAULTS_LEDGER="$W/ledger" LD_PRELOAD="$LIBFAULTS" "$WRITER" open d/a spin 4 200000 >/dev/null 2>&1 &
  pid=$!
  wait_until 10 ledger_has 200
  kill -KILL "$pid"
  wait "$pid" || true
  n=$(wc -l <ledger)
  [ "$n" -ge 200 ]
  # the file ends in a newline and every line is a complete record
  [ "$(tail -c 1 ledger | od -An -c | tr -d ' ')" = '\n' ]
  run grep -Evc '^sync [0-9]+ [0-9]+ [0-9]+$' ledger
  assert_output 0
  before=$(size d/a)
  run -0 powercut
  assert_line --partial "powercut: "
  last=$(grep "^sync $(devino d/a) " ledger | tail -n 1 | cut -d' ' -f4)
  assert_equal "$(size d/a)" "$((last < before ? last : before))"
}

@test "powercut --boot-id-file writes a new boot id; a missing ledger is an error, not a wipe" {
  setup_ledger
  echo old >d/keep
  echo "$BOOT_ID" >bid
  run -0 "$WRITER" open d/x write 1
  echo sync $(devino d/keep) 4 >>ledger
  run -0 powercut --boot-id-file "$W/bid"
  refute_line --partial "d/keep"
  assert_line "removed $W/d/x"
  [ "$(cat bid)" != "$BOOT_ID" ]
  grep -Eqx '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}' bid
  run -1 "$POWERCUT" --ledger "$W/nope" --root "$W/d"
  assert_output --partial "cannot open ledger"
  [ -f d/keep ]
  run -2 "$POWERCUT" --root "$W/d"
}

@test "end to end: a felix data directory built under the recorder verifies after garbage is appended and the power is cut" {
  setup_ledger
  rm -rf d
  SHARD=$(recorded "$MKDATA" d orders 0 50 --segment-bytes 512)
  [ -d "$SHARD" ]
  run -0 inspect verify d
  # the ledger saw at least one sync of a .log segment
  local f seen=0
  for f in "$SHARD"/*.log; do
    grep -q "^sync $(devino "$f") " ledger && seen=$((seen + 1))
  done
  [ "$seen" -ge 1 ] || fail "no .log segment sync in the ledger"
  newest=$(ls "$SHARD"/*.log | LC_ALL=C sort | tail -n 1)
  len=$(size "$newest")
  printf 'garbage-garbage-garbage-garbage' >>"$newest"
  run -6 inspect verify d
  run -0 powercut --boot-id-file "$FELIX_BOOT_ID_FILE"
  assert_line "cut $W/$newest from $((len + 31)) to $len"
  run -0 inspect verify d
  assert_output --partial "verify: ok: 1 shard(s)"
}

# ruled CMD... — runs CMD under the library with the file rules of $W/rules.
ruled() { FELIX_FAULTS_LEDGER="$W/ledger" FELIX_FAULTS_FILE_RULES="$W/rules" LD_PRELOAD="$LIBFAULTS" "$@"; }

# atomic_write NAME — one small-file write as felix_write_file_atomic makes it
# (open .NAME.tmp, write, fsync, rename); prints the failing step and errno.
atomic_write() {
  ruled python3 - "$W/d" "$1" <<'PY'
import errno, os, sys
d, name = sys.argv[1], sys.argv[2]
tmp = os.path.join(d, "." + name + ".tmp")
step = "open"
try:
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    step = "write"; os.write(fd, b"generation 2\n")
    step = "fsync"; os.fsync(fd); os.close(fd)
    step = "rename"; os.rename(tmp, os.path.join(d, name))
    print("ok")
except OSError as e:
    print(step, errno.errorcode[e.errno]); sys.exit(1)
PY
}

@test "file rules fail one chosen file's open, write, fsync or rename by path pattern, only while the rules file exists" {
  setup_ledger
  local op e
  for op in open write fsync rename; do
    for e in ENOSPC EIO EMFILE; do
      echo "$op $e */d/.generations.tmp" >rules
      [ "$op" = rename ] && echo "$op $e */d/generations" >rules # a rename is matched by either name
      run -1 atomic_write generations
      [ "$output" = "$op $e" ] || fail "rule '$(cat rules)': $output"
      run -0 atomic_write ballot # another file of the same directory is spared
      grep -qx "failfile $op $e $W/d/.generations.tmp\|failfile $op $e $W/d/generations" ledger ||
        fail "no failfile record for $op $e: $(tail -n 2 ledger)"
    done
  done
  echo "fsync EIO */d" >rules # a directory's fsync (after a rename) is one file's fault too
  run -1 ruled python3 -c 'import os,sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)' "$W/d"
  [[ $output == *"Errno 5"* ]] || fail "$output"
  echo "write EIO *" >rules # pipes and sockets are never judged (libuv writes its signal pipe from a handler)
  run -0 ruled python3 -c 'import os; r, w = os.pipe(); os.write(w, b"x"); print(os.read(r, 1).decode())'
  [ "$output" = x ]
  rm rules
  run -0 atomic_write generations
  [ "$(cat d/generations)" = "generation 2" ]
  echo "# a comment line" >rules
  run -0 atomic_write stream
}
