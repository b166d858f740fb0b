#!/bin/sh
# tests/mutants/run.sh [NAME...] — applies each one-line mutation of
# tests/mutants/mutants.tsv (all, or the ones named) to a scratch copy of the
# tracked files, builds what it needs and runs the command that must catch it.
# A mutant is killed when that command fails; one that survives means the
# suites would not notice the rule breaking. Prints a markdown report
# (mutant, verdict, what killed it, seconds) and "mutants: N passed, N failed"
# (passed: killed). Run from the repository root (`make mutants`).
set -u
list=tests/mutants/mutants.tsv
[ -f "$list" ] || { echo "mutants: run from the repository root" >&2; echo "mutants: 0 passed, 1 failed"; exit 1; }
limit=${FELIX_MUTANT_TIMEOUT:-900}
killed=0; survived=0
echo "| mutant | verdict | caught by | seconds |"
echo "| --- | --- | --- | --- |"
tab=$(printf '\t')
grep -v '^#' "$list" | while IFS="$tab" read -r name file subst target cmd; do
  [ -n "$name" ] || continue
  if [ $# -gt 0 ]; then
    want=0; for n in "$@"; do [ "$n" = "$name" ] && want=1; done
    [ $want = 1 ] || continue
  fi
  start=$(date +%s)
  work=$(mktemp -d "${TMPDIR:-/tmp}/felix-mutant.XXXXXX")
  git ls-files | tar cf - -T - | tar xf - -C "$work"
  perl -pi -e "$subst" "$work/$file"
  changed=$(diff "$file" "$work/$file" | grep -c '^>')
  verdict=
  if [ "$changed" -ne 1 ]; then
    verdict="BROKEN (changed $changed lines of $file, 1 expected)"
  elif ! (cd "$work" && make -s $target >"$work/build.log" 2>&1); then
    verdict="BROKEN (does not build: $(tail -n 1 "$work/build.log"))"
  elif (cd "$work" && FELIX_BUILD="$work/build" TMPDIR="$work" timeout "$limit" sh -c "$cmd" >"$work/run.log" 2>&1); then
    verdict=SURVIVED
  else
    verdict=killed
  fi
  echo "| $name | $verdict | \`$cmd\` | $(($(date +%s) - start)) |"
  [ "$verdict" = killed ] && echo killed >>"${TMPDIR:-/tmp}/felix-mutants.$$" || echo survived >>"${TMPDIR:-/tmp}/felix-mutants.$$"
  rm -rf "$work"
done
k=$(grep -c '^killed' "${TMPDIR:-/tmp}/felix-mutants.$$" 2>/dev/null || true)
s=$(grep -c '^survived' "${TMPDIR:-/tmp}/felix-mutants.$$" 2>/dev/null || true)
rm -f "${TMPDIR:-/tmp}/felix-mutants.$$"
k=${k:-0}; s=${s:-0}
if [ $((k + s)) -eq 0 ]; then echo "mutants: no mutant named $*"; s=1; fi
echo "mutants: $k passed, $s failed"
[ "$s" -eq 0 ]
