#!/bin/sh
# embed.sh NAME FILE — prints a C array NAME holding FILE's bytes and a NUL,
# so a program can carry a file of the tree (felixctl's completion scripts)
# without a second, hand-kept copy of it.
set -eu
printf 'static const char %s[] = {\n' "$1"
od -An -v -tx1 "$2" | sed 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'
printf '0x00};\n'
