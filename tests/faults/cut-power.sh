#!/bin/sh
# cut-power.sh LEDGER ROOT [powercut flags] — after the process recording into
# LEDGER was killed: cuts ROOT back to what LEDGER says was durable
# (powercut), then starts LEDGER over with a `sync DEV INO SIZE` record of
# every file left, so a second cut keeps what this one left (only what the
# next start writes can be lost again). Prints the ledger's new baseline
# length (its record count) on stdout, so a caller can tell this run's syncs
# from the baseline. FELIX_BUILD names the build directory (default
# build/ beside tests/). Used by tests/bats/replication.bash and the campaign.
set -eu
[ $# -ge 2 ] || { echo "usage: cut-power.sh LEDGER ROOT [powercut flags]" >&2; exit 2; }
ledger=$1 root=$2
shift 2
"${FELIX_BUILD:-$(dirname "$0")/../../build}/faults/powercut" --ledger "$ledger" --root "$root" "$@" >&2
find "$root" -type f -printf 'sync %D %i %s\n' >"$ledger"
wc -l <"$ledger"
