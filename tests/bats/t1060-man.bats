#!/usr/bin/env bats
# t1060 — the man pages render without warnings and cover the CLI.

load helpers

MAN_DIR="$REPO_ROOT/man"

pages() { ls "$MAN_DIR"/*.[1-8]; }

# render PAGE — the page as plain ASCII text on long lines, without
# hyphenation (so words are never split and hyphens stay "-").
render() { groff -t -man -Tascii -P-cbou -rLL=2000n -rHY=0 "$1" 2>/dev/null; }

@test "man/ holds felix-inspect.1 and felix-storage.5" {
  [ -f "$MAN_DIR/felix-inspect.1" ]
  [ -f "$MAN_DIR/felix-storage.5" ]
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

@test "every man page passes groff -ww -z (all warnings) without a message" {
  for page in $(pages); do
    run --separate-stderr groff -t -man -ww -z "$page"
    [ "$status" -eq 0 ] && [ -z "$stderr" ] || fail "groff warnings for $page: $stderr"
  done
}

@test "felix-inspect.1 mentions every subcommand and option that felix-inspect --help prints" {
  text=$(render "$MAN_DIR/felix-inspect.1")
  help=$(inspect --help)
  subs=$(sed -n 's/^       felix-inspect \[--json\] \([a-z-]*\) .*/\1/p' <<<"$help")
  [ "$(wc -w <<<"$subs")" -ge 7 ]
  opts=$(grep -oE '(^|[ [|(])--?[a-z][a-z-]*' <<<"$help" | sed 's/^[ [|(]//' | sort -u)
  [ "$(wc -w <<<"$opts")" -ge 7 ]
  for word in $subs $opts; do
    grep -qF -- "$word" <<<"$text" || fail "felix-inspect.1 does not mention $word"
  done
  for mode in text hex none; do grep -qw -- "$mode" <<<"$text" || fail "no payload mode $mode"; done
}

@test "felix-inspect.1 documents exit codes, the fixed JSON fields and the environment" {
  text=$(render "$MAN_DIR/felix-inspect.1")
  for word in "EXIT STATUS" ENVIRONMENT EXAMPLES "SEE ALSO" FELIX_BOOT_ID_FILE FELIX_RUNTIME_DIR \
    felix-storage storage_id last_run fsync_mode boot_id current_boot_id next_start rotate reason \
    offset timestamp position payload_len payload_b64 ok problems file kind repairable; do
    grep -qF -- "$word" <<<"$text" || fail "felix-inspect.1 does not mention $word"
  done
  for code in 0 1 2 3 6; do
    grep -qE "^ +$code +(OK|Failure|Usage|Not found|Corrupt)" <<<"$text" || fail "felix-inspect.1 does not list exit status $code"
  done
}

@test "felix-storage.5 documents every file, the formats, the golden vectors and the identity table" {
  text=$(render "$MAN_DIR/felix-storage.5")
  for word in storage-id run-state lock ballot generations .log .index FLSG FLSI \
    state= fsync_mode= boot_id= boot_id_source= pid= since= \
    copy_id= storage_id= stream_uuid= generation= leader= leader_copy_id= leader_incarnation= \
    "46 4C 53 47 00 01 00 00" "D9 5F 63 18" "63 3D A1 4E | 68 69" \
    RECOVERY IDENTITY FELIX_RUNTIME_DIR FELIX_BOOT_ID_FILE .ok "created now" "another boot"; do
    grep -qF -- "$word" <<<"$text" || fail "felix-storage.5 does not mention $word"
  done
}
