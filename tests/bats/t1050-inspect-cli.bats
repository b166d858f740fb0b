#!/usr/bin/env bats
# t1050 — the command line: usage errors (exit 2), help, version, not found
# (exit 3), unreadable input (exit 1), and the read-only guarantee.

load helpers

SUBCOMMANDS="storage-id run-state segments dump index verify ballot"

make_data() {
  SHARD=$(mkdata d orders 0 30 --segment-bytes 512)
  SEG=$(seg "$SHARD" 0)
}

@test "no arguments: usage on stderr, nothing on stdout, exit 2" {
  run -2 --separate-stderr inspect
  assert_equal "$output" ""
  [[ "${stderr_lines[0]}" == "usage: felix-inspect [--json] DATADIR" ]]
}

@test "--help and -h print the usage with every subcommand on stdout, exit 0" {
  for flag in --help -h; do
    run -0 --separate-stderr inspect "$flag"
    assert_equal "$stderr" ""
    assert_line --index 0 "usage: felix-inspect [--json] DATADIR"
    for sub in $SUBCOMMANDS; do
      assert_line --regexp "^       felix-inspect \[--json\] $sub "
      assert_line --regexp "^  $sub +[a-z]"
    done
    assert_line --partial "Exit codes: 0 ok, 1 failure, 2 usage, 3 not found, 6 corrupt data found."
  done
}

@test "every subcommand has --help: its usage on stdout, exit 0, before or after the subcommand" {
  for sub in $SUBCOMMANDS; do
    run -0 --separate-stderr inspect "$sub" --help
    assert_equal "$stderr" ""
    assert_line --index 0 --regexp "^usage: felix-inspect \[--json\] $sub [A-Z|]+"
    [ "${#lines[@]}" -eq 2 ]
    after=$output
    run -0 inspect --help "$sub"
    assert_output "$after"
  done
  run -0 inspect dump --help
  assert_line --index 0 "usage: felix-inspect [--json] dump SEGMENT [--from OFFSET] [--limit N] [--payload text|hex|none]"
}

@test "--version prints the program and version, exit 0" {
  run -0 --separate-stderr inspect --version
  assert_output --regexp '^felix-inspect [0-9]+\.[0-9]+\.[0-9]+'
  assert_equal "$stderr" ""
}

@test "an unknown option exits 2 naming the option, with a hint" {
  make_data
  for args in "--bogus d" "verify --bogus d" "dump $SEG --fro 1" "-x d"; do
    run -2 --separate-stderr inspect $args
    opt=$(tr ' ' '\n' <<<"$args" | grep '^-')
    assert_equal "$output" ""
    assert_equal "${stderr_lines[0]}" "felix-inspect: error: unknown option $opt"
    assert_equal "${stderr_lines[1]}" "felix-inspect: hint: see felix-inspect --help"
  done
}

# One parser (getopt_long): --flag=value as --flag value, options before or
# after the operands, whole names only, and a value where none is taken named.
@test "options take --flag=value or --flag value, anywhere; --json=x and abbreviations are refused" {
  make_data
  run -0 inspect --json dump "$SEG" --from 3 --limit 2 --payload none
  want=$output
  run -0 inspect --json dump "$SEG" --from=3 --limit=2 --payload=none
  assert_equal "$output" "$want"
  run -0 inspect --from=3 --limit 2 --json --payload=none dump "$SEG"
  assert_equal "$output" "$want"
  [ "$(jlines 'j["offset"]' <<<"$want" | tr '\n' ' ')" = "3 4 " ]
  run -2 --separate-stderr inspect --json=yes d
  assert_equal "${stderr_lines[0]}" "felix-inspect: error: --json takes no value"
  for abbrev in --js --ver --he; do
    run -2 --separate-stderr inspect $abbrev d
    assert_equal "${stderr_lines[0]}" "felix-inspect: error: unknown option $abbrev"
  done
  run -0 inspect -- d # "--" ends the options
  assert_line --partial "storage id:"
}

@test "dump's options on another subcommand exit 2 naming the option" {
  make_data
  for opt in --from --limit --payload; do
    run -2 --separate-stderr inspect verify d "$opt" 1
    assert_equal "${stderr_lines[0]}" "felix-inspect: error: $opt is an option of dump only"
  done
}

