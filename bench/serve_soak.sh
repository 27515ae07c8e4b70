#!/usr/bin/env bash
# Soak of hsd serve on loopback (bench/serve_soak.py): DURATION seconds of good streams, random
# disconnects, non-streamed requests, malformed requests and garbage HTTP from W workers; RSS
# sampled; then SIGTERM must exit 0. Run it on a sanitizer build (HSD=build-asan/hsd, made by
# `cmake -B build-asan -DHSD_SANITIZE=ON ...`) to check ASan/UBSan: the server's log must hold
# no sanitizer report (leaks included, checked at exit). Bounded: stops by itself.
#   usage: bench/serve_soak.sh [HSD]   env: DURATION (600 s), W (6 workers), KV (--kv-type), OUT
set -uo pipefail
cd "$(dirname "$0")/.."
HSD=${1:-build/hsd}
M=${HSD_SHARED:-../shared}/models
DURATION=${DURATION:-600}
W=${W:-6}
OUT=${OUT:-build/serve_soak}
mkdir -p "$OUT"
log=$OUT/server.log
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} UBSAN_OPTIONS=print_stacktrace=1 \
"$HSD" serve --target "$M/stories260K/stories260K.bin" --target-tokenizer "$M/stories260K/tok512.bin" \
    --draft "$M/babyllama-tok105/model5000.bin" --draft-tokenizer "$M/babyllama-tok105/tok105.bin" \
    --port 0 --parallel 4 --queue 64 --timeout 120 --max-body 1024 ${KV:+--kv-type $KV} >"$log" 2>&1 &
spid=$!
trap 'kill -9 $spid 2>/dev/null || true' EXIT
port=""
for _ in $(seq 1 600); do
    port=$(sed -n 's/.*listening on http:\/\/[0-9.]*:\([0-9]*\).*/\1/p' "$log" | head -1)
    [ -n "$port" ] && break
    kill -0 $spid 2>/dev/null || { cat "$log"; exit 1; }
    sleep 0.2
done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "start: $(date -u '+%F %T') UTC, load $(cut -d' ' -f1-3 /proc/loadavg); server $HSD, $DURATION s, $W workers"
timeout $((DURATION + 300)) python3 bench/serve_soak.py "http://127.0.0.1:$port" --pid $spid \
    --duration "$DURATION" --workers "$W" | tee "$OUT/soak.json"
rc=${PIPESTATUS[0]}
kill -TERM $spid
wait $spid
src=$?
echo "server exit status after SIGTERM: $src"
reports=$(grep -c "ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:" "$log")
echo "sanitizer reports in the server log: $reports"
[ "$reports" -eq 0 ] || grep -A30 "ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:" "$log" | head -60
echo "end: $(date -u '+%F %T') UTC"
[ $rc -eq 0 ] && [ $src -eq 0 ] && [ "$reports" -eq 0 ]
