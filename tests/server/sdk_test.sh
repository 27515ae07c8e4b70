#!/usr/bin/env bash
# hsd serve driven by the official OpenAI SDK (tests/server/openai_sdk.mjs). Skips (exit 77)
# naming the install command when node or npm are absent.
cd "$(dirname "$0")/../../build" 2>/dev/null || true
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/lib.sh"
require_server
root=$(cd "$here/../.." && pwd)
command -v node >/dev/null || skip "node not found: apt-get install nodejs npm, then scripts/install_openai_sdk.sh"
sdk=${HSD_OPENAI_SDK:-$root/.deps/openai}
if [ ! -f "$sdk/node_modules/openai/package.json" ]; then
    command -v npm >/dev/null || skip "npm not found: apt-get install npm, then scripts/install_openai_sdk.sh"
    "$root/scripts/install_openai_sdk.sh" "$sdk" || skip "the OpenAI SDK could not be installed (scripts/install_openai_sdk.sh)"
fi
start_server S "${PAIR[@]}" --parallel 4
export HSD_CLI=$HSD
PAIR_ARGS=$(printf '%s\t' "${PAIR[@]}")
export PAIR_ARGS=${PAIR_ARGS%$'\t'}
timeout 300 node "$here/openai_sdk.mjs" "$sdk" "http://127.0.0.1:$PORT_S/v1"
rc=$?
kill -TERM "$PID_S"
wait "$PID_S"
src=$?
[ $src -eq 0 ] || { echo "FAIL: server exit status $src"; rc=1; }
exit $rc
