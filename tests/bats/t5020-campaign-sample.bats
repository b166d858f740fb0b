#!/usr/bin/env bats
# t5020 — make check's sample of the fault campaign (tests/campaign/,
# docs/campaign.md): three seeded runs whose schedules cover kill -9, a
# power cut, a pause and a partition, each checked for lost acknowledged
# records, records served and then gone, HWMs stepping back, false
# failovers and shards left stuck.

load helpers

FAULTS=kill,powercut,pause,isolate,leader-isolate,partial
SEED=18

setup() {
  [ "$(id -u)" -eq 0 ] || skip "network namespaces need root (CI runs as root)"
}

@test "the campaign's schedule is the seed's: the same seed prints the same schedule, another seed another" {
  run -0 python3 "$REPO_ROOT/tests/campaign/campaign.py" --print-schedule --runs 3 --seed "$SEED" --duration 16 --faults "$FAULTS"
  first=$output
  run -0 python3 "$REPO_ROOT/tests/campaign/campaign.py" --print-schedule --runs 3 --seed "$SEED" --duration 16 --faults "$FAULTS"
  [ "$output" = "$first" ] || fail "seed $SEED printed two schedules"
  run -0 python3 "$REPO_ROOT/tests/campaign/campaign.py" --print-schedule --runs 3 --seed $((SEED + 1)) --duration 16 --faults "$FAULTS"
  [ "$output" != "$first" ] || fail "seeds $SEED and $((SEED + 1)) printed one schedule"
  # the sample below must cover kill, a power cut, a pause and a partition
  for kind in kill powercut pause; do
    [[ $first == *" $kind "* ]] || fail "seeds $SEED..$((SEED + 2)) have no $kind: choose another SEED: $first"
  done
  [[ $first == *" isolate "* || $first == *" leader-isolate "* || $first == *" partial "* ]] || fail "no partition: $first"
}

@test "the checker's rules, each on made-up observations that must fail (or pass) for one reason" {
  cd "$REPO_ROOT/tests/campaign"
  run -0 python3 -m unittest test_check
  [[ $output == *"OK"* ]] || fail "$output"
}

@test "the NATS power cut's rules: a real traced sync is kept, what came after is cut by whole pages, names by the journal's reach" {
  cd "$REPO_ROOT/tests/campaign"
  run -0 python3 -m unittest test_nats_cut
  [[ $output == *"OK"* ]] || fail "$output"
}

@test "bad campaign arguments are refused naming the flag and value" {
  run -2 python3 "$REPO_ROOT/tests/campaign/campaign.py" --faults kill,bogus --print-schedule
  [[ $output == *"--faults: unknown kind 'bogus'"* ]] || fail "$output"
  run -2 python3 "$REPO_ROOT/tests/campaign/campaign.py" --runs 0 --print-schedule
  [[ $output == *"--runs: 0 is not between 1 and 10000"* ]] || fail "$output"
  run -2 python3 "$REPO_ROOT/tests/campaign/campaign.py" --duration 2 --print-schedule
  [[ $output == *"--duration: 2 is not between 5 and 3600"* ]] || fail "$output"
  run -2 python3 "$REPO_ROOT/tests/campaign/campaign.py" --peer kafka --print-schedule
  [[ $output == *"--peer: invalid choice: 'kafka'"* ]] || fail "$output"
}

@test "three seeded campaign runs (kill, power cut, pause, partitions) keep every acknowledged record and fail over only under a fault" {
  out=$BATS_TEST_TMPDIR/campaign
  run python3 "$REPO_ROOT/tests/campaign/campaign.py" --runs 3 --seed "$SEED" --duration 16 --faults "$FAULTS" \
    --out "$out" --build "$FELIX_BUILD"
  echo "$output"
  [ "$status" -eq 0 ] || fail "the campaign failed (exit $status); the failed runs are kept under $out"
  [ "$(grep -c '^run [0-9]/3 seed [0-9]*: ok' <<<"$output")" -eq 3 ] || fail "not three passing runs"
  grep -q '^| felix | 3 | 0 |' "$out/campaign-report.md" || fail "the report does not show 3 runs, 0 failed: $(cat "$out/campaign-report.md")"
  grep -q '^## Leader stalls in a stretch with no fault$' "$out/campaign-report.md" || fail "the report lists no leader stalls section"
  [[ $output == *"leader stalls with no fault"* ]] || fail "the runs' lines do not count the leader stalls with no fault"
  # every namespace the runs made is gone
  nets=$(sed -n 's/^run .*, network \(fx[a-z0-9]*\)).*/\1/p' <<<"$output")
  [ "$(wc -w <<<"$nets")" -eq 3 ] || fail "three runs' networks expected: $nets"
  run -0 ip netns list
  for n in $nets; do
    [[ $output != *"$n-"* ]] || fail "namespaces of $n left behind: $output"
  done
}

@test "PEER=nats: the same seed's schedule against NATS JetStream fills the same table (its loss is counted, not asserted)" {
  out=$BATS_TEST_TMPDIR/nats
  run python3 "$REPO_ROOT/tests/campaign/campaign.py" --peer nats --runs 1 --seed "$SEED" --duration 16 --faults "$FAULTS" \
    --out "$out" --keep --build "$FELIX_BUILD"
  echo "$output"
  [ "$status" -le 1 ] || fail "the campaign could not run (exit $status)"
  net=$(sed -n 's/^run .*, network \(fx[a-z0-9]*\)).*/\1/p' <<<"$output")
  res=$out/run-$SEED/result.json
  [ -s "$res" ] || fail "no result.json"
  # the adapter worked: traffic flowed both ways, every stream was read back,
  # and no check of the harness itself failed (NATS's own losses may)
  run -0 python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
bad = [v for v in r["violations"] if v[0] in ("setup", "harness", "unreadable", "broken_invariant")]
assert not bad, bad
assert r["peer"] == "nats", r["peer"]
assert r["figures"]["acked_quorum"] > 100, r["figures"]
assert r["figures"]["acked_leader"] == 0, r["figures"]
print(r["figures"], r["publishes"])' "$res"
  grep -q '^| nats | 1 | [01] |' "$out/campaign-report.md" || fail "no NATS row: $(cat "$out/campaign-report.md")"
  grep -q "^b[0-9] (seed [0-9]*): [0-9]* syncs seen" "$out/run-$SEED/powercut.log" || fail "the power cut was not taken: $(cat "$out/run-$SEED/powercut.log")"
  [ -n "$net" ] || fail "no network named"
  run -0 ip netns list
  [[ $output != *"$net-"* ]] || fail "namespaces of $net left behind: $output"
  run pgrep -f "nats-server -c $out/"
  [ "$status" -eq 1 ] || fail "nats-server processes left behind: $output"
}
