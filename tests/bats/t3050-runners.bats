#!/usr/bin/env bats
# t3050 — the runners of make check count honestly (issue 13): a skip is never
# a pass and says why, a hang fails one test or binary, a suite whose tool is
# missing fails, and make check tests the binaries of the BUILD it is given.

load helpers

setup() {
  W=$BATS_TEST_TMPDIR/w
  mkdir -p "$W"
  cd "$REPO_ROOT" || fail "no repository root"
}

# outside_bats CMD... — CMD in a clean environment: this bats run's BATS_*
# variables, exported functions and PATH would otherwise steer a bats CMD starts.
outside_bats() {
  local path # bats puts its libexec first on PATH: a bats started from there breaks
  path=$(tr ':' '\n' <<<"$PATH" | grep -v 'bats-core' | paste -sd: -)
  env -i PATH="$path" HOME="${HOME:-/root}" LANG=C.UTF-8 TMPDIR="$BATS_TEST_TMPDIR" FELIX_BUILD="$FELIX_BUILD" "$@"
}

# fake_unit NAME OUTPUT [SECONDS] — a stand-in for a cmocka binary.
fake_unit() {
  printf '#!/bin/sh\n%s\nsleep %s\nprintf "%%s\\n" "%s"\n' "" "${3:-0}" "$2" >"$W/$1"
  chmod +x "$W/$1"
}

@test "run-unit.sh counts a skipped cmocka test as skipped and names it" {
  fake_unit t_fake "[==========] 3 test(s) run.
[  PASSED  ] 2 test(s).
[  SKIPPED ] needs_a_sqlite3_shell
[  SKIPPED ] 1 test(s), listed below:"
  run -0 sh tests/run-unit.sh "$W/t_fake"
  [[ $output == *"unit: skipped: t_fake needs_a_sqlite3_shell"* ]] || fail "$output"
  [ "${lines[-1]}" = "unit: 2 passed, 0 failed, 1 skipped" ] || fail "$output"
}

@test "run-unit.sh kills a binary that hangs past FELIX_UNIT_TIMEOUT and counts a failure" {
  fake_unit t_hang "[  PASSED  ] 1 test(s)." 60
  FELIX_UNIT_TIMEOUT=1 run -1 sh tests/run-unit.sh "$W/t_hang"
  [[ $output == *"t_hang ran past 1 s and was killed"* ]] || fail "$output"
  [ "${lines[-1]}" = "unit: 0 passed, 1 failed, 0 skipped" ] || fail "$output"
}

@test "run-bats.sh counts skips apart from passes, prints each reason, and fails a skip without one" {
  mkdir -p "$W/suite"
  # printf, not a here-document: bats would take the lines for its own tests
  printf '%s\n' '@test "passes" { true; }' '@test "skips with a reason" { skip "no tmux here"; }' \
    '@test "fails" { false; }' >"$W/suite/t1.bats"
  run -1 outside_bats FELIX_BATS_DIR="$W/suite" FELIX_BATS_LANES=1 sh tests/run-bats.sh
  [[ $output == *"bats: skipped: skips with a reason -- no tmux here"* ]] || fail "$output"
  [ "${lines[-1]}" = "bats: 1 passed, 1 failed, 1 skipped" ] || fail "$output"
  printf '@test "skips silently" { skip; }\n' >"$W/suite/t1.bats"
  run -1 outside_bats FELIX_BATS_DIR="$W/suite" FELIX_BATS_LANES=1 sh tests/run-bats.sh
  [[ $output == *"bats: 1 skip(s) without a reason"* ]] || fail "$output"
  [ "${lines[-1]}" = "bats: 0 passed, 1 failed, 1 skipped" ] || fail "$output"
}

@test "run-bats.sh stops a test that hangs past BATS_TEST_TIMEOUT and fails it" {
  mkdir -p "$W/suite"
  printf '@test "hangs" { sleep 60; }\n@test "passes" { true; }\n' >"$W/suite/t1.bats"
  run -1 outside_bats BATS_TEST_TIMEOUT=2 FELIX_BATS_DIR="$W/suite" FELIX_BATS_LANES=1 timeout 50 sh tests/run-bats.sh
  [ "${lines[-1]}" = "bats: 1 passed, 1 failed, 0 skipped" ] || fail "$output"
}

@test "the fuzz suite fails when clang is missing instead of passing on nothing" {
  mkdir -p "$W/bin"
  ln -s "$(command -v sh)" "$W/bin/sh"
  PATH="$W/bin" run -1 "$W/bin/sh" tests/fuzz/run.sh 5
  [[ $output == *"clang not found"* ]] || fail "$output"
  [ "${lines[-1]}" = "fuzz: 0 passed, 1 failed" ] || fail "$output"
}

@test "make check hands its BUILD to the runners" {
  run -0 make -n check BUILD="$W/other"
  [[ $output == *"BUILD=$W/other sh tests/run-all.sh"* ]] || fail "$output"
  grep -q '"$build"/unit/test_\*' tests/run-all.sh || fail "run-all.sh does not run BUILD's unit tests"
  grep -q 'FELIX_BUILD=$(cd "$build" && pwd)' tests/run-all.sh || fail "run-all.sh does not point the bats suites at BUILD"
}

