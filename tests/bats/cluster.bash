# cluster.bash — real processes on loopback for the cluster suites: a control
# plane and brokers, each on ports no other test uses, their logs kept under
# the test's directory, every process killed at teardown.
#
# Every broker gets FELIX_BOOT_ID_FILE (so a test can simulate a machine
# restart by changing it) and a private FELIX_RUNTIME_DIR (the boot tokens).

load helpers

# The sanitizer build with every assert on (make all builds it); teardown
# fails the test when any process's log shows a failed assert or a
# sanitizer report. The fault shims are LD_PRELOADed before ASan's runtime,
# hence verify_asan_link_order=0; leaks are the offline tools' check
# (valgrind), not a broker killed mid-run's.
BROKER="$FELIX_BUILD/felix-broker-san"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:verify_asan_link_order=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
CTL="$FELIX_BUILD/felixctl"

# Picks a base port with 40 free ports above it, below the kernel's ephemeral
# range (/proc/sys/net/ipv4/ip_local_port_range, 32768 and up here): a port
# in that range may be taken at any moment as the local end of an outgoing
# connection, and a broker that cannot listen exits.
# Under tests/run-bats.sh's lanes, lane k of n takes only its own share of
# the 220 ranges (FELIX_TEST_LANE, FELIX_TEST_LANES), so two tests running
# at once never pick the same one.
pick_ports() {
  local tries=0 base lanes=${FELIX_TEST_LANES:-1} lane=${FELIX_TEST_LANE:-0} share
  share=$((220 / lanes))
  while [ $tries -lt 50 ]; do
    base=$((10000 + (lane * share + RANDOM % share) * 100))
    if ! ss -tanH 2>/dev/null | awk '{print $4}' | grep -Eq ":(${base:0:3}[0-9][0-9])$"; then
      PORT_BASE=$base
      return 0
    fi
    tries=$((tries + 1))
  done
  fail "no free port range found"
}

cluster_init() { # DIR
  C=$1
  mkdir -p "$C"
  pick_ports
  CP_ADDR=127.0.0.1:$PORT_BASE
  export FELIX_CONTROL_PLANE=http://$CP_ADDR
  CP_DB=$C/cp.db
  CP_LEDGER= # set by cp_own_disk: the control plane runs under the sync recorder
  export FELIX_TOKEN_FILE=$CP_DB.admin-token
  export FELIX_RUNTIME_DIR=$C/runtime
  export FELIX_BOOT_ID_FILE=$C/boot_id
  echo "boot-$RANDOM-one" >"$FELIX_BOOT_ID_FILE"
  unset FELIX_DATA_DIR FELIX_DURABLE_FSYNC_MODE FELIX_DURABLE_SEGMENT_BYTES
  : >"$C/pids"
}

cp_start() { # [extra flags]
  local recorder=()
  [ -z "$CP_LEDGER" ] || recorder=(env FELIX_FAULTS_LEDGER="$CP_LEDGER" FELIX_FAULTS_ROOT="${CP_DB%/*}"
    LD_PRELOAD="$FELIX_BUILD/faults/libfelix_faults.so")
  "${recorder[@]}" "$BROKER" control-plane --listen "$CP_ADDR" --db "$CP_DB" --lease-ms "${LEASE_MS:-5000}" "$@" 2>>"$C/cp.log" &
  echo "cp $!" >>"$C/pids"
  disown $! # no job-control noise when teardown kills it
  wait_until 10 test -s "$CP_DB.broker-token"
  wait_until 10 "$CTL" cluster status
}

broker_port() { echo $((PORT_BASE + 10 + $1)); }

broker_start() { # N [extra flags] — broker bN
  local n=$1
  shift
  "$BROKER" run --id "b$n" --data-dir "$C/b$n" --listen "127.0.0.1:$(broker_port "$n")" \
    --http "127.0.0.1:$((PORT_BASE + 20 + n))" --control-plane "$FELIX_CONTROL_PLANE" \
    --token-file "$CP_DB.broker-token" "$@" 2>>"$C/b$n.log" &
  echo "b$n $!" >>"$C/pids"
  disown $!
}

