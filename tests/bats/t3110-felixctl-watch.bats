#!/usr/bin/env bats
# t3110 — what felixctl --watch prints again in a pipe, against a stand-in
# control plane (fake_cp.py) whose answers change in chosen fields only: a
# lease age, and a shard's detail (shown by -o wide, not by the table).

load cluster

setup() {
  cluster_init "$BATS_TEST_TMPDIR/c"
  echo 0123456789abcdef0123456789abcdef >"$FELIX_TOKEN_FILE"
  python3 "$BATS_TEST_DIRNAME/fake_cp.py" "$PORT_BASE" 2>"$C/fake.log" &
  echo "cp $!" >>"$C/pids"
  wait_until 10 curl -sf --max-time 2 "$FELIX_CONTROL_PLANE/v1/brokers" -o /dev/null
}

teardown() {
  [ -z "${watcher:-}" ] || kill "$watcher" 2>/dev/null || true
  cluster_teardown
}

# watch_for SECONDS OUT ARGS... — felixctl ARGS --watch into OUT for SECONDS
# (an observation window: two or three refreshes), then SIGINT; exit 0.
watch_for() {
  local secs=$1 out=$2
  shift 2
  "$CTL" "$@" --watch >"$out" 2>"$C/watch.err" &
  watcher=$!
  wait_until 20 test -s "$out"
  sleep "$secs"
  kill -INT "$watcher"
  wait "$watcher" || fail "--watch exited $?: $(cat "$C/watch.err")"
  watcher=
}

@test "--watch in a pipe: a change only in what the table leaves out does not print the same table again" {
  watch_for 5 "$C/table.out" shard list
  [ "$(grep -c '^STREAM' "$C/table.out")" -eq 1 ] || fail "the same table printed again: $(cat "$C/table.out")"
  watch_for 5 "$C/brokers.out" broker list
  [ "$(grep -c '^ID' "$C/brokers.out")" -eq 1 ] || fail "printed again for a lease age: $(cat "$C/brokers.out")"
}

@test "--watch in a pipe: -o wide shows the detail, so each new detail prints the table again" {
  watch_for 5 "$C/wide.out" -o wide shard list
  [ "$(grep -c '^STREAM' "$C/wide.out")" -ge 2 ] || fail "a changed detail was not printed: $(cat "$C/wide.out")"
  run -0 grep -c 'answer [0-9]' "$C/wide.out"
  [ "$output" -ge 2 ]
  watch_for 5 "$C/json.out" -o json shard list
  [ "$(wc -l <"$C/json.out")" -ge 2 ] || fail "-o json: a changed detail was not printed: $(cat "$C/json.out")"
}
