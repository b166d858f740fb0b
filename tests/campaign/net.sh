# net.sh — a campaign run's network (issue 14, docs/campaign.md): one network
# namespace per node (brokers, the control plane, the clients), each joined by
# a veth pair to a bridge in a namespace of its own, on a /24 of 10.213.0.0/16
# that only this run uses. Real partitions are nftables drop rules in the
# receiving node's namespace; degradation is random loss (an nftables rule)
# and a rate limit (tc tbf) on a node's link. tc netem is not in this
# machine's kernel (6.18, Firecracker: "qdisc kind is unknown"), so delay,
# jitter and reordering are made in user space: an iptables NFQUEUE rule
# hands a node's input to the delayer (tests/campaign/delayer.c), which
# lets each packet through after its delay (docs/campaign.md).
# Sourced by bash; every function takes the run's ID (1-6 of [a-z0-9]), which
# prefixes every namespace (fxID-NODE) and link (vID<k>) it makes, so net_down
# removes exactly those and nothing else. NET_DIR (default TMPDIR or /tmp)
# holds the run's list of nodes and addresses (fxID.nodes).
#
#   net_up ID NODE...          make the namespaces, the bridge and the links
#   net_down ID                kill what runs inside them, delete them
#   net_addr ID NODE           the node's address
#   net_exec ID NODE CMD...    run CMD inside the node's namespace
#   net_drop ID FROM TO        one-way partition: TO drops what FROM sends it
#   net_cut ID A B             full partition between A and B (both ways)
#   net_heal ID [NODE...]      remove the drop rules (of every node by default)
#   net_loss ID NODE PCT       NODE drops PCT % of what it receives, at random
#   net_rate ID NODE RATE      NODE sends at most RATE (tc tbf: 1mbit, 10mbit ...)
#   net_delay ID NODE MS JITTER_MS REORDER_PCT [SEED]
#                              NODE receives every packet MS ± JITTER_MS late,
#                              REORDER_PCT % of them at once (netem's delay
#                              and reorder); NET_DELAYER names the program
#                              (default $FELIX_BUILD/tools/delayer)
#   net_clear ID NODE          remove the node's loss, rate limit and delay
#   net_untag ID TAG           remove every rule added while NET_TAG was TAG
#
# With NET_TAG set (a word), net_drop, net_cut and net_loss mark their rules
# with it, so one fault's rules can be removed without another's.

net_ns() { echo "fx$1-$2"; }

# The /24 of a run: from its ID, so two runs side by side (two bats lanes) differ.
net_subnet() {
  local h
  h=$(printf '%s' "$1" | cksum | cut -d' ' -f1)
  echo "10.213.$((h % 250 + 1))"
}

net_check_id() {
  [[ $1 =~ ^[a-z0-9]{1,6}$ ]] || { echo "net.sh: run id '$1' must be 1-6 of [a-z0-9]" >&2; return 2; }
}

