#!/usr/bin/env bats
# t3070 — felixctl's contexts: config set-context, use-context and
# get-contexts, the config file's location and format, and the order in
# which a command takes its settings (flag, environment, context, default).
#
# Nothing listens: the contexts point at http://127.0.0.1:1 and :2, where
# nothing answers, so the error of a command shows which URL it used.

load helpers

CTL="$FELIX_BUILD/felixctl"
COMP_DIR="$REPO_ROOT/completions"
UNREACHABLE=http://127.0.0.1:1
OTHER=http://127.0.0.1:2

eval "$(declare -f setup | sed '1s/^setup/helpers_setup/')"
setup() {
  helpers_setup
  [ -x "$CTL" ] || fail "felixctl not built at $CTL (run make all)"
  unset FELIX_CONTROL_PLANE FELIX_TOKEN_FILE XDG_CONFIG_HOME
  echo 0123456789abcdef0123456789abcdef >"$W/token"
  echo fedcba9876543210fedcba9876543210 >"$W/token2"
}

ctl() { "$CTL" "$@"; }

# two_contexts — prod (at :1, token) current, dev (at :2, token2).
two_contexts() {
  run -0 ctl config set-context prod --control-plane 127.0.0.1:1/ --token-file token
  run -0 ctl config set-context dev --control-plane "$OTHER" --token-file "$W/token2"
  run -0 ctl config use-context prod
}

@test "set-context writes FELIX_CONFIG (creating its directory), the URL normalised and the token path absolute" {
  export FELIX_CONFIG="$W/deep/dir/config"
  run -0 ctl config set-context prod --control-plane 127.0.0.1:1/ --token-file token
  assert_line "Context \"prod\" created in $FELIX_CONFIG."
  assert_line "felixctl config use-context prod makes it the current one."
  grep -qx "\[context prod\]" "$FELIX_CONFIG"
  grep -qx "control-plane = $UNREACHABLE" "$FELIX_CONFIG"
  grep -qx "token-file = $W/token" "$FELIX_CONFIG"
  run -0 ctl config set-context prod --token-file "$W/token2"
  assert_line "Context \"prod\" modified in $FELIX_CONFIG."
  grep -qx "token-file = $W/token2" "$FELIX_CONFIG"
  grep -qx "control-plane = $UNREACHABLE" "$FELIX_CONFIG" || fail "the URL was lost: $(cat "$FELIX_CONFIG")"
  [ ! -e "$FELIX_CONFIG.tmp" ] && [ -z "$(ls -A "$W/deep/dir" | grep -v '^config$')" ] || fail "a temp file was left"
}

@test "the current context gives a command its control plane and token file; cluster status names it" {
  two_contexts
  run -5 --separate-stderr ctl cluster status
  [[ $stderr == *"cannot reach the control plane at $UNREACHABLE (from context 'prod')"* ]] || fail "$stderr"
  run -0 ctl config use-context dev
  assert_output 'Switched to context "dev".'
  run -5 --separate-stderr ctl stream list
  [[ $stderr == *"at $OTHER (from context 'dev')"* ]] || fail "$stderr"
  # the token file is the context's: an unreadable one is named with its source
  rm "$W/token2"
  run -1 --separate-stderr ctl stream list
  [[ $stderr == *"cannot read the token file $W/token2 (from context 'dev')"* ]] || fail "$stderr"
}

@test "flags win over the environment, and both over the context" {
  two_contexts
  FELIX_CONTROL_PLANE=$OTHER run -5 --separate-stderr ctl cluster status
  [[ $stderr == *"at $OTHER (from FELIX_CONTROL_PLANE)"* ]] || fail "the environment did not win: $stderr"
  FELIX_CONTROL_PLANE=$OTHER run -5 --separate-stderr ctl --control-plane http://127.0.0.1:3 cluster status
  [[ $stderr == *"at http://127.0.0.1:3 (from --control-plane)"* ]] || fail "the flag did not win: $stderr"
  FELIX_TOKEN_FILE=/nonexistent/env-token run -1 --separate-stderr ctl cluster status
  [[ $stderr == *"/nonexistent/env-token (from FELIX_TOKEN_FILE)"* ]] || fail "$stderr"
  FELIX_TOKEN_FILE=/nonexistent/env-token run -1 --separate-stderr ctl --token-file /nonexistent/flag-token cluster status
  [[ $stderr == *"/nonexistent/flag-token (from --token-file)"* ]] || fail "$stderr"
}

