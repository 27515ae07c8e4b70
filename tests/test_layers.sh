#!/bin/sh
# Layering of the source tree (issue 14): dependencies point one way,
#   lib/base  <-  tokenize/ models/ kernels/ verify/  <-  lib/engine, lib/analysis  <-  cli/
# so a file in lib/base/ includes only lib/base/, the public header and system headers, and
# the middle layers include neither the engine, the analysis tools nor the CLI. grep-based:
# it reads every #include "..." line. Usage: test_layers.sh SOURCE_DIR
set -u
src=${1:-.}
cd "$src" || exit 1
if [ ! -d lib/base ]; then
    echo "layers: lib/base/ is missing"
    exit 1
fi
bad=0
# file list, then its #include "..." lines naming something outside what the layer may use
check() { # $1: folders, $2: extended regex of forbidden include paths, $3: what the rule says
    files=$(find $1 -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) 2>/dev/null)
    [ -n "$files" ] || return 0
    hits=$(grep -nE "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"($2)" $files)
    if [ -n "$hits" ]; then
        echo "layers: $3:"
        echo "$hits"
        bad=1
    fi
}
check lib/base 'tokenize/|models/|kernels/|verify/|cli/|lib/[^b]|lib/b[^a]|lib/ba[^s]|lib/bas[^e]|lib/base[^/]' \
    "lib/base/ may include only lib/base/ and include/hsd.h"
check "tokenize models kernels verify" 'lib/engine|lib/analysis|cli/' \
    "tokenize/, models/, kernels/ and verify/ may not include the engine, the analysis tools or the CLI"
check "lib/engine lib/analysis" 'cli/' "the engine and the analysis tools may not include the CLI"
# the check itself must see includes: base files do include each other
grep -q '#include "lib/base/' lib/base/*.c || { echo "layers: no include seen in lib/base (broken check)"; bad=1; }
[ $bad = 0 ] && echo "layers: ok"
exit $bad
