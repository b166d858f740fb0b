#!/bin/sh
# Runs every bats suite under tests/bats; prints "bats: N passed, N failed".
# FELIX_BUILD points the suites at the binaries (default: ./build).
FELIX_BUILD=${FELIX_BUILD:-$(pwd)/build}
export FELIX_BUILD
out=$(mktemp)
bats --tap tests/bats/*.bats >"$out" 2>&1; rc=$?
cat "$out"
pass=$(grep -c '^ok ' "$out")
fail=$(grep -c '^not ok ' "$out")
rm -f "$out"
if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then fail=1; echo "bats: exited $rc"; fi
echo "bats: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
