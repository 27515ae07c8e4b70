#!/usr/bin/env bash
# `make demo`: speculative decoding where it pays — a target whose forward costs what a 1B
# model's costs, with a drafter that is right often. No such trained pair can be fetched here,
# so the trained babyllama (tok105) is *inflated* to the Llama-3.2-1B shape (`hsd inflate`:
# zero-padded, same outputs, 1.9 GB of bf16 weights the CPU must read per forward) and
# stories260K (tok512, a different vocabulary) drafts for it, as it is and inflated to the
# SmolLM-135M shape (~9x cheaper than the target: a realistic drafter cost). The inflated files
# are written under the build directory on first use (about 2.8 GB, ~25 s), never committed.
# The same target is also written as Q4_K_M (`hsd inflate --dtype q4_k_m`, 0.6 GB: the file
# type llama.cpp users hold) and run beside the BF16 one, with the drafter in Q4_K_M too (74
# MB): someone who quantises the target quantises the drafter, and a 576-wide drafter's Q4_K_M
# file is mostly Q5_0 (llama.cpp's fallback where 256-column blocks do not fit), as hsd
# inflate writes it.
# Prints AR and SLEM (greedy) text, tokens/s and the speedup; the greedy texts must be equal.
set -euo pipefail
HSD=${1:-build/hsd}
SHARED=${HSD_SHARED:-../shared}
M=$SHARED/models
N=${N:-64}
for f in "$M/babyllama-tok105/model5000.bin" "$M/babyllama-tok105/tok105.bin" \
         "$M/stories260K/stories260K.bin" "$M/stories260K/tok512.bin"; do
    [ -f "$f" ] || { echo "demo: missing $f (set HSD_SHARED to the shared directory)" >&2; exit 1; }
done
DIR=${INFLATED_DIR:-$(dirname "$HSD")/inflated}
TARGET=$DIR/babyllama-llama-3.2-1b-bf16.gguf
TARGET_Q4=$DIR/babyllama-llama-3.2-1b-q4_k_m.gguf
DRAFT_BIG=$DIR/stories260K-smollm-135m-bf16.gguf
DRAFT_Q4=$DIR/stories260K-smollm-135m-q4_k_m.gguf
mkdir -p "$DIR"
inflated=0
if [ ! -f "$TARGET" ]; then
    inflated=1
    echo "== first run: inflating babyllama to the llama-3.2-1b shape (1.9 GB in $DIR)"
    "$HSD" inflate --model "$M/babyllama-tok105/model5000.bin" --tokenizer "$M/babyllama-tok105/tok105.bin" --shape llama-3.2-1b --dtype bf16 -o "$TARGET"
fi
if [ ! -f "$TARGET_Q4" ]; then
    inflated=1
    echo "== first run: inflating babyllama to the llama-3.2-1b shape as Q4_K_M (0.6 GB in $DIR)"
    "$HSD" inflate --model "$M/babyllama-tok105/model5000.bin" --tokenizer "$M/babyllama-tok105/tok105.bin" --shape llama-3.2-1b --dtype q4_k_m -o "$TARGET_Q4"
fi
if [ ! -f "$DRAFT_BIG" ]; then
    inflated=1
    echo "== first run: inflating stories260K to the smollm-135m shape (213 MB in $DIR)"
    "$HSD" inflate --model "$M/stories260K/stories260K.bin" --tokenizer "$M/stories260K/tok512.bin" --shape smollm-135m --dtype bf16 -o "$DRAFT_BIG"
fi
if [ ! -f "$DRAFT_Q4" ]; then
    inflated=1
    echo "== first run: inflating stories260K to the smollm-135m shape as Q4_K_M (74 MB in $DIR)"
    "$HSD" inflate --model "$M/stories260K/stories260K.bin" --tokenizer "$M/stories260K/tok512.bin" --shape smollm-135m --dtype q4_k_m -o "$DRAFT_Q4"
