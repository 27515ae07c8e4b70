#!/usr/bin/env bash
# forward(1) tokens/s of hsd vs llama.cpp v0.5.0 on the same GGUF file at the llama-3.2-1b
# shape (random weights: hsd synth, bf16), quantised by llama.cpp to Q4_K_M and Q8_0; both
# on THREADS threads, interleaved ROUNDS times so that machine load hits both alike.
# Besides wall-clock tokens/s it reports CPU ms per token (user+sys of a run with 2*TOKENS
# forwards minus one with TOKENS, so loading and warm-up cancel): on a shared machine wall
# time measures the scheduler, CPU time the code (llama.cpp's spinning thread barrier counts
# as CPU on THREADS > 1).
#
#   bench/gguf_quant_speed.sh [BUILD_DIR] [WORK_DIR]     (defaults: build, /tmp/hsd-big/quant)
#   env: ROUNDS (3), TOKENS per llama.cpp round (32), THREADS (2), TYPES ("Q4_K_M Q8_0")
#
# Needs the llama.cpp oracle tool (built when scripts/install_llama_cpp.sh has run); ~4 GB of
# disk in WORK_DIR (bf16 source 2.5 GB, Q4_K_M 0.8 GB, Q8_0 1.3 GB). Exit 77 = skipped.
set -euo pipefail
build=${1:-build}
work=${2:-/tmp/hsd-big/quant}
rounds=${ROUNDS:-3}
tokens=${TOKENS:-32}
threads=${THREADS:-2}
types=${TYPES:-Q4_K_M Q8_0}
hsd=$build/hsd
oracle=$build/llama_oracle
if [ ! -x "$oracle" ]; then
    echo "skipped: llama.cpp not installed; run scripts/install_llama_cpp.sh (then re-run cmake)"
    exit 77
fi
mkdir -p "$work"
src=$work/l1b-bf16/model.gguf
[ -f "$src" ] || "$hsd" synth --shape llama-3.2-1b --format gguf --dtype bf16 -o "$work/l1b-bf16" >/dev/null
echo "# $(date -u '+%F %T') UTC, $(nproc) cpus, $(uptime | sed 's/.*load/load/')"
tmpf=$(mktemp)
trap 'rm -f "$tmpf"' EXIT
cpu() { /usr/bin/time -f "%U %S" -o "$tmpf" "$@" >/dev/null 2>&1; awk '{ print $1 + $2 }' "$tmpf"; }
printf '%-8s %5s %10s %12s %8s %14s %16s %8s\n' type round hsd_tok_s llama_tok_s ratio \
    hsd_cpu_ms_tok llama_cpu_ms_tok ratio
for t in $types; do
    f=$work/l1b-$t.gguf
    [ -f "$f" ] || "$oracle" quantize "$src" "$f" "$t"
    for r in $(seq 1 "$rounds"); do
        h=$("$hsd" bench forward --model "$f" --n 1 --threads "$threads" --reps "$tokens" 2>/dev/null |
            awk '$1 == 1 && NF >= 3 { printf "%.3f", 1000 / $3 }')
        l=$("$oracle" bench "$f" "$tokens" "$threads" | awk '{ print $2 }')
        h1=$(cpu "$hsd" bench forward --model "$f" --n 1 --threads "$threads" --reps "$tokens" --prefix 1)
        h2=$(cpu "$hsd" bench forward --model "$f" --n 1 --threads "$threads" --reps $((2 * tokens)) --prefix 1)
        l1=$(cpu "$oracle" bench "$f" "$tokens" "$threads")
        l2=$(cpu "$oracle" bench "$f" $((2 * tokens)) "$threads")
        hc=$(echo "($h2 - $h1) * 1000 / $tokens" | bc -l)
        lc=$(echo "($l2 - $l1) * 1000 / $tokens" | bc -l)
        printf '%-8s %5d %10s %12s %8.2f %14.1f %16.1f %8.2f\n' "$t" "$r" "$h" "$l" \
            "$(echo "$h / $l" | bc -l)" "$hc" "$lc" "$(echo "$lc / $hc" | bc -l)"
    done
done
echo "# end $(uptime | sed 's/.*load/load/')"
