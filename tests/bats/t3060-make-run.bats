#!/usr/bin/env bats
# t3060 — make run (scripts/run-cluster.sh): a control plane and three
# brokers on the ports PORT_BASE names, the exports it prints work, and
# SIGTERM drains all four.

load cluster

setup() {
  cluster_init "$BATS_TEST_TMPDIR/c"
  RUN_PID=
}

teardown() {
  # the script and everything it started run in its own session (each
  # process in its own group: pkill by session id)
  [ -z "$RUN_PID" ] || pkill -9 -s "$RUN_PID" 2>/dev/null || true
  cluster_teardown
  if [ -z "${BATS_TEST_COMPLETED:-}" ]; then tail -n 30 "$C/run.out" "$C/run.log" >&3 2>/dev/null || true; fi
}

@test "make run takes its ports from PORT_BASE, says which, prints exports that work, and drains on SIGTERM" {
  setsid env PORT_BASE="$PORT_BASE" RUN_DIR="$C/run" BUILD="$FELIX_BUILD" bash "$REPO_ROOT/scripts/run-cluster.sh" \
    >"$C/run.out" 2>"$C/run.log" &
  RUN_PID=$!
  wait_until 30 grep -q "^Felix is running" "$C/run.out"
  grep -qxF "Felix is running (PORT_BASE=$PORT_BASE): control plane on http://127.0.0.1:$PORT_BASE, brokers b1 b2 b3 on" "$C/run.out" ||
    fail "$(cat "$C/run.out")"
  grep -qF "127.0.0.1:$((PORT_BASE + 31))-$((PORT_BASE + 33)) (data) and 127.0.0.1:$((PORT_BASE + 131))-$((PORT_BASE + 133))" "$C/run.out" ||
    fail "$(cat "$C/run.out")"
  unset FELIX_CONTROL_PLANE FELIX_TOKEN_FILE
  eval "$(grep '^  export ' "$C/run.out")" # what a user pastes
  [ "$FELIX_CONTROL_PLANE" = "http://127.0.0.1:$PORT_BASE" ]
  wait_until 60 brokers_alive 3
  for n in 1 2 3; do
    run -0 curl -s --max-time 5 "http://127.0.0.1:$((PORT_BASE + 130 + n))/live"
  done
  run -0 "$CTL" -o json broker list
  [ "$(jget '[b["address"] for b in j]' <<<"$output")" = "[\"127.0.0.1:$((PORT_BASE + 31))\", \"127.0.0.1:$((PORT_BASE + 32))\", \"127.0.0.1:$((PORT_BASE + 33))\"]" ]
  kill -TERM "$RUN_PID"
  wait_exit "$RUN_PID" 60
  RUN_PID=
  [ "$(grep -c 'msg="drained: run-state state=stopped"' "$C/run.log")" -eq 3 ] || fail "$(cat "$C/run.log")"
  grep -q 'make run: stopped' "$C/run.log"
}

shards_active() { [ "$("$CTL" -o json cluster status | jget 'j["shards_active"]')" = "$1" ]; }

# The last line of the run log that matches $1 (its number), 0 when none does.
last_line_of() { grep -n -- "$1" "$C/run.log" | tail -n 1 | cut -d: -f1 || true; }

# interactive_run — make run's script as a terminal starts it (a job bats
# starts ignores SIGINT, a command typed at a terminal does not), its exports
# taken, its three brokers alive; RUN_PID is the script's.
interactive_run() {
  setsid env --default-signal=INT PORT_BASE="$PORT_BASE" RUN_DIR="$C/run" BUILD="$FELIX_BUILD" \
    bash "$REPO_ROOT/scripts/run-cluster.sh" >"$C/run.out" 2>"$C/run.log" &
  RUN_PID=$!
  wait_until 30 grep -q "^Felix is running" "$C/run.out"
  eval "$(grep '^  export ' "$C/run.out")"
  wait_until 60 brokers_alive 3
}

