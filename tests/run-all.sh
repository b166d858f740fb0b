#!/bin/sh
# Runs every suite `make check` owns and prints one closing line summing them:
# "N passed, N failed, N skipped". Each suite prints "NAME: N passed, N failed"
# (and ", N skipped" when it can skip) last. BUILD names the build directory
# whose binaries are tested (default build; `make check BUILD=x` passes it).
set -u
log=$(mktemp)
build=${BUILD:-build}
total_pass=0; total_fail=0; total_skip=0; status=0
began=$(date +%s)
# Each suite's header says when it started (seconds into the run), so a slow
# suite can be found from any CI log.
run_suite() {
  name=$1; shift
  echo "== $name (at $(($(date +%s) - began)) s)"
  "$@" 2>&1 | tee "$log"
  line=$(grep -E "^$name: [0-9]+ passed, [0-9]+ failed" "$log" | tail -1)
  p=$(echo "$line" | sed -n 's/.*: \([0-9]*\) passed.*/\1/p')
  f=$(echo "$line" | sed -n 's/.*passed, \([0-9]*\) failed.*/\1/p')
  s=$(echo "$line" | sed -n 's/.*failed, \([0-9]*\) skipped.*/\1/p')
  if [ -z "$line" ]; then echo "$name: no summary line"; p=0; f=1; fi
  total_pass=$((total_pass + p)); total_fail=$((total_fail + f)); total_skip=$((total_skip + ${s:-0}))
  [ "$f" -eq 0 ] || status=1
}
# `tee` hides the suite's exit code; failures are counted from its summary line.
# The model is checked meanwhile, at the lowest priority: the bats suites wait
# on leases and timers most of the time, and spin takes the cores they leave
# (nice 19 gets ~1.5% of a core against a busy test, so timing in the tests is
# unchanged). Its output is shown, and counted, after the fuzzers. Only the
# configurations of at most 2 M states run here (--quick): the eleven larger
# ones hold 80% of all states, and beside the tests their hash tables slowed
# the suites to twice their time (CI took 30 min); `make formal` checks them
# and keeps its table in docs/formal/report.md.
formal_out=$(mktemp)
nice -n 19 bash docs/formal/run.sh --quick >"$formal_out" 2>&1 &
formal_pid=$!
run_suite lint sh tests/lint/bats-negation.sh tests/bats/*.bats tests/bats/*.bash
run_suite unit sh tests/run-unit.sh "$build"/unit/test_*
FELIX_BUILD=$(cd "$build" && pwd)
export FELIX_BUILD
run_suite bats sh tests/run-bats.sh
run_suite fuzz sh tests/fuzz/run.sh 5
# Two of the mutants every time (make mutants runs them all): the suites
# still bite. They run while the model finishes (it is the longest suite).
run_suite mutants sh tests/mutants/run.sh identity-never-rotates ack-on-the-offset-alone
# A missing runner is a failure, never a suite that vanished (its last line
# is then no summary, which run_suite counts as a failure).
wait "$formal_pid"
run_suite formal cat "$formal_out"
rm -f "$formal_out"
rm -f "$log"
echo "== done (at $(($(date +%s) - began)) s)"
echo "$total_pass passed, $total_fail failed, $total_skip skipped"
exit $status