@test "a bad --from value exits 2 naming the flag and the value" {
  make_data
  for v in -1 abc 1.5 '' 0x10 +3 99999999999999999999; do
    run -2 --separate-stderr inspect dump "$SEG" --from "$v"
    assert_equal "$output" ""
    assert_equal "${stderr_lines[0]}" "felix-inspect: error: --from: '$v' is not a non-negative integer"
    assert_equal "${stderr_lines[1]}" "felix-inspect: hint: give a non-negative integer"
  done
}

@test "a bad --limit value exits 2 naming the flag and the value" {
  make_data
  for v in -5 ten 2k; do
    run -2 --separate-stderr inspect dump "$SEG" --limit "$v"
    assert_equal "${stderr_lines[0]}" "felix-inspect: error: --limit: '$v' is not a non-negative integer"
  done
}

@test "--from and --limit values with leading white space are refused, not wrapped to 2^64-1" {
  # strtoull skips leading white space and then accepts a sign: " -1" would
  # read as 18446744073709551615 if only the first character were checked.
  make_data
  for flag in --from --limit; do
    for v in ' -1' $'\t-1' ' 3'; do
      run -2 --separate-stderr inspect dump "$SEG" "$flag" "$v"
      assert_equal "${stderr_lines[0]}" "felix-inspect: error: $flag: '$v' is not a non-negative integer"
    done
  done
}

@test "a bad --payload mode exits 2 naming the flag and the value" {
  make_data
  run -2 --separate-stderr inspect dump "$SEG" --payload binary
  assert_equal "${stderr_lines[0]}" "felix-inspect: error: --payload: 'binary' is not a payload mode"
  assert_equal "${stderr_lines[1]}" "felix-inspect: hint: use text, hex or none"
}

@test "a dump option without its value exits 2 naming the option" {
  make_data
  for opt in --from --limit --payload; do
    run -2 --separate-stderr inspect dump "$SEG" "$opt"
    assert_equal "$stderr" "felix-inspect: error: $opt needs a value"
  done
}

@test "a subcommand without its argument, or with two, exits 2 with an error and its usage" {
  make_data
  run -2 --separate-stderr inspect verify
  assert_equal "${stderr_lines[0]}" "felix-inspect: error: verify takes exactly one argument: DATADIR|SHARDDIR"
  assert_equal "${stderr_lines[1]}" "usage: felix-inspect [--json] verify DATADIR|SHARDDIR"
  run -2 --separate-stderr inspect segments "$SHARD" "$SHARD"
  assert_equal "${stderr_lines[0]}" "felix-inspect: error: segments takes exactly one argument: SHARDDIR"
}

@test "two directories without a subcommand exit 2 with an error line, not only the usage" {
  make_data
  run -2 --separate-stderr inspect d d
  assert_equal "$output" ""
  [[ "${stderr_lines[0]}" == "felix-inspect: error: "* ]]
}

@test "a missing data directory exits 3 for the summary, storage-id and run-state" {
  for args in "nosuch" "storage-id nosuch" "run-state nosuch" "--json nosuch"; do
    run -3 --separate-stderr inspect $args
    assert_equal "$output" ""
    assert_equal "$stderr" "felix-inspect: error: data directory nosuch does not exist"
  done
}

@test "a missing shard directory or file exits 3 for segments, verify, ballot, dump and index" {
  for sub in segments verify ballot; do
    run -3 --separate-stderr inspect "$sub" nosuch
    assert_equal "$stderr" "felix-inspect: error: open directory nosuch: No such file or directory"
  done
  for sub in dump index; do
    run -3 --separate-stderr inspect "$sub" nosuch
    assert_equal "$stderr" "felix-inspect: error: open nosuch: No such file or directory"
  done
}

@test "a regular file where a directory is expected exits 1 naming the path (works as root)" {
  : >afile
  for args in "afile" "storage-id afile" "run-state afile" "segments afile" "verify afile" "ballot afile"; do
    run -1 --separate-stderr inspect $args
    assert_equal "$output" ""
    assert_equal "$stderr" "felix-inspect: error: open directory afile: Not a directory"
  done
}

