#!/usr/bin/env bats
# t1020 — segments, dump and index: the files of one shard copy.

load helpers

# A shard of 1 marker + 50 records ("record-0".."record-49") over several
# 512-byte segments.
make_shard() { SHARD=$(mkdata d orders 0 50 --segment-bytes 512 "$@"); }

@test "segments lists every segment with base, next, records, bytes and index state" {
  make_shard
  run -0 inspect segments "$SHARD"
  assert_line --index 0 --regexp '^FILE +BASE +NEXT +RECORDS +BYTES +CREATED +INDEX$'
  nsegs=$(ls "$SHARD"/*.log | wc -l)
  [ "$nsegs" -ge 3 ]
  [ "${#lines[@]}" -eq $((nsegs + 1)) ]
  prev_next=0 total=0
  for i in $(seq 1 "$nsegs"); do
    read -r file base next records bytes created index <<<"${lines[$i]}"
    [ "$file" = "$(basename "$(seg "$SHARD" "$base")")" ]
    [ "$base" -eq "$prev_next" ]
    [ "$records" -eq $((next - base)) ]
    [ "$bytes" -eq "$(stat -c %s "$SHARD/$file")" ]
    [[ "$created" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$ ]]
    [ "$index" = ok ]
    prev_next=$next total=$((total + records))
  done
  [ "$prev_next" -eq 51 ]
  [ "$total" -eq 51 ]
}

@test "segments --json has one object per segment and an empty problem list" {
  make_shard
  run -0 inspect --json segments "$SHARD"
  assert_json
  [ "$(jget 'len(j["segments"])' <<<"$output")" -eq "$(ls "$SHARD"/*.log | wc -l)" ]
  [ "$(jget 'sorted(j["segments"][0])' <<<"$output")" = '["base_offset", "bytes", "created_at", "file", "index", "next_offset", "records"]' ]
  [ "$(jget 'j["segments"][0]["file"]' <<<"$output")" = 00000000000000000000.log ]
  [ "$(jget 'j["segments"][0]["base_offset"]' <<<"$output")" = 0 ]
  [ "$(jget 'all(a["next_offset"] == b["base_offset"] for a, b in zip(j["segments"], j["segments"][1:]))' <<<"$output")" = true ]
  [ "$(jget 'j["segments"][-1]["next_offset"]' <<<"$output")" = 51 ]
  [ "$(jget 'sum(s["records"] for s in j["segments"])' <<<"$output")" = 51 ]
  [ "$(jget 'sorted(set(s["index"] for s in j["segments"]))' <<<"$output")" = '["ok"]' ]
  [ "$(jget 'j["problems"]' <<<"$output")" = '[]' ]
}

@test "segments of a shard directory without segment files says (no segments)" {
  SHARD=$(mkdata d orders 0 0 --no-marker --generation 0)
  rm "$SHARD"/*.log "$SHARD"/*.index
  run -0 inspect segments "$SHARD"
  assert_line "(no segments)"
}

@test "segments shows a missing index as missing and exits 6 naming the index file" {
  make_shard
  rm "$(seg "$SHARD" 0 .index)"
  run -6 --separate-stderr inspect segments "$SHARD"
  assert_line --regexp '^00000000000000000000\.log .* missing$'
  assert_equal "$stderr" "felix-inspect: problem: $(seg "$SHARD" 0 .index): byte 0: missing_index: index file missing; rebuilt at next start"
}

@test "dump labels the generation-start marker and prints offset, position, time, len and payload" {
  make_shard
  run -0 inspect dump "$(seg "$SHARD" 0)"
  assert_line --index 0 --regexp '^offset=0 position=32 time=[0-9-]+T[0-9:]+Z len=0 \(generation-start marker\)$'
  assert_line --index 1 --regexp '^offset=1 position=56 time=[0-9-]+T[0-9:]+Z len=8 payload=record-0$'
  assert_line --index 2 --regexp '^offset=2 position=88 time=[0-9-]+T[0-9:]+Z len=8 payload=record-1$'
  [ "$(grep -c 'generation-start marker' <<<"$output")" -eq 1 ]
}

@test "dump without a marker record labels nothing" {
  SHARD=$(mkdata d orders 0 5 --no-marker)
  run -0 inspect dump "$(seg "$SHARD" 0)"
  [ "${#lines[@]}" -eq 5 ]
  assert_line --index 0 --regexp '^offset=0 position=32 .* len=8 payload=record-0$'
  refute_output --partial "generation-start"
}

@test "dump of a later segment starts at its base offset" {
  make_shard
  base=$(inspect --json segments "$SHARD" | jget 'j["segments"][1]["base_offset"]')
  run -0 inspect dump "$(seg "$SHARD" "$base")"
  assert_line --index 0 --regexp "^offset=$base position=32 .* payload=record-$((base - 1))\$"
}

@test "dump --from starts at that offset" {
  make_shard
  run -0 inspect dump "$(seg "$SHARD" 0)" --from 5
  assert_line --index 0 --regexp '^offset=5 .* payload=record-4$'
  refute_line --regexp '^offset=[0-4] '
}

@test "dump --from past the segment's last offset prints nothing and exits 0" {
  make_shard
  run -0 inspect dump "$(seg "$SHARD" 0)" --from 1000
  assert_output ""
}

@test "dump --limit prints at most N records; --limit 0 prints none" {
  make_shard
  run -0 inspect dump "$(seg "$SHARD" 0)" --limit 2
  [ "${#lines[@]}" -eq 2 ]
  assert_line --index 1 --regexp '^offset=1 '
  run -0 inspect dump "$(seg "$SHARD" 0)" --limit 0
  assert_output ""
}

@test "dump --from with --limit prints that window" {
  make_shard
  run -0 inspect dump "$(seg "$SHARD" 0)" --from 3 --limit 2
  [ "${#lines[@]}" -eq 2 ]
  assert_line --index 0 --regexp '^offset=3 .*payload=record-2$'
  assert_line --index 1 --regexp '^offset=4 .*payload=record-3$'
}

@test "dump --payload hex prints the payload bytes in lowercase hex" {
  make_shard
  run -0 inspect dump "$(seg "$SHARD" 0)" --from 1 --limit 1 --payload hex
  assert_output --regexp '^offset=1 position=56 .* len=8 payload=7265636f72642d30$'
}

@test "dump --payload none prints no payload; --payload text is the default" {
  make_shard
  run -0 inspect dump "$(seg "$SHARD" 0)" --from 1 --limit 1 --payload none
  assert_output --regexp '^offset=1 position=56 time=[0-9-]+T[0-9:]+Z len=8$'
  run -0 inspect dump "$(seg "$SHARD" 0)" --from 1 --limit 1 --payload text
  text=$output
  run -0 inspect dump "$(seg "$SHARD" 0)" --from 1 --limit 1
  assert_output "$text"
  assert_output --partial "payload=record-0"
}

@test "dump --json prints one object per record with the fixed fields" {
  make_shard
  run -0 inspect --json dump "$(seg "$SHARD" 0)"
  nrec=$(inspect --json segments "$SHARD" | jget 'j["segments"][0]["records"]')
  [ "${#lines[@]}" -eq "$nrec" ]
  [ "$(jlines 'sorted(j)' <<<"${lines[1]}")" = '["offset", "payload_b64", "payload_len", "position", "timestamp"]' ]
  [ "$(jlines 'j["offset"]' <<<"$output" | tr '\n' ' ')" = "$(seq 0 $((nrec - 1)) | tr '\n' ' ')" ]
  [ "$(jlines 'j["timestamp"] > "2020-09-13T12:26:40.000000Z" and len(j["timestamp"]) == 27 and j["timestamp"][19] == "."' <<<"$output" | sort -u)" = true ]
}

@test "dump --json marks the marker record with generation_start and an empty payload" {
  make_shard
  run -0 inspect --json dump "$(seg "$SHARD" 0)" --limit 1
  [ "$(jget 'j["generation_start"]' <<<"$output")" = true ]
  [ "$(jget 'j["payload_len"]' <<<"$output")" = 0 ]
  [ "$(jget 'j["payload_b64"]' <<<"$output")" = "" ]
  [ "$(jget 'j["position"]' <<<"$output")" = 32 ]
}

@test "dump --json payload_b64 decodes back to each record's payload" {
  make_shard
  run -0 inspect --json dump "$(seg "$SHARD" 0)" --from 1
  decoded=$(jlines '__import__("base64").b64decode(j["payload_b64"]).decode() + " " + str(j["payload_len"])' <<<"$output")
  expected=$(for o in $(jlines 'j["offset"]' <<<"$output"); do echo "record-$((o - 1)) ${#o}"; done |
    awk '{ print $1, length($1) }')
  assert_equal "$decoded" "$expected"
}

@test "dump --json payload_b64 round-trips payloads of every length modulo 3" {
  SHARD=$(mkdata d orders 0 3 --payload-size 1000 --no-marker --segment-bytes 1000000)
  run -0 inspect --json dump "$(seg "$SHARD" 0)"
  [ "${#lines[@]}" -eq 3 ]
  for i in 0 1 2; do
    want=$(python3 -c "print(''.join(chr(97 + ($i + k) % 26) for k in range(1000)))")
    [ "$(jlines '__import__("base64").b64decode(j["payload_b64"]).decode()' <<<"${lines[$i]}")" = "$want" ]
  done
  for size in 1 2 3 4; do
    rm -rf e
    S=$(mkdata e orders 0 1 --payload-size "$size" --no-marker)
    [ "$(inspect --json dump "$(seg "$S" 0)" | jget '__import__("base64").b64decode(j["payload_b64"]).decode()')" = \
      "$(python3 -c "print('abcd'[:$size])")" ]
  done
}

@test "dump --json positions follow the record layout: 32-byte header, 24-byte record header + payload" {
  make_shard
  run -0 inspect --json dump "$(seg "$SHARD" 0)"
  [ "$(jlines 'j["position"]' <<<"${lines[0]}")" = 32 ]
  [ "$(jlines '"%d %d" % (j["position"], j["payload_len"])' <<<"$output" |
    awk 'NR > 1 && $1 != next_pos { bad = 1 } { next_pos = $1 + 24 + $2 } END { print bad ? "gap" : next_pos }')" = \
    "$(stat -c %s "$(seg "$SHARD" 0)")" ]
}

@test "dump of a missing segment file exits 3 naming it" {
  run -3 --separate-stderr inspect dump nosuch.log
  assert_equal "$stderr" "felix-inspect: error: open nosuch.log: No such file or directory"
}

@test "dump of a damaged segment prints the good records, then exits 6 naming file and byte" {
  make_shard
  f=$(seg "$SHARD" 0)
  pos=$(inspect --json dump "$f" --from 4 --limit 1 | jget 'j["position"]')
  flip_byte "$f" $((pos + 24))
  run -6 --separate-stderr inspect dump "$f"
  [ "${#lines[@]}" -eq 4 ]
  assert_equal "${stderr_lines[0]}" "felix-inspect: error: $f: byte $pos: bad_checksum: record checksum mismatch (offset field 4)"
  assert_equal "${stderr_lines[1]}" "felix-inspect: hint: run felix-inspect verify on the shard"
}

@test "dump of a torn tail in the newest segment exits 6 with the torn-tail hint" {
  make_shard
  last=$(inspect --json segments "$SHARD" | jget 'j["segments"][-1]["base_offset"]')
  f=$(seg "$SHARD" "$last")
  pos=$(inspect --json dump "$f" | tail -n 1 | jget 'j["position"]')
  truncate -s $((pos + 10)) "$f"
  run -6 --separate-stderr inspect dump "$f"
  assert_equal "${stderr_lines[0]}" "felix-inspect: error: $f: byte $pos: torn_record: record header cut short: 10 of 24 bytes"
  assert_equal "${stderr_lines[1]}" "felix-inspect: hint: a torn tail: the next broker start cuts it"
}

@test "index prints base offset, entry count and each entry's offset and position" {
  make_shard
  run -0 inspect index "$(seg "$SHARD" 0 .index)"
  n=$((($(stat -c %s "$(seg "$SHARD" 0 .index)") - 24) / 16))
  assert_line --index 0 "index $(seg "$SHARD" 0 .index): base offset 0, $n entries"
  assert_line --index 1 --regexp '^ +OFFSET +POSITION$'
  assert_line --index 2 --regexp '^ +0 +32$'
  [ "${#lines[@]}" -eq $((n + 2)) ]
}

@test "index entries point at the records dump shows at those offsets" {
  make_shard --index-spacing 100
  base=$(inspect --json segments "$SHARD" | jget 'j["segments"][1]["base_offset"]')
  run -0 inspect --json index "$(seg "$SHARD" "$base" .index)"
  assert_json
  [ "$(jget 'j["base_offset"]' <<<"$output")" = "$base" ]
  [ "$(jget 'len(j["entries"]) >= 2' <<<"$output")" = true ]
  [ "$(jget 'j["entries"][0]' <<<"$output")" = "{\"offset\": $base, \"position\": 32}" ]
  entries=$(jget '"\n".join("%d %d" % (e["offset"], e["position"]) for e in j["entries"])' <<<"$output")
  dumped=$(inspect --json dump "$(seg "$SHARD" "$base")" | jlines '"%d %d" % (j["offset"], j["position"])')
  while read -r off pos; do
    grep -qx "$off $pos" <<<"$dumped" || fail "index entry $off@$pos is not a record start: $dumped"
  done <<<"$entries"
}

@test "index of a damaged index file exits 6 naming the file and byte, with a rebuild hint" {
  make_shard
  f=$(seg "$SHARD" 0 .index)
  overwrite "$f" 0 XXXX
  run -6 --separate-stderr inspect index "$f"
  assert_equal "$output" ""
  assert_equal "${stderr_lines[0]}" "felix-inspect: error: $f: byte 0: bad_index_magic"
  assert_equal "${stderr_lines[1]}" "felix-inspect: hint: index files are derived: the next broker start rebuilds it"
}

@test "index with a torn entry exits 6 naming the byte where the partial entry starts" {
  make_shard
  f=$(seg "$SHARD" 0 .index)
  size=$(stat -c %s "$f")
  printf 'abc' >>"$f"
  run -6 --separate-stderr inspect index "$f"
  assert_equal "${stderr_lines[0]}" "felix-inspect: error: $f: byte $size: torn_index_entry"
}

@test "index of a missing file exits 3" {
  run -3 --separate-stderr inspect index nosuch.index
  assert_equal "$stderr" "felix-inspect: error: open nosuch.index: No such file or directory"
}
