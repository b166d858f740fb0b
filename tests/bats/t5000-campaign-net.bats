#!/usr/bin/env bats
# t5000 — the campaign's network (tests/campaign/net.sh, issue 14): nodes in
# network namespaces joined by a bridge, real partitions (nftables drop rules)
# and degradation (nftables loss, tc tbf, the NFQUEUE delayer); everything a test makes is removed by its id.

load helpers

setup() {
  [ "$(id -u)" -eq 0 ] || skip "network namespaces need root (CI runs as root)"
  source "$REPO_ROOT/tests/campaign/net.sh"
  NET_DIR=$BATS_TEST_TMPDIR
  ID=$(printf '%x' $((($$ * 64 + BATS_TEST_NUMBER) % 16777216)))
}

teardown() {
  [ -z "${ID:-}" ] || net_down "$ID"
}

# tcp_reach FROM TO — a TCP connection from FROM to TO's port 7000 is accepted
# (TO listens for one connection, at most 5 s; FROM waits at most 1 s).
tcp_reach() {
  local ready=$BATS_TEST_TMPDIR/ready.$RANDOM
  net_exec "$ID" "$2" timeout 5 python3 -c 'import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 7000)); s.listen(1); open(sys.argv[2], "w").close()
s.settimeout(4); c, _ = s.accept()' "$(net_addr "$ID" "$2")" "$ready" 2>/dev/null &
  local srv=$!
  wait_until 5 test -e "$ready"
  net_exec "$ID" "$1" python3 -c 'import socket, sys
socket.create_connection((sys.argv[1], 7000), timeout=1)' "$(net_addr "$ID" "$2")" 2>/dev/null
  local rc=$?
  kill "$srv" 2>/dev/null
  wait "$srv" 2>/dev/null
  return $rc
}

# udp_reach FROM TO — a datagram FROM sends to TO arrives. TO waits 4 s from
# when it is ready: FROM's python3 may take more than a second to start on a
# loaded machine (CI runs the model beside the tests), and a shorter window
# read a late datagram as a partition.
udp_reach() {
  local ready=$BATS_TEST_TMPDIR/ready.$RANDOM got=$BATS_TEST_TMPDIR/got.$RANDOM
  net_exec "$ID" "$2" timeout 8 python3 -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((sys.argv[1], 7001))
open(sys.argv[2], "w").close(); s.settimeout(4)
try:
    s.recvfrom(64); open(sys.argv[3], "w").close()
except socket.timeout:
    pass' "$(net_addr "$ID" "$2")" "$ready" "$got" &
  local srv=$!
  wait_until 5 test -e "$ready"
  net_exec "$ID" "$1" python3 -c 'import socket, sys
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", (sys.argv[1], 7001))' "$(net_addr "$ID" "$2")"
  wait "$srv"
  test -e "$got"
}

@test "net_up joins each node's namespace to a bridge: every node reaches the others; net_down removes every namespace it made and only those" {
  ip netns add "fxother-keep"
  net_up "$ID" b1 b2 cp
  run -0 ip netns list
  for n in net b1 b2 cp; do [[ $output == *"fx$ID-$n"* ]] || fail "no namespace fx$ID-$n: $output"; done
  [[ $(net_addr "$ID" b2) =~ ^10\.213\.[0-9]+\.2$ ]] || fail "b2's address: $(net_addr "$ID" b2)"
  tcp_reach b1 b2 || fail "b1 cannot reach b2"
  tcp_reach cp b1 || fail "cp cannot reach b1"
  net_exec "$ID" b1 sleep 60 &
  local sleeper=$!
  net_down "$ID"
  run -0 ip netns list
  [[ $output != *"fx$ID-"* ]] || fail "left behind: $output"
  [[ $output == *"fxother-keep"* ]] || fail "another run's namespace was removed: $output"
  ip netns del fxother-keep
  [ ! -e "$NET_DIR/fx$ID.nodes" ]
  wait "$sleeper" || true # killed with its namespace (a bare wait would wait for bats' own timer too)
  run ! kill -0 "$sleeper"
}

@test "net_drop is one-way: TO drops what FROM sends, FROM still hears TO; net_heal lifts it" {
  net_up "$ID" b1 b2
  udp_reach b2 b1 || fail "no datagram before the partition"
  net_drop "$ID" b2 b1
  run ! udp_reach b2 b1
  udp_reach b1 b2 || fail "the other direction was cut too"
  net_heal "$ID"
  udp_reach b2 b1 || fail "not healed"
}

@test "net_cut is a partial partition: A and B lose each other, both still reach C" {
  net_up "$ID" a b c
  net_cut "$ID" a b
  run ! tcp_reach a b
  run ! tcp_reach b a
  tcp_reach a c || fail "a lost c"
  tcp_reach c b || fail "c lost b"
  net_heal "$ID" a b
  tcp_reach a b || fail "not healed"
}

