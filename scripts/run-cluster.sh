#!/usr/bin/env bash
# make run: a control plane and three brokers on loopback, data under ./run/,
# in the foreground with their logs; Ctrl-C drains all four. Running it again
# reuses the same data (and the same tokens).
set -u
BUILD=${BUILD:-build}
RUN=${RUN_DIR:-run}
mkdir -p "$RUN"
RUN=$(cd "$RUN" && pwd)
export FELIX_RUNTIME_DIR="$RUN/runtime"
mkdir -p "$FELIX_RUNTIME_DIR"
pids=()

prefix() { # prefix every log line with the process name
  local name=$1
  while IFS= read -r line; do printf '%-4s %s\n' "$name" "$line"; done
}

"$BUILD/felix-broker" control-plane --listen 127.0.0.1:7070 --db "$RUN/control-plane.db" \
  2> >(prefix cp >&2) &
pids+=($!)
for i in $(seq 1 100); do [ -s "$RUN/control-plane.db.broker-token" ] && break; sleep 0.1; done
if [ ! -s "$RUN/control-plane.db.broker-token" ]; then
  echo "make run: the control plane did not start (see its log above)" >&2
  kill "${pids[@]}" 2>/dev/null
  exit 1
fi
for n in 1 2 3; do
  "$BUILD/felix-broker" run --id "b$n" --data-dir "$RUN/b$n" --listen "127.0.0.1:710$n" --http "127.0.0.1:720$n" \
    --control-plane http://127.0.0.1:7070 --token-file "$RUN/control-plane.db.broker-token" \
    2> >(prefix "b$n" >&2) &
  pids+=($!)
done

cat <<MSG
Felix is running: control plane on http://127.0.0.1:7070, brokers b1 b2 b3 on 127.0.0.1:7101-7103.
Try, from another terminal:
  export FELIX_CONTROL_PLANE=http://127.0.0.1:7070 FELIX_TOKEN_FILE=$RUN/control-plane.db.admin-token
  $BUILD/felixctl cluster status
  $BUILD/felixctl broker list
  $BUILD/felixctl stream create orders --shards 3 --replicas 3
  $BUILD/felixctl shard list
  seq 1 1000 | $BUILD/felixctl produce orders --shard 0
  $BUILD/felixctl consume orders --shard 0 --count 5
  $BUILD/felix-inspect $RUN/b1
Ctrl-C drains all four.
MSG

stop() {
  echo "make run: draining..." >&2
  for ((i = ${#pids[@]} - 1; i >= 1; i--)); do kill -TERM "${pids[$i]}" 2>/dev/null; done
  for ((i = ${#pids[@]} - 1; i >= 1; i--)); do wait "${pids[$i]}" 2>/dev/null; done
  kill -TERM "${pids[0]}" 2>/dev/null
  wait "${pids[0]}" 2>/dev/null
  echo "make run: stopped" >&2
  exit 0
}
trap stop INT TERM
wait