@test "Ctrl-C (SIGINT to the script's process group, as a terminal sends it) drains the brokers before the control plane" {
  interactive_run
  run -0 "$CTL" stream create orders --shards 3 --replicas 3
  wait_until 30 shards_active 3
  kill -INT -- "-$RUN_PID" # the terminal's signal: to the foreground group, the script's
  wait_exit "$RUN_PID" 60
  [ "$(grep -c 'msg="drained: run-state state=stopped"' "$C/run.log")" -eq 3 ] || fail "$(cat "$C/run.log")"
  drained=$(last_line_of 'msg="drained: run-state')
  closed=$(last_line_of 'msg="stopped: database closed"')
  [ "$closed" -gt "$drained" ] || fail "the control plane stopped (line $closed) before the last broker drained (line $drained)"
  RUN_PID=
}

# A broker paused with SIGSTOP: the script neither ends on it (with job
# control a plain `wait` returns when a job stops, and the processes were
# left running) nor hangs on it at Ctrl-C (its SIGTERM waits for a SIGCONT).
@test "make run: a paused broker neither ends the script nor stops its drain at Ctrl-C" {
  interactive_run
  b2=$(pgrep -f -- "--id b2 --data-dir $C/run/b2") || fail "no b2"
  kill -STOP "$b2"
  sleep 1 # an observation window: the script must still be there after it
  kill -0 "$RUN_PID" || fail "the script ended when b2 was paused"
  kill -INT -- "-$RUN_PID"
  wait_exit "$RUN_PID" 60
  RUN_PID=
  [ "$(grep -c 'msg="drained: run-state state=stopped"' "$C/run.log")" -eq 3 ] || fail "$(cat "$C/run.log")"
  run ! pgrep -f -- "$C/run/"
}

# The second Ctrl-C kills: here the control plane is paused, so the drain
# cannot finish, and the second SIGINT must end every process anyway.
@test "make run: a second Ctrl-C during the drain kills every process and exits 130" {
  interactive_run
  run -0 "$CTL" stream create orders --shards 3 --replicas 3
  wait_until 30 shards_active 3
  kill -STOP "$(pgrep -f -- "control-plane --listen 127.0.0.1:$PORT_BASE --db $C/run/")"
  kill -INT -- "-$RUN_PID"
  wait_until 10 grep -q 'make run: draining' "$C/run.log"
  kill -INT -- "-$RUN_PID"
  wait_exit "$RUN_PID" 30
  rc=0
  wait "$RUN_PID" || rc=$?
  RUN_PID=
  [ "$rc" -eq 130 ] || fail "exit $rc, 130 expected"
  grep -q 'make run: killed' "$C/run.log" || fail "$(tail -5 "$C/run.log")"
  run ! pgrep -f -- "$C/run/"
}

# `kill -TERM` of make itself (a service manager's stop, a script's kill):
# make signals its recipe's process, which must be the script (exec), not a
# shell that dies and leaves the script and its brokers running.
@test "make run: SIGTERM to make drains every process and leaves none" {
  setsid make -s -C "$REPO_ROOT" run PORT_BASE="$PORT_BASE" RUN_DIR="$C/run" BUILD="$FELIX_BUILD" \
    >"$C/run.out" 2>"$C/run.log" &
  RUN_PID=$!
  wait_until 60 grep -q "^Felix is running" "$C/run.out"
  eval "$(grep '^  export ' "$C/run.out")"
  wait_until 60 brokers_alive 3
  kill -TERM "$RUN_PID"
  wait_until 60 bash -c "! pgrep -s '$RUN_PID' >/dev/null"
  RUN_PID=
  [ "$(grep -c 'msg="drained: run-state state=stopped"' "$C/run.log")" -eq 3 ] || fail "$(cat "$C/run.log")"
  grep -q 'make run: stopped' "$C/run.log" || fail "$(tail -5 "$C/run.log")"
  run ! pgrep -f -- "$C/run/"
}

@test "make run refuses a PORT_BASE that is not a port, naming it" {
  run -2 env PORT_BASE=70x RUN_DIR="$C/run" BUILD="$FELIX_BUILD" bash "$REPO_ROOT/scripts/run-cluster.sh"
  assert_output "make run: PORT_BASE=70x is not a port number"
  run -2 env PORT_BASE=65500 RUN_DIR="$C/run" BUILD="$FELIX_BUILD" bash "$REPO_ROOT/scripts/run-cluster.sh"
  assert_output --partial "PORT_BASE=65500"
}
