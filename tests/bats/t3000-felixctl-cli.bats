#!/usr/bin/env bats
# t3000 — felixctl's command line without a cluster: help, usage errors and
# their exit codes, the unreachable control plane, the token file, version,
# and the completion scripts (printed, parsed, equal to completions/, driven).
#
# Nothing here listens: the only "control plane" is http://127.0.0.1:1, where
# nothing answers, so every test is quick and needs no cleanup.

load helpers

CTL="$FELIX_BUILD/felixctl"
COMP_DIR="$REPO_ROOT/completions"
UNREACHABLE=http://127.0.0.1:1

# Every command as "felixctl --help" lists it (group and verb).
COMMANDS=(
  "cluster status" "broker list" "broker describe" "stream create" "stream list"
  "stream describe" "stream delete" "stream adopt" "shard list" "shard describe" "placement history" "placement abandon"
  "produce" "consume" "top" "config get-contexts" "config use-context" "config set-context" "completion" "version"
)

eval "$(declare -f setup | sed '1s/^setup/helpers_setup/')"
setup() {
  helpers_setup
  [ -x "$CTL" ] || fail "felixctl not built at $CTL (run make all)"
  unset FELIX_CONTROL_PLANE FELIX_TOKEN_FILE
  echo 0123456789abcdef0123456789abcdef >"$W/token"
}

ctl() { "$CTL" "$@"; }

