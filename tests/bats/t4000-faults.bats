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

# synced FILE SIZE — the ledger holds a sync of FILE at SIZE (its "@POS" is
# where the ledger stood when the sync started).
synced() { grep -Eqx "sync $(devino "$1") $2 @[0-9]+" ledger; }

# ledger_has N — the ledger holds at least N lines.
ledger_has() { [ "$(wc -l <"$W/ledger")" -ge "$1" ]; }

setup_ledger() {
  mkdir -p "$W/d"
  : >"$W/ledger"
}

@test "synced bytes survive, the unsynced suffix is cut" {
  setup_ledger
  run -0 writer open d/a write 1000 fsync dirsync d write 234
  assert_output $'fsync: ok\ndirsync: ok'
  assert_equal "$(size d/a)" 1234
  synced d/a 1000
  run -0 powercut
  assert_line "cut $W/d/a from 1234 to 1000"
  assert_line "powercut: 1 files cut, 0 removed"
  assert_equal "$(size d/a)" 1000
  # the surviving bytes are the ones written
  assert_equal "$(head -c 26 d/a)" abcdefghijklmnopqrstuvwxyz
}

@test "the LAST sync counts; fdatasync is recorded like fsync; a fully synced file is untouched" {
  setup_ledger
  run -0 writer open d/a write 100 fsync write 100 fdatasync write 7 open d/b write 50 fsync dirsync d
  assert_output $'fsync: ok\nfdatasync: ok\nfsync: ok\ndirsync: ok'
  run -0 powercut
  assert_line "cut $W/d/a from 207 to 200"
  refute_line --partial "d/b"
  assert_line "powercut: 1 files cut, 0 removed"
  assert_equal "$(size d/a)" 200
  assert_equal "$(size d/b)" 50
}

@test "a file whose creation no directory sync covered disappears; one never synced whose name is durable comes back empty" {
  setup_ledger
  mkdir -p d/sub
  run -0 writer open d/kept write 10 fsync open d/never write 10 dirsync d open d/sub/never2 write 5 fsync
  run -0 powercut
  assert_line "undone create $W/d/sub/never2"
  assert_line "cut $W/d/never from 10 to 0"
  assert_line "powercut: 1 files cut, 0 removed"
  assert_line "powercut: 1 entries undone, 0 overwrites and 0 truncations reverted (worst case)"
  assert_equal "$(size d/kept)" 10
  assert_equal "$(size d/never)" 0
  [ ! -e d/sub/never2 ]
  [ -d d/sub ]
}

@test "renames are followed by (dev, inode): sync, write more, rename, power cut keeps the renamed file at the synced size" {
  setup_ledger
  run -0 writer open d/tmp write 300 fsync write 40 rename d/tmp d/final dirsync d
  assert_output $'fsync: ok\ndirsync: ok'
  grep -Eqx "dirsync $(devino d) @[0-9]+" ledger
  run -0 powercut
  assert_line "cut $W/d/final from 340 to 300"
  assert_line "powercut: 1 files cut, 0 removed"
  [ ! -e d/tmp ]
  assert_equal "$(size d/final)" 300
}

@test "an atomic replace no directory sync covered is undone: the old file comes back under its name" {
  setup_ledger
  run -0 writer open d/ballot write 5 fsync dirsync d \
    open d/.ballot.tmp write 9 fsync rename d/.ballot.tmp d/ballot
  assert_equal "$(size d/ballot)" 9
  run -0 powercut
  assert_line "undone rename $W/d/ballot back to $W/d/.ballot.tmp"
  assert_line "undone create $W/d/.ballot.tmp"
  assert_equal "$(size d/ballot)" 5 # the old file, not the new one
  [ ! -e d/.ballot.tmp ]
  [ ! -e ledger.keep ] || fail "the keep area is left behind"
}

@test "a directory sync after the replace makes it durable" {
  setup_ledger
  run -0 writer open d/ballot write 5 fsync dirsync d \
    open d/.ballot.tmp write 9 fsync rename d/.ballot.tmp d/ballot dirsync d
  run -0 powercut
  assert_line "powercut: 0 entries undone, 0 overwrites and 0 truncations reverted (worst case)"
  assert_equal "$(size d/ballot)" 9
}

