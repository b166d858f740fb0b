#!/bin/sh
# Runs each cmocka binary given; prints "unit: N passed, N failed, N skipped"
# (tests, summed), and each skipped test's name. A binary that runs past
# FELIX_UNIT_TIMEOUT seconds (default 300) is killed and counts as a failure,
# so one hang fails one binary instead of stalling the run.
pass=0; fail=0; skipped=0
limit=${FELIX_UNIT_TIMEOUT:-300}
for t in "$@"; do
  out=$(ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 timeout -k 5 "$limit" "$t" 2>&1); rc=$?
  printf '%s\n' "$out"
  p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
  f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
  s=$(printf '%s\n' "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | tail -1)
  printf '%s\n' "$out" | sed -n "s|^\[  SKIPPED \] \([a-z_0-9]*\)\$|unit: skipped: $(basename "$t") \1|p"
  pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0})); skipped=$((skipped + ${s:-0}))
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then echo "unit: $t ran past ${limit} s and was killed"; fail=$((fail + 1))
  elif [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then echo "unit: $t exited $rc"; fail=$((fail + 1)); fi
done
echo "unit: $pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ]
