#!/usr/bin/env bats
# t3040 — compose.yaml and the Dockerfile (docs/docker-compose.md). Docker is
# not available here, so the services' exact command lines from compose.yaml
# run as local processes: 172.28.0.x becomes the loopback address 127.28.0.x,
# each volume a directory, the runtime bind mount FELIX_RUNTIME_DIR. The
# cluster they form must work: three brokers registered at the addresses they
# listen on, an R=3 stream Active, records produced and read back.

load cluster

COMPOSE="$REPO_ROOT/compose.yaml"

setup() {
  cluster_init "$BATS_TEST_TMPDIR/c"
  unset FELIX_CONTROL_PLANE # the compose file says where the control plane is
}

teardown() {
  cluster_teardown
  if [ -z "${BATS_TEST_COMPLETED:-}" ]; then tail -n 30 "$C"/*.log >&3 2>/dev/null || true; fi
}

# compose_cmd SERVICE — the service's command, one argument per line, mapped
# to this machine.
compose_cmd() {
  python3 - "$COMPOSE" "$1" "$C" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
svc, root = doc["services"][sys.argv[2]], sys.argv[3]
for a in svc["command"]:
    a = a.replace("172.28.0.", "127.28.0.")
    a = a.replace("/var/lib/felix/cp", root + "/cp").replace("/var/lib/felix/data", root + "/" + sys.argv[2])
    print(a)
PY
}

# compose_get EXPR — a Python expression over the parsed compose file (d).
compose_get() {
  python3 -c 'import sys, yaml, json; d = yaml.safe_load(open(sys.argv[1])); v = eval(sys.argv[2]); print(v if isinstance(v, str) else json.dumps(v))' "$COMPOSE" "$1"
}

start_service() { # SERVICE
  local -a cmd
  mapfile -t cmd < <(compose_cmd "$1")
  FELIX_RUNTIME_DIR="$C/run-$1" "$BROKER" "${cmd[@]}" 2>>"$C/$1.log" &
  echo "$1 $!" >>"$C/pids"
  disown $!
}

@test "compose.yaml: four services on fixed addresses, each listening where it says it is" {
  [ "$(compose_get 'sorted(d["services"])')" = '["b1", "b2", "b3", "cp", "runtime"]' ]
  for b in b1 b2 b3; do
    ip=$(compose_get "d['services']['$b']['networks']['felix']['ipv4_address']")
    mapfile -t cmd < <(compose_get "'\n'.join(d['services']['$b']['command'])")
    [[ " ${cmd[*]} " == *" --listen $ip:7101 "* ]] || fail "$b does not listen on its address $ip"
    [[ " ${cmd[*]} " == *" --control-plane http://172.28.0.10:7070 "* ]] || fail "$b: wrong control plane"
    [ "$(compose_get "[v for v in d['services']['$b']['volumes'] if isinstance(v, dict)][0]['target']")" = /run/felix ]
    grace=$(compose_get "d['services']['$b']['stop_grace_period']")
    [ "${grace%s}" -gt 25 ] || fail "$b: stop_grace_period $grace is not above the 25 s drain timeout"
  done
  [ "$(compose_get "d['services']['cp']['networks']['felix']['ipv4_address']")" = 172.28.0.10 ]
}

@test "the services' command lines form a working cluster" {
  mkdir -p "$C/cp" # the image has /var/lib/felix/cp, owned by felix
  start_service cp
  wait_until 20 test -s "$C/cp/cp.db.broker-token"
  for b in b1 b2 b3; do start_service "$b"; done
  export FELIX_CONTROL_PLANE=http://127.28.0.10:7070 FELIX_TOKEN_FILE=$C/cp/cp.db.admin-token
  wait_until 60 brokers_alive 3
  run -0 "$CTL" -o json broker list
  [ "$(jget '[b["address"] for b in j]' <<<"$output")" = '["127.28.0.11:7101", "127.28.0.12:7101", "127.28.0.13:7101"]' ]
  run -0 "$CTL" stream create orders --shards 1 --replicas 3
  wait_until 60 shard_is orders/0 Active
  seq 1 50 | "$CTL" produce orders --shard 0 >/dev/null
  run -0 "$CTL" consume orders --shard 0 --count 50
  [ "$(wc -l <<<"$output")" -eq 50 ]
  for b in b1 b2 b3; do ls "$C/run-$b"/*.ok >/dev/null || fail "$b made no boot token in its runtime directory"; done
}

@test "the Dockerfile builds on Debian from apt packages that scripts/deps.sh knows, and runs felix-broker" {
  grep -q '^FROM debian:' "$REPO_ROOT/Dockerfile"
  ! grep -Eq '^(RUN|ADD).*(curl|wget) .*https?://' "$REPO_ROOT/Dockerfile" || fail "the Dockerfile downloads from outside apt"
  deps=$(sed -n 's/^PKGS="\(.*\)"$/\1/p' "$REPO_ROOT/scripts/deps.sh")
  build=$(sed -n '/^FROM .* AS build/,/^FROM /p' "$REPO_ROOT/Dockerfile" | grep -oE '[a-z0-9][a-z0-9.+-]*-dev' | grep -vx libc6-dev | sort -u)
  [ -n "$build" ]
  for p in $build; do [[ " $deps " == *" $p "* ]] || fail "$p is built against but scripts/deps.sh does not install it"; done
  grep -q '^ENTRYPOINT \["felix-broker"\]' "$REPO_ROOT/Dockerfile"
  grep -q 'make install' "$REPO_ROOT/Dockerfile" # the release build (-DNDEBUG)
}

@test "the Dockerfile's build stage holds every file make install reads (its COPY lines) and the -dev package of every library linked; its final stage the runtime package of each" {
  # the build stage's tree, as its COPY lines make it, and its make install
  local W=$BATS_TEST_TMPDIR/w # this file's setup is cluster_init's, not helpers'
  mkdir -p "$W/ctx"
  while read -r src dst; do
    mkdir -p "$W/ctx/$(dirname "$dst")"
    cp -r "$REPO_ROOT/$src" "$W/ctx/$dst"
  done < <(sed -n '/^FROM .* AS build/,/^FROM /s/^COPY \([^ ]*\) \([^ ]*\)$/\1 \2/p' "$REPO_ROOT/Dockerfile" | grep -v -- '--from')
  make -C "$W/ctx" -j2 install PREFIX="$W/opt" >"$W/install.log" 2>&1 || fail "make install in the COPYed tree failed: $(tail -5 "$W/install.log")"
  build=$(sed -n '/^FROM .* AS build/,/^FROM /p' "$REPO_ROOT/Dockerfile")
  final=$(sed -n '/^FROM debian:[a-z-]*$/,$p' "$REPO_ROOT/Dockerfile")
  # what apt brings with them (libncurses6 brings libtinfo6)
  final_deps=$(for p in $(grep -oE '\blib[a-z0-9.+-]+' <<<"$final" | sort -u); do dpkg-query -W -f='${Depends} ' "$p" 2>/dev/null; done)
  # every library a program links directly: its package at run time, its -dev package at build time
  for prog in "$W/opt/sbin/felix-broker" "$W/opt/bin/felixctl" "$W/opt/bin/felix-inspect"; do
    for lib in $(objdump -p "$prog" | awk '$1 == "NEEDED" {print $2}'); do
      case $lib in libc.so.* | libm.so.* | ld-linux*) continue ;; esac
      path=$(ldd "$prog" | awk -v l="$lib" '$1 == l {print $3}')
      pkg=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -1 | cut -d: -f1)
      [ -n "$pkg" ] || pkg=$(dpkg -S "$path" | head -1 | cut -d: -f1)
      grep -qw -- "$pkg" <<<"$final$final_deps" || fail "${prog##*/} needs $lib ($pkg), which the final stage does not install"
      dev=$(dpkg -S "/usr/lib/x86_64-linux-gnu/${lib%%.so*}.so" 2>/dev/null | head -1 | cut -d: -f1)
      [ -z "$dev" ] || grep -qw -- "$dev" <<<"$build" || fail "${prog##*/} links $lib ($dev), which the build stage does not install"
    done
  done
}
