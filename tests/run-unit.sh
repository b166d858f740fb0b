#!/bin/sh
# Runs each cmocka binary given; prints "unit: N passed, N failed" (tests, summed).
pass=0; fail=0
for t in "$@"; do
  out=$(ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 "$t" 2>&1); rc=$?
  printf '%s\n' "$out"
  p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
  f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
  pass=$((pass + ${p:-0})); fail=$((fail + ${f:-0}))
  if [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then echo "unit: $t exited $rc"; fail=$((fail + 1)); fi
done
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
