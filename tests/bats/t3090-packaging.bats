#!/usr/bin/env bats
# t3090 — packaging: make install's layout (felix-broker in sbin/, its page
# in section 8, the systemd units with the sbin path), the units accepted by
# systemd-analyze verify, and the readiness protocol they rely on (Type=notify:
# READY=1 once serving, STOPPING=1 when the drain starts) spoken to a real
# notify socket.

load cluster

setup() {
  W=$BATS_TEST_TMPDIR/w
  mkdir -p "$W"
  cluster_init "$BATS_TEST_TMPDIR/c"
  unset NOTIFY_SOCKET
}

teardown() {
  [ -z "${LISTENER:-}" ] || kill "$LISTENER" 2>/dev/null || true
  cluster_teardown
  if [ -z "${BATS_TEST_COMPLETED:-}" ]; then tail -n 30 "$C"/*.log >&3 2>/dev/null || true; fi
}

# install_to PREFIX — make install from a copy of the tracked files (as a
# clean checkout has them), release build under the copy.
install_to() {
  mkdir -p "$W/src"
  (cd "$REPO_ROOT" && git ls-files | tar -cf - -T -) | tar -xf - -C "$W/src"
  make -C "$W/src" -j2 install PREFIX="$1" >"$W/install.log" 2>&1 || fail "make install failed: $(tail -20 "$W/install.log")"
}

# notify_listen PATH — a notify socket (AF_UNIX datagrams, as systemd's);
# each message goes to $C/notify as one line, its newlines turned to '|'.
notify_listen() {
  python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as out:
    while True:
        out.write(s.recv(4096).decode().replace("\n", "|") + "\n")' "$1" "$C/notify" &
  LISTENER=$!
  wait_until 10 test -S "$1"
  export NOTIFY_SOCKET=$1
}
notified() { grep -q -- "$1" "$C/notify" 2>/dev/null; }

@test "make install: felix-broker in sbin/, felixctl and felix-inspect in bin/, the units naming the sbin path, the env examples" {
  install_to "$W/prefix"
  [ -x "$W/prefix/sbin/felix-broker" ] && [ ! -e "$W/prefix/bin/felix-broker" ] || fail "$(ls -R "$W/prefix" | head -30)"
  [ -x "$W/prefix/bin/felixctl" ] && [ -x "$W/prefix/bin/felix-inspect" ] || fail "$(ls "$W/prefix/bin")"
  [ -f "$W/prefix/share/man/man8/felix-broker.8" ]
  for u in felix-broker@.service felix-control-plane.service; do
    f="$W/prefix/lib/systemd/system/$u"
    [ -f "$f" ] || fail "$u not installed"
    grep -q "^ExecStart=$W/prefix/sbin/felix-broker " "$f" || fail "$u: $(grep ExecStart "$f")"
    ! grep -q '@SBINDIR@' "$f" || fail "$u keeps a placeholder"
    grep -qx 'Type=notify' "$f" && grep -qx 'KillSignal=SIGTERM' "$f" || fail "$u"
  done
  [ -f "$W/prefix/share/felix/broker.env.example" ] && [ -f "$W/prefix/share/felix/control-plane.env.example" ] || fail "$(ls "$W/prefix/share/felix")"
  run -0 "$W/prefix/sbin/felix-broker" --version
  # the runbook's cron line, as written, in cron's environment, against this
  # tree: /usr/local is the prefix, the data and backup paths are under $W
  line=$(sed -n '/^# \/etc\/cron.d\/felix-backup$/{n;p;}' "$REPO_ROOT/docs/operations.md")
  [[ $line == "15 3 * * * felix FELIX_BROKER=/usr/local/sbin/felix-broker "* ]] || fail "the cron line: $line"
  cmd=${line#15 3 \* \* \* felix }
  cmd=${cmd//\/usr\/local/$W/prefix}
  cmd=${cmd//\/var\/lib\/felix/$W/var/lib/felix}
  cmd=${cmd//\/backups/$W/backups}
  cmd=${cmd//\/mnt\/offsite/$W/offsite}
  mkdir -p "$W/var/lib/felix"
  mkdata "$W/var/lib/felix/b1" orders 0 40 >/dev/null
  run -0 env -i PATH=/usr/bin:/bin SHELL=/bin/sh HOME="$W" sh -c "$cmd"
  [[ $output == *"felix-backup: done: "*", the newest 7 kept in $W/backups/felix/b1 and $W/offsite/felix/b1"* ]] || fail "$output"
  run -0 "$W/prefix/sbin/felix-broker" restore-point verify --from "$W/offsite/felix/b1/$(ls "$W/offsite/felix/b1")"
}

@test "systemd-analyze verify accepts both units without a message (and names a broken one)" {
  command -v systemd-analyze >/dev/null || fail "systemd-analyze is not installed (Debian package systemd, scripts/deps.sh)"
  install_to "$W/prefix"
  cd "$W/prefix/lib/systemd/system"
  # Documentation=man:felix-broker(8) is checked with man: find the installed page
  export MANPATH="$W/prefix/share/man"
  run -0 systemd-analyze verify felix-control-plane.service
  [ -z "$output" ] || fail "$output"
  run -0 systemd-analyze verify felix-broker@b1.service
  [ -z "$output" ] || fail "$output"
  # the check can fail: a unit with an unknown key is named
  sed 's/^KillSignal=/KilSignal=/' felix-control-plane.service >broken.service
  run systemd-analyze verify broken.service
  [[ $output == *"Unknown key 'KilSignal'"* ]] || fail "$output"
}

@test "felix-broker run under Type=notify: STATUS while it recovers and registers, READY=1 once serving, STOPPING=1 when it drains" {
  cp_start # writes the broker token, then goes away: the broker starts without it
  stop_process cp TERM
  notify_listen "$C/notify.sock"
  broker_start 1
  wait_until 30 notified "STATUS=registering with the control plane at $FELIX_CONTROL_PLANE"
  notified 'STATUS=recovering the data directory' || fail "$(cat "$C/notify")"
  run ! notified 'READY=1' # not ready while the control plane is not there
  cp_start
  wait_until 30 notified 'READY=1|STATUS=serving the data protocol on 127.0.0.1:'
  run -0 curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$((PORT_BASE + 21))/ready"
  assert_output 200 # READY=1 is sent after /ready turned 200
  [ "$(grep -c 'READY=1' "$C/notify")" -eq 2 ] || fail "$(cat "$C/notify")" # the broker's and the control plane's
  pid=$(pid_of b1)
  kill -TERM "$pid"
  wait_until 30 notified 'STOPPING=1|STATUS=draining (SIGTERM)'
  wait_exit "$pid" 60
}

@test "felix-broker control-plane under Type=notify: READY=1 once it serves, STOPPING=1 on SIGTERM" {
  notify_listen "$C/notify.sock"
  cp_start
  wait_until 10 notified "READY=1|STATUS=serving on $CP_ADDR, instance "
  run -0 "$CTL" cluster status # serving when it said so
  pid=$(pid_of cp)
  kill -TERM "$pid"
  wait_until 30 notified '^STOPPING=1$'
  wait_exit "$pid" 30
}
