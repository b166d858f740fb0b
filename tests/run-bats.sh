#!/bin/sh
# Runs every bats suite under tests/bats; prints "bats: N passed, N failed".
# FELIX_BUILD points the suites at the binaries (default: ./build).
#
# Every test's files are kept until the end (TMPDIR is a directory of this
# run's own) and every log in them is searched for a failed assert or a
# sanitizer report: one anywhere fails the run, even in a test whose own
# checks passed (the cluster suites' teardown also fails the very test).
FELIX_BUILD=${FELIX_BUILD:-$(pwd)/build}
export FELIX_BUILD
out=$(mktemp)
runtmp=$(mktemp -d)
TMPDIR=$runtmp bats --tap --no-tempdir-cleanup tests/bats/*.bats >"$out" 2>&1; rc=$?
cat "$out"
pass=$(grep -c '^ok ' "$out")
fail=$(grep -c '^not ok ' "$out")
[ -s tests/broken-invariants.ere ] || { echo "bats: tests/broken-invariants.ere is missing or empty"; exit 1; }
broken=$(grep -rIE --include='*.log' -f tests/broken-invariants.ere "$runtmp" | head -n 20)
if [ -n "$broken" ]; then
  echo "bats: a process hit a failed assert or a sanitizer report:"
  printf '%s\n' "$broken"
  fail=$((fail + 1))
fi
rm -rf "$out" "$runtmp"
if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then fail=1; echo "bats: exited $rc"; fi
echo "bats: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
