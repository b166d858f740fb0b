#!/usr/bin/env bats
# The data protocol as docs/wire.md documents it, spoken by an independent
# client (tests/tools/wire.py) to real brokers: redirects to the leader,
# refusals, and what a malformed frame gets.

load cluster

WIRE="$BATS_TEST_DIRNAME/../tools/wire.py"

setup() {
  cluster_init "$BATS_TEST_TMPDIR/c"
  cluster_up 2
  run -0 "$CTL" stream create w --shards 2 --replicas 1
  wait_until 60 shard_is w/0 Active
  wait_until 60 shard_is w/1 Active
  L0=$("$CTL" -o json shard describe w/0 | jget 'j["leader_address"]')
  L1=$("$CTL" -o json shard describe w/1 | jget 'j["leader_address"]')
  [ "$L0" != "$L1" ] # placement spread the two shards over the two brokers
}

teardown() {
  cluster_teardown
  if [ -z "${BATS_TEST_COMPLETED:-}" ]; then tail -n 40 "$C"/*.log >&3 2>/dev/null || true; fi
}

@test "a publish to a broker that does not lead the shard answers NOT_LEADER with the leader's address" {
  run -0 python3 "$WIRE" publish "$L1" w 0 hello
  assert_output "status=1 leader=$L0 first=0 count=0"
  run -0 python3 "$WIRE" publish "$L0" w 0 hello world
  assert_output "status=0 leader= first=1 count=2" # offset 0 is the generation-start record
  run -0 python3 "$WIRE" fetch "$L1" w 0 0
  assert_output --partial "status=1 leader=$L0"
  run -0 python3 "$WIRE" fetch "$L0" w 0 0
  assert_output "status=0 leader= hwm=3 next=3 count=2"
}

@test "felixctl produce and consume reach the leader of a shard that lives on the other broker" {
  run -0 bash -c "seq 1 20 | '$CTL' produce w --shard 1"
  run -0 bash -c "'$CTL' consume w --shard 1 | wc -l"
  assert_output 20
}

# metadata_has ADDR LINE — the broker's metadata (what it last heard from the
# control plane, so up to a heartbeat behind) has this line.
metadata_has() { python3 "$WIRE" metadata "$1" | grep -qxF "$2"; }

@test "metadata on any broker names every shard's leader and generation" {
  B0=$("$CTL" -o json shard describe w/0 | jget 'j["leader"]')
  B1=$("$CTL" -o json shard describe w/1 | jget 'j["leader"]')
  for addr in "$L0" "$L1"; do
    wait_until 30 metadata_has "$addr" "w 0 1 Active $B0 $L0"
    wait_until 30 metadata_has "$addr" "w 1 1 Active $B1 $L1"
  done
}

@test "an empty record, an unknown shard, an offset past the HWM and a malformed body are refused, and an unknown frame type closes the connection" {
  run -0 python3 "$WIRE" publish "$L0" w 0 ""
  assert_output --partial "status=3"
  run -0 python3 "$WIRE" publish "$L0" nosuch 0 x
  assert_output --partial "status=2"
  run -0 python3 "$WIRE" fetch "$L0" w 0 99
  assert_output --partial "status=4"
  run -0 python3 "$WIRE" raw "$L0" 0x0001 "0001"
  assert_output "reply type=0x8001 status=3"
  run -0 python3 "$WIRE" raw "$L0" 0x0042 ""
  assert_output "closed"
  run -0 python3 "$WIRE" metadata "$L0" # the broker is still serving
  assert_line --regexp "^w 0 1 (Fencing|Active) "
}
