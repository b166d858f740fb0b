#!/usr/bin/env bats
# t3020 — the man pages render without warnings, and the man pages and the
# completion files cover every command and flag that felixctl and
# felix-broker print in their --help texts (the source of truth).

load helpers

MAN_DIR="$REPO_ROOT/man"
COMP_DIR="$REPO_ROOT/completions"
CTL="$FELIX_BUILD/felixctl"
BROKER="$FELIX_BUILD/felix-broker"

pages() { ls "$MAN_DIR"/*.[1-8]; }

# render PAGE — plain ASCII on long lines without hyphenation, so words are
# never split and hyphens stay "-".
render() { groff -t -man -Tascii -P-cbou -rLL=2000n -rHY=0 "$1" 2>/dev/null; }

# flags_of TEXT — every flag (-x, --long-name) in a help text, once each.
flags_of() { grep -oE '(^|[][ |(,])--?[a-z][a-z-]*' <<<"$1" | sed 's/^[][ |(,]//' | sort -u; }

# ctl_commands — "group verb" (or "group") of every command felixctl --help lists.
ctl_commands() {
  "$CTL" --help | sed -n '/^Commands:/,/^$/p' | grep -E '^  [a-z]' | sed 's/^  //; s/  .*//' |
    awk '{ out = $1; if ($2 ~ /^[a-z][a-z-]*$/) out = out " " $2; print out }'
}

# ctl_help_texts — felixctl --help and every command's --help, concatenated.
ctl_help_texts() {
  "$CTL" --help
  local c
  while IFS= read -r c; do
    # shellcheck disable=SC2086
    "$CTL" $c --help
  done < <(ctl_commands)
}

eval "$(declare -f setup | sed '1s/^setup/helpers_setup/')"
setup() {
  helpers_setup
  [ -x "$CTL" ] || fail "felixctl not built at $CTL (run make all)"
  [ -x "$BROKER" ] || fail "felix-broker not built at $BROKER (run make all)"
}

@test "man/ holds felixctl.1 and felix-broker.8" {
  [ -f "$MAN_DIR/felixctl.1" ]
  [ -f "$MAN_DIR/felix-broker.8" ]
}

@test "every man page renders with man --warnings at 80 columns without a warning" {
  command -v man >/dev/null || fail "man is not installed (Debian package man-db)"
  for page in $(pages); do
    run --separate-stderr env MANWIDTH=80 MAN_KEEP_FORMATTING=0 man --warnings -l "$page"
    [ "$status" -eq 0 ] || fail "man -l $page exited $status: $stderr"
    [ -z "$stderr" ] || fail "warnings rendering $page: $stderr"
    [ -n "$output" ] || fail "$page rendered empty"
  done
}

@test "every man page passes groff -man -ww -z without a message" {
  for page in $(pages); do
    run --separate-stderr groff -t -man -ww -z "$page"
    [ "$status" -eq 0 ] && [ -z "$stderr" ] || fail "groff warnings for $page: $stderr"
  done
}

