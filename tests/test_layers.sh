#!/bin/sh
# Layering of the source tree (issue 14): dependencies point one way,
#   lib/base  <-  tokenize/ models/ kernels/ verify/  <-  lib/engine, lib/analysis  <-  cli/
# so a file in lib/base/ includes only lib/base/, the public header and system headers, the
# middle layers include neither the engine, the analysis tools nor the CLI, and cli/ includes
# only its own headers and the public ones (include/*.h): a pure client of the API. grep-based:
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
# cli/ is a pure client of the public API: its quoted includes name cli/'s own headers or a
# public header (a file in include/), and no angle-bracket include reaches into the tree
public=$(cd include && echo *.h)
for f in $(find cli -type f \( -name '*.c' -o -name '*.h' \)); do
    grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' "$f" | while IFS= read -r line; do
        inc=$(printf '%s\n' "$line" | sed -E 's/^[0-9]+:[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]*)[>"].*/\1/')
        case "$line" in
        *'"'*)
            case "$inc" in
            cli/*) continue ;;
            esac
            for h in $public; do [ "$inc" = "$h" ] && continue 2; done
            echo "$f:$line" ;;
        *)
            case "$inc" in
            lib/* | tokenize/* | models/* | kernels/* | verify/* | include/* | bench/* | tests/*) echo "$f:$line" ;;
            esac ;;
        esac
    done
done >/tmp/hsd_layers_cli.$$
if [ -s /tmp/hsd_layers_cli.$$ ]; then
    echo "layers: cli/ may include only cli/ headers, the public headers ($public) and system headers:"
    cat /tmp/hsd_layers_cli.$$
    bad=1
fi
rm -f /tmp/hsd_layers_cli.$$
grep -q '#include "hsd.h"' cli/main.c || { echo "layers: no hsd.h include seen in cli/main.c (broken check)"; bad=1; }
# the check itself must see includes: base files do include each other
grep -q '#include "lib/base/' lib/base/*.c || { echo "layers: no include seen in lib/base (broken check)"; bad=1; }
[ $bad = 0 ] && echo "layers: ok"
exit $bad