# tiny_formal DIR — a copy of docs/formal whose model is a small one with the
# real COVER marker: actions Up and Down, and Break only under -DBROKEN; its two
# configurations (a pass and a twin that breaks invariant Small) reach all three
# between them. (-DSMALL only fills the flags column: run.sh reads configs.tsv
# with IFS=tab, which would merge an empty column into the next.)
tiny_formal() {
  cp -r docs/formal "$1"
  { sed -n '/^c_code {/,/^#define COVER(/p' docs/formal/shard.pml
    printf '%s\n' 'byte x; bit y;' \
      'active proctype invariants() {' \
      '  d_step { y -> printf("VIOLATION Small: y is set\n"); assert(false) }' \
      '}' \
      'inline Up() {' \
      '  d_step { x < 2 -> COVER(Up); x++; printf("Up: x %d\n", x); skip }' \
      '}' \
      'inline Down() {' \
      '  d_step { x == 2 -> COVER(Down); x = 0; skip }' \
      '}' \
      '#ifdef BROKEN' \
      'inline Break() {' \
      '  d_step { x == 1 && !y -> COVER(Break); y = 1; skip }' \
      '}' \
      '#endif' \
      'init {' \
      '  d_step { x = 0 }' \
      '  do' \
      '  :: Up()' \
      '  :: Down()' \
      '#ifdef BROKEN' \
      '  :: Break()' \
      '#endif' \
      '  od' \
      '}'
  } >"$1/shard.pml"
  printf 'small\tpass\t-DSMALL\t1\t\nsmall-twin\tfail:Small\t-DBROKEN\t1\t\n' >"$1/configs.tsv"
}

@test "formal run.sh: action coverage passes when the configurations, twins included, reach every action" {
  tiny_formal "$W/formal"
  FORMAL_TRAIL_DIR="$W/trails" run -0 bash "$W/formal/run.sh"
  [[ $output == *"action-markers "*" 3 actions "*" ok"* ]] || fail "$output"
  [[ $output == *"action-coverage "*" 3 of 3 "*" ok"* ]] || fail "$output"
  [[ $output == *"reached by a twin only (no passing configuration runs them): Break"* ]] || fail "$output"
  [ "${lines[-1]}" = "formal: 4 passed, 0 failed" ] || fail "$output"
}

@test "formal run.sh --quick runs only floors up to FORMAL_QUICK_MAX_STATES, names the rest, and counts coverage over what it ran; --report keeps the table" {
  tiny_formal "$W/formal"
  sed -i 's/^\(small-twin\tfail:Small\t-DBROKEN\t\)1\t/\12\t/' "$W/formal/configs.tsv"
  grep -qP '^small-twin\t.*\t2\t$' "$W/formal/configs.tsv" || fail "$(cat -A "$W/formal/configs.tsv")"
  FORMAL_TRAIL_DIR="$W/trails" run -0 bash "$W/formal/run.sh" --report "$W/report.md"
  [ "${lines[-1]}" = "formal: 4 passed, 0 failed" ] || fail "$output"
  grep -qx 'Result: 4 passed, 0 failed.' "$W/report.md" || fail "$(cat "$W/report.md")"
  grep -q '^small-twin  *fail:Small  *violated .* ok$' "$W/report.md" || fail "$(cat "$W/report.md")"
  # the twin's floor (2) is above the quick limit: not run, named, and Break is then reached by nothing
  FORMAL_QUICK_MAX_STATES=1 FORMAL_TRAIL_DIR="$W/trails" run -1 bash "$W/formal/run.sh" --quick
  [[ $output == *"not run (--quick: floor above 1 states; make formal runs them"*"): small-twin"* ]] || fail "$output"
  [[ $output != *"small-twin  "* ]] || fail "the twin ran: $output"
  [[ $output == *"action-coverage "*" 2 of 3 "*"FAIL(unreached: Break)"* ]] || fail "$output"
  [ "${lines[-1]}" = "formal: 2 passed, 1 failed" ] || fail "$output"
  FORMAL_QUICK_MAX_STATES=2 FORMAL_TRAIL_DIR="$W/trails" run -0 bash "$W/formal/run.sh" --quick
  [ "${lines[-1]}" = "formal: 4 passed, 0 failed" ] || fail "$output"
}

@test "formal run.sh: an action no configuration reaches fails a full run, and only a full run" {
  tiny_formal "$W/formal"
  sed -i 's/^init {$/inline Never() {\n  d_step { x > 2 -> COVER(Never); x = 0; skip }\n}\ninit {/; s/^  :: Down()$/  :: Down()\n  :: Never()/' "$W/formal/shard.pml"
  FORMAL_TRAIL_DIR="$W/trails" run -1 bash "$W/formal/run.sh"
  [[ $output == *"action-coverage "*" 3 of 4 "*" FAIL(unreached: Never)"* ]] || fail "$output"
  [ "${lines[-1]}" = "formal: 3 passed, 1 failed" ] || fail "$output"
  # with names: the coverage of those configurations, printed, not counted
  FORMAL_TRAIL_DIR="$W/trails" run -0 bash "$W/formal/run.sh" small
  [[ $output == *"(not counted): 2 of 4 actions reached; unreached: Break Never"* ]] || fail "$output"
  [ "${lines[-1]}" = "formal: 2 passed, 0 failed" ] || fail "$output"
}

@test "formal run.sh: an action of the model without its COVER marker fails the run" {
  cp -r docs/formal "$W/formal"
  grep -q ' COVER(Heal);' "$W/formal/shard.pml" || fail "shard.pml has no COVER(Heal) to remove"
  sed -i 's/ COVER(Heal);//' "$W/formal/shard.pml"
  FORMAL_TRAIL_DIR="$W/trails" run -1 bash "$W/formal/run.sh" twin-no-copy-id
  [[ $output == *"action-markers "*"FAIL(1 problem(s), below)"* ]] || fail "$output"
  [[ $output == *"action-markers: Heal: no COVER(Heal) in its d_step"* ]] || fail "$output"
  [ "${lines[-1]}" = "formal: 1 passed, 1 failed" ] || fail "$output"
}
