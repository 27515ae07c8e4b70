#!/bin/sh
# The generated Unicode tables (tokenize/unicode_*.c) are exactly what tests/unicode/gen_tables.js
# writes from the committed references (tests/unicode/ref): regenerates them into a temporary
# directory and compares byte for byte, so a hand edit or a stale table fails.
#   check_tables.sh SOURCE_DIR
set -u
src=${1:-.}
command -v node >/dev/null || {
    echo "skipped: node not installed; run apt-get install nodejs"
    exit 77
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
node "$src/tests/unicode/gen_tables.js" "$src/tests/unicode/ref" "$tmp" 2>/dev/null || {
    echo "unicode tables: gen_tables.js failed"
    exit 1
}
n=0
bad=0
for f in "$tmp"/*.c; do
    n=$((n + 1))
    name=$(basename "$f")
    cmp -s "$f" "$src/tokenize/$name" || {
        echo "unicode tables: tokenize/$name differs from what gen_tables.js writes"
        bad=1
    }
done
[ "$n" -ge 5 ] || { echo "unicode tables: gen_tables.js wrote $n files, expected 5"; bad=1; }
[ $bad = 0 ] && echo "unicode tables: $n files as generated"
exit $bad
