#!/usr/bin/env bash
# hsd serve under load, on loopback: aggregate tokens/s, TTFT and inter-token latency for 1, 2,
# 4 and 8 concurrent streaming clients doing the same work (R greedy requests), level 1 being
# the work done one request at a time (bench/serve_load.py). Bounded and self-stopping: the
# server is started on a free loopback port and killed at exit; the client has a timeout.
#   usage: bench/serve_load.sh [HSD]     env: PAIR=small|inflated (small), R (8 requests),
#          N (max_tokens, 32), LEVELS (1,2,4,8), ALGO (server default), K, KV (--kv-type), THREADS (2),
#          CLIP (prompt characters, 200), FLAGS (more `hsd serve` flags, e.g. --cost-k), OUT
set -euo pipefail
cd "$(dirname "$0")/.."
HSD=${1:-build/hsd}
M=${HSD_SHARED:-../shared}/models
PAIR=${PAIR:-small}
R=${R:-8}
N=${N:-32}
LEVELS=${LEVELS:-1,2,4,8}
THREADS=${THREADS:-2}
OUT=${OUT:-build/serve_load}
mkdir -p "$OUT"
case $PAIR in
small)
    ARGS=(--target "$M/stories260K/stories260K.bin" --target-tokenizer "$M/stories260K/tok512.bin"
          --draft "$M/babyllama-tok105/model5000.bin" --draft-tokenizer "$M/babyllama-tok105/tok105.bin") ;;
inflated)
    # bench/inflated.sh's pair: babyllama inflated to llama-3.2-1b (bf16) drafted by stories260K
    DIR=${INFLATED_DIR:-$(dirname "$HSD")/inflated}
    T=$DIR/babyllama-llama-3.2-1b-bf16.gguf
    mkdir -p "$DIR"
    [ -f "$T" ] || "$HSD" inflate --model "$M/babyllama-tok105/model5000.bin" \
        --tokenizer "$M/babyllama-tok105/tok105.bin" --shape llama-3.2-1b --dtype bf16 -o "$T"
    ARGS=(--target "$T" --target-tokenizer "$M/babyllama-tok105/tok105.bin"
          --draft "$M/stories260K/stories260K.bin" --draft-tokenizer "$M/stories260K/tok512.bin") ;;
*) echo "PAIR must be small or inflated" >&2; exit 2 ;;
esac
maxc=$(echo "$LEVELS" | tr ',' '\n' | sort -n | tail -1)
log=$OUT/server_$PAIR.log
"$HSD" serve "${ARGS[@]}" --port 0 --parallel "$maxc" --threads "$THREADS" ${ALGO:+--algo $ALGO} \
    ${K:+-k $K} ${KV:+--kv-type $KV} ${FLAGS:-} --queue 64 --timeout 900 >"$log" 2>&1 &
spid=$!
trap 'kill -9 $spid 2>/dev/null || true' EXIT
port=""
for _ in $(seq 1 600); do
    port=$(sed -n 's/.*listening on http:\/\/[0-9.]*:\([0-9]*\).*/\1/p' "$log" | head -1)
    [ -n "$port" ] && break
    kill -0 $spid 2>/dev/null || { cat "$log"; exit 1; }
    sleep 0.2
done
[ -n "$port" ] || { echo "server did not start"; cat "$log"; exit 1; }
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "start: $(date -u '+%F %T') UTC, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "pair: $PAIR; $(grep 'listening' "$log" | sed 's/.*model/model/')"
echo "work per level: $R streaming requests, prompts of ${CLIP:-200} characters, max_tokens $N (ignore_eos), temperature 0"
timeout 3600 python3 bench/serve_load.py "http://127.0.0.1:$port" --levels "$LEVELS" \
    --requests "$R" --max-tokens "$N" --clip "${CLIP:-200}" | tee "$OUT/load_$PAIR${TAG:+_$TAG}.txt"
kill -TERM $spid
wait $spid || true
echo "end: $(date -u '+%F %T') UTC, load $(cut -d' ' -f1-3 /proc/loadavg)"
