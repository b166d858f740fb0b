#!/usr/bin/env bats
# t1040 — ballot: a shard copy's ballot and generation history.

load helpers

@test "ballot prints copy id, storage id, stream uuid, 'no leader' and the generations" {
  SHARD=$(mkdata d orders 0 5)
  copy=$(sed -n 's/^copy_id=//p' "$SHARD/ballot")
  uuid=$(sed -n 's/^stream_uuid=//p' "$SHARD/ballot")
  run -0 inspect ballot "$SHARD"
  assert_line --index 0 "    copy id $copy (made under storage id $(cat d/storage-id)), stream uuid $uuid"
  assert_line --index 1 "    ballot: generation 1, no leader"
  assert_line --index 2 "    generations: 1@0"
  [ "${#lines[@]}" -eq 3 ]
}

@test "ballot with a leader prints the leader, its copy id and incarnation" {
  SHARD=$(mkdata d orders 0 5 --generation 5 --leader broker-7)
  copy=$(sed -n 's/^copy_id=//p' "$SHARD/ballot")
  run -0 inspect ballot "$SHARD"
  assert_line --index 1 "    ballot: generation 5, leader broker-7 (copy $copy, incarnation 00000000000000000000000000000001.1)"
  assert_line --index 2 "    generations: 5@0"
}

@test "ballot --json has the ballot keys, null leader fields when there is none, and the generations" {
  SHARD=$(mkdata d orders 0 5)
  run -0 inspect --json ballot "$SHARD"
  assert_json
  [ "$(jget 'sorted(j)' <<<"$output")" = '["copy_id", "generation", "generations", "leader", "leader_copy_id", "leader_incarnation", "shard", "storage_id", "stream_uuid"]' ]
  [ "$(jget 'j["shard"]' <<<"$output")" = 0 ]
  [ "$(jget 'j["copy_id"]' <<<"$output")" = "$(sed -n 's/^copy_id=//p' "$SHARD/ballot")" ]
  [ "$(jget 'j["storage_id"]' <<<"$output")" = "$(cat d/storage-id)" ]
  [ "$(jget 'j["generation"]' <<<"$output")" = 1 ]
  [ "$(jget '[j["leader"], j["leader_copy_id"], j["leader_incarnation"]]' <<<"$output")" = '[null, null, null]' ]
  [ "$(jget 'j["generations"]' <<<"$output")" = '[{"generation": 1, "start_offset": 0}]' ]
}

@test "ballot --json with a leader carries leader, leader_copy_id and leader_incarnation" {
  SHARD=$(mkdata d orders 0 5 --generation 3 --leader broker-2)
  run -0 inspect --json ballot "$SHARD"
  [ "$(jget 'j["leader"]' <<<"$output")" = broker-2 ]
  [ "$(jget 'j["leader_copy_id"] == j["copy_id"]' <<<"$output")" = true ]
  [ "$(jget 'j["leader_incarnation"]' <<<"$output")" = 00000000000000000000000000000001.1 ]
  [ "$(jget 'j["generation"]' <<<"$output")" = 3 ]
}

@test "ballot shows the stream uuid the shard directory is named after" {
  uuid=0123abcd-4567-4def-8901-23456789abcd
  SHARD=$(mkdata d orders 4 1 --uuid "$uuid")
  [ "$(basename "$SHARD")" = orders_4-0123abcd45674def ]
  run -0 inspect --json ballot "$SHARD"
  [ "$(jget 'j["stream_uuid"]' <<<"$output")" = "$uuid" ]
}

@test "ballot lists a generation history of several lines in order" {
  SHARD=$(mkdata d orders 0 10)
  printf '4 6\n9 11\n' >>"$SHARD/generations"
  run -0 inspect ballot "$SHARD"
  assert_line --index 2 "    generations: 1@0 4@6 9@11"
  run -0 inspect --json ballot "$SHARD"
  [ "$(jget '[(g["generation"], g["start_offset"]) for g in j["generations"]]' <<<"$output")" = '[[1, 0], [4, 6], [9, 11]]' ]
}

@test "ballot of a shard without a generations file says (no file)" {
  SHARD=$(mkdata d orders 0 1)
  rm "$SHARD/generations"
  run -0 inspect ballot "$SHARD"
  assert_line --index 2 "    generations: (no file)"
  run -0 inspect --json ballot "$SHARD"
  [ "$(jget 'j["generations"]' <<<"$output")" = '[]' ]
}

@test "ballot of a shard without a ballot file exits 3 with a hint" {
  SHARD=$(mkdata d orders 0 1)
  rm "$SHARD/ballot"
  run -3 --separate-stderr inspect ballot "$SHARD"
  assert_equal "$output" ""
  assert_equal "${stderr_lines[0]}" "felix-inspect: error: $SHARD has no ballot file"
  assert_equal "${stderr_lines[1]}" "felix-inspect: hint: a copy gets its ballot when its broker first takes the shard"
}

@test "ballot that is malformed exits 6 naming the file and byte" {
  SHARD=$(mkdata d orders 0 1)
  at=$(grep -bo '^leader=' "$SHARD/ballot" | cut -d: -f1)
  sed -i 's/^leader=none$/leader=broker-1/' "$SHARD/ballot"
  run -6 --separate-stderr inspect ballot "$SHARD"
  assert_equal "$output" ""
  assert_equal "$stderr" "felix-inspect: error: $SHARD/ballot: byte $at: leader, leader_copy_id and leader_incarnation must all be 'none' or all be set"
}

@test "ballot with a bad copy id exits 6 naming the copy_id line" {
  SHARD=$(mkdata d orders 0 1)
  sed -i 's/^copy_id=.*/copy_id=XYZ/' "$SHARD/ballot"
  run -6 --separate-stderr inspect ballot "$SHARD"
  assert_equal "$stderr" "felix-inspect: error: $SHARD/ballot: byte 0: copy_id must be 32 lowercase hex characters"
}

@test "ballot with a repeated key exits 6 naming the repeated line" {
  SHARD=$(mkdata d orders 0 1)
  at=$(stat -c %s "$SHARD/ballot")
  line=$(($(wc -l <"$SHARD/ballot") + 1))
  echo "generation=2" >>"$SHARD/ballot"
  run -6 --separate-stderr inspect ballot "$SHARD"
  assert_equal "$stderr" "felix-inspect: error: $SHARD/ballot: line $line (byte $at): key 'generation' repeated"
}

@test "ballot with malformed generations exits 6 naming the generations file and byte" {
  SHARD=$(mkdata d orders 0 1)
  printf '2 -3\n' >>"$SHARD/generations"
  run -6 --separate-stderr inspect ballot "$SHARD"
  assert_equal "$output" ""
  assert_equal "$stderr" "felix-inspect: error: $SHARD/generations: byte 6: expected two decimal numbers"
}

@test "ballot of a missing shard directory exits 3" {
  run -3 --separate-stderr inspect ballot d/shards/nosuch
  assert_equal "$stderr" "felix-inspect: error: open directory d/shards/nosuch: No such file or directory"
}
