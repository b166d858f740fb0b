#!/bin/sh
# Installs the Debian packages of DESIGN.md §2 when any is missing; a no-op otherwise.
# `deps.sh campaign` adds what only `make campaign` needs (gnuplot for its plot).
# nats-server, libnats-dev and strace: the campaign's peer (PEER=nats), which t5020 samples;
# iptables and libnetfilter-queue-dev: its packet delayer (this kernel has no tc netem).
# prometheus: promtool checks /metrics; python3-jsonschema: docs/json; libsystemd-dev and
# systemd: sd_notify readiness and systemd-analyze verify of the units.
set -eu
PKGS="gcc make libuv1-dev libmicrohttpd-dev libcurl4-openssl-dev libcjson-dev libyaml-dev libsqlite3-dev libncurses-dev libcmocka-dev bats bats-support bats-assert spin clang valgrind tmux man-db groff-base pkg-config zlib1g-dev jq python3 python3-yaml zsh fish coreutils util-linux sqlite3 iproute2 nftables nats-server libnats-dev strace iptables libnetfilter-queue-dev prometheus python3-jsonschema libsystemd-dev systemd"
[ "${1:-}" != campaign ] || PKGS="$PKGS gnuplot-nox"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "make deps: installing:$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
