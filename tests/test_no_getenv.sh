#!/bin/sh
# The library reads no environment (include/hsd.h: settings are params; the CLI maps its
# environment variables onto them, docs/CLI.md). Fails if getenv, secure_getenv or environ
# appears anywhere in library code, comments included, so the rule cannot drift back in
# through a "temporary" override. Usage: test_no_getenv.sh SOURCE_DIR
set -u
src=${1:-.}
cd "$src" || exit 1
dirs="include kernels lib models tokenize verify"
for d in $dirs; do
    [ -d "$d" ] || { echo "no_getenv: $d/ is missing"; exit 1; }
done
pat='getenv|\benviron\b'
hits=$(grep -rnE "$pat" $dirs --include='*.c' --include='*.h' --include='*.cu' --include='*.cuh' --include='*.cpp')
if [ -n "$hits" ]; then
    echo "no_getenv: library code reads the environment (take a param; let cli/ map the variable):"
    echo "$hits"
    exit 1
fi
# every variable the CLI (and hsd serve) reads is documented in docs/CLI.md
vars=$(grep -rohE '(getenv|env_on|env_is)\("HSD_[A-Z0-9_]+"' cli server 2>/dev/null | sed -E 's/.*"(HSD_[A-Z0-9_]+)"/\1/' | sort -u)
[ -n "$vars" ] || { echo "no_getenv: no variable read seen in cli/ (broken check)"; exit 1; }
for v in $vars; do
    grep -q "\`$v\`" docs/CLI.md || { echo "no_getenv: $v is read by the CLI but not documented in docs/CLI.md"; exit 1; }
done
# the check itself must see a read where there is one: the CLI maps the variables
grep -qE "$pat" cli/main.c || { echo "no_getenv: no getenv seen in cli/main.c (broken check)"; exit 1; }
echo "no_getenv: ok ($dirs); documented: "$vars
