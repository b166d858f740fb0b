#!/usr/bin/env bats
# t5010 — a Felix cluster across network namespaces (tests/campaign/net.sh,
# issue 14): the control plane, three brokers and the clients each on a
# "machine" of its own, so that a partition is a real one (nftables drops
# packets between them) instead of a stopped process.

load replication

setup() {
  [ "$(id -u)" -eq 0 ] || skip "network namespaces need root (CI runs as root)"
  source "$REPO_ROOT/tests/campaign/net.sh"
  NET_DIR=$BATS_TEST_TMPDIR
  ID=$(printf 'c%x' $((($$ * 64 + BATS_TEST_NUMBER) % 1048576)))
  cluster_init "$BATS_TEST_TMPDIR/c"
  net_up "$ID" cp cl b1 b2 b3
  CPA=$(net_addr "$ID" cp)
  export FELIX_CONTROL_PLANE=http://$CPA:9500
  # felixctl runs on the clients' machine
  printf '#!/bin/sh\nexec ip netns exec %s %s "$@"\n' "$(net_ns "$ID" cl)" "$FELIX_BUILD/felixctl" >"$C/felixctl"
  chmod +x "$C/felixctl"
  CTL=$C/felixctl
}

teardown() {
  [ -n "${ID:-}" ] || return 0
  cluster_teardown
  net_down "$ID"
}

ns_cp_start() {
  ip netns exec "$(net_ns "$ID" cp)" "$BROKER" control-plane --listen "$CPA:9500" --db "$CP_DB" \
    --lease-ms "${LEASE_MS:-5000}" 2>>"$C/cp.log" &
  echo "cp $!" >>"$C/pids"
  disown $!
  wait_until 10 test -s "$CP_DB.broker-token"
  wait_until 10 "$CTL" cluster status
}

# ns_broker_start N — broker bN on its machine, with its own boot id and runtime directory
ns_broker_start() {
  local n=$1 a
  a=$(net_addr "$ID" "b$n")
  [ -f "$C/boot_id.b$n" ] || echo "boot-$RANDOM-b$n" >"$C/boot_id.b$n"
  FELIX_BOOT_ID_FILE="$C/boot_id.b$n" FELIX_RUNTIME_DIR="$C/runtime.b$n" \
    ip netns exec "$(net_ns "$ID" "b$n")" "$BROKER" run --id "b$n" --data-dir "$C/b$n" --listen "$a:9000" \
    --http "$a:9100" --control-plane "$FELIX_CONTROL_PLANE" --token-file "$CP_DB.broker-token" 2>>"$C/b$n.log" &
  echo "b$n $!" >>"$C/pids"
  disown $!
}

ns_cluster_up() {
  ns_cp_start
  for n in 1 2 3; do ns_broker_start "$n"; done
  wait_until 60 brokers_alive 3
  run -0 "$CTL" stream create r --shards 1 --replicas 3
  wait_until 60 shard_is r/0 Active
  : >"$C/acked"
  : >"$C/seen"
}

@test "a leader cut off from both followers by a real partition loses the shard to them; nothing acknowledged is lost; healed, it catches up" {
  ns_cluster_up
  run -0 "$CTL" -o json broker list
  [[ $output == *"$(net_addr "$ID" b2):9000"* ]] || fail "b2 does not advertise its machine's address: $output"
  produce_acked 1 50 || fail "not every record was acknowledged"
  acked_readable
  L=$(leader_of)
  g=$(shard_generation r/0)
  for f in $(others_than "$L"); do
    wait_until 30 caught_up "$f"
    net_cut "$ID" "$L" "$f" # the leader still reaches the control plane and the clients
  done
  # A publish now cannot reach a quorum: not acknowledged. (An idle shard's
  # leader cut off from its followers keeps the shard: it is moved once a
  # publish finds no quorum for a lease, docs/campaign.md.)
  run timeout 30 "$CTL" -o json produce r --shard 0 <<<"during-the-partition"
  [ "$status" -ne 0 ] && [[ $output != *'"count": 1'* ]] || fail "acknowledged without a quorum: $status $output"
  wait_until 60 generation_above r/0 "$g"
  wait_until 60 shard_is r/0 Active
  [ "$(leader_of)" != "$L" ] || fail "the cut-off leader kept the shard"
  grep -q "leader $L lost: no quorum for" "$C/cp.log" || fail "not moved for want of a quorum: $(grep "$L" "$C/cp.log" | tail -3)"
  produce_acked 51 100 || fail "the new leader did not acknowledge"
  net_heal "$ID"
  wait_until 60 caught_up "$L"
  acked_readable
}