@test "an unlink no directory sync covered is undone: the file comes back at its synced size; a link and an rmdir likewise" {
  setup_ledger
  mkdir d/gone
  run -0 writer open d/other write 1 fsync open d/seg write 300 fsync write 20 dirsync d close \
    unlink d/seg rmdir d/gone link d/other d/alias
  [ ! -e d/seg ]
  run -0 powercut
  assert_line "undone unlink $W/d/seg"
  assert_line "undone rmdir $W/d/gone"
  assert_line "undone link $W/d/alias"
  assert_line "cut $W/d/seg from 320 to 300"
  assert_equal "$(size d/seg)" 300
  [ -d d/gone ]
  [ ! -e d/alias ]
  [ -f d/other ]
}

@test "a directory made and never synced in its parent goes with everything in it, synced or not" {
  setup_ledger
  run -0 writer mkdir d/new open d/new/f write 10 fsync dirsync d/new mkdir d/kept dirsync d
  run -0 writer mkdir d/kept/late open d/kept/late/f write 10 fsync dirsync d/kept/late
  run -0 powercut
  assert_line "undone mkdir $W/d/kept/late"
  refute_line "undone mkdir $W/d/new"
  [ -f d/new/f ]
  [ -d d/kept ]
  [ ! -e d/kept/late ]
}

@test "an overwrite in place after the last sync is reverted; one before it stays" {
  setup_ledger
  run -0 writer open d/a write 10000 overwrite 0 3 fsync dirsync d overwrite 5000 4 overwrite 9998 2
  assert_equal "$(head -c 3 d/a)" XXX
  assert_equal "$(dd if=d/a bs=1 skip=5000 count=4 2>/dev/null)" XXXX
  run -0 powercut
  assert_line "reverted 2 overwrites of $W/d/a"
  "$WRITER" open ref write 10000 overwrite 0 3 # the file as it was synced
  cmp d/a ref || fail "not the synced content"
  assert_equal "$(head -c 3 d/a)" XXX
}

@test "a truncation not followed by a sync comes back longer, with the old bytes; a synced one stays" {
  setup_ledger
  run -0 writer open d/a write 5000 fsync dirsync d truncate 100 open d/b write 5000 fsync dirsync d truncate 100 fsync
  assert_equal "$(size d/a)" 100
  run -0 powercut
  assert_line "reverted truncation of $W/d/a: 4900 bytes back"
  "$WRITER" open ref write 5000
  cmp d/a ref || fail "not the old bytes"
  assert_equal "$(size d/b)" 100
}

# cut_with SEED CMD... — a fresh directory written by CMD, cut with --seed SEED.
cut_with() {
  local seed=$1
  shift
  rm -rf d ledger ledger.keep
  setup_ledger
  writer "$@" >/dev/null
  powercut --seed "$seed" >/dev/null
}

@test "--seed: the unsynced tail goes from a page boundary past the synced size, differing by seed, the same for one seed" {
  local seed sizes="" again
  for seed in $(seq 1 24); do
    cut_with "$seed" open d/a write 1000 fsync dirsync d write 39000
    sizes="$sizes $(size d/a)"
  done
  for n in $sizes; do
    [ "$n" -eq 1000 ] || [ "$n" -eq 40000 ] || { [ $((n % 4096)) -eq 0 ] && [ "$n" -gt 1000 ] && [ "$n" -lt 40000 ]; } ||
      fail "size $n is neither the synced size, a page boundary past it nor the whole file:$sizes"
  done
  [ "$(echo $sizes | tr ' ' '\n' | sort -u | wc -l)" -ge 4 ] || fail "the seeds gave too few sizes:$sizes"
  cut_with 7 open d/a write 1000 fsync dirsync d write 39000
  again=$(size d/a)
  assert_equal "$again" "$(echo $sizes | cut -d' ' -f7)"
  run -2 powercut --seed 0
  assert_output --partial "--seed 0: not a positive integer"
}

