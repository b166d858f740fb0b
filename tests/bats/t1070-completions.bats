#!/usr/bin/env bats
# t1070 — shell completions for felix-inspect: bash (driven through its
# completion function), zsh and fish (parsed, and fish queried).

load helpers

COMP_DIR="$REPO_ROOT/completions"
SUBCOMMANDS="storage-id run-state segments dump index verify ballot"

# complete_bash WORD... — the candidates bash offers for the last WORD of the
# command line "felix-inspect WORD...", one per line.
complete_bash() {
  bash -c '
    source "$1"; shift
    COMP_WORDS=(felix-inspect "$@")
    COMP_CWORD=$#
    COMP_LINE="${COMP_WORDS[*]}"
    COMP_POINT=${#COMP_LINE}
    _felix_inspect
    printf "%s\n" "${COMPREPLY[@]}"' _ "$COMP_DIR/felix-inspect.bash" "$@"
}

# complete_fish LINE — the candidates fish offers for LINE (without descriptions).
complete_fish() {
  fish --no-config -c "source '$COMP_DIR/felix-inspect.fish'; complete -C '$1'" | cut -f1
}

need_shell() {
  command -v "$1" >/dev/null ||
    fail "$1 is not installed: add the Debian package '$1' to the deps (scripts/deps.sh) to test the $1 completion"
}

@test "bash: the completion file registers _felix_inspect for felix-inspect" {
  run -0 bash -c "source '$COMP_DIR/felix-inspect.bash' && complete -p felix-inspect"
  assert_output --partial "-F _felix_inspect"
  assert_output --regexp "felix-inspect\$"
}

@test "bash: felix-inspect <TAB> offers every subcommand" {
  run -0 complete_bash ""
  for sub in $SUBCOMMANDS; do assert_line "$sub"; done
}

@test "bash: the subcommands offered are exactly those of felix-inspect --help" {
  help_subs=$(inspect --help | sed -n 's/^       felix-inspect \[--json\] \([a-z-]*\) .*/\1/p' | sort)
  [ -n "$help_subs" ]
  assert_equal "$(complete_bash "" | sort)" "$help_subs"
}

@test "bash: a partial subcommand completes to the matching ones" {
  run -0 complete_bash ve
  assert_output "verify"
  run -0 complete_bash s
  assert_line storage-id
  assert_line segments
  refute_line dump
}

@test "bash: --payload <TAB> offers text, hex and none" {
  run -0 complete_bash dump seg.log --payload ""
  assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "hex none text "
  run -0 complete_bash dump seg.log --payload h
  assert_output "hex"
}

@test "bash: options after dump include --from, --limit and --payload; elsewhere only the global ones" {
  run -0 complete_bash dump --
  for opt in --from --limit --payload --json --help --version; do assert_line -- "$opt"; done
  run -0 complete_bash verify --
  for opt in --json --help --version; do assert_line -- "$opt"; done
  refute_line -- --from
  refute_line -- --payload
  run -0 complete_bash --
  refute_line -- --limit
  assert_line -- --json
}

@test "bash: --from and --limit take a number: nothing is offered" {
  run -0 complete_bash dump seg.log --from ""
  assert_output ""
  run -0 complete_bash dump seg.log --limit ""
  assert_output ""
}

@test "bash: directory subcommands complete directories (a lone one gets its /), dump and index complete files" {
  mkdir -p data/shards/orders_0-0123abcd45674def "data dir"
  : >data/00000000000000000000.log
  run -0 complete_bash verify da
  assert_line "data"
  assert_line "data dir"
  run -0 complete_bash verify data/
  assert_output "data/shards/"
  run -0 complete_bash dump data/0
  assert_output "data/00000000000000000000.log"
  run -0 complete_bash index data/
  assert_line "data/00000000000000000000.log"
  assert_line "data/shards"
}

@test "zsh: the completion file parses (zsh -n) and names every subcommand and option" {
  need_shell zsh
  run -0 zsh -n "$COMP_DIR/_felix-inspect"
  head -n 1 "$COMP_DIR/_felix-inspect" | grep -qx '#compdef felix-inspect'
  for word in $SUBCOMMANDS --json --help --version --from --limit --payload 'text hex none'; do
    grep -qF -- "$word" "$COMP_DIR/_felix-inspect" || fail "_felix-inspect does not mention $word"
  done
}

@test "zsh: the completion function loads under compinit" {
  need_shell zsh
  run -0 zsh -f -c "fpath=('$COMP_DIR' \$fpath); autoload -Uz compinit; compinit -u -d '$W/zcompdump'; autoload -Uz _felix-inspect; print -r -- \$_comps[felix-inspect]"
  assert_output "_felix-inspect"
}

@test "fish: the completion file parses (fish --no-execute)" {
  need_shell fish
  run -0 fish --no-execute "$COMP_DIR/felix-inspect.fish"
}

@test "fish: felix-inspect <TAB> offers every subcommand, --payload offers text hex none" {
  need_shell fish
  run -0 complete_fish "felix-inspect "
  for sub in $SUBCOMMANDS; do assert_line "$sub"; done
  run -0 complete_fish "felix-inspect dump x.log --payload "
  assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "hex none text "
  run -0 complete_fish "felix-inspect dump x.log --"
  for opt in --from --limit --payload --json --help --version; do assert_line -- "$opt"; done
  run -0 complete_fish "felix-inspect verify --"
  refute_line -- --from
}
