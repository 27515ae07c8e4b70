#!/bin/sh
# Regenerates the whole-code-space HF references (tests/unicode/ref/) and the Unicode tables
# hsd derives from them (tokenize/unicode_*.c), with the HF tokenizers version pinned in
# ../shared/tools/package-lock.json (0.23.2), installed by `npm ci` into a work directory.
#
#   tests/unicode/regen.sh [out dir] [component ...]
#
# out dir defaults to tests/unicode/ref; components (names in components.json, or
# rt_<family>, regex_gc, scripts, long) default to all. Takes ~9 minutes of one CPU core.
# Needs node + npm.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
shared=${HSD_SHARED:-$root/../shared}
out=${1:-$here/ref}
[ $# -gt 0 ] && shift
work=${HSD_UNICODE_WORK:-$root/build/unicode-npm}
command -v node >/dev/null && command -v npm >/dev/null || {
    echo "regen.sh: node and npm are needed (apt-get install nodejs npm)" >&2
    exit 1
}
mkdir -p "$work"
if ! cmp -s "$shared/tools/package-lock.json" "$work/package-lock.json" ||
    [ ! -d "$work/node_modules/tokenizers" ]; then
    cp "$shared/tools/package.json" "$shared/tools/package-lock.json" "$work/"
    (cd "$work" && npm ci --no-audit --no-fund >/dev/null)
fi
NODE_PATH="$work/node_modules" node "$here/gen.js" "$here/components.json" \
    "$shared/tokenizers" "$out" "$@"
if [ "$out" = "$here/ref" ]; then
    node "$here/gen_tables.js" "$here/ref" "$root/tokenize"
fi
