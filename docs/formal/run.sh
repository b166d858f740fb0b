#!/usr/bin/env bash
# run.sh -- check every configuration of shard.pml with spin.
#
#   run.sh [-j N] [NAME...]
#
# Reads configs.tsv (name, expect, -D flags, state floor, pan flags).  For each
# configuration: spin -a with the flags, gcc -O2 pan, run it, and compare with
# the expectation.  Exits 1 when a passing configuration reports an error, when
# a twin (expect fail:INVARIANT) reports none or breaks another invariant than
# the one it names (read from its trail's replay), or when a run stores fewer
# states than its floor.  The last line is always "formal: N passed, N failed".
# Trails of failing-as-expected twins are replayed into $FORMAL_TRAIL_DIR.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
model="$here/shard.pml"
configs="$here/configs.tsv"
jobs=2
names=()
while [ $# -gt 0 ]; do
  case "$1" in
    -j) jobs="$2"; shift 2 ;;
    -j*) jobs="${1#-j}"; shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) names+=("$1"); shift ;;
  esac
done
for tool in spin gcc; do
  command -v "$tool" >/dev/null || { echo "run.sh: error: $tool not found (apt-get install $tool)" >&2; echo "formal: 0 passed, 1 failed"; exit 1; }
done

work="$(mktemp -d "${TMPDIR:-/tmp}/felix-formal.XXXXXX")"
trap 'rm -rf "$work"' EXIT
trails="${FORMAL_TRAIL_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/felix-formal-trails.XXXXXX")}"
mkdir -p "$trails"

# one configuration: writes "$work/<name>.res" = name expect result states depth seconds verdict
run_one() {
  local name="$1" expect="$2" flags="$3" floor="$4" panflags="$5"
  local d="$work/$name"
  mkdir -p "$d"
  cp "$model" "$d/shard.pml"
  local start end secs result states depth verdict
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  if ! (cd "$d" && spin -a $flags shard.pml >spin.log 2>&1); then
    echo "$name $expect spin-error 0 0 0 FAIL" >"$work/$name.res"; return
  fi
  local cflags="-O2 -w -DSAFETY -DNOBOUNDCHECK -DREVERSE -DMEMLIM=8000"
  case " $panflags " in *" -DBITSTATE "*) cflags="$cflags -DBITSTATE" ;; esac
  if ! (cd "$d" && gcc $cflags -o pan pan.c >gcc.log 2>&1); then
    echo "$name $expect gcc-error 0 0 0 FAIL" >"$work/$name.res"; return
  fi
  local runflags
  runflags="$(echo " $panflags " | sed 's/ -DBITSTATE / /g')"
  # -E: a state with no enabled action is a quiet end, not an error
  # shellcheck disable=SC2086
  (cd "$d" && timeout "${FORMAL_TIMEOUT:-240}" ./pan -E -m1000000 -w26 $runflags >pan.out 2>&1)
  end=$(date +%s.%N)
  secs=$(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.1f", b-a}')
  states=$(awk '/states, stored/{print $1; exit}' "$d/pan.out")
  depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' "$d/pan.out" | head -1)
  local errors
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$d/pan.out" | head -1)
  states=${states:-0}; depth=${depth:-0}
  if [ -z "$errors" ]; then result="no-result"
  elif [ "$errors" = 0 ]; then result="pass"
  else result="violated"
  fi
  if grep -q "out of memory\|memory limit\|MEMLIM bound" "$d/pan.out"; then result="out-of-memory"; fi
  verdict=FAIL
  local want=${expect#fail:}
  if [ "$expect" = pass ] && [ "$result" = pass ]; then verdict=ok; fi
  if [ "$result" = violated ] && [ -f "$d/shard.pml.trail" ]; then
    # shellcheck disable=SC2086
    (cd "$d" && spin -t $flags shard.pml 2>&1 | grep -v '^[[:space:]]*$') >"$d/replay.txt"
    { head -80 "$d/replay.txt"; grep '^ *VIOLATION ' "$d/replay.txt"; } >"$trails/$name.trail.txt"
  fi
  if [ "$expect" != pass ] && [ "$result" = violated ]; then
    if [ "$want" != "$expect" ] && grep -q "VIOLATION $want[: ]" "$d/replay.txt" 2>/dev/null; then verdict=ok
    else verdict="FAIL(not $want: $(grep -o 'VIOLATION [A-Za-z]*' "$d/replay.txt" 2>/dev/null | sort -u | cut -d' ' -f2 | paste -sd, -))"; fi
  fi
  # states is a float like 1.2e+06 only for huge runs; compare with awk
  if [ "$verdict" = ok ] && ! awk -v s="$states" -v f="$floor" 'BEGIN{exit !(s+0 >= f+0)}'; then
    verdict="FAIL(floor $floor)"
  fi
  echo "$name $expect $result $states $depth $secs ${verdict// /_}" >"$work/$name.res"
  rm -f "$d/pan" "$d/pan".[bchmpt] "$d/pan.c"
}

selected=()
while IFS=$'\t' read -r name expect flags floor panflags _; do
  case "$name" in ''|\#*) continue ;; esac
  if [ ${#names[@]} -gt 0 ]; then
    keep=0; for n in "${names[@]}"; do [ "$n" = "$name" ] && keep=1; done
    [ $keep = 1 ] || continue
  fi
  selected+=("$name")
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$expect" "$flags" "$floor" "${panflags:-}" >"$work/$name.cfg"
done <"$configs"

if [ ${#names[@]} -gt 0 ]; then
  for n in "${names[@]}"; do
    [ -f "$work/$n.cfg" ] || { echo "run.sh: error: no configuration named $n in configs.tsv" >&2; echo "formal: 0 passed, 1 failed"; exit 1; }
  done
fi

t0=$(date +%s)
running=0
for name in "${selected[@]}"; do
  IFS=$'\t' read -r n expect flags floor panflags <"$work/$name.cfg"
  run_one "$n" "$expect" "$flags" "$floor" "$panflags" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait
t1=$(date +%s)

passed=0; failed=0
printf '%-34s %-26s %-13s %12s %6s %8s  %s\n' configuration expect result states depth seconds verdict
for name in "${selected[@]}"; do
  if [ -f "$work/$name.res" ]; then
    read -r n expect result states depth secs verdict <"$work/$name.res"
  else
    n=$name; expect=?; result=crashed; states=0; depth=0; secs=0; verdict=FAIL
  fi
  printf '%-34s %-26s %-13s %12s %6s %8s  %s\n' "$n" "$expect" "$result" "$states" "$depth" "$secs" "${verdict//_/ }"
  if [ "$verdict" = ok ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
echo "total wall clock: $((t1 - t0)) s; counterexample trails in $trails"
echo "formal: $passed passed, $failed failed"
[ "$failed" = 0 ]
