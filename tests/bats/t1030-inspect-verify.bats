#!/usr/bin/env bats
# t1030 — verify: every damage names its file and exact byte, says whether the
# next broker start repairs it, and makes the exit status 6.

load helpers

# A data directory d with one shard ($SHARD) of 1 marker + 50 records over
# several 512-byte segments; SEGS holds the segments' base offsets.
make_data() {
  SHARD=$(mkdata d orders 0 50 --segment-bytes 512 "$@")
  SEGS=($(inspect --json segments "$SHARD" | jget '" ".join(str(s["base_offset"]) for s in j["segments"])'))
  [ "${#SEGS[@]}" -ge 3 ]
}

# record_position SEGMENT N — file position of the N-th record (0-based) of SEGMENT.
record_position() { inspect --json dump "$1" | sed -n "$(($2 + 1))p" | jget 'j["position"]'; }
record_count() { inspect --json dump "$1" | wc -l; }

# problem KEYS... — from $output (verify --json), the problems as "file position kind repairable".
problems() { jget '"\n".join("%s %d %s %s" % (p["file"], p["position"], p["kind"], str(p["repairable"]).lower()) for p in j["problems"])' <<<"$output"; }

@test "verify of a healthy data directory exits 0 and counts shards, segments and records" {
  make_data
  run -0 inspect verify d
  assert_output "verify: ok: 1 shard(s), ${#SEGS[@]} segment(s), 51 record(s), every checksum good"
}

@test "verify --json of a healthy directory: ok true, no problems" {
  make_data
  mkdata d payments 2 5 >/dev/null
  run -0 inspect --json verify d
  assert_json
  [ "$(jget 'j["ok"]' <<<"$output")" = true ]
  [ "$(jget 'j["problems"]' <<<"$output")" = '[]' ]
  [ "$(jget 'j["kind"]' <<<"$output")" = data_dir ]
  [ "$(jget 'j["shard_count"]' <<<"$output")" = 2 ]
  [ "$(jget 'j["records"]' <<<"$output")" = 57 ]
}

@test "verify of one shard directory checks that shard (kind shard_dir)" {
  make_data
  run -0 inspect --json verify "$SHARD"
  [ "$(jget 'j["kind"]' <<<"$output")" = shard_dir ]
  [ "$(jget 'j["segment_count"]' <<<"$output")" = "${#SEGS[@]}" ]
  run -0 inspect verify "$SHARD"
  assert_output --partial "verify: ok: 1 shard(s)"
}

@test "verify: a flipped byte in the middle of a sealed segment names the file and the damaged record's position" {
  make_data
  f=$(seg "$SHARD" "${SEGS[1]}")
  n=$(record_count "$f")
  pos=$(record_position "$f" $((n / 2)))
  flip_byte "$f" $((pos + 24 + 2))
  run -6 inspect --json verify d
  assert_json
  [ "$(jget 'j["ok"]' <<<"$output")" = false ]
  [ "$(problems | head -n 1)" = "$f $pos bad_checksum false" ]
  run -6 inspect verify d
  assert_line --index 0 --regexp "^$f: byte $pos: bad_checksum \(NOT repairable\): record checksum mismatch"
  assert_line --regexp "^verify: [0-9]+ problem\(s\) found in d$"
}

@test "verify: a flipped byte in a sealed segment is reported once, without a phantom offset gap after it" {
  # The damaged record stops the scan of that segment; the segment after it
  # still starts where the files say. Reporting "offset_gap ... the previous
  # segment ends at <damaged offset>" invents a gap that is not there.
  make_data
  f=$(seg "$SHARD" "${SEGS[1]}")
  pos=$(record_position "$f" 3)
  flip_byte "$f" $((pos + 24 + 2))
  run -6 inspect --json verify d
  assert_equal "$(problems)" "$f $pos bad_checksum false"
}

@test "verify: a flipped byte in the newest segment with intact records after it is not repairable" {
  make_data
  f=$(seg "$SHARD" "${SEGS[-1]}")
  pos=$(record_position "$f" 1)
  flip_byte "$f" $((pos + 25))
  run -6 inspect --json verify d
  assert_equal "$(problems)" "$f $pos bad_checksum false"
}

@test "verify: a bad checksum in the newest segment's last record is a repairable torn tail" {
  make_data
  f=$(seg "$SHARD" "${SEGS[-1]}")
  pos=$(record_position "$f" $(($(record_count "$f") - 1)))
  flip_byte "$f" $(($(stat -c %s "$f") - 1))
  run -6 inspect --json verify d
  assert_equal "$(problems)" "$f $pos bad_checksum true"
}

@test "verify: the newest segment truncated inside a record header is a repairable torn tail at that record" {
  make_data
  f=$(seg "$SHARD" "${SEGS[-1]}")
  pos=$(record_position "$f" $(($(record_count "$f") - 1)))
  truncate -s $((pos + 10)) "$f"
  run -6 inspect --json verify d
  assert_equal "$(problems)" "$f $pos torn_record true"
  run -6 inspect verify d
  assert_line --index 0 "$f: byte $pos: torn_record (repaired at next start): record header cut short: 10 of 24 bytes (torn tail: cut at next start)"
}