# complete_bash WORD... — what the printed bash completion offers for the last
# WORD of "felixctl WORD...", one candidate per line.
complete_bash() {
  bash -c '
    source "$1"; shift
    COMP_WORDS=(felixctl "$@")
    COMP_CWORD=$#
    COMP_LINE="${COMP_WORDS[*]}"
    COMP_POINT=${#COMP_LINE}
    _felixctl
    printf "%s\n" "${COMPREPLY[@]}"' _ "$COMP_DIR/felixctl.bash" "$@"
}

need_shell() {
  command -v "$1" >/dev/null || fail "$1 is not installed: add the Debian package '$1' to the deps (scripts/deps.sh)"
}

# --- help ---------------------------------------------------------------

@test "felixctl --help lists every command, the global options, the exit codes and exits 0" {
  run -0 --separate-stderr ctl --help
  [ -z "$stderr" ]
  for c in "${COMMANDS[@]}"; do
    assert_line --regexp "^  $c( |\$)"
  done
  for opt in --control-plane --token-file -o --output --timeout-ms -h --help --version \
    FELIX_CONTROL_PLANE FELIX_TOKEN_FILE "felixctl(1)"; do
    assert_output --partial -- "$opt"
  done
  assert_output --partial "Exit codes: 0 ok, 1 failure, 2 usage, 3 not found, 4 refused,"
  run -0 ctl -h
}

@test "felixctl with no command prints the usage on stderr and exits 2" {
  run -2 --separate-stderr ctl
  [ -z "$output" ]
  [[ $stderr == usage:\ felixctl* ]]
}

@test "every command's --help exits 0 and prints its own usage line" {
  for c in "${COMMANDS[@]}"; do
    # shellcheck disable=SC2086
    run -0 --separate-stderr ctl $c --help
    [ -z "$stderr" ] || fail "felixctl $c --help wrote to stderr: $stderr"
    [[ ${lines[0]} == "usage: felixctl $c"* ]] || fail "felixctl $c --help: first line is '${lines[0]}'"
    assert_output --partial "Global options: --control-plane URL, --token-file FILE, --context NAME,"
  done
}

@test "--help works before the command, after it and with -h" {
  run -0 ctl --help stream create
  assert_line --index 0 --partial "usage: felixctl stream create NAME --shards N --replicas R"
  run -0 ctl stream create -h
  assert_line --index 0 --partial "usage: felixctl stream create NAME"
}

@test "a command group alone with --help lists its subcommands and exits 0" {
  run -0 ctl stream --help
  for v in create list describe delete adopt; do assert_line --partial "felixctl stream $v"; done
  run -0 ctl shard --help
  for v in list describe; do assert_line --partial "felixctl shard $v"; done
  run -0 ctl broker --help
  run -0 ctl cluster --help
  assert_line --partial "felixctl cluster status"
  run -0 ctl placement --help
  assert_line --partial "felixctl placement history"
}

# --- usage errors ---------------------------------------------------------

@test "an unknown command exits 2 naming it, with a hint" {
  run -2 --separate-stderr ctl frobnicate
  [ -z "$output" ]
  [[ $stderr == *"felixctl: error: unknown command 'frobnicate'"* ]] || fail "$stderr"
  [[ $stderr == *"felixctl: hint:"* ]] || fail "no hint: $stderr"
}

@test "an unknown or missing subcommand exits 2 naming the known ones" {
  run -2 --separate-stderr ctl stream frob
  [[ $stderr == *"unknown subcommand 'stream frob'"* ]] || fail "$stderr"
  [[ $stderr == *"create, list, describe, delete"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl stream
  [[ $stderr == *"stream needs a subcommand"* ]] || fail "$stderr"
}

@test "an unknown flag exits 2 naming it, wherever it stands" {
  for args in "--bogus cluster status" "cluster status --bogus" "cluster --bogus status" "--bogus=1 version"; do
    # shellcheck disable=SC2086
    run -2 --separate-stderr ctl $args
    [[ $stderr == *"felixctl: error: unknown option --bogus"* ]] || fail "felixctl $args: $stderr"
  done
}

# One parser (getopt_long, lib/util/cli.c): whole names only, so adding a
# flag never changes what an abbreviated one meant.
@test "abbreviated flags are unknown, a switch given a value is named, and -- ends the flags" {
  for abbrev in --out --control --time; do
    run -2 --separate-stderr ctl $abbrev x version
    [[ $stderr == *"felixctl: error: unknown option $abbrev"* ]] || fail "$abbrev: $stderr"
  done
  run -2 --separate-stderr ctl stream delete s --yes=1
  [[ $stderr == *"felixctl: error: --yes takes no value"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl -- --version
  [[ $stderr == *"unknown command '--version'"* ]] || fail "$stderr"
}

@test "--wait takes a duration of at most an hour, on produce and consume only" {
  for v in abc 10h 3601 -1 5x ""; do
    run -2 --separate-stderr ctl consume s --shard 0 --wait "$v"
    [[ $stderr == *"--wait: '$v' is not a duration of at most an hour (10, 10s, 500ms, 2m)"* ]] || fail "value '$v': $stderr"
  done
  run -2 --separate-stderr ctl cluster status --wait 5
  [[ $stderr == *"--wait is not an option of 'cluster status'"* ]] || fail "$stderr"
}

@test "a flag of another command exits 2 naming the flag and the command" {
  run -2 --separate-stderr ctl cluster status --shards 3
  [[ $stderr == *"--shards is not an option of 'cluster status'"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl produce s --follow
  [[ $stderr == *"--follow is not an option of 'produce'"* ]] || fail "$stderr"
}

@test "a bad -o value exits 2 naming -o and the value" {
  for args in "-o xml version" "--output xml version" "--output=xml version" "-oxml version"; do
    # shellcheck disable=SC2086
    run -2 --separate-stderr ctl $args
    [ -z "$output" ]
    [[ $stderr == *"-o: 'xml' is not an output format"* ]] || fail "felixctl $args: $stderr"
  done
  for args in "-o yaml version" "--output=yaml version" "-oyaml version"; do
    # shellcheck disable=SC2086
    run -0 ctl $args
    assert_output --regexp '^version: [0-9]+\.[0-9]+\.[0-9]+$'
  done
}

@test "a bad --acks value exits 2 naming --acks and the value" {
  run -2 --separate-stderr ctl stream create s --shards 1 --replicas 1 --acks maybe
  [[ $stderr == *"--acks: 'maybe' is not an ack policy"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl produce s --acks=most
  [[ $stderr == *"--acks: 'most'"* ]] || fail "$stderr"
}

@test "a malformed STREAM/SHARD exits 2 naming the value, before any request" {
  for bad in orders orders/x /3 orders/-1 "orders/"; do
    run -2 --separate-stderr ctl --control-plane "$UNREACHABLE" --token-file "$W/token" shard describe "$bad"
    [[ $stderr == *"'$bad' is not STREAM/SHARD"* ]] || fail "shard describe $bad: $stderr"
    [[ $stderr != *"cannot reach"* ]] || fail "a request was made for $bad"
  done
  run -2 --separate-stderr ctl placement history nosl
  [[ $stderr == *"'nosl' is not STREAM/SHARD"* ]] || fail "$stderr"
}

@test "bad numbers and states exit 2 naming the flag and the value" {
  run -2 --separate-stderr ctl stream create s --shards x --replicas 1
  [[ $stderr == *"--shards: 'x'"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl stream create s --shards 1 --replicas -1
  [[ $stderr == *"--replicas: '-1'"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl shard list --state active
  [[ $stderr == *"--state: 'active'"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl consume s --shard 0 --count 0
  [[ $stderr == *"--count: '0'"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl consume s --shard 0 --from +5
  [[ $stderr == *"--from: '+5'"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl --timeout-ms 0 version
  [[ $stderr == *"--timeout-ms: '0'"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl --control-plane ftp://x version
  [[ $stderr == *"--control-plane: 'ftp://x'"* ]] || fail "$stderr"
}

@test "missing required flags and arguments exit 2 naming them" {
  run -2 --separate-stderr ctl consume s
  [[ $stderr == *"consume needs --shard"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl stream create s --replicas 1
  [[ $stderr == *"needs --shards"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl broker describe
  [[ $stderr == *"broker describe needs ID"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl stream list extra
  [[ $stderr == *"unexpected argument 'extra'"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl --control-plane
  [[ $stderr == *"--control-plane needs a value"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl version --yes
  [[ $stderr == *"--yes is not an option of 'version'"* ]] || fail "$stderr"
}

# --- the control plane and the token -------------------------------------

@test "an unreachable control plane exits 5 naming the URL, for every command that asks it" {
  for args in "cluster status" "broker list" "broker describe b1" "stream list" "stream describe s" \
    "stream create s --shards 1 --replicas 1" "stream delete s --yes" "shard list" "shard describe s/0" \
    "placement history s/0" "stream adopt s" "consume s --shard 0"; do
    # shellcheck disable=SC2086
    run -5 --separate-stderr timeout 20 "$CTL" --control-plane "$UNREACHABLE" --token-file "$W/token" $args
    [[ $stderr == *"felixctl: error: cannot reach the control plane at $UNREACHABLE"* ]] || fail "felixctl $args: $stderr"
    [[ $stderr == *"felixctl: hint:"* ]] || fail "felixctl $args: no hint: $stderr"
  done
  run -5 --separate-stderr bash -c 'echo rec | timeout 20 "$1" --control-plane "$2" --token-file "$3" produce s' _ \
    "$CTL" "$UNREACHABLE" "$W/token"
  [[ $stderr == *"$UNREACHABLE"* ]] || fail "$stderr"
}

@test "FELIX_CONTROL_PLANE and FELIX_TOKEN_FILE are used, and flags win over them" {
  FELIX_CONTROL_PLANE=$UNREACHABLE FELIX_TOKEN_FILE="$W/token" run -5 --separate-stderr ctl cluster status
  [[ $stderr == *"at $UNREACHABLE"* ]] || fail "$stderr"
  FELIX_CONTROL_PLANE=http://127.0.0.1:2 run -5 --separate-stderr ctl --control-plane "$UNREACHABLE" --token-file "$W/token" cluster status
  [[ $stderr == *"at $UNREACHABLE"* ]] || fail "the flag did not win: $stderr"
  FELIX_TOKEN_FILE=/nonexistent/token run -5 --separate-stderr ctl --control-plane "$UNREACHABLE" --token-file "$W/token" cluster status
}

@test "a URL without a scheme gets http:// and a trailing slash is dropped" {
  run -5 --separate-stderr ctl --control-plane 127.0.0.1:1/ --token-file "$W/token" cluster status
  [[ $stderr == *"at $UNREACHABLE:"* || $stderr == *"at $UNREACHABLE "* ]] || fail "$stderr"
}

@test "no token file exits 2 with a hint naming --token-file, FELIX_TOKEN_FILE and <db>.admin-token" {
  run -2 --separate-stderr ctl --control-plane "$UNREACHABLE" cluster status
  [ -z "$output" ]
  [[ $stderr == *"felixctl: error: no admin token file"* ]] || fail "$stderr"
  [[ $stderr == *"felixctl: hint:"*"--token-file"*"FELIX_TOKEN_FILE"*".admin-token"* ]] || fail "$stderr"
  [[ $stderr != *"cannot reach"* ]] || fail "a request was made without a token"
  # produce and consume need it too: they look the leader up in the control plane
  run -2 --separate-stderr ctl --control-plane "$UNREACHABLE" consume s --shard 0
  [[ $stderr == *"no admin token file"* ]] || fail "$stderr"
}

@test "a token file that does not exist is an error naming the file, with a hint" {
  run --separate-stderr ctl --control-plane "$UNREACHABLE" --token-file "$W/no-such-token" cluster status
  [ "$status" -ne 0 ] && [ "$status" -ne 5 ] || fail "exit $status: the token file must be checked before the request"
  [[ $stderr == *"$W/no-such-token"* ]] || fail "$stderr"
  [[ $stderr == *"felixctl: hint:"* ]] || fail "no hint: $stderr"
}

@test "commands that need no control plane run without a token" {
  run -0 ctl version
  run -0 ctl completion bash
}

# --- version ------------------------------------------------------------

@test "version and --version print 'felixctl VERSION'; -o json version prints {version}" {
  run -0 --separate-stderr ctl version
  assert_output --regexp '^felixctl [0-9]+\.[0-9]+\.[0-9]+$'
  v=$output
  run -0 ctl --version
  assert_output "$v"
  run -0 ctl stream create --version # --version wins over everything
  assert_output "$v"
  run -0 ctl -o json version
  assert_json
  assert_equal "$(jget 'j["version"]' <<<"$output")" "${v#felixctl }"
}

# --- completion ----------------------------------------------------------

@test "completion bash|zsh|fish prints what completions/ holds, byte for byte" {
  for pair in "bash felixctl.bash" "zsh _felixctl" "fish felixctl.fish"; do
    set -- $pair
    [ -f "$COMP_DIR/$2" ] || fail "completions/$2 is missing (felixctl completion $1 > completions/$2)"
    ctl completion "$1" >"$W/$2"
    cmp "$W/$2" "$COMP_DIR/$2" || fail "completions/$2 differs from felixctl completion $1"
  done
}

@test "completion with no or an unknown shell exits 2 naming it" {
  run -2 --separate-stderr ctl completion
  [[ $stderr == *"bash|zsh|fish"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl completion ksh
  [[ $stderr == *"'ksh'"* ]] || fail "$stderr"
}

@test "the printed bash script parses (bash -n) and registers _felixctl" {
  ctl completion bash >"$W/c.bash"
  run -0 bash -n "$W/c.bash"
  run -0 bash -c "source '$W/c.bash' && complete -p felixctl"
  assert_output --partial "-F _felixctl"
}

@test "the printed zsh script parses (zsh -n) and loads under compinit" {
  need_shell zsh
  ctl completion zsh >"$W/_felixctl"
  run -0 zsh -n "$W/_felixctl"
  head -n 1 "$W/_felixctl" | grep -qx '#compdef felixctl'
  run -0 zsh -f -c "fpath=('$COMP_DIR' \$fpath); autoload -Uz compinit; compinit -u -d '$W/zcompdump'; print -r -- \$_comps[felixctl]"
  assert_output "_felixctl"
}

@test "the printed fish script parses (fish --no-execute) and offers the commands" {
  need_shell fish
  ctl completion fish >"$W/felixctl.fish"
  run -0 fish --no-execute "$W/felixctl.fish"
  run -0 fish --no-config -c "source '$W/felixctl.fish'; complete -C 'felixctl stream '"
  for v in create list describe delete adopt; do assert_line --regexp "^$v(\s|\$)"; done
}

@test "bash: felixctl stream <TAB> offers exactly create, list, describe, delete and adopt" {
  run -0 complete_bash stream ""
  assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "adopt create delete describe list "
  run -0 complete_bash stream d
  assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "delete describe "
  run -0 complete_bash --control-plane http://x stream ""
  assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "adopt create delete describe list "
  run -0 complete_bash stream adopt late --
  assert_line -- --uuid
  refute_line -- --yes
}

@test "bash: felixctl <TAB> offers every command group of --help" {
  groups=$(for c in "${COMMANDS[@]}"; do echo "${c%% *}"; done | sort -u)
  run -0 complete_bash ""
  assert_equal "$(sort <<<"$output")" "$groups"
}

@test "bash: values of -o, --acks and --state, and command options after --" {
  run -0 complete_bash -o ""
  assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "json table wide yaml "
  run -0 complete_bash stream create s --acks ""
  assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "all leader quorum "
  run -0 complete_bash shard list --state ""
  assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "Active Fencing NoCaughtUpReplica "
  run -0 complete_bash consume s --
  for opt in --shard --from --count --follow --control-plane --token-file --output --timeout-ms --help; do
    assert_line -- "$opt"
  done
  refute_line -- --shards
}

@test "placement abandon: refused (exit 4) without --yes and both --expect flags, before asking the control plane" {
  run -4 --separate-stderr ctl --control-plane "$UNREACHABLE" placement abandon s/0
  [[ $stderr == *"refusing to abandon s/0 without --yes, --expect-generation, --expect-copy and --expect-digest"* ]] || fail "$stderr"
  [[ $stderr == *"hint: run it with --dry-run first"* ]] || fail "$stderr"
  run -4 --separate-stderr ctl --control-plane "$UNREACHABLE" placement abandon s/0 --yes --expect-generation 3 --expect-copy b1:c
  run -2 --separate-stderr ctl placement abandon s/0 --yes --expect-generation 3 --expect-copy nocolon
  [[ $stderr == *"--expect-copy: 'nocolon'"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl placement abandon s/0 --dry-run --expect-digest short
  [[ $stderr == *"--expect-digest"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl placement abandon s/0 --expect-generation x
  [[ $stderr == *"--expect-generation: 'x'"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl placement history s/0 --dry-run # another command's flag
  # --dry-run asks the control plane (exit 5 when it is unreachable)
  run -5 --separate-stderr ctl --control-plane "$UNREACHABLE" --token-file "$W/token" placement abandon s/0 --dry-run
}

@test "completions: placement offers history and abandon, and abandon's flags, in bash, zsh and fish" {
  run -0 complete_bash placement ""
  assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "abandon history "
  run -0 complete_bash placement abandon s/0 --
  for opt in --dry-run --yes --expect-generation --expect-copy --expect-digest; do assert_line -- "$opt"; done
  grep -q -- "--expect-digest\[" "$COMP_DIR/_felixctl"
  grep -q "(history abandon)" "$COMP_DIR/_felixctl"
  grep -q -- "-l expect-copy" "$COMP_DIR/felixctl.fish"
  grep -q -- "-a abandon" "$COMP_DIR/felixctl.fish"
}

@test "stream adopt: a malformed --uuid exits 2 naming the flag and the value, before asking the control plane" {
  run -2 --separate-stderr ctl --control-plane "$UNREACHABLE" stream adopt late --uuid 0B9C
  [[ $stderr == *"--uuid: '0B9C' is not a stream uuid"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl --control-plane "$UNREACHABLE" stream adopt
  [[ $stderr == *"usage: felixctl stream adopt NAME [--uuid UUID]"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl --control-plane "$UNREACHABLE" stream create s --shards 1 --replicas 1 --uuid 0b9c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3
  [[ $stderr == *"--uuid is not an option of 'stream create'"* ]] || fail "$stderr"
}

@test "placement abandon: --above-generation must be a generation of 1 or more (exit 2 naming the flag and value)" {
  run -2 --separate-stderr ctl --control-plane "$UNREACHABLE" placement abandon s/0 --yes --expect-generation 1 \
    --expect-copy b1:c --expect-digest 0123456789abcdef --above-generation 0
  [[ $stderr == *"--above-generation: '0' is not a generation number, 1 or more"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl --control-plane "$UNREACHABLE" placement abandon s/0 --above-generation x2
  [[ $stderr == *"--above-generation: 'x2' is not a generation number"* ]] || fail "$stderr"
  run -0 complete_bash placement abandon s/0 --
  assert_line -- --above-generation
}
