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
  tmux -L "felix-watch-$$" kill-server 2>/dev/null || true
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

# On a terminal the screen is redrawn every 2 s under a line with the time,
# changed or not, as watch(1) does; Ctrl-C ends it with exit 0.
@test "--watch on a terminal redraws the screen every 2 s under the time; Ctrl-C exits 0" {
  command -v tmux >/dev/null || fail "tmux is not installed (make deps)"
  local sock="felix-watch-$$"
  tmux -L "$sock" -f /dev/null new-session -d -s w -x 100 -y 20 \
    "'$CTL' --control-plane '$FELIX_CONTROL_PLANE' --token-file '$FELIX_TOKEN_FILE' broker list --watch; echo \$? >'$C/watch.rc'; sleep 30"
  header() { tmux -L "$sock" capture-pane -p -t w | grep -m1 '^Every 2.0s: felixctl broker list '; }
  wait_until 20 header
  first=$(header)
  [[ $first =~ [0-9]{2}:[0-9]{2}:[0-9]{2} ]] || fail "no time in the header: $first"
  tmux -L "$sock" capture-pane -p -t w | grep -q '^b1 ' || fail "no broker row under the header"
  wait_until 10 bash -c "[ \"\$(tmux -L '$sock' capture-pane -p -t w | grep -m1 '^Every 2.0s')\" != '$first' ]"
  [ "$(tmux -L "$sock" capture-pane -p -t w | grep -c '^Every 2.0s')" -eq 1 ] || fail "the screen was not cleared before the redraw"
  tmux -L "$sock" send-keys -t w C-c
  wait_until 10 test -s "$C/watch.rc"
  [ "$(cat "$C/watch.rc")" = 0 ]
}
