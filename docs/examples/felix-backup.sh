#!/bin/sh
# felix-backup.sh — one broker's nightly backup, for cron (docs/operations.md):
# make a restore point, verify it, copy it off the machine, verify the copy,
# and keep the newest KEEP points on both sides. Any failed step stops the
# script with a non-zero status and a line on stderr naming it; cron mails
# that. Nothing is pruned unless the new point verified on both sides.
#
#   FELIX_DATA_DIR=/var/lib/felix POINTS=/backups/felix COPY_TO=/mnt/offsite/felix KEEP=7 felix-backup.sh
#
# COPY_TO is any path the machine can write (an NFS or sshfs mount of another
# machine); replace copy_off with rsync or scp to send it elsewhere.
set -eu
: "${FELIX_DATA_DIR:?set FELIX_DATA_DIR to the broker's data directory}"
: "${POINTS:?set POINTS to the local directory of restore points}"
: "${COPY_TO:?set COPY_TO to the off-machine directory of restore points}"
KEEP=${KEEP:-7}
BROKER=${FELIX_BROKER:-felix-broker}
name=${NAME:-$(date -u +%Y%m%dT%H%M%SZ)} # the point's name: its UTC time

step() { echo "felix-backup: $*" >&2; }
die() { step "FAILED: $*"; exit 1; }

copy_off() { # a restore point's files, hard links and all, to a new directory;
  # under a dot name until complete: list and prune skip dot names
  partial="$(dirname "$2")/.partial-$(basename "$2")"
  rm -rf "$partial" && cp -a "$1" "$partial" && mv "$partial" "$2"
}

mkdir -p "$POINTS" "$COPY_TO"
step "creating $POINTS/$name"
"$BROKER" restore-point create --data-dir "$FELIX_DATA_DIR" --to "$POINTS/$name" >/dev/null || die "create"
"$BROKER" restore-point verify --from "$POINTS/$name" >/dev/null || die "verify of $POINTS/$name"
step "copying to $COPY_TO/$name"
copy_off "$POINTS/$name" "$COPY_TO/$name" || die "copy to $COPY_TO/$name"
"$BROKER" restore-point verify --from "$COPY_TO/$name" >/dev/null || die "verify of the copy $COPY_TO/$name"
for d in "$POINTS" "$COPY_TO"; do
  "$BROKER" restore-point prune --from "$d" --keep "$KEEP" >/dev/null || die "prune of $d"
done
step "done: $name, the newest $KEEP kept in $POINTS and $COPY_TO"
