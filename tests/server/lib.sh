# Helpers for the hsd serve tests (sourced): the small pair, starting a server on a free
# loopback port, and checks that print what failed.
# Exit 77 (ctest: Skipped) with the reason when the hsd binary has no server or the shared
# models are missing.
set -u
HSD=${HSD_CLI:-./hsd}
SHARED=${HSD_SHARED:-${HSD_SHARED_DEFAULT:-../shared}}
M=$SHARED/models
PAIR=(--target "$M/stories260K/stories260K.bin" --target-tokenizer "$M/stories260K/tok512.bin"
      --draft "$M/babyllama-tok105/model5000.bin" --draft-tokenizer "$M/babyllama-tok105/tok105.bin")
TMP=$(mktemp -d "${TMPDIR:-/tmp}/hsd_serve_test.XXXXXX")
FAILS=0
SERVER_PIDS=()

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
ok() { echo "ok: $*"; }

cleanup() {
    for p in "${SERVER_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT

require_server() {
    [ -f "$M/stories260K/stories260K.bin" ] || skip "shared models missing under $M (set HSD_SHARED)"
    [ -f "$M/babyllama-tok105/model5000.bin" ] || skip "shared models missing under $M"
    local out
    out=$("$HSD" serve --target x --target-tokenizer y --port 1 --host nothere 2>&1)
    if [ $? -eq 2 ] && echo "$out" | grep -q "without libmicrohttpd"; then
        skip "hsd was built without libmicrohttpd (install libmicrohttpd-dev: scripts/bootstrap.sh)"
    fi
}

# start_server NAME ARGS...: starts `hsd serve ARGS --port 0`, waits until it listens; sets
# PORT_<NAME> and PID_<NAME>; the log is $TMP/NAME.log.
start_server() {
    local name=$1
    shift
    "$HSD" serve "$@" --port 0 >"$TMP/$name.log" 2>&1 &
    local pid=$!
    SERVER_PIDS+=("$pid")
    local port=""
    for _ in $(seq 1 300); do
        port=$(sed -n 's/.*listening on http:\/\/[0-9.]*:\([0-9]*\).*/\1/p' "$TMP/$name.log" | head -1)
        [ -n "$port" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$port" ]; then
        echo "server $name did not start:"
        cat "$TMP/$name.log"
        exit 1
    fi
    eval "PORT_$name=$port PID_$name=$pid"
}

# expect_eq WHAT GOT WANT
expect_eq() {
    if [ "$2" == "$3" ]; then ok "$1"; else fail "$1: got [$2], want [$3]"; fi
}
# expect_match WHAT TEXT REGEX
expect_match() {
    if echo "$2" | grep -Eq -- "$3"; then ok "$1"; else fail "$1: [$2] does not match /$3/"; fi
}
# metric PORT NAME: the value of a Prometheus line "NAME VALUE"
metric() {
    curl -s "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n { print $2 }'
}
# Fails when a server log holds a sanitizer report (tests run on a sanitizer build too).
sanitizer_clean() {
    local f
    for f in "$TMP"/*.log; do
        [ -f "$f" ] || continue
        if grep -q "ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:" "$f"; then
            fail "sanitizer report in $(basename "$f"):"
            grep -A25 "ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:" "$f" | head -40
        fi
    done
}
