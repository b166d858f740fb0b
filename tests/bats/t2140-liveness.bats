#!/usr/bin/env bats
# t2140 — healthy brokers stay healthy (review round 5, items 1 and 2): the
# heartbeat keeps its cadence through a trickle of records and the idle time
# after it, and a broker survives writing to a connection whose other end is
# gone (SIGPIPE). Real processes, the default periodic fsync mode.

load replication

setup() { cluster_init "$BATS_TEST_TMPDIR/c"; }

teardown() {
  cluster_teardown
  if [ -z "${BATS_TEST_COMPLETED:-}" ]; then tail -n 30 "$C"/*.log >&3 2>/dev/null || true; fi
}

generations_of() { "$CTL" -o json shard list | jget '" ".join("%s/%s=%s" % (s["stream"], s["shard"], s["generation"]) for s in j)'; }
lapses() { grep -c 'event=lease_lapsed' "$C/cp.log" || true; }

@test "1: after a trickle of records, idle for several leases: no lease lapses, every generation kept, every broker alive at every poll" {
  LEASE_MS=2000 cp_start
  for i in 1 2 3; do broker_start "$i"; done
  wait_until 60 brokers_alive 3
  run -0 "$CTL" stream create t --shards 3 --replicas 3
  for s in 0 1 2; do wait_until 60 shard_is "t/$s" Active; done
  before=$(generations_of)
  # 400 records at about 50 a second on one connection (the trickle that
  # once pushed the heartbeat deadline many seconds ahead of the clock).
  run -0 bash -c 'for i in $(seq 1 400); do echo "r$i"; sleep 0.02; done | "$0" -o json produce t --shard 0' "$CTL"
  [ "$(echo "$output" | jget 'j["count"]')" -eq 400 ]
  # Idle for six leases, sampled every half second: the state must not move.
  for poll in $(seq 1 24); do
    [ "$(alive_count)" -eq 3 ] || fail "poll $poll: only $(alive_count) of 3 brokers alive; cp.log: $(grep -m3 lease_lapsed "$C/cp.log")"
    [ "$(generations_of)" = "$before" ] || fail "poll $poll: generations moved from '$before' to '$(generations_of)'"
    sleep 0.5
  done
  [ "$(lapses)" -eq 0 ] || fail "$(lapses) lease lapses: $(grep lease_lapsed "$C/cp.log")"
}

@test "1: a lapsed lease is a warning in the control plane's log, and a late heartbeat one in the broker's" {
  LEASE_MS=2000 cp_start
  broker_start 1
  wait_until 60 brokers_alive 1
  pid=$(pid_of b1)
  kill -STOP "$pid"
  wait_until 30 grep -q 'event=lease_lapsed' "$C/cp.log"
  kill -CONT "$pid"
  grep 'event=lease_lapsed' "$C/cp.log" | grep -q 'level=warn' || fail "lapse not at warn: $(grep lease_lapsed "$C/cp.log")"
  wait_until 30 grep -q 'msg="heartbeat went out late"' "$C/b1.log"
  grep 'heartbeat went out late' "$C/b1.log" | grep -q 'level=warn'
  wait_until 30 brokers_alive 1
}

@test "2: a follower paused while its leader is killed, then resumed, keeps running and rejoins (SIGPIPE ignored)" {
  rcluster_up
  L=$(leader_of)
  read -r F1 F2 <<<"$(others_than "$L" | tr '\n' ' ')"
  produce_acked 1 50
  fpid=$(pid_of "$F1")
  kill -STOP "$fpid"
  # Shipments to the paused follower queue up in its socket; the quorum is
  # the leader and the other follower.
  produce_acked 51 400
  stop_process "$L" KILL
  kill -CONT "$fpid"
  wait_until 60 leader_is_not "$L"
  active_or_gone() { shard_is r/0 Active || ! kill -0 "$fpid" 2>/dev/null; }
  wait_until 60 active_or_gone
  kill -0 "$fpid" 2>/dev/null || fail "$F1 died once resumed; its log ends: $(tail -n 2 "$C/$F1.log")"
  shard_is r/0 Active
  wait_until 60 caught_up "$F1"
  kill -0 "$fpid" || fail "$F1 died after it was resumed: $(tail -n 5 "$C/$F1.log")"
}

@test "1: with the control plane down and an inventory to deliver, the broker calls it at its heartbeat cadence, not in a loop" {
  cp_start
  broker_start 1
  wait_until 60 brokers_alive 1
  run -0 "$CTL" stream create s --shards 1 --replicas 1
  wait_until 60 shard_is s/0 Active
  stop_process cp KILL
  # In the control plane's place, a listener that counts the connections and
  # closes each at once (every call fails fast, as when nothing listens).
  python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64); s.settimeout(0.2)
n = 0; end = time.time() + 30
while time.time() < end:
    try: c, _ = s.accept()
    except socket.timeout: continue
    c.close(); n += 1
    open(sys.argv[2], "w").write(str(n))' "${CP_ADDR#*:}" "$C/calls" &
  echo "counter $!" >>"$C/pids"
  rm -rf "$C"/b1/shards/s_0-* # an inventory change while the control plane is away
  wait_until 10 grep -q 'shard copy refused' "$C/b1.log"
  wait_until 10 test -s "$C/calls"
  first=$(cat "$C/calls")
  wait_until 20 grep -q 'control plane unreachable' "$C/b1.log"
  # A window of three heartbeat periods (a sampling window, not a wait): the
  # count moves by a handful (a heartbeat and a report each period), not by
  # hundreds as a thread re-sending the inventory every pass does.
  sleep 3
  calls=$(( $(cat "$C/calls") - first ))
  [ "$calls" -le 20 ] || fail "$calls calls to the control plane in 3 s with it down (a spinning thread)"
  [ "$calls" -ge 2 ] || fail "only $calls calls in 3 s: the broker stopped heartbeating"
}