fi
# the files just written are still being flushed to disk: finish that before anything is
# timed, so the kernel's writeback does not run beside the first measurements
[ "$inflated" = 1 ] && sync
PROMPT=${PROMPT:-"Once upon a time, there was a little dog named Max. Max liked to"}
echo
echo "target: babyllama-tok105 (0.9M trained parameters, character-level vocabulary of 105)"
echo "        inflated to Llama-3.2-1B's shape (d 2048, 16 layers, 32/8 heads, FFN 8192; 0.97B"
echo "        parameters, 1.9 GB bf16): it writes what babyllama writes, at the cost of a 1B model"
echo "drafter: stories260K (0.26M parameters, 512-token BPE vocabulary: heterogeneous pair)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tps() { awk '/^acceptance rate/ { for (i = 1; i <= NF; i++) if ($i == "tokens/s") print $(i - 1) }' "$1"; }
tpot() { awk '/^TTFT/ { for (i = 1; i <= NF; i++) if ($i == "TPOT") print $(i + 1) }' "$1"; }
text() { awk '/^algo / { exit } { print }' "$1" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}'; }
run() { # name, drafter model, drafter tokenizer, algo, extra args...
    local name=$1 dm=$2 dtok=$3 algo=$4
    shift 4
    local t0 t1
    t0=$(date +%s.%N)
    "$HSD" generate --target "${TGT:-$TARGET}" --target-tokenizer "$M/babyllama-tok105/tok105.bin" \
        --draft "$dm" --draft-tokenizer "$dtok" --algo "$algo" -k "${K:-6}" ${FLAGS:-} -p "$PROMPT" -n "$N" "$@" \
        > "$tmp/$name.out"
    t1=$(date +%s.%N)
    echo "$t0 $t1" | awk '{ printf "%.2f\n", $2 - $1 }' > "$tmp/$name.wall"
}
show() {
    echo
    echo "== $2"
    echo "prompt:    $PROMPT"
    echo "generated: $(text "$tmp/$1.out")"
    grep -E '^acceptance rate' "$tmp/$1.out"
    echo "$(tps "$tmp/$1.out") tokens/s, $(cat "$tmp/$1.wall") s wall (load and prefill included)"
}
S=$M/stories260K
run ar "$S/stories260K.bin" "$S/tok512.bin" ar
show ar "AR: the inflated target alone, greedy, $N tokens"
run slem "$S/stories260K.bin" "$S/tok512.bin" slem
show slem "SLEM: drafter stories260K, greedy, $N tokens"
run slem_big "$DRAFT_BIG" "$S/tok512.bin" slem
show slem_big "SLEM: drafter stories260K inflated to smollm-135m (realistic drafter cost), greedy"
TGT=$TARGET_Q4 run ar_q4 "$S/stories260K.bin" "$S/tok512.bin" ar
show ar_q4 "AR: the Q4_K_M target alone, greedy, $N tokens"
TGT=$TARGET_Q4 run slem_q4 "$DRAFT_Q4" "$S/tok512.bin" slem
show slem_q4 "SLEM on the Q4_K_M target: drafter stories260K inflated to smollm-135m in Q4_K_M, greedy"

echo
echo "== summary (greedy, $N tokens, $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg))"
for r in slem slem_big slem_q4; do
    base=ar
    [ "$r" = slem_q4 ] && base=ar_q4
    ar=$(tps "$tmp/$base.out")
    same=identical
    [ "$(text "$tmp/$base.out")" = "$(text "$tmp/$r.out")" ] || same="DIFFERENT from AR"
    awk -v a="$ar" -v s="$(tps "$tmp/$r.out")" -v n="$r" -v t="$same" -v b="$base" \
        -v pa="$(tpot "$tmp/$base.out")" -v ps="$(tpot "$tmp/$r.out")" \
        'BEGIN { printf "%-9s %8.2f tokens/s vs %-5s %8.2f: speedup %.2fx (decode alone, TPOT %.1f vs %.1f ms: %.2fx), text %s\n", n, s, b, a, s / a, ps, pa, pa / ps, t }'
done
echo "(tokens/s: the whole request, prefill and first round included; decode alone: the time per"
echo " token after the first, as hsd generate --json's tpot_ms)"
q4same=identical
[ "$(text "$tmp/ar.out")" = "$(text "$tmp/ar_q4.out")" ] || q4same="different (quantisation)"
echo "Q4_K_M target's greedy text vs the BF16 target's: $q4same"