@test "net_loss drops that share of what a node receives; net_rate limits what it sends; net_clear removes both" {
  net_up "$ID" b1 b2
  net_loss "$ID" b2 100
  run ! udp_reach b1 b2
  udp_reach b2 b1 || fail "loss on b2 cut what b2 sends"
  net_clear "$ID" b2
  udp_reach b1 b2 || fail "net_clear left the loss"
  run -2 net_loss "$ID" b2 140
  # 256 KiB at 1 Mbit/s take at least 2 s
  net_rate "$ID" b2 1mbit
  local ready=$BATS_TEST_TMPDIR/ready
  net_exec "$ID" b1 timeout 20 python3 -c 'import socket, sys
s = socket.socket(); s.bind((sys.argv[1], 7002)); s.listen(1); open(sys.argv[2], "w").close()
c, _ = s.accept(); n = 0
while n < 262144:
    b = c.recv(65536)
    if not b: break
    n += len(b)
print(n)' "$(net_addr "$ID" b1)" "$ready" >"$BATS_TEST_TMPDIR/got" &
  local srv=$!
  wait_until 5 test -e "$ready"
  start=$(date +%s%N)
  net_exec "$ID" b2 python3 -c 'import socket, sys
c = socket.create_connection((sys.argv[1], 7002), timeout=15); c.sendall(b"x" * 262144); c.close()' "$(net_addr "$ID" b1)"
  wait "$srv"
  elapsed=$((($(date +%s%N) - start) / 1000000))
  assert_equal "$(cat "$BATS_TEST_TMPDIR/got")" 262144
  [ "$elapsed" -ge 2000 ] || fail "256 KiB through 1 Mbit/s in $elapsed ms"
  net_clear "$ID" b2
  run -0 net_exec "$ID" b2 tc qdisc show dev eth0
  [[ $output != *tbf* ]] || fail "$output"
}

# udp_rtt FROM TO — the shortest and longest of 5 round trips to TO's echo
# server on port 7003, in ms ("MIN MAX")
udp_rtt() {
  net_exec "$ID" "$1" python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3); t = []
for i in range(5):
    t0 = time.monotonic(); s.sendto(b"x", (sys.argv[1], 7003)); s.recvfrom(8); t.append(time.monotonic() - t0)
print("%d %d" % (min(t) * 1000, max(t) * 1000))' "$(net_addr "$ID" "$2")"
}

@test "net_delay holds what a node receives MS ± JITTER late and reorders it; net_clear lets it through at once; bad values are refused" {
  net_up "$ID" b1 b2
  [ -x "$FELIX_BUILD/tools/delayer" ] || fail "no $FELIX_BUILD/tools/delayer (make check builds it)"
  export NET_DELAYER=$FELIX_BUILD/tools/delayer
  net_exec "$ID" b2 timeout 60 python3 -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((sys.argv[1], 7003))
while True:
    d, a = s.recvfrom(64); s.sendto(d, a)' "$(net_addr "$ID" b2)" &
  local echo=$!
  wait_until 5 udp_rtt b1 b2
  net_delay "$ID" b2 100 0 0 7 || fail "net_delay failed"
  read -r lo hi < <(udp_rtt b1 b2)
  [ "$lo" -ge 100 ] || fail "a round trip through a 100 ms delay took $lo ms"
  net_clear "$ID" b2
  read -r lo hi < <(udp_rtt b1 b2)
  [ "$hi" -lt 100 ] || fail "still delayed after net_clear: $hi ms"
  run -0 net_exec "$ID" b2 iptables -S INPUT
  [[ $output != *NFQUEUE* ]] || fail "the rule is left: $output"
  [ ! -e "$NET_DIR/fx$ID.nodes.b2.delayer" ] || fail "the delayer's pid file is left"
  # jitter beyond the gap between packets reorders them; none is lost
  net_delay "$ID" b2 50 40 0 7 || fail "net_delay failed"
  net_exec "$ID" b2 timeout 20 python3 -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind((sys.argv[1], 7004)); open(sys.argv[2], "w").close()
s.settimeout(3); got = []
try:
    while len(got) < 200: got.append(int(s.recvfrom(16)[0]))
except socket.timeout:
    pass
print(len(got), sum(1 for i in range(1, len(got)) if got[i] < got[i - 1]))' "$(net_addr "$ID" b2)" "$BATS_TEST_TMPDIR/ready4" >"$BATS_TEST_TMPDIR/order" &
  local rcv=$!
  wait_until 5 test -e "$BATS_TEST_TMPDIR/ready4"
  net_exec "$ID" b1 python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(200): s.sendto(str(i).encode(), (sys.argv[1], 7004)); time.sleep(0.002)' "$(net_addr "$ID" b2)"
  wait "$rcv"
  read -r n out_of_order <"$BATS_TEST_TMPDIR/order"
  [ "$n" -eq 200 ] || fail "$n of 200 datagrams arrived"
  [ "$out_of_order" -gt 0 ] || fail "200 datagrams 2 ms apart under 50 ± 40 ms arrived in order"
  run net_delay "$ID" b2 10 20 0
  [ "$status" -ne 0 ] && [[ $output == *"JITTER_MS 20 is more than DELAY_MS 10"* ]] || fail "exit $status: $output"
  kill "$echo" 2>/dev/null
  wait "$echo" || true
}

@test "net_up refuses a bad run id before making anything" {
  run -2 net_up "Bad_ID" b1
  [[ $output == *"run id 'Bad_ID' must be 1-6 of [a-z0-9]"* ]]
  run -0 ip netns list
  [[ $output != *"fxBad_ID"* ]]
}