net_up() {
  local id=$1 k=0 node
  shift
  net_check_id "$id" || return
  [ $# -ge 1 ] && [ $# -le 60 ] || { echo "net.sh: net_up needs 1 to 60 nodes" >&2; return 2; }
  local br subnet
  br=$(net_ns "$id" net)
  subnet=$(net_subnet "$id")
  : >"$(net_nodes "$id")"
  ip netns add "$br" || return
  ip -n "$br" link add br0 type bridge || return
  ip -n "$br" link set br0 up || return
  for node in "$@"; do
    k=$((k + 1))
    local ns
    ns=$(net_ns "$id" "$node")
    ip netns add "$ns" || return
    ip link add "v$id$k" netns "$br" type veth peer name eth0 netns "$ns" || return
    ip -n "$br" link set "v$id$k" master br0 up || return
    ip -n "$ns" addr add "$subnet.$k/24" dev eth0 || return
    ip -n "$ns" link set eth0 up || return
    ip -n "$ns" link set lo up || return
    echo "$node $subnet.$k" >>"$(net_nodes "$id")"
  done
}

net_nodes() { echo "${NET_DIR:-${TMPDIR:-/tmp}}/fx$1.nodes"; }

net_addr() {
  awk -v n="$2" '$1 == n {print $2}' "$(net_nodes "$1")"
}

net_exec() {
  local id=$1 node=$2
  shift 2
  ip netns exec "$(net_ns "$id" "$node")" "$@"
}

net_down() {
  local id=$1 ns
  net_check_id "$id" || return
  for ns in $(ip netns list | awk '{print $1}' | grep "^fx$id-"); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns del "$ns"
  done
  rm -f "$(net_nodes "$id")" "$(net_nodes "$id")".*.delayer "$(net_nodes "$id")".*.delayer.log
}

# the node's nftables table (made on first use): an input chain of drop rules
net_table() {
  net_exec "$1" "$2" nft list table inet felixcampaign >/dev/null 2>&1 && return
  net_exec "$1" "$2" nft add table inet felixcampaign &&
    net_exec "$1" "$2" nft add chain inet felixcampaign input '{ type filter hook input priority 0; policy accept; }'
}

net_drop() {
  local id=$1 from=$2 to=$3
  net_table "$id" "$to" &&
    net_exec "$id" "$to" nft add rule inet felixcampaign input ip saddr "$(net_addr "$id" "$from")" drop \
      comment "\"${NET_TAG:-drop}\""
}

net_cut() {
  net_drop "$1" "$2" "$3" && net_drop "$1" "$3" "$2"
}

net_heal() {
  local id=$1 node
  shift
  [ $# -gt 0 ] || set -- $(awk '{print $1}' "$(net_nodes "$id")")
  for node in "$@"; do
    net_exec "$id" "$node" nft delete table inet felixcampaign 2>/dev/null || true
  done
}

net_loss() {
  local id=$1 node=$2 pct=$3
  [[ $pct =~ ^[0-9]+$ ]] && [ "$pct" -le 100 ] || { echo "net.sh: loss '$pct' is not a percentage" >&2; return 2; }
  [ "$pct" -gt 0 ] || return 0
  local match=(numgen random mod 100 '<' "$pct")
  [ "$pct" -lt 100 ] || match=() # nft takes a bound of at most 99
  net_table "$id" "$node" &&
    net_exec "$id" "$node" nft add rule inet felixcampaign input "${match[@]}" drop comment "\"${NET_TAG:-loss}\""
}

net_rate() {
  net_exec "$1" "$2" tc qdisc replace dev eth0 root tbf rate "$3" burst 32kbit latency 2s
}

# the rule that hands a node's input (but loopback) to its delayer
NET_DELAY_RULE=(INPUT ! -i lo -j NFQUEUE --queue-num 0 --queue-bypass -m comment --comment felixcampaign-delay)

net_delay() {
  local id=$1 node=$2 ms=$3 jit=$4 pct=$5 seed=${6:-1}
  local bin=${NET_DELAYER:-${FELIX_BUILD:-build}/tools/delayer} pidf log
  pidf=$(net_nodes "$id").$node.delayer
  log=$pidf.log
  [ ! -e "$pidf" ] || net_undelay "$id" "$node"
  [ -x "$bin" ] || { echo "net.sh: no delayer at $bin (make $bin)" >&2; return 2; }
  # not net_exec: a function run in the background is a subshell, whose pid
  # is not the delayer's (ip netns exec becomes the program it runs)
  ip netns exec "$(net_ns "$id" "$node")" "$bin" 0 "$ms" "$jit" "$pct" "$seed" >"$log" 2>&1 </dev/null &
  local k pid=$!
  echo "$pid" >"$pidf"
  for k in $(seq 1 150); do # bound to its queue within 15 s (5 s was too few on a loaded 2-core machine)
    grep -q '^delayer: queue' "$log" 2>/dev/null && break
    net_alive "$pid" || break # exited (a zombie until its shell reaps it counts as exited)
    sleep 0.1
  done
  grep -q '^delayer: queue' "$log" 2>/dev/null || {
    cat "$log" >&2
    kill "$pid" 2>/dev/null
    rm -f "$pidf"
    return 1
  }
  net_exec "$id" "$node" iptables -w -I "${NET_DELAY_RULE[@]}"
}

# net_alive PID — PID runs (not gone, not a zombie)
net_alive() {
  local state
  state=$(awk '/^State:/ {print $2}' "/proc/$1/status" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}

# net_undelay ID NODE — the delay rule gone, then the delayer (it lets every
# packet it holds through as it exits)
net_undelay() {
  local pidf
  pidf=$(net_nodes "$1").$2.delayer
  while net_exec "$1" "$2" iptables -w -D "${NET_DELAY_RULE[@]}" 2>/dev/null; do :; done
  [ -e "$pidf" ] || return 0
  local pid k
  pid=$(cat "$pidf")
  kill "$pid" 2>/dev/null || true
  for k in $(seq 1 50); do # gone within 5 s, its queue free for the next
    net_alive "$pid" || break
    sleep 0.1
  done
  rm -f "$pidf"
}

net_clear() {
  net_exec "$1" "$2" tc qdisc del dev eth0 root 2>/dev/null || true
  net_unrule "$1" "$2" loss
  net_undelay "$1" "$2"
}

# net_unrule ID NODE TAG — removes NODE's rules marked TAG
net_unrule() {
  local h
  for h in $(net_exec "$1" "$2" nft -a list chain inet felixcampaign input 2>/dev/null |
    sed -n "s/.*comment \"$3\" # handle \([0-9]*\)\$/\1/p"); do
    net_exec "$1" "$2" nft delete rule inet felixcampaign input handle "$h"
  done
}

net_untag() {
  local node
  [[ $2 =~ ^[A-Za-z0-9_-]+$ ]] || { echo "net.sh: tag '$2' must be a word" >&2; return 2; }
  for node in $(awk '{print $1}' "$(net_nodes "$1")"); do
    net_unrule "$1" "$node" "$2"
  done
}