@test "--seed: undone entries are a suffix in ledger order (the journal reached some point), and some seeds keep some" {
  local seed kept partial=0
  for seed in $(seq 1 16); do
    cut_with "$seed" open d/f1 write 1 fsync open d/f2 write 1 fsync open d/f3 write 1 fsync open d/f4 write 1 fsync
    kept=""
    for f in f1 f2 f3 f4; do [ -e "d/$f" ] && kept="$kept$f "; done
    case "$kept" in "" | "f1 " | "f1 f2 " | "f1 f2 f3 " | "f1 f2 f3 f4 ") ;; *) fail "seed $seed kept $kept: not a prefix" ;; esac
    case "$kept" in "" | "f1 f2 f3 f4 ") ;; *) partial=$((partial + 1)) ;; esac
  done
  [ "$partial" -ge 2 ] || fail "only $partial seeds kept part of the creations"
}

@test "remove(3) is seen: a file and a directory it removed with no directory sync after come back" {
  setup_ledger
  run -0 writer mkdir d/rp open d/rp/seg write 100 fsync close dirsync d/rp dirsync d remove d/rp/seg remove d/rp
  [ ! -e d/rp ]
  run -0 powercut
  assert_line "undone rmdir $W/d/rp"
  assert_line "undone unlink $W/d/rp/seg"
  assert_equal "$(size d/rp/seg)" 100
}

@test "a file with two names: the recorder leaves st_nlink alone, and a rename over one name gives back both" {
  setup_ledger
  run -0 writer open d/a write 100 fsync link d/a d/b dirsync d unlink d/b nlink
  assert_line "nlink: 1" # as without the recorder: Felix reads nlink > 1 as a restore point's link
  rm -rf d ledger ledger.keep
  setup_ledger
  run -0 writer open d/a write 100 fsync close link d/a d/b open d/c write 10 fsync close dirsync d unlink d/a rename d/c d/b
  run -0 powercut
  assert_equal "$(size d/a)" 100
  assert_equal "$(size d/b)" 100
  assert_equal "$(size d/c)" 10
  assert_equal "$(stat -c %i d/a)" "$(stat -c %i d/b)"
  # a file with two names is cut once
  rm -rf d ledger
  setup_ledger
  run -0 writer open d/e write 100 fsync write 50 link d/e d/f dirsync d
  run -0 powercut
  assert_line "powercut: 1 files cut, 0 removed"
}

@test "a keep area the recorder cannot link into (another file system) fails the cut instead of losing a durable file" {
  setup_ledger
  local other
  other=$(mktemp -d -p /dev/shm felix-t4000.XXXXXX) || fail "no /dev/shm"
  if [ "$(stat -c %d "$other")" = "$(stat -c %d "$W")" ]; then
    rm -rf "$other"
    skip "needs /dev/shm on another file system than $W"
  fi
  FELIX_FAULTS_LEDGER="$other/ledger" FELIX_FAULTS_ROOT="$W/d" LD_PRELOAD="$LIBFAULTS" "$WRITER" \
    open d/ballot write 5 fsync dirsync d open d/.ballot.tmp write 9 fsync rename d/.ballot.tmp d/ballot
  grep -q '^keepfail ' "$other/ledger" || { rm -rf "$other"; fail "no keepfail record"; }
  run "$POWERCUT" --ledger "$other/ledger" --root "$W/d"
  rm -rf "$other"
  [ "$status" -eq 1 ] || fail "powercut exited $status: $output"
  assert_output --partial "could not keep a file"
  assert_equal "$(size d/ballot)" 9 # untouched: nothing was cut
}

@test "a truncation that failed is not recorded: a seeded cut never cuts a synced file for it" {
  setup_ledger
  run -0 writer open d/a write 12000 fsync dirsync d
  recorded python3 -c 'import os, sys
try:
    os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_TRUNC)
except FileExistsError:
    pass
fd = os.open(sys.argv[1], os.O_RDONLY)
try:
    os.ftruncate(fd, 0)