@test "--context NAME picks another context for one command; an unknown one exits 2 naming it, before any request" {
  two_contexts
  run -5 --separate-stderr ctl --context dev cluster status
  [[ $stderr == *"at $OTHER (from context 'dev')"* ]] || fail "$stderr"
  run -5 --separate-stderr ctl cluster status --context=dev
  [[ $stderr == *"at $OTHER"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl --context nope cluster status
  [[ $stderr == *"--context: no context 'nope' in $FELIX_CONFIG"* ]] || fail "$stderr"
  [[ $stderr != *"cannot reach"* ]] || fail "a request was made: $stderr"
  run -2 --separate-stderr ctl --context dev config get-contexts
  [[ $stderr == *"--context is not an option of 'config get-contexts'"* ]] || fail "$stderr"
  # still the current one afterwards
  run -0 ctl -o json config get-contexts
  [ "$(jget 'j["current_context"]' <<<"$output")" = prod ]
}

@test "get-contexts lists the contexts in a table and in JSON; an absent file is no contexts, exit 0" {
  run -0 ctl config get-contexts
  assert_output "CURRENT  NAME  CONTROL_PLANE  TOKEN_FILE"
  run -0 ctl -o json config get-contexts
  [ "$(jget '[j["config_file"], j["current_context"], j["contexts"]]' <<<"$output")" = "[\"$FELIX_CONFIG\", null, []]" ]
  [ ! -e "$FELIX_CONFIG" ] || fail "listing created the file"
  two_contexts
  run -0 ctl config get-contexts
  assert_line --index 0 --regexp '^CURRENT +NAME +CONTROL_PLANE +TOKEN_FILE$'
  assert_line --index 1 --regexp "^\* +prod +$UNREACHABLE +$W/token\$"
  assert_line --index 2 --regexp "^- +dev +$OTHER +$W/token2\$"
  run -0 ctl -o json config get-contexts
  [ "$(jget '[(c["name"], c["current"], c["control_plane"], c["token_file"]) for c in j["contexts"]]' <<<"$output")" = \
    "[[\"prod\", true, \"$UNREACHABLE\", \"$W/token\"], [\"dev\", false, \"$OTHER\", \"$W/token2\"]]" ]
  run -0 ctl -o yaml config get-contexts
  assert_line "current_context: prod"
}

@test "use-context of an unknown name exits 3 naming the known ones, and changes nothing" {
  two_contexts
  before=$(cat "$FELIX_CONFIG")
  run -3 --separate-stderr ctl config use-context staging
  [[ $stderr == *"no context 'staging' in $FELIX_CONFIG"* ]] || fail "$stderr"
  [[ $stderr == *"hint: known: prod, dev"* ]] || fail "$stderr"
  [ "$(cat "$FELIX_CONFIG")" = "$before" ] || fail "the file changed"
  rm "$FELIX_CONFIG"
  run -3 --separate-stderr ctl config use-context prod
  [[ $stderr == *"set-context adds one"* ]] || fail "$stderr"
}

@test "set-context: a new context needs --control-plane; bad names and URLs exit 2 naming them" {
  run -2 --separate-stderr ctl config set-context prod
  [[ $stderr == *"a new context needs --control-plane"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl config set-context 'a b' --control-plane "$UNREACHABLE"
  [[ $stderr == *"'a b' is not a context name"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl config set-context prod --control-plane ftp://x
  [[ $stderr == *"--control-plane: 'ftp://x' is not a control plane URL"* ]] || fail "$stderr"
  run -2 --separate-stderr ctl config set-context
  [[ $stderr == *"config set-context needs NAME"* ]] || fail "$stderr"
  [ ! -e "$FELIX_CONFIG" ] || fail "a refused command wrote the file"
}

@test "a broken config file is an error naming the file and line (exit 2), before any request, and is never rewritten" {
  printf '# mine\ncurrent-context = prod\n\n[context prod]\ncontrol-plane = %s\ntokenfile = %s/token\n' "$UNREACHABLE" "$W" >"$FELIX_CONFIG"
  run -2 --separate-stderr ctl cluster status
  [[ $stderr == *"$FELIX_CONFIG: line 6: unknown key in a context (known: control-plane, token-file)"* ]] || fail "$stderr"
  [[ $stderr != *"cannot reach"* ]] || fail "a request was made: $stderr"
  run -2 --separate-stderr ctl config set-context dev --control-plane "$OTHER"
  [[ $stderr == *"line 6"* ]] || fail "$stderr"
  grep -q tokenfile "$FELIX_CONFIG" || fail "the broken file was rewritten"
  for bad in 'control-plane = x' '[context]' '[ctx prod]' 'current-context = a b' 'nonsense'; do
    printf '%s\n' "$bad" >"$FELIX_CONFIG"
    run -2 --separate-stderr ctl config get-contexts
    [[ $stderr == *"$FELIX_CONFIG: line 1: "* ]] || fail "'$bad': $stderr"
  done
  printf '[context a]\n[context a]\ncontrol-plane = %s\n' "$UNREACHABLE" >"$FELIX_CONFIG"
  run -2 --separate-stderr ctl config get-contexts
  [[ $stderr == *"line 2: a second [context] of this name"* ]] || fail "$stderr"
  printf '[context a]\ntoken-file = /t\n' >"$FELIX_CONFIG"
  run -2 --separate-stderr ctl config get-contexts
  [[ $stderr == *"context 'a' has no control-plane"* ]] || fail "$stderr"
  printf 'current-context = gone\n[context a]\ncontrol-plane = %s\n' "$UNREACHABLE" >"$FELIX_CONFIG"
  run -2 --separate-stderr ctl cluster status
  [[ $stderr == *"current-context 'gone' is not a [context] of the file"* ]] || fail "$stderr"
  # version and completion need no config: a broken one does not stop them
  echo nonsense >"$FELIX_CONFIG"
  run -0 ctl version
  run -0 ctl completion bash
}

@test "a hand-written file with comments, blanks and spaces is read; the file is found in XDG_CONFIG_HOME, then ~/.config" {
  printf '# contexts\n\n  current-context=dev  \n[context dev]\n\tcontrol-plane =   %s\n' "$OTHER" >"$FELIX_CONFIG"
  run -2 --separate-stderr ctl cluster status # this context names no token file
  [[ $stderr == *"no admin token file"*"felixctl config set-context"* ]] || fail "$stderr"
  run -5 --separate-stderr ctl --token-file "$W/token" cluster status
  [[ $stderr == *"at $OTHER (from context 'dev')"* ]] || fail "$stderr"
  unset FELIX_CONFIG
  mkdir -p "$W/xdg/felix" "$W/home/.config/felix"
  printf 'current-context = x\n[context x]\ncontrol-plane = %s\n' "$OTHER" >"$W/xdg/felix/config"
  printf 'current-context = h\n[context h]\ncontrol-plane = %s\n' "$UNREACHABLE" >"$W/home/.config/felix/config"
  XDG_CONFIG_HOME="$W/xdg" HOME="$W/home" run -5 --separate-stderr ctl --token-file "$W/token" cluster status
  [[ $stderr == *"at $OTHER (from context 'x')"* ]] || fail "$stderr"
  HOME="$W/home" run -5 --separate-stderr ctl --token-file "$W/token" cluster status
  [[ $stderr == *"at $UNREACHABLE (from context 'h')"* ]] || fail "$stderr"
  HOME="$W/nohome" run -0 ctl -o json config get-contexts
  [ "$(jget 'j["config_file"]' <<<"$output")" = "$W/nohome/.config/felix/config" ]
}

@test "completions: config offers its subcommands and --context and use-context offer the contexts, in bash, zsh and fish" {
  two_contexts
  run -0 bash -c '
    source "$1"
    complete_line() { COMP_WORDS=(felixctl "$@"); COMP_CWORD=$#; _felixctl; printf "%s\n" "${COMPREPLY[@]}"; }
    PATH="$2:$PATH"
    echo "subs: $(complete_line config "" | sort | tr "\n" " ")"
    echo "use: $(complete_line config use-context "" | sort | tr "\n" " ")"
    echo "flag: $(complete_line --context "" | sort | tr "\n" " ")"
    echo "global: $(complete_line cluster status --c | sort | tr "\n" " ")"' _ "$COMP_DIR/felixctl.bash" "$FELIX_BUILD"
  assert_line "subs: get-contexts set-context use-context "
  assert_line "use: dev prod "
  assert_line "flag: dev prod "
  assert_line --regexp "^global: .*--context "
  grep -q -- "--context\[" "$COMP_DIR/_felixctl"
  grep -q "(get-contexts use-context set-context)" "$COMP_DIR/_felixctl"
  command -v fish >/dev/null || fail "fish is not installed (scripts/deps.sh)"
  run -0 env PATH="$FELIX_BUILD:$PATH" fish --no-config -c "source '$COMP_DIR/felixctl.fish'; complete -C 'felixctl config '" 
  assert_line --partial "use-context"
  run -0 env PATH="$FELIX_BUILD:$PATH" fish --no-config -c "source '$COMP_DIR/felixctl.fish'; complete -C 'felixctl --context '"
  assert_line --regexp "^prod"
  assert_line --regexp "^dev"
}
