#!/bin/sh
# bats-negation.sh — rejects a bare `! cmd` line in a bats test or helper that
# is not the last command of its block: bats runs tests under `set -e`, which
# ignores a negated command's status, so such a line checks nothing (issue 13).
# Use `run ! cmd`, `! cmd || fail ...` or `[ ... ]` instead. A `!` line right
# before the block's closing brace is the block's status and does count.
# The same holds for a list of checks `[ a ] && [ b ]` (or test, grep): under
# `set -e` only its last check counts, so such a line needs `|| fail ...`
# unless it ends its block.
# Prints "lint: N passed, N failed" last (one check per file).
# Usage: bats-negation.sh FILE...
set -u
pass=0; fail=0
for f in "$@"; do
  if awk '
    function report(n, what) { printf "%s:%d: %s in the middle of a block checks nothing (use run ! or || fail)\n", FILENAME, n, what; bad = 1 }
    /^[ \t]*#/ || /^[ \t]*$/ { next }
    {
      if (pending && $0 !~ /^[ \t]*}[ \t]*$/) report(pending, what)
      pending = 0
      if ($0 ~ /^[ \t]*! / && $0 !~ /\|\|/) { pending = FNR; what = "a bare \"! \" line" }  # `! cmd || fail` does check
      if ($0 ~ /^[ \t]*(\[|test |grep )/ && $0 ~ /&&[ \t]*(\[|test |grep )/ && $0 !~ /\|\|/) { pending = FNR; what = "a list of checks joined by && (only its last counts)" }
    }
    END { exit bad }' "$f"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
  fi
done
echo "lint: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
