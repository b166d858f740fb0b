#!/bin/sh
# Runs every bats suite under tests/bats (FELIX_BATS_DIR to run another
# folder's); prints "bats: N passed, N failed, N skipped" and the reason of
# every skip. FELIX_BUILD points the suites at the binaries (default: ./build).
# Each test is stopped after BATS_TEST_TIMEOUT seconds (default 600) and fails,
# so one hang fails one test instead of stalling the run.
#
# The files run in FELIX_BATS_LANES lanes (default 2) at once: each lane runs
# its files one after another, in a TMPDIR of its own and with its own half
# of the test port range (FELIX_TEST_LANE, read by cluster.bash's
# pick_ports), so no two tests can pick the same ports. Files go to lanes
# longest first (tests/bats/durations: seconds measured per file; a file
# not listed counts 60 s), each to the lane with the least work so far.
#
# Every test's files are kept until the end and every log in them is
# searched for a failed assert or a sanitizer report: one anywhere fails the
# run, even in a test whose own checks passed (the cluster suites' teardown
# also fails the very test).
FELIX_BUILD=${FELIX_BUILD:-$(pwd)/build}
export FELIX_BUILD
lanes=${FELIX_BATS_LANES:-2}
dir=${FELIX_BATS_DIR:-tests/bats}
BATS_TEST_TIMEOUT=${BATS_TEST_TIMEOUT:-600}
export BATS_TEST_TIMEOUT
case "$lanes" in 1|2) ;; *) echo "run-bats.sh: FELIX_BATS_LANES must be 1 or 2, not '$lanes'"; echo "bats: 0 passed, 1 failed"; exit 1 ;; esac
[ -s tests/broken-invariants.ere ] || { echo "bats: tests/broken-invariants.ere is missing or empty"; exit 1; }
runtmp=$(mktemp -d)
# plan: "lane file" lines, longest file first, each to the least loaded lane
for f in "$dir"/*.bats; do
  n=$(basename "$f")
  d=$(awk -v n="$n" '$1 == n {print $2; found = 1} END {if (!found) print 60}' tests/bats/durations)
  echo "$d $f"
done | sort -rn | awk -v lanes="$lanes" '{
  best = 0
  for (i = 1; i < lanes; i++) if (load[i] < load[best]) best = i
  load[best] += $1
  print best, $2
}' >"$runtmp/plan"
pids=""
for lane in $(seq 0 $((lanes - 1))); do
  files=$(awk -v l="$lane" '$1 == l {print $2}' "$runtmp/plan" | sort)
  mkdir -p "$runtmp/lane$lane"
  (
    rc=0
    for f in $files; do
      FELIX_TEST_LANE=$lane FELIX_TEST_LANES=$lanes TMPDIR="$runtmp/lane$lane" \
        bats --tap --no-tempdir-cleanup "$f" >>"$runtmp/out$lane" 2>&1 || rc=1
    done
    echo "$rc" >"$runtmp/rc$lane"
  ) &
  pids="$pids $!"
done
for p in $pids; do wait "$p"; done
rc=0
for lane in $(seq 0 $((lanes - 1))); do
  echo "== lane $lane: $(awk -v l="$lane" '$1 == l {printf "%s ", $2}' "$runtmp/plan")"
  cat "$runtmp/out$lane"
  [ "$(cat "$runtmp/rc$lane" 2>/dev/null)" = 0 ] || rc=1
done
# TAP: "ok N name # skip REASON" is a skip, never a pass.
skipped=$(cat "$runtmp"/out* | grep -c '^ok .* # skip')
pass=$(($(cat "$runtmp"/out* | grep -c '^ok ') - skipped))
fail=$(cat "$runtmp"/out* | grep -c '^not ok ')
cat "$runtmp"/out* | sed -n 's/^ok [0-9]* \(.*\) # skip\(.*\)$/bats: skipped: \1 --\2/p'
unexplained=$(cat "$runtmp"/out* | grep -c '^ok .* # skip *$')
if [ "$unexplained" -gt 0 ]; then echo "bats: $unexplained skip(s) without a reason"; fail=$((fail + unexplained)); fi
broken=$(grep -rIE --include='*.log' -f tests/broken-invariants.ere "$runtmp" | head -n 20)
if [ -n "$broken" ]; then
  echo "bats: a process hit a failed assert or a sanitizer report:"
  printf '%s\n' "$broken"
  fail=$((fail + 1))
fi
rm -rf "$runtmp"
if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then fail=1; echo "bats: a suite exited non-zero"; fi
echo "bats: $pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ]