@test "a directory where a segment or index file is expected exits 1 naming the path" {
  mkdir adir
  run -1 --separate-stderr inspect dump adir
  assert_equal "$stderr" "felix-inspect: error: read adir at byte 0: Is a directory"
  run -1 --separate-stderr inspect index adir
  assert_equal "$stderr" "felix-inspect: error: read adir: Is a directory"
}

@test "an unreadable storage-id (a directory in its place) exits 1 naming the file (works as root)" {
  make_data
  rm d/storage-id
  mkdir d/storage-id
  for args in "d" "storage-id d" "run-state d"; do
    run -1 --separate-stderr inspect $args
    assert_equal "$stderr" "felix-inspect: error: read d/storage-id: Is a directory"
  done
  run -6 inspect --json verify d
  [ "$(jget 'j["problems"][0]["file"]' <<<"$output")" = d/storage-id ]
}

@test "a data directory without read permission exits 1 naming it (needs a non-root user)" {
  [ "$(id -u)" -ne 0 ] || skip "running as root: permissions do not stop root; the regular-file and storage-id-directory cases cover exit 1"
  make_data
  chmod 000 d
  run -1 --separate-stderr inspect d
  chmod 755 d
  assert_equal "$stderr" "felix-inspect: error: open directory d: Permission denied"
}

# every_subcommand — runs every subcommand, human and --json, on d and its
# files, and dump with each option; exit statuses are not the point here.
every_subcommand() {
  local s f
  for j in "" --json; do
    inspect $j d || true
    inspect $j storage-id d || true
    inspect $j run-state d || true
    inspect $j verify d || true
    for s in d/shards/*; do
      inspect $j segments "$s" || true
      inspect $j ballot "$s" || true
      inspect $j verify "$s" || true
      for f in "$s"/*.log; do
        inspect $j dump "$f" || true
        inspect $j dump "$f" --from 3 --limit 2 --payload hex || true
        inspect $j dump "$f" --payload none || true
      done
      for f in "$s"/*.index; do inspect $j index "$f" || true; done
    done
  done >/dev/null 2>&1
}

@test "read-only: every subcommand leaves a healthy directory byte-identical and creates no file" {
  make_data
  mkdata d payments 1 5 --run-state running --boot-id "$BOOT_ID" >/dev/null
  before=$(snapshot d)
  every_subcommand
  after=$(snapshot d)
  assert_equal "$after" "$before"
  [ ! -e d/lock ]
  [ ! -e "$FELIX_RUNTIME_DIR" ]
}

@test "read-only: damage is reported, never repaired (torn tail, bad index, missing index, ahead generations)" {
  make_data
  last=$(inspect --json segments "$SHARD" | jget 'j["segments"][-1]["base_offset"]')
  f=$(seg "$SHARD" "$last")
  truncate -s $(($(stat -c %s "$f") - 3)) "$f"
  printf 'garbage' >"$(seg "$SHARD" 0 .index)"
  rm "$(seg "$SHARD" "$last" .index)"
  printf '9 1000\n' >>"$SHARD/generations"
  : >"$SHARD/.ballot.tmp"
  before=$(snapshot d)
  every_subcommand
  after=$(snapshot d)
  assert_equal "$after" "$before"
  run -6 inspect --json verify d
  [ "$(jget 'sorted(p["kind"] for p in j["problems"])' <<<"$output")" = '["generations_ahead", "short_index_header", "torn_record"]' ]
}

@test "read-only: no lock file and no boot token appear, and an existing runtime directory is untouched" {
  make_data
  mkdata d payments 1 5 --run-state running --boot-id "$BOOT_ID" >/dev/null
  mkdir -p "$FELIX_RUNTIME_DIR"
  : >"$FELIX_RUNTIME_DIR/unrelated"
  rt_before=$(snapshot "$FELIX_RUNTIME_DIR")
  every_subcommand
  [ ! -e d/lock ]
  assert_equal "$(snapshot "$FELIX_RUNTIME_DIR")" "$rt_before"
  [ ! -e "$FELIX_RUNTIME_DIR/$(cat d/storage-id).$BOOT_ID.ok" ]
}

@test "read-only: a lock file held by a broker stays held and unchanged" {
  make_data
  echo 12345 >d/lock
  before=$(snapshot d)
  every_subcommand
  assert_equal "$(snapshot d)" "$before"
  run -0 flock -n d/lock true
}
