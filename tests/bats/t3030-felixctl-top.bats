#!/usr/bin/env bats
# t3030 — felixctl top under tmux (send-keys, capture-pane) in an 80x24
# terminal: a NoCaughtUpReplica shard made by a real fault (a power cut of its
# only copy's broker) is listed first and stands out, the filter, opening a
# shard, the help, q and Ctrl-C (exit 0, terminal restored), no colours, and
# an unreachable control plane that it keeps retrying.

load replication

setup() {
  cluster_init "$BATS_TEST_TMPDIR/c"
  command -v tmux >/dev/null || fail "tmux is not installed (make deps)"
  SOCK="felix-top-$$-$BATS_TEST_NUMBER"
}

teardown() {
  tmux -L "$SOCK" kill-server 2>/dev/null || true
  cluster_teardown
  if [ -z "${BATS_TEST_COMPLETED:-}" ]; then
    tail -n 30 "$C"/*.log >&3 2>/dev/null || true
    [ -f "$C/pane" ] && cat "$C/pane" >&3
  fi
}

# top_start [TERM] — felixctl top in a detached 80x24 tmux session; its exit
# status lands in $C/top.rc.
top_start() {
  local term=${1:-xterm-256color}
  tmux -L "$SOCK" -f /dev/null new-session -d -s top -x 80 -y 24 \
    "TERM=$term '$CTL' --control-plane '$FELIX_CONTROL_PLANE' --token-file '$FELIX_TOKEN_FILE' top; echo \$? >'$C/top.rc'; sleep 30"
}

pane() { tmux -L "$SOCK" capture-pane -p -t top >"$C/pane" && cat "$C/pane"; }
pane_has() { pane | grep -q -- "$1"; }
pane_lacks() { ! pane | grep -q -- "$1"; }
keys() { tmux -L "$SOCK" send-keys -t top "$@"; }
top_exited() { [ -s "$C/top.rc" ]; }

# Two brokers, stream r with two shards of R=1, one on each; b1 loses power,
# so its shard's only copy comes back under a new storage id: NoCaughtUpReplica.
stuck_shard() {
  cp_start
  rbroker_start 1 --fsync-interval-ms 600000
  rbroker_start 2
  wait_until 60 brokers_alive 2
  run -0 "$CTL" stream create r --shards 2 --replicas 1
  wait_until 60 shard_is r/0 Active
  wait_until 60 shard_is r/1 Active
  l0=$("$CTL" -o json shard describe r/0 | jget 'j["leader"]')
  l1=$("$CTL" -o json shard describe r/1 | jget 'j["leader"]')
  [ "$l0" != "$l1" ] || fail "both shards were placed on $l0"
  STUCK=r/0 OK=r/1
  [ "$l0" = b1 ] || STUCK=r/1 OK=r/0
  seq 1 5 | "$CTL" produce r --shard "${STUCK#r/}" >/dev/null
  power_cut 1
  rbroker_start 1 --fsync-interval-ms 600000
  wait_until 60 shard_is "$STUCK" NoCaughtUpReplica
}

@test "top lists the NoCaughtUpReplica shard first; the filter, Enter, ? and q work in 80x24" {
  stuck_shard
  top_start
  wait_until 20 pane_has "^127.0.0.1:[0-9]* [0-9][0-9]:[0-9][0-9]:[0-9][0-9]  brokers 2/2  shards 2: NoCaughtUpReplica 1  Fencing 0$"
  wait_until 20 pane_has "^$STUCK .*NoCaughtUpReplica"
  pane >/dev/null
  first=$(grep -nE '^r/[01] ' "$C/pane" | head -n 1)
  [[ $first == *"$STUCK "* ]] || fail "the stuck shard is not listed first: $first"
  grep -q '^BROKER  *STORAGE-ID  *INCARNATION  *ALIVE  *FSYNC  *LEASE-AGE  *REC/S  *B/S$' "$C/pane"
  grep -qE '^b1 +[0-9a-f]{10} .* yes +periodic +[0-9]+ ms' "$C/pane"
  grep -q '^EVENTS' "$C/pane"
  grep -q '^SHARD  *GEN  *LEADER  *STATE  *HWM  *REC/S  *B/S  *FOLLOWER -LAG$' "$C/pane"
  grep -q 's sort: urgency' "$C/pane"
  [ "$(wc -l <"$C/pane")" -le 24 ] || fail "more than 24 lines"
  awk 'length > 80 { bad = 1 } END { exit bad }' "$C/pane" || fail "a line is wider than 80 columns"
  keys / "$OK" Enter
  wait_until 10 pane_has "\\[$OK\\]"
  wait_until 10 pane_lacks "^$STUCK "
  pane_has "^$OK "
  keys / BSpace BSpace BSpace Enter
  wait_until 10 pane_has "^$STUCK "
  keys Enter # the selection is the first line: the stuck shard
  wait_until 10 pane_has "^BROKER  *ROLE  *ALIVE  *CONFIRMED"
  pane_has "^$STUCK  generation [0-9]*  NoCaughtUpReplica"
  pane_has "HISTORY OF THE SHARD"
  keys Escape
  wait_until 10 pane_has "^SHARD  *GEN  *LEADER"
  # records per second from the HWM's change: a trickle shows on its shard and its leader
  (for i in $(seq 1 40); do echo "t$i" | "$CTL" produce r --shard "${OK#r/}" >/dev/null 2>&1; sleep 0.1; done) &
  trickle=$!
  wait_until 20 pane_has "^$OK .*Active  *[0-9][0-9]*  *[1-9]"
  # bytes per second from the leader's log size: on the shard and on the broker that leads it
  wait_until 20 pane_has "^$OK .*Active  *[0-9][0-9]*  *[0-9.][0-9.]*  *[1-9][0-9.]* [KMG]*i*B\\( \\|$\\)"
  wait_until 20 pane_has "^b[12] .* [1-9][0-9.]* [KMG]*i*B$"
  # records per second on the broker too (REC/S before its B/S)
  wait_until 20 pane_has "^b[12] .* [1-9][0-9.]*[kMGT]\{0,1\} \{1,\}[0-9.]\{1,\} [KMG]*i*B$"
  wait "$trickle"
  # a 7-digit HWM is shown whole in its column, the line still 80 wide
  seq 1 1000000 | "$CTL" produce r --shard "${OK#r/}" >/dev/null
  wait_until 20 pane_has "^$OK .*Active  *1000[0-9][0-9][0-9] "
  pane >/dev/null
  awk 'length > 80 { bad = 1 } END { exit bad }' "$C/pane" || fail "a line is wider than 80 columns: $(cat "$C/pane")"
  # s sorts by name, then HWM (the largest first): the stuck shard is no longer first by name
  keys s
  wait_until 10 pane_has "s sort: name"
  pane >/dev/null
  [[ $(grep -E '^r/[01] ' "$C/pane" | head -n 1) == "r/0 "* ]] || fail "not by name: $(cat "$C/pane")"
  keys s
  wait_until 10 pane_has "s sort: hwm"
  keys '?'
  wait_until 10 pane_has "felixctl top: keys"
  keys x
  wait_until 10 pane_lacks "felixctl top: keys"
  keys q
  wait_until 10 top_exited
  [ "$(cat "$C/top.rc")" = 0 ]
  pane_lacks "^SHARD  *GEN" # the terminal is back to the shell's screen
}

@test "bash and fish complete stream names, shards and broker ids from the control plane" {
  stuck_shard
  comp() { bash -c "source '$REPO_ROOT/completions/felixctl.bash'; COMP_WORDS=($*); COMP_CWORD=\$((\${#COMP_WORDS[@]} - 1)); _felixctl; printf '%s\n' \"\${COMPREPLY[@]}\"" | sort | tr '\n' ' '; }
  [ "$(comp "'$CTL'" shard describe "''")" = "r/0 r/1 " ]
  [ "$(comp "'$CTL'" placement abandon "r/")" = "r/0 r/1 " ]
  [ "$(comp "'$CTL'" produce "''")" = "r " ]
  [ "$(comp "'$CTL'" broker describe "''")" = "b1 b2 " ]
  [ "$(comp "'$CTL'" shard describe r/0 "''")" = " " ] # one argument only
  [ "$(comp "'$CTL'" --control-plane http://127.0.0.1:1 shard describe "''")" = " " ] # unreachable: nothing
  run -0 env PATH="$FELIX_BUILD:$PATH" fish --no-config -c "source '$REPO_ROOT/completions/felixctl.fish'; complete -C 'felixctl shard describe '"
  assert_line --partial "r/0"
  assert_line --partial "r/1"
}

@test "top says when the control plane is unreachable, keeps retrying, and Ctrl-C exits 0" {
  top_start
  wait_until 20 pane_has "control plane unreachable, retrying every second"
  cp_start
  wait_until 20 pane_has "brokers 0/0  shards 0: NoCaughtUpReplica 0"
  wait_until 20 pane_lacks "unreachable"
  keys C-c
  wait_until 10 top_exited
  [ "$(cat "$C/top.rc")" = 0 ]
  pane_lacks "brokers 0/0  shards 0" # the terminal is back to the shell's screen
}

@test "top without colours (TERM=vt100) still marks the stuck shard, with attributes instead of colours" {
  stuck_shard
  top_start vt100
  wait_until 20 pane_has "^$STUCK .*NoCaughtUpReplica"
  line=$(tmux -L "$SOCK" capture-pane -e -p -t top | grep -a "NoCaughtUpReplica  ")
  grep -aqE $'^\e\\[[0-9;]*[1-7]m' <<<"$line" || fail "the stuck shard has no attribute: $(cat -v <<<"$line")"
  ! grep -aqE $'\e\\[[0-9;]*3[0-7](;|m)' <<<"$line" || fail "colours used on a vt100: $(cat -v <<<"$line")"
  keys q
  wait_until 10 top_exited
}

@test "top refuses to run without a terminal, and -o json, with exit 2" {
  run -2 "$CTL" --control-plane http://127.0.0.1:1 --token-file /dev/null top </dev/null
  assert_output --partial "felixctl top needs a terminal"
  run -2 script -qec "'$CTL' --control-plane http://127.0.0.1:1 --token-file /dev/null -o json top" /dev/null
  assert_output --partial "felixctl top has no JSON form"
}