pid_of() { awk -v n="$1" '$1 == n {p = $2} END {print p}' "$C/pids"; }

# alive_count — how many brokers the control plane shows alive.
alive_count() { "$CTL" -o json broker list | jget 'len([b for b in j if b["alive"]])'; }
brokers_alive() { [ "$(alive_count)" = "$1" ]; }

cluster_up() { # N brokers
  cp_start
  local i
  for i in $(seq 1 "$1"); do broker_start "$i"; done
  wait_until 60 brokers_alive "$1"
}

shard_state() { "$CTL" -o json shard describe "$1" | jget 'j["state"]'; }
shard_is() { [ "$(shard_state "$1")" = "$2" ]; }
shard_generation() { "$CTL" -o json shard describe "$1" | jget 'j["generation"]'; }
generation_above() { [ "$(shard_generation "$1")" -gt "$2" ]; }

# wait_exit PID SECONDS — waits for a process (not our child) to exit.
wait_exit() { wait_until "$2" bash -c "! kill -0 $1 2>/dev/null"; }

# this_start_says NAME PATTERN — PATTERN is in NAME's log among the lines of its
# latest start (from its last `msg=starting` line on). The logs are appended
# across restarts: a plain grep would match an earlier start's line.
this_start_says() {
  awk '/ msg=starting /{n = 0} {l[n++] = $0} END {for (i = 0; i < n; i++) print l[i]}' "$C/$1.log" | grep -q "$2"
}

# stop_process NAME SIGNAL — signals a process and waits for it to go.
stop_process() {
  local pid
  pid=$(pid_of "$1")
  kill "-$2" "$pid"
  wait_exit "$pid" 30
}

# broken_invariants — the log lines of a failed assert or a sanitizer report
# (tests/broken-invariants.ere, which run-bats.sh also uses) in any of the
# test's process logs (none: exit 1).
broken_invariants() {
  local patterns="$REPO_ROOT/tests/broken-invariants.ere"
  [ -s "$patterns" ] || { echo "no patterns in $patterns: nothing would be caught"; return 0; }
  grep -HE -f "$patterns" "$C"/*.log 2>/dev/null
}

# /metrics of a broker (bN: N) or the control plane, and one sample of it.
broker_metrics() { curl -sf --max-time 5 "http://127.0.0.1:$((PORT_BASE + 20 + $1))/metrics"; }
cp_metrics() { curl -sf --max-time 5 "$FELIX_CONTROL_PLANE/metrics"; }
# sample TEXT NAME{LABELS} — the value of one sample ("" when absent).
sample() { awk -v k="$2" '$1 == k { print $2 }' <<<"$1"; }
# metric_is WHERE NAME{LABELS} VALUE — e.g. metric_is cp 'felix_cp_streams' 1; WHERE is cp or a broker number.
metric_is() {
  local text
  if [ "$1" = cp ]; then text=$(cp_metrics); else text=$(broker_metrics "$1"); fi
  [ "$(sample "$text" "$2")" = "$3" ]
}
# metric_above / metric_below WHERE NAME{LABELS} VALUE — the sample is present and above (below) VALUE.
metric_compare() {
  local text v
  if [ "$2" = cp ]; then text=$(cp_metrics); else text=$(broker_metrics "$2"); fi
  v=$(sample "$text" "$3")
  [ -n "$v" ] && python3 -c "import sys; a, b = float('$v'), float('$4'); sys.exit(0 if (a > b if '$1' == 'above' else a < b) else 1)"
}
metric_above() { metric_compare above "$@"; }
metric_below() { metric_compare below "$@"; }

cluster_teardown() {
  [ -f "$C/pids" ] || return 0
  awk '{print $2}' "$C/pids" | xargs -r kill -9 2>/dev/null || true
  if broken_invariants >&2; then
    fail "a process hit a failed assert or a sanitizer report (above)"
  fi
}
