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
# a second server with a real template, when the chat-template engine is built in and Python
# Jinja2 (the oracle) is there
tpl=$SHARED/tokenizers/qwen3/tokenizer_config.json
if python3 -c 'import jinja2' 2>/dev/null && [ -f "$tpl" ]; then
    "$HSD" serve "${PAIR[@]}" --chat-template "$tpl" --port 0 >"$TMP/T.log" 2>&1 &
    pid_t=$!
    SERVER_PIDS+=("$pid_t")
    for _ in $(seq 1 100); do grep -q "listening on\|chat-template\|hsd serve:.*template" "$TMP/T.log" && break; sleep 0.1; done
    port_t=$(sed -n 's/.*listening on http:\/\/[0-9.]*:\([0-9]*\).*/\1/p' "$TMP/T.log" | head -1)
    if [ -n "$port_t" ]; then
        export CHAT_TEMPLATE_URL=http://127.0.0.1:$port_t/v1 CHAT_TEMPLATE_FILE=$tpl
        export CHAT_REF=$root/tests/oracle/chat_ref.py
    else
        echo "SKIP: chat template part: $(cat "$TMP/T.log")"
    fi
else
    echo "SKIP: chat template part: python3-jinja2 (the oracle) or $tpl missing"
fi
export HSD_CLI=$HSD
PAIR_ARGS=$(printf '%s\t' "${PAIR[@]}")
export PAIR_ARGS=${PAIR_ARGS%$'\t'}
timeout 300 node "$here/openai_sdk.mjs" "$sdk" "http://127.0.0.1:$PORT_S/v1"
rc=$?
[ -n "${pid_t:-}" ] && kill -TERM "$pid_t" && wait "$pid_t"
kill -TERM "$PID_S"
wait "$PID_S"
src=$?
[ $src -eq 0 ] || { echo "FAIL: server exit status $src"; rc=1; }
sanitizer_clean
[ "$FAILS" -eq 0 ] || rc=1
exit $rc
