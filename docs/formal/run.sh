#!/usr/bin/env bash
# run.sh -- check every configuration of shard.pml with spin.
#
#   run.sh [-j N] [--quick] [--report FILE] [NAME...]
#
# --quick (what `make check` runs): only the configurations whose state floor
# is at most FORMAL_QUICK_MAX_STATES (default 2000000); the larger ones (about
# 80% of all states) are named on a line after the table and are checked by
# `make formal`, which runs them all and keeps its table in docs/formal/report.md
# (--report FILE: the table, with the commit, date, machine and wall clock).
#
# Reads configs.tsv (name, expect, -D flags, state floor, pan flags).  For each
# configuration: spin -a with the flags, gcc -O2 pan, run it, and compare with
# the expectation.  Exits 1 when a passing configuration reports an error, when
# a twin (expect fail:INVARIANT) reports none or breaks another invariant than
# the one it names (read from its trail's replay), or when a run stores fewer
# states than its floor.  Action coverage (README.md, "Action coverage"): every
# action of the model (a branch of init's do-loop, one d_step) must carry its
# COVER(Name) marker (row action-markers), and a full run (no NAME) fails when
# an action is reached by no configuration, pass or twin (row action-coverage);
# a run with NAMEs prints the coverage of those only and does not count it.
# The last line is always "formal: N passed, N failed".
# Trails of failing-as-expected twins are replayed into $FORMAL_TRAIL_DIR.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
model="$here/shard.pml"
configs="$here/configs.tsv"
jobs=2
names=()
quick=0
report=""
quick_max=${FORMAL_QUICK_MAX_STATES:-2000000}
while [ $# -gt 0 ]; do
  case "$1" in
    -j) jobs="$2"; shift 2 ;;
    -j*) jobs="${1#-j}"; shift ;;
    --quick) quick=1; shift ;;
    --report) report="$2"; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
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