@test "verify: the newest segment truncated inside a payload is a repairable torn tail at that record" {
  make_data
  f=$(seg "$SHARD" "${SEGS[-1]}")
  pos=$(record_position "$f" $(($(record_count "$f") - 1)))
  truncate -s $((pos + 24 + 3)) "$f"
  run -6 inspect --json verify d
  assert_equal "$(problems)" "$f $pos torn_record true"
}

@test "verify: a torn tail followed by zero bytes (a file extended by the power cut) is repairable" {
  make_data
  f=$(seg "$SHARD" "${SEGS[-1]}")
  pos=$(record_position "$f" $(($(record_count "$f") - 1)))
  truncate -s $((pos + 24 + 3)) "$f"
  truncate -s $((pos + 200)) "$f"
  run -6 inspect --json verify d
  assert_equal "$(problems)" "$f $pos bad_checksum true"
}

@test "verify: a sealed segment cut short is not repairable" {
  make_data
  f=$(seg "$SHARD" "${SEGS[0]}")
  pos=$(record_position "$f" 2)
  truncate -s $((pos + 10)) "$f"
  run -6 inspect --json verify d
  [ "$(problems | head -n 1)" = "$f $pos torn_record false" ]
}

@test "verify: a bad header magic is reported at byte 0 of that segment, not repairable" {
  make_data
  f=$(seg "$SHARD" "${SEGS[-1]}")
  overwrite "$f" 0 XLSG
  run -6 inspect --json verify d
  assert_equal "$(problems)" "$f 0 bad_magic false"
  run -6 inspect verify d
  assert_line --index 0 "$f: byte 0: bad_magic (NOT repairable): segment header rejected (bad_magic)"
}

@test "verify: a damaged header field is caught by the header CRC at byte 0" {
  make_data
  f=$(seg "$SHARD" "${SEGS[-1]}")
  flip_byte "$f" 20
  run -6 inspect --json verify d
  assert_equal "$(problems)" "$f 0 bad_header_crc false"
}

@test "verify: an unknown segment version with a valid header CRC is rejected, never masked" {
  make_data
  f=$(seg "$SHARD" "${SEGS[-1]}")
  python3 -c '
import struct, sys, zlib
p = sys.argv[1]
with open(p, "r+b") as fh:
    h = bytearray(fh.read(32))
    h[4:6] = struct.pack(">H", 2)
    h[24:28] = struct.pack(">I", zlib.crc32(bytes(h[:24])))
    fh.seek(0); fh.write(h)' "$f"
  run -6 inspect --json verify d
  assert_equal "$(problems)" "$f 0 unknown_version false"
}

@test "verify: a garbage index is repairable and names the index file at byte 0" {
  make_data
  idx=$(seg "$SHARD" "${SEGS[1]}" .index)
  printf 'this is not an index file at all' >"$idx"
  run -6 inspect --json verify d
  assert_equal "$(problems)" "$idx 0 bad_index_magic true"
  run -6 inspect verify d
  assert_line --index 0 "$idx: byte 0: bad_index_magic (repaired at next start): index rejected (bad_index_magic); rebuilt at next start"
}

