#!/usr/bin/env bash
# make run: a control plane and three brokers on loopback, data under ./run/,
# in the foreground with their logs; Ctrl-C drains all four (a second Ctrl-C
# kills them at once). Running it again
# reuses the same data (and the same tokens).
#
# Ports from PORT_BASE (default 7070): the control plane on PORT_BASE,
# broker bN's data port on PORT_BASE+30+N and its HTTP port on
# PORT_BASE+130+N (7070, 7101-7103, 7201-7203 by default).
set -u
BUILD=${BUILD:-build}
RUN=${RUN_DIR:-run}
mkdir -p "$RUN"
RUN=$(cd "$RUN" && pwd)
export FELIX_RUNTIME_DIR="$RUN/runtime"
mkdir -p "$FELIX_RUNTIME_DIR"
PORT_BASE=${PORT_BASE:-7070}
case $PORT_BASE in
'' | *[!0-9]*) echo "make run: PORT_BASE=$PORT_BASE is not a port number" >&2; exit 2 ;;
esac
if [ "$PORT_BASE" -lt 1 ] || [ "$PORT_BASE" -gt 65400 ]; then
  echo "make run: PORT_BASE=$PORT_BASE: it and PORT_BASE+133 must be ports (1 to 65400)" >&2
  exit 2
fi
CP=127.0.0.1:$PORT_BASE
data_port() { echo $((PORT_BASE + 30 + $1)); }
http_port() { echo $((PORT_BASE + 130 + $1)); }
pids=()
# Each process in its own process group: Ctrl-C reaches this script alone,
# which stops the brokers first (they hand their shards off through the
# control plane) and the control plane last. Without it the terminal's
# SIGINT stopped all four at once and the brokers drained without it.
set -m

prefix() { # prefix every log line with the process name
  local name=$1
  while IFS= read -r line; do printf '%-4s %s\n' "$name" "$line"; done
}

"$BUILD/felix-broker" control-plane --listen "$CP" --db "$RUN/control-plane.db" \
  2> >(prefix cp >&2) &
pids+=($!)
for i in $(seq 1 100); do [ -s "$RUN/control-plane.db.broker-token" ] && break; sleep 0.1; done
if [ ! -s "$RUN/control-plane.db.broker-token" ]; then
  echo "make run: the control plane did not start (see its log above)" >&2
  kill "${pids[@]}" 2>/dev/null
  exit 1
fi
for n in 1 2 3; do
  "$BUILD/felix-broker" run --id "b$n" --data-dir "$RUN/b$n" --listen "127.0.0.1:$(data_port "$n")" \
    --http "127.0.0.1:$(http_port "$n")" --control-plane "http://$CP" --token-file "$RUN/control-plane.db.broker-token" \
    2> >(prefix "b$n" >&2) &
  pids+=($!)
done

cat <<MSG
Felix is running (PORT_BASE=$PORT_BASE): control plane on http://$CP, brokers b1 b2 b3 on
127.0.0.1:$(data_port 1)-$(data_port 3) (data) and 127.0.0.1:$(http_port 1)-$(http_port 3) (/live /ready /metrics).
Try, from another terminal:
  export FELIX_CONTROL_PLANE=http://$CP FELIX_TOKEN_FILE=$RUN/control-plane.db.admin-token
  $BUILD/felixctl cluster status
  $BUILD/felixctl broker list
  $BUILD/felixctl stream create orders --shards 3 --replicas 3
  $BUILD/felixctl shard list
  seq 1 1000 | $BUILD/felixctl produce orders --shard 0
  $BUILD/felixctl consume orders --shard 0 --count 5
  $BUILD/felix-inspect $RUN/b1
Ctrl-C drains all four; a second Ctrl-C kills them at once.
MSG

# A broker someone paused (SIGSTOP) gets its SIGTERM too: SIGCONT after it.
# `wait -f`: with job control on, a plain wait also returns when a job is
# merely stopped, and the script would end with its processes left running.
stop() {
  trap force INT TERM HUP
  echo "make run: draining... (Ctrl-C again stops them at once, SIGKILL)" >&2
  for ((i = ${#pids[@]} - 1; i >= 1; i--)); do kill -TERM "${pids[$i]}" 2>/dev/null; kill -CONT "${pids[$i]}" 2>/dev/null; done
  for ((i = ${#pids[@]} - 1; i >= 1; i--)); do wait -f "${pids[$i]}" 2>/dev/null; done
  kill -TERM "${pids[0]}" 2>/dev/null
  kill -CONT "${pids[0]}" 2>/dev/null
  wait -f "${pids[0]}" 2>/dev/null
  echo "make run: stopped" >&2
  exit 0
}
# The second Ctrl-C: no drain, every process killed (kill -9: the machine
# stays up, so its page cache keeps what they wrote; the next start recovers).
force() {
  trap '' INT TERM HUP
  kill -KILL "${pids[@]}" 2>/dev/null
  for p in "${pids[@]}"; do wait -f "$p" 2>/dev/null; done
  echo "make run: killed" >&2
  exit 130
}
trap stop INT TERM HUP
wait -f