@test "every page's header names its file: .TH NAME SECTION" {
  for page in $(pages); do
    base=$(basename "$page")
    name=${base%.*} sect=${base##*.}
    grep -Eq "^\\.TH ${name^^} $sect " "$page" || fail "$page: .TH does not say ${name^^} $sect"
  done
}

@test "felixctl.1 names every command word that felixctl --help lists" {
  text=$(render "$MAN_DIR/felixctl.1")
  cmds=$(ctl_commands)
  [ "$(wc -l <<<"$cmds")" -ge 14 ] || fail "too few commands parsed from --help: $cmds"
  while IFS= read -r c; do
    grep -qF -- "$c" <<<"$text" || fail "felixctl.1 does not mention '$c'"
  done <<<"$cmds"
  for w in bash zsh fish quorum leader all table json Active Fencing NoCaughtUpReplica; do
    grep -qw -- "$w" <<<"$text" || fail "felixctl.1 does not mention $w"
  done
}

@test "felixctl.1 names every flag of felixctl --help and of every command's --help" {
  text=$(render "$MAN_DIR/felixctl.1")
  flags=$(flags_of "$(ctl_help_texts)")
  [ "$(wc -l <<<"$flags")" -ge 17 ] || fail "too few flags parsed: $flags"
  for f in $flags; do
    grep -qE -- "(^|[^a-z-])$f([^a-z-]|\$)" <<<"$text" || fail "felixctl.1 does not mention $f"
  done
}

@test "felixctl.1 documents env, output formats, fixed JSON fields, exit codes 0-6, states and SEE ALSO" {
  text=$(render "$MAN_DIR/felixctl.1")
  for w in ENVIRONMENT FELIX_CONTROL_PLANE FELIX_TOKEN_FILE OUTPUT "EXIT STATUS" EXAMPLES "SEE ALSO" \
    "SHARD STATES" felix-broker "felix-inspect(1)" \
    id storage_id incarnation address alive fsync_mode \
    stream shard generation state leader hwm replicas broker registered_storage_id copy_id confirmed \
    caught_up stranger offset timestamp payload_b64 \
    "stream create" "consume" "--follow" "shard describe" "placement history"; do
    grep -qF -- "$w" <<<"$text" || fail "felixctl.1 does not mention $w"
  done
  for code in 0 1 2 3 4 5 6; do
    grep -qE "^ +$code +[A-Z]" <<<"$text" || fail "felixctl.1 does not list exit status $code"
  done
  ex=$(sed -n '/^EXAMPLES/,/^SEE ALSO/p' <<<"$text")
  for w in "stream create" produce "consume" "--follow" "shard describe" "placement history"; do
    grep -qF -- "$w" <<<"$ex" || fail "no example with $w"
  done
}

@test "felixctl.1 (its top section) and felixctl top --help tell the refresh, unknown rates, '~' and ' +N'" {
  man=$(render "$MAN_DIR/felixctl.1" | sed -n '/^   top$/,/^   config$/p')
  [ -n "$man" ] || fail "no top section in felixctl.1"
  help=$("$CTL" top --help)
  for w in "refreshed every second" "at least a second" "leader_copy_id" 'shows as "-"' "unknown rates" \
    "marked ~" "transacti~/12" '" +N"' "never cut" "STREAM/N" "orders/3" "12.3k" "EiB"; do
    grep -qF -- "$w" <<<"$man" || fail "the top section of felixctl.1 does not say $w"
  done
  for w in "refreshed every second" "at least a second" 'unknown: "-"' "sorted after every known rate" \
    "marked ~" "transacti~/12" '" +N"' "never cut" "STREAM/N" "orders/3" "12.3k"; do
    grep -qF -- "$w" <<<"$help" || fail "felixctl top --help does not say $w"
  done
}

@test "felix-broker.8 names every subcommand and every flag of their --help" {
  text=$(render "$MAN_DIR/felix-broker.8")
  for sub in control-plane run "restore-point create" "restore-point list" "restore-point verify" "restore-point restore" \
    "restore-point prune" version; do
    grep -qF -- "felix-broker $sub" <<<"$text" || fail "felix-broker.8 does not mention felix-broker $sub"
  done
  flags=$(flags_of "$("$BROKER" run --help; "$BROKER" control-plane --help; "$BROKER" restore-point --help; "$BROKER" --help)")
  [ "$(wc -l <<<"$flags")" -ge 14 ] || fail "too few flags parsed: $flags"
  for f in $flags; do
    grep -qE -- "(^|[^a-z-])$f([^a-z-]|\$)" <<<"$text" || fail "felix-broker.8 does not mention $f"
  done
}

@test "felix-broker.8 documents env, start-up, identity, fsync modes, signals, HTTP, logs, tokens, files, units" {
  text=$(render "$MAN_DIR/felix-broker.8")
  for w in FELIX_DATA_DIR FELIX_DURABLE_FSYNC_MODE FELIX_DURABLE_FSYNC_INTERVAL_MS FELIX_DURABLE_SEGMENT_BYTES \
    FELIX_DURABLE_INDEX_SPACING_BYTES FELIX_BOOT_ID_FILE FELIX_RUNTIME_DIR FELIX_SHUTDOWN_DRAIN_TIMEOUT_MS \
    FELIX_CONTROL_PLANE FELIX_BROKER_TOKEN_FILE "START-UP" "felix-storage(5)" IDENTITY none periodic on_commit \
    SIGTERM SIGINT SIGKILL /live /ready /metrics felix_hwm felix_log_end_offset felix_unsynced_bytes \
    logfmt "level=info" .admin-token .broker-token 0600 FILES "RuntimeDirectory=felix" \
    "RuntimeDirectoryPreserve=yes" "EXIT STATUS" "SEE ALSO" "state=stopped" "boot token"; do
    grep -qF -- "$w" <<<"$text" || fail "felix-broker.8 does not mention $w"
  done
  # the start-up order, in order
  order=$(sed -n '/^START-UP/,/^STORAGE IDENTITY/p' <<<"$text" | grep -oE '^ +[0-9]\. +[A-Z][a-z-]+( [a-z]+)?' |
    sed 's/^ *[0-9]\. *//' | tr '\n' '|')
  assert_equal "$order" "Lock|Recovery|Identity decision|Run-state|Boot token|Register|Serve|"
  for code in 0 1 2 3 4 5 6 7; do
    grep -qE "^ +$code +[A-Za-z]" <<<"$text" || fail "felix-broker.8 does not list exit status $code"
  done
}

@test "the man pages refer to each other and to felix-storage(5)" {
  grep -qF 'felix-broker (8)' "$MAN_DIR/felixctl.1"
  grep -qF 'felixctl (1)' "$MAN_DIR/felix-broker.8"
  grep -qF 'felix-storage (5)' "$MAN_DIR/felix-broker.8"
}

@test "every felixctl flag and command word is in its bash, zsh and fish completions" {
  flags=$(flags_of "$(ctl_help_texts)")
  words=$(ctl_commands | tr ' ' '\n' | sort -u)
  for file in felixctl.bash _felixctl felixctl.fish; do
    f="$COMP_DIR/$file"
    [ -f "$f" ] || fail "$f is missing"
    for w in $words bash zsh fish; do grep -qw -- "$w" "$f" || fail "$file does not mention $w"; done
    for fl in $flags; do
      case $file in
      felixctl.fish) # fish names flags as "-l long" / "-s x"
        if [[ $fl == --* ]]; then pat="-l ${fl#--}( |\$)"; else pat="-s ${fl#-}( |\$)"; fi
        grep -qE -- "$pat" "$f" || fail "$file does not complete $fl" ;;
      *) grep -qE -- "(^|[^a-z-])$fl([^a-z-]|\$)" "$f" || fail "$file does not complete $fl" ;;
      esac
    done
  done
}

