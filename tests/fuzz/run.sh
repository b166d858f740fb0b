#!/bin/sh
# tests/fuzz/run.sh SECONDS — builds the libFuzzer targets of tests/fuzz/ with
# clang against the library SOURCES (so the whole library is instrumented,
# not the gcc-built archive), seeds a corpus for each, runs each for SECONDS
# and prints "fuzz: N passed, N failed" (one count per target).
# Run from the repository root: `make fuzz-smoke` (5 s), `make fuzz` (60 s).
# Without clang it fails: `make deps` installs clang, and a suite that cannot
# run must not look like one that passed.
set -u

secs=${1:-60}
case $secs in '' | *[!0-9]*) echo "usage: sh tests/fuzz/run.sh SECONDS" >&2; exit 2 ;; esac
if [ ! -f lib/include/felix/segment.h ]; then
  echo "fuzz: run from the repository root" >&2
  exit 2
fi
if ! command -v clang >/dev/null 2>&1; then
  echo "fuzz: error: clang not found (make deps installs it)"
  echo "fuzz: 0 passed, 1 failed"
  exit 1
fi

out=build/fuzz
targets="fuzz_segment fuzz_smallfiles fuzz_wire fuzz_manifest"
base="-g -O1 -std=gnu11 -Wall -Wextra -Ilib/include -Ilib -D_GNU_SOURCE"
# -fno-sanitize-recover: undefined behaviour must stop the run, not scroll by.
san="-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all"
lib_src=$(find lib -name "*.c" | sort) # every folder of the library (lib/*/README.md)
libs="-lcjson -lz -lpthread" # the library parses restore-point manifests with cJSON
mkdir -p "$out"

build_target() { # name
  clang $base $san "tests/fuzz/$1.c" $lib_src $libs -o "$out/$1" >"$out/$1.build.log" 2>&1
}

# Segments need valid CRCs, so the segment seeds come from the target's own
# source built as a plain program that uses the library's encoders.
seed_segment() { # dir
  clang $base -DFELIX_FUZZ_SEEDS tests/fuzz/fuzz_segment.c $lib_src $libs -o "$out/seed_segment" \
    >"$out/seed_segment.build.log" 2>&1 && "$out/seed_segment" "$1"
}

seed_smallfiles() { # dir
  d=$1
  printf '0123456789abcdef0123456789abcdef\n' >"$d/storage-id"
  printf 'state=running\nfsync_mode=periodic\nboot_id=5f3c2a1e-0d7b-4c8e-9a61-2b3c4d5e6f70\nboot_id_source=kernel\npid=4242\nsince=2024-05-01T12:00:00Z\n' >"$d/run-state-running"
  printf 'state=stopped\nfsync_mode=on_commit\npid=1\nsince=2024-05-01T12:00:00Z\n' >"$d/run-state-stopped"
  printf 'copy_id=00112233445566778899aabbccddeeff\nstorage_id=0123456789abcdef0123456789abcdef\nstream_uuid=7d444840-9dc0-11d1-b245-5ffdce74fad2\ngeneration=3\nleader=broker-1\nleader_copy_id=ffeeddccbbaa99887766554433221100\nleader_incarnation=inc-7\n' >"$d/ballot-leader"
  printf 'copy_id=00112233445566778899aabbccddeeff\nstorage_id=0123456789abcdef0123456789abcdef\nstream_uuid=7d444840-9dc0-11d1-b245-5ffdce74fad2\ngeneration=0\nleader=none\nleader_copy_id=none\nleader_incarnation=none\n' >"$d/ballot-none"
  printf '1 0\n2 17\n5 17\n9 1000000\n' >"$d/generations"
  printf '' >"$d/empty"
  # Regressions: inputs the parsers once accepted although they were malformed.
  printf '1 0\n2 1\000junk\n' >"$d/regress-generations-nul"
  printf 'state=running\nfsync_mode=periodic\npid=\t-1\nsince=x\n' >"$d/regress-pid-tab-sign"
  printf 'state=running\nfsync_mode=periodic\npid=9223372036854775808\nsince=x\n' >"$d/regress-pid-overflow"
  printf 'state=running\nfsync_mode=none\nboot_id=b\npid=1\nsince=x\n' >"$d/regress-boot-id-no-source"
}

seed_manifest() { # dir: manifests with valid digests, written by the target built as a program
  clang $base -DFELIX_FUZZ_SEEDS tests/fuzz/fuzz_manifest.c $lib_src $libs -o "$out/seed_manifest" \
    >"$out/seed_manifest.build.log" 2>&1 && "$out/seed_manifest" "$1"
}

seed_wire() { # dir: bodies of a publish (one record "hi") and a fetch of stream "s"
  printf '\000\001s\000\000\000\001\001\000\000\000\001\000\000\000\000\000\000\000\011\000\000\000\002hi' >"$1/publish"
  printf '\000\001s\000\000\000\000\000\000\000\000\000\000\000\005\000\000\000\012\000\000\020\000\000\000\003\350' >"$1/fetch"
}

# Keys and words of the key=value files help the fuzzer past the strict parser.
write_dict() { # file
  for w in state= fsync_mode= boot_id= boot_id_source= pid= since= running stopped none periodic \
    on_commit kernel file copy_id= storage_id= stream_uuid= generation= leader= leader_copy_id= \
    leader_incarnation= 0123456789abcdef0123456789abcdef 18446744073709551615 9223372036854775808; do
    printf '"%s"\n' "$w"
  done >"$1"
  printf '"\\x0a"\n"\\x09"\n" "\n' >>"$1"
}

run_target() { # name
  t=$1
  corpus="$out/corpus-$t"
  mkdir -p "$corpus"
  case $t in
  fuzz_segment) seed_segment "$corpus" || return 1; extra="-max_len=16384" ;;
  fuzz_smallfiles) seed_smallfiles "$corpus"; write_dict "$out/smallfiles.dict"
    extra="-max_len=2048 -dict=$out/smallfiles.dict" ;;
  fuzz_wire) seed_wire "$corpus"; extra="-max_len=4096" ;;
  fuzz_manifest) seed_manifest "$corpus" || return 1; extra="-max_len=8192" ;;
  esac
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$out/$t" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$out/$t-" $extra "$corpus" >"$out/$t.log" 2>&1
}

pass=0
fail=0
for t in $targets; do
  if ! build_target "$t"; then
    echo "fuzz: $t: build failed ($out/$t.build.log):"
    tail -n 20 "$out/$t.build.log"
    fail=$((fail + 1))
    continue
  fi
  if run_target "$t"; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$t.log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' "$out/$t.log" | tail -n 1)
    echo "fuzz: $t: ok (${runs:-?} runs, ${cov:-cov: ?}, ${secs}s)"
    pass=$((pass + 1))
  else
    echo "fuzz: $t: FAILED (log $out/$t.log):"
    tail -n 40 "$out/$t.log"
    fail=$((fail + 1))
  fi
done
echo "fuzz: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
