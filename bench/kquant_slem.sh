#!/usr/bin/env bash
# SLEM vs AR decode speed (the tpot_ms of `hsd generate --json`: prefill excluded) on the
# inflated targets of issue 21: babyllama-tok105 inflated to llama-3.2-1b as BF16, as Q4_K_M
# written by `hsd inflate --dtype q4_k_m`, and as Q4_K_M quantised by llama.cpp from the BF16
# file; drafter stories260K inflated to smollm-135m (bf16). Greedy (texts must equal AR's) and
# temperature 1 (seed 1), AR and SLEM interleaved per prompt, on prompts not tuned on.
#   usage: bench/kquant_slem.sh [BUILD_DIR]   (env: N (64), K (6), THREADS (2), DIR, KERNELS
#          "amx" — HSD_MATMUL for hsd, TARGETS "bf16 q4_k_m q4_k_m_llama", DRAFT_DTYPE bf16: the
#          drafter's inflated weight type — a quantised target is cheap enough that a BF16
#          drafter's k forwards dominate the round), FLAGS: more `hsd generate` flags for SLEM
#          (e.g. --cost-k: K is then the first round's k)
set -euo pipefail
build=${1:-build}
hsd=$build/hsd
SHARED=${HSD_SHARED:-../shared}
M=$SHARED/models
N=${N:-64} K=${K:-6} THREADS=${THREADS:-2}
DIR=${DIR:-/tmp/hsd-big/inf}
TARGETS=${TARGETS:-bf16 q4_k_m q4_k_m_llama}
BT=$M/babyllama-tok105/tok105.bin
S=$M/stories260K
mkdir -p "$DIR"
for dt in bf16 q4_k_m; do
    f=$DIR/baby-l1b-$dt.gguf
    [ -f "$f" ] || "$hsd" inflate --model "$M/babyllama-tok105/model5000.bin" --tokenizer "$BT" \
        --shape llama-3.2-1b --dtype "$dt" -o "$f" >/dev/null
done
if [[ " $TARGETS " == *" q4_k_m_llama "* && ! -f $DIR/baby-l1b-q4_k_m_llama.gguf ]]; then
    "$build/llama_oracle" quantize "$DIR/baby-l1b-bf16.gguf" "$DIR/baby-l1b-q4_k_m_llama.gguf" Q4_K_M >/dev/null
fi
DRAFT_DTYPE=${DRAFT_DTYPE:-bf16}
D=$DIR/stories-smollm-$DRAFT_DTYPE.gguf
[ -f "$D" ] || "$hsd" inflate --model "$S/stories260K.bin" --tokenizer "$S/tok512.bin" \
    --shape smollm-135m --dtype "$DRAFT_DTYPE" -o "$D" >/dev/null
# TinyStories-style openings written for this benchmark (none tuned on: tau varies by prompt)
prompts=("The old man walked to the river and" "Tom had a red ball. One day he" \
         "It was a cold morning. Sara looked out of the window and saw")
echo "# $(date -u '+%F %T UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# N $N, k $K, threads $THREADS, HSD_MATMUL=${KERNELS:-default}, flags ${FLAGS:-none}, drafter $D"
printf "%-13s %-5s %-3s %9s %9s %7s %6s %6s %s\n" target temp p "AR tpot" "SLEM tpot" speedup tau "mean k" text
field() { sed -e "s/.*\"$1\":\([^,}]*\).*/\1/" "$2"; }
for tg in $TARGETS; do
    T=$DIR/baby-l1b-$tg.gguf
    for temp in 0 1; do
        for i in "${!prompts[@]}"; do
            for algo in ar slem; do
                HSD_MATMUL=${KERNELS:-} "$hsd" generate --json --target "$T" --target-tokenizer "$BT" \
                    --draft "$D" --draft-tokenizer "$S/tok512.bin" --algo "$algo" -k "$K" ${FLAGS:-} \
                    --threads "$THREADS" --temp "$temp" --seed 1 -p "${prompts[$i]}" -n "$N" > "$DIR/$algo.json"
            done
            a=$(field tpot_ms "$DIR/ar.json") s=$(field tpot_ms "$DIR/slem.json") tau=$(field tau "$DIR/slem.json") km=$(field k_mean "$DIR/slem.json")
            same=-
            if [ "$temp" = 0 ]; then
                same=same
                [ "$(field text "$DIR/ar.json")" = "$(field text "$DIR/slem.json")" ] || same=DIFFERENT
            fi
            printf "%-13s %-5s %-3s %9.1f %9.1f %7.2f %6.2f %6.2f %s\n" "$tg" "$temp" "$i" "$a" "$s" \
                "$(awk -v a="$a" -v s="$s" 'BEGIN { print (s > 0 ? a / s : 0) }')" "$tau" "$km" "$same"
            [ "$temp" = 0 ] && echo "    text: $(field text "$DIR/ar.json")"
        done
    done
done
echo "# end $(date -u '+%T UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