except OSError:
    pass' d/a
  run grep -c '^shrink ' ledger
  assert_output 0
  for seed in 1 2 3 4; do
    run -0 powercut --seed "$seed"
    assert_equal "$(size d/a)" 12000
  done
}

@test "an inode number reused by a new file does not inherit the old file's syncs" {
  setup_ledger
  run -0 writer open outside write 8000 fsync close unlink outside open d/seg write 8000 dirsync d
  run -0 powercut
  assert_equal "$(size d/seg)" 0 # created and named durably, never synced
}

@test "a directory inode reused by a new directory: the new one's sync does not vouch for the old one's entries" {
  setup_ledger
  run -0 writer mkdir d/x open d/x/f write 10 fsync close dirsync d/x dirsync d unlink d/x/f rmdir d/x mkdir d/y dirsync d/y
  run -0 powercut
  assert_equal "$(size d/x/f)" 10
  [ ! -e d/y ]
}

@test "an overwrite through a write-only descriptor is reverted too" {
  setup_ledger
  run -0 writer open d/a write 1000 fsync dirsync d
  recorded python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
os.pwrite(fd, b"X" * 100, 0)' d/a
  [ "$(head -c 3 d/a)" = XXX ]
  run -0 powercut
  "$WRITER" open ref write 1000
  cmp d/a ref || fail "the overwrite was not reverted"
}

@test "syncs from a worker thread are seen in the ledger" {
  setup_ledger
  run -0 writer open d/a write 64 thread-fsync write 10 dirsync d
  assert_output $'thread-fsync: ok\ndirsync: ok'
  synced d/a 64
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
  synced d/a 10 # held back, not lost
  rm slownow
  FELIX_FAULTS_SLOW_SYNC_IF="$W/slownow" run -0 writer open d/b write 5 fsync
  run ! grep -q "slow fsync $(devino d/b)" ledger
  synced d/b 5
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
  FELIX_FAULTS_FAIL_SYNC_IF="$W/failnow" run -0 writer open d/b write 10 fsync dirsync d
  assert_output $'fsync: ok\ndirsync: ok'
  run -0 powercut
  assert_line "cut $W/d/a from 10 to 0"
  assert_line "powercut: 1 files cut, 0 removed"
  assert_equal "$(size d/b)" 10
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
  run grep -Evc '^sync [0-9]+ [0-9]+ [0-9]+ @[0-9]+$' ledger
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

@test "a file rule 'fsync SLOW PATTERN' holds back that file's syncs only, while the line is there, then they run and count" {
  setup_ledger
  echo "fsync SLOW */d/[ac]" >rules
  start=$(date +%s%N)
  FELIX_FAULTS_SLOW_SYNC_MS=600 run -0 ruled writer open d/a write 10 fsync open d/b write 5 fsync
  took=$((($(date +%s%N) - start) / 1000000))
  assert_output $'fsync: ok\nfsync: ok'
  grep -qx "slow fsync $(devino d/a)" ledger || fail "the sync of d/a was not recorded slow: $(cat ledger)"
  run ! grep -q "slow fsync $(devino d/b)" ledger # another file is spared
  run ! grep -q '^failfile' ledger                # a slow sync is no failure
  synced d/a 10
  synced d/b 5
  [ "$took" -ge 600 ] || fail "the slow sync did not wait its 600 ms ($took ms)"
  # removing the line ends the wait at once (the rules are read every 50 ms)
  FELIX_FAULTS_SLOW_SYNC_MS=60000 ruled writer open d/c write 3 fsync >"$W/out" &
  pid=$!
  wait_until 10 bash -c "[ \$(grep -c '^slow fsync' '$W/ledger') -ge 2 ]" # d/c's sync waits
  : >rules
  wait_until 10 bash -c "! kill -0 $pid 2>/dev/null"
  wait "$pid" || fail "the writer failed: $(cat "$W/out")"
  [ "$(cat "$W/out")" = "fsync: ok" ] || fail "$(cat "$W/out")"
  echo "open SLOW */d/*" >rules # only a sync can be slow: other ops ignore the line
  run -0 ruled writer open d/e write 1 fsync
}