# The actions of the model, from its text: prints "action NAME" for every branch
# of init's do-loop (PER_x(NAME) or ":: NAME(...)"), and "problem TEXT" for an
# action that is not one d_step starting (after its guard) with COVER(NAME), a
# loop branch that is no named action, or a d_step or COVER marker elsewhere
# (allowed: the d_step of proctype invariants, the observer, and init's first
# d_step, the initial state).
model_actions() {
  awk '
    function strip(s,   out, i) {      # drops /* comments */, across lines
      out = ""
      while (s != "") {
        if (incom) { i = index(s, "*/"); if (i == 0) return out; s = substr(s, i + 2); incom = 0 }
        else { i = index(s, "/*"); if (i == 0) return out s; out = out substr(s, 1, i - 1) " "; s = substr(s, i + 2); incom = 1 }
      }
      return out
    }
    function problem(t) { print "problem " t }
    function count(s, re,   n) { n = gsub(re, "", s); return n }
    {
      line = strip($0)
      if (line ~ /^[ \t]*#/) {
        if (line !~ /^#define[ \t]+COVER\(/ && line ~ /d_step|COVER\(/) problem("line " FNR ": a macro holds a d_step or a COVER marker")
        next
      }
      # a top-level inline, proctype or init: its context lasts until its braces close
      if (match(line, /^inline[ \t]+[A-Za-z_][A-Za-z0-9_]*/)) {
        cur = substr(line, RSTART, RLENGTH); sub(/^inline[ \t]+/, "", cur); ctx = "inline"; body[cur] = ""; depth = 0; opened = 0
      } else if (line ~ /^(active[ \t]+)?(\[[0-9]+\][ \t]+)?proctype[ \t]/) {
        cur = line; sub(/^.*proctype[ \t]+/, "", cur); sub(/[^A-Za-z0-9_].*$/, "", cur); ctx = "proctype"; depth = 0; opened = 0
      } else if (line ~ /^init[ \t]*\{/) {
        ctx = "init"; phase = "start"; nstart = 0; depth = 0; opened = 0
      }
      if (ctx == "inline") body[cur] = body[cur] " " line
      else if (ctx == "proctype") {
        if (cur != "invariants" && line ~ /d_step/) problem("line " FNR ": a d_step in proctype " cur " (actions are branches of init'"'"'s do-loop)")
        if (line ~ /COVER\(/) problem("line " FNR ": a COVER marker in proctype " cur)
      } else if (ctx == "init") {
        if (phase == "start" && line ~ /^[ \t]*do[ \t]*$/) { phase = "loop"; next }
        if (phase == "loop" && line ~ /^[ \t]*od[ \t]*;?[ \t]*$/) { phase = "after"; next }
        if (line ~ /COVER\(/) problem("line " FNR ": a COVER marker in init outside an action")
        if (phase == "start") { nstart += count(line, "d_step"); if (nstart > 1) problem("line " FNR ": a second d_step in init before its do-loop") }
        else if (phase == "after" && line ~ /d_step/) problem("line " FNR ": a d_step in init after its do-loop")
        else if (phase == "loop") {
          rest = line
          while (match(rest, /PER_[A-Z]+\([A-Za-z_][A-Za-z0-9_]*\)/)) {
            n = substr(rest, RSTART, RLENGTH); sub(/^PER_[A-Z]+\(/, "", n); sub(/\)$/, "", n); act[n] = 1
            rest = substr(rest, 1, RSTART - 1) " " substr(rest, RSTART + RLENGTH)
          }
          while (match(rest, /::[ \t]*[A-Za-z_][A-Za-z0-9_]*[ \t]*\([^()]*\)/)) {
            n = substr(rest, RSTART, RLENGTH); sub(/^::[ \t]*/, "", n); sub(/[ \t]*\(.*$/, "", n); act[n] = 1
            rest = substr(rest, 1, RSTART - 1) " " substr(rest, RSTART + RLENGTH)
          }
          if (rest ~ /[^ \t]/) problem("line " FNR ": a branch of init'"'"'s do-loop that is no named action:" rest)
        }
      } else if (line ~ /d_step/) problem("line " FNR ": a d_step outside every action")
      else if (line ~ /COVER\(/ && line !~ /^#define/) problem("line " FNR ": a COVER marker outside every action")
      if (ctx != "") {
        opened += count(line, "{"); depth += count(line, "{") - count(line, "}")
        if (opened > 0 && depth <= 0) { ctx = ""; opened = 0 }
      }
    }
    END {
      if (phase == "") problem("no init with a do-loop")
      for (n in act) {
        print "action " n
        if (!(n in body)) { problem(n ": no inline " n); continue }
        b = body[n]; nd = count(b, "d_step")
        if (nd != 1) { problem(n ": " nd " d_steps (an action is one d_step)"); continue }
        match(b, /d_step/); after = substr(b, RSTART)
        j = index(after, "COVER(" n ")")
        if (j == 0) problem(n ": no COVER(" n ") in its d_step")
        else if (index(substr(after, 1, j - 1), ";") > 0) problem(n ": COVER(" n ") is not the first statement after the guard")
        if (count(b, "COVER\\(") > 1) problem(n ": more than one COVER marker")
      }
      for (n in body) if (!(n in act)) {
        if (body[n] ~ /d_step/) problem("inline " n " has a d_step but is no branch of init'"'"'s do-loop")
        if (body[n] ~ /COVER\(/) problem("inline " n " has a COVER marker but is no branch of init'"'"'s do-loop")
      }
    }' "$model" | sort
}

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
  # gcc -O2 takes ~7 s on pan.c, -O0 ~1.5 s; below a million states the search
  # runs about as fast either way (~1 s), so only the big ones pay for -O2
  local opt=-O2
  awk -v f="$floor" 'BEGIN{exit !(f+0 < 1000000)}' && opt=-O0
  local cflags="$opt -w -DSAFETY -DNOBOUNDCHECK -DREVERSE -DMEMLIM=8000"
  case " $panflags " in *" -DBITSTATE "*) cflags="$cflags -DBITSTATE" ;; esac
  if ! (cd "$d" && gcc $cflags -o pan pan.c >gcc.log 2>&1); then
    echo "$name $expect gcc-error 0 0 0 FAIL" >"$work/$name.res"; return
  fi
  local runflags
  runflags="$(echo " $panflags " | sed 's/ -DBITSTATE / /g')"
  # -E: a state with no enabled action is a quiet end, not an error
  # shellcheck disable=SC2086
  (cd "$d" && timeout "${FORMAL_TIMEOUT:-240}" ./pan -E -m1000000 -w26 $runflags >pan.out 2>&1)
  # the actions this run reached (COVER lines, printed once per action by pan)
  sed -n 's/^COVER \([A-Za-z_][A-Za-z0-9_]*\)$/\1/p' "$d/pan.out" | sort -u >"$work/$name.cov"
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
    # without spin's warning that c_code (the COVER markers) is not run, and their echoes
    # shellcheck disable=SC2086
    (cd "$d" && spin -t $flags shard.pml 2>&1 | grep -v '^[[:space:]]*$' | awk '
       /^spin: warning: c_code fragments remain uninterpreted/ || /^      in random simulations with spin; use .\/pan -r instead/ { next }
       /^spin: important:$/ { blk = 1; next }
       blk && /^  [^ ]/ { next }
       { blk = 0 }
       /^c_code[0-9]+:/ { next }
       { print }') >"$d/replay.txt"
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
deep=()
while IFS=$'\t' read -r name expect flags floor panflags _; do
  case "$name" in ''|\#*) continue ;; esac
  if [ ${#names[@]} -gt 0 ]; then
    keep=0; for n in "${names[@]}"; do [ "$n" = "$name" ] && keep=1; done
    [ $keep = 1 ] || continue
  elif [ $quick = 1 ] && awk -v f="$floor" -v m="$quick_max" 'BEGIN{exit !(f+0 > m+0)}'; then
    deep+=("$name")
    continue
  fi
  selected+=("$name")
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$expect" "$flags" "$floor" "${panflags:-}" >"$work/$name.cfg"
done <"$configs"

if [ ${#names[@]} -gt 0 ]; then
  for n in "${names[@]}"; do
    [ -f "$work/$n.cfg" ] || { echo "run.sh: error: no configuration named $n in configs.tsv" >&2; echo "formal: 0 passed, 1 failed"; exit 1; }
  done
fi

model_actions >"$work/actions.txt"
sed -n 's/^action //p' "$work/actions.txt" | sort >"$work/actions.list"

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
{
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
# action coverage: the union of what every selected configuration reached
nact=$(wc -l <"$work/actions.list")
nprob=$(grep -c '^problem ' "$work/actions.txt")
if [ "$nprob" = 0 ]; then mverdict=ok; else mverdict="FAIL($nprob problem(s), below)"; fi
printf '%-34s %-26s %-13s %12s %6s %8s  %s\n' action-markers "every action has COVER" "$nact actions" - - - "$mverdict"
if [ "$mverdict" = ok ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
for name in "${selected[@]}"; do cat "$work/$name.cov" 2>/dev/null; done | sort -u >"$work/reached.list"
for name in "${selected[@]}"; do
  case "$(cut -f2 "$work/$name.cfg")" in pass) cat "$work/$name.cov" 2>/dev/null ;; esac
done | sort -u >"$work/reached-pass.list"
twinonly=$(comm -23 "$work/reached.list" "$work/reached-pass.list" | paste -sd' ' -)
unreached=$(comm -23 "$work/actions.list" "$work/reached.list" | paste -sd' ' -)
nreach=$((nact - $(comm -23 "$work/actions.list" "$work/reached.list" | wc -l)))
if [ ${#names[@]} -eq 0 ]; then
  if [ -z "$unreached" ]; then cverdict=ok; else cverdict="FAIL(unreached: $unreached)"; fi
  printf '%-34s %-26s %-13s %12s %6s %8s  %s\n' action-coverage "reached by a configuration" "$nreach of $nact" - - - "$cverdict"
  if [ "$cverdict" = ok ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
fi
sed -n 's/^problem /action-markers: /p' "$work/actions.txt"
if [ ${#names[@]} -eq 0 ] && [ -n "$twinonly" ]; then echo "action coverage: reached by a twin only (no passing configuration runs them): $twinonly"; fi
if [ ${#names[@]} -gt 0 ]; then
  echo "action coverage of the selected configurations (not counted): $nreach of $nact actions reached${unreached:+; unreached: $unreached}"
fi
if [ ${#deep[@]} -gt 0 ]; then
  echo "not run (--quick: floor above $quick_max states; make formal runs them, docs/formal/report.md): ${deep[*]}"
fi
echo "total wall clock: $((t1 - t0)) s; counterexample trails in $trails"
} >"$work/table.txt"
cat "$work/table.txt"
if [ -n "$report" ]; then
  {
    echo "# The model's last full run (make formal)"
    echo
    echo "Written by \`docs/formal/run.sh --report\` ($(basename "$0"), every configuration of"
    echo "configs.tsv; \`make check\` runs only those with a floor of at most $quick_max"
    echo "states, \`run.sh --quick\`). Commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$here" diff --quiet 2>/dev/null || echo ' (with uncommitted changes)'),"
    echo "$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $jobs jobs, spin $(spin -V 2>/dev/null | sed -n 's/^Spin Version \([^ ]*\).*/\1/p')."
    echo "Result: $passed passed, $failed failed."
    echo
    echo '```'
    cat "$work/table.txt"
    echo '```'
  } >"$report"
fi
echo "formal: $passed passed, $failed failed"
[ "$failed" = 0 ]