@test "every felix-broker flag and subcommand is in its bash, zsh and fish completions" {
  flags=$(flags_of "$("$BROKER" run --help; "$BROKER" control-plane --help; "$BROKER" restore-point --help; "$BROKER" --help)")
  for file in felix-broker.bash _felix-broker felix-broker.fish; do
    f="$COMP_DIR/$file"
    [ -f "$f" ] || fail "$f is missing"
    for w in control-plane run restore-point create list verify restore prune version none periodic on_commit; do
      grep -qw -- "$w" "$f" || fail "$file does not mention $w"
    done
    for fl in $flags; do
      case $file in
      felix-broker.fish)
        if [[ $fl == --* ]]; then pat="-l ${fl#--}( |\$)"; else pat="-s ${fl#-}( |\$)"; fi
        grep -qE -- "$pat" "$f" || fail "$file does not complete $fl" ;;
      *) grep -qE -- "(^|[^a-z-])$fl([^a-z-]|\$)" "$f" || fail "$file does not complete $fl" ;;
      esac
    done
  done
}

@test "felix.7 explains storage ids, run-state, fsync modes, failover and the ways out of NoCaughtUpReplica" {
  [ -f "$MAN_DIR/felix.7" ]
  text=$(render "$MAN_DIR/felix.7")
  for w in "storage id" "copy id" stranger run-state "boot token" on_commit periodic none "power cut" \
    FAILOVER fence "caught up" NoCaughtUpReplica Fencing "placement abandon" "restore-point restore" \
    "felix-inspect run-state" "felix-storage(5)" "felix-broker(8)" "felixctl(1)"; do
    grep -qF -- "$w" <<<"$text" || fail "felix.7 does not mention $w"
  done
}

@test "docs: the guides the issue names exist and name their commands" {
  for f in durable-storage.md operations.md docker-compose.md; do [ -s "$REPO_ROOT/docs/$f" ] || fail "docs/$f is missing"; done
  grep -q "restore-point create" "$REPO_ROOT/docs/operations.md"
  grep -q "placement abandon" "$REPO_ROOT/docs/operations.md"
  grep -q "felix-inspect" "$REPO_ROOT/docs/operations.md"
  grep -q "storage-id" "$REPO_ROOT/docs/durable-storage.md"
  grep -q "docker compose up" "$REPO_ROOT/docs/docker-compose.md"
  [ -s "$REPO_ROOT/Dockerfile" ] && [ -s "$REPO_ROOT/compose.yaml" ] || fail "Dockerfile or compose.yaml missing"
}