@test "verify: an index entry that points between records is repairable and names the entry's byte" {
  make_data --index-spacing 100
  idx=$(seg "$SHARD" "${SEGS[0]}" .index)
  [ "$(stat -c %s "$idx")" -ge 56 ]
  # Entry 1 starts at byte 24 + 16; its position field is its last 8 bytes.
  pos=$(python3 -c '
import struct, sys
with open(sys.argv[1], "r+b") as fh:
    fh.seek(48); p = struct.unpack(">Q", fh.read(8))[0]
    fh.seek(48); fh.write(struct.pack(">Q", p + 1))' "$idx")
  run -6 inspect --json verify d
  assert_equal "$(problems)" "$idx 40 index_entry_wrong true"
}

@test "verify: a missing index is repairable" {
  make_data
  idx=$(seg "$SHARD" "${SEGS[1]}" .index)
  rm "$idx"
  run -6 inspect --json verify d
  assert_equal "$(problems)" "$idx 0 missing_index true"
}

@test "verify: an offset gap (a middle segment deleted) names the segment after the gap, not repairable" {
  make_data
  rm "$(seg "$SHARD" "${SEGS[1]}")" "$(seg "$SHARD" "${SEGS[1]}" .index)"
  run -6 inspect --json verify d
  assert_equal "$(problems)" "$(seg "$SHARD" "${SEGS[2]}") 8 offset_gap false"
  run -6 inspect verify d
  assert_line --index 0 "$(seg "$SHARD" "${SEGS[2]}"): byte 8: offset_gap (NOT repairable): starts at offset ${SEGS[2]} but the previous segment ends at ${SEGS[1]}"
}

@test "verify: a malformed ballot names the file and the byte of the bad line" {
  make_data
  at=$(grep -bo '^generation=' "$SHARD/ballot" | cut -d: -f1)
  sed -i 's/^generation=1$/generation=one/' "$SHARD/ballot"
  run -6 inspect --json verify d
  assert_equal "$(problems)" "$SHARD/ballot $at bad_ballot false"
  run -6 inspect verify d
  assert_line --index 0 "$SHARD/ballot: byte $at: bad_ballot (NOT repairable): $SHARD/ballot: byte $at: generation=one is not a decimal number"
}

@test "verify: a malformed stream file names the file and the byte; summary shows a good one" {
  make_data
  printf 'name=orders\nuuid=0b9c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3\nshards=4\nreplicas=3\nacks=quorum\n' >"$SHARD/stream"
  run -0 inspect --json d
  [ "$(echo "$output" | jget 'j["shards"][0]["stream_file"]["replication_factor"]')" = 3 ]
  run -0 inspect d
  assert_output --partial "stream file: orders (uuid 0b9c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3), 4 shard(s), R=3, acks quorum"
  sed -i 's/^replicas=3$/replicas=9/' "$SHARD/stream"
  run -6 inspect --json verify d
  assert_equal "$(problems)" "$SHARD/stream 63 bad_stream false"
  run -6 inspect verify d
  assert_line --index 0 "$SHARD/stream: byte 63: bad_stream (NOT repairable): $SHARD/stream: byte 63: replicas is 9, must be 1 to 7"
}

@test "verify: a ballot cut short (no final newline) names the file and byte" {
  make_data
  size=$(stat -c %s "$SHARD/ballot")
  truncate -s $((size - 1)) "$SHARD/ballot"
  last=$(($(tail -n 1 "$SHARD/ballot" | cut -d= -f1 | xargs -I{} grep -bo '^{}=' "$SHARD/ballot" | cut -d: -f1))) # the last line's byte
  run -6 inspect --json verify d
  assert_equal "$(problems)" "$SHARD/ballot $last bad_ballot false"
}

@test "verify: a malformed generations line names the file and byte" {
  make_data
  printf '2 x\n' >>"$SHARD/generations"
  # "1 0\n" is 4 bytes; the 'x' is at byte 4 + 2.
  run -6 inspect --json verify d
  assert_equal "$(problems)" "$SHARD/generations 6 bad_generations false"
}

@test "verify: generations that go backwards name the file and the line's byte" {
  make_data
  printf '0 5\n' >>"$SHARD/generations"
  run -6 inspect --json verify d
  assert_equal "$(problems)" "$SHARD/generations 4 bad_generations false"
}

@test "verify: a generations line at or past the log end is repairable (dropped at next start)" {
  make_data
  printf '7 51\n' >>"$SHARD/generations"
  run -6 inspect --json verify d
  assert_equal "$(problems)" "$SHARD/generations 0 generations_ahead true"
}

@test "verify: a malformed run-state names the file and byte" {
  make_data
  sed -i 's/^pid=.*/pid=-1/' d/run-state
  at=$(grep -bo '^pid=' d/run-state | cut -d: -f1)
  run -6 inspect --json verify d
  assert_equal "$(problems)" "d/run-state $at bad_run_state false"
}

@test "verify: a malformed storage-id names the file and byte" {
  make_data
  overwrite d/storage-id 7 G
  run -6 inspect --json verify d
  assert_equal "$(problems)" "d/storage-id 7 bad_storage_id false"
  run -6 inspect verify d
  assert_line --index 0 "d/storage-id: byte 7: bad_storage_id (NOT repairable): d/storage-id: byte 7: expected a lowercase hex character"
}

@test "verify: shards without a storage-id file is a problem" {
  make_data
  rm d/storage-id
  run -6 inspect --json verify d
  assert_equal "$(problems)" "d/storage-id 0 missing_storage_id false"
}

@test "verify lists the problems of every shard, not only the first" {
  make_data
  other=$(mkdata d payments 1 5)
  rm "$(seg "$SHARD" 0 .index)"
  sed -i 's/^generation=1$/generation=/' "$other/ballot"
  run -6 inspect --json verify d
  [ "$(jget 'len(j["problems"])' <<<"$output")" = 2 ]
  [ "$(jget 'sorted(p["kind"] for p in j["problems"])' <<<"$output")" = '["bad_ballot", "missing_index"]' ]
  [ "$(jget 'sorted(j["problems"][0])' <<<"$output")" = '["detail", "file", "kind", "position", "repairable"]' ]
}

@test "verify of a missing directory exits 3" {
  run -3 --separate-stderr inspect verify nosuch
  assert_equal "$stderr" "felix-inspect: error: open directory nosuch: No such file or directory"
}
