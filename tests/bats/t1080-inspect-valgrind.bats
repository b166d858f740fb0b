#!/usr/bin/env bats
# felix-inspect leaks nothing and touches no invalid memory, on a healthy
# directory and on a damaged one (valgrind memcheck, every subcommand).

setup() {
  BUILD=${FELIX_BUILD:-$BATS_TEST_DIRNAME/../../build}
  D=$BATS_TEST_TMPDIR/data
  SHARD=$("$BUILD/tools/felix-mkdata" "$D" orders 0 40 --segment-bytes 1024 --leader b1)
  SEG=$SHARD/00000000000000000000.log
}

vg() {
  valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect,possible \
    --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99 "$BUILD/felix-inspect" "$@"
}

check_all() {
  for args in "$D" "--json $D" "storage-id $D" "run-state $D" "--json run-state $D" "segments $SHARD" \
      "--json segments $SHARD" "dump $SEG --payload hex" "--json dump $SEG --from 3 --limit 4" \
      "index ${SEG%.log}.index" "verify $D" "--json verify $SHARD" "ballot $SHARD" "--json ballot $SHARD"; do
    # shellcheck disable=SC2086
    run "$BUILD/felix-inspect" $args
    local want=$status
    # shellcheck disable=SC2086
    run vg $args
    # The exit under valgrind must be felix-inspect's own: 99 is valgrind's
    # report, 127 no valgrind, 139 a crash (once, anything but 99 passed).
    if [ "$status" -ne "$want" ]; then
      echo "felix-inspect $args: exit $status under valgrind, $want without (99: errors found; 127: valgrind missing)"
      echo "$output"
      return 1
    fi
  done
}

@test "every felix-inspect subcommand is clean under valgrind on a healthy directory" {
  check_all
}

@test "every felix-inspect subcommand is clean under valgrind on a damaged directory" {
  printf 'XXXX' | dd of="$SEG" bs=1 seek=100 conv=notrunc status=none
  printf 'garbage' > "${SEG%.log}.index"
  printf 'copy_id=zz\n' > "$SHARD/ballot"
  check_all
  run "$BUILD/felix-inspect" verify "$D"
  [ "$status" -eq 6 ]
}
