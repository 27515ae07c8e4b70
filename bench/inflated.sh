#!/usr/bin/env bash
# The inflated-pair benchmark (issue 12): speculative decoding where the target's forward is
# memory-bound, as a 1B model's is on a CPU.
#   target  = babyllama-tok105 inflated to llama-3.2-1b (bf16, 1.9 GB; `hsd inflate`)
#   drafter = stories260K as it is, and inflated to smollm-135m (bf16, 213 MB; ~9x cheaper)
# Runs `hsd bench generate` (SLEM, TLI, union, SLRS, AR; greedy and temperature 1; fixed and
# adaptive k; both directions for the trained drafter) and writes Markdown tables (with the
# cost model's prediction next to each measurement) and SVGs under OUT. First checks, when
# llama.cpp is installed (scripts/install_llama_cpp.sh, or HSD_LLAMA_CPP=dir), that llama.cpp
# loads the inflated GGUFs and its greedy ids equal hsd's.
#   usage: bench/inflated.sh [HSD]   (env: N tokens (64), PROMPTS per set (1), K (4), OUT,
#          THREADS (2), CLIP characters of each prompt (100), PARTS "check a r b c")
# Files go to build/inflated. Under a load of ~9 on 2 cores with the pre-issue-12 kernels,
# N=32 took 27 min (10 min of CPU); on a quiet machine with the fast kernels expect ~5-8 min
# at N=64 (N=32 to halve the decoding part).
set -euo pipefail
HSD=${1:-build/hsd}
SHARED=${HSD_SHARED:-../shared}
M=$SHARED/models
N=${N:-64}
PROMPTS=${PROMPTS:-1}
K=${K:-4}
THREADS=${THREADS:-2}
CLIP=${CLIP:-100}
PARTS=${PARTS:-"check a r b c"}
DIR=${INFLATED_DIR:-$(dirname "$HSD")/inflated}
OUT=${OUT:-$DIR/bench}
TARGET=$DIR/babyllama-llama-3.2-1b-bf16.gguf
DRAFT_BIG=$DIR/stories260K-smollm-135m-bf16.gguf
BT=$M/babyllama-tok105/tok105.bin
S=$M/stories260K
mkdir -p "$DIR" "$OUT"
[ -f "$TARGET" ] || "$HSD" inflate --model "$M/babyllama-tok105/model5000.bin" --tokenizer "$BT" \
    --shape llama-3.2-1b --dtype bf16 -o "$TARGET"
[ -f "$DRAFT_BIG" ] || "$HSD" inflate --model "$S/stories260K.bin" --tokenizer "$S/tok512.bin" \
    --shape smollm-135m --dtype bf16 -o "$DRAFT_BIG"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "start: $(date -u '+%F %T') UTC, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "target: $TARGET ($(du -m "$TARGET" | cut -f1) MB), drafters: $S/stories260K.bin, $DRAFT_BIG ($(du -m "$DRAFT_BIG" | cut -f1) MB)"

status=0
# --- llama.cpp: loads the inflated files, same greedy ids as hsd ------------------------------
if [[ " $PARTS " == *" check "* ]]; then
    LL=${HSD_LLAMA_CPP:-.deps/llama.cpp}
    if [ -f "$LL/VERSION" ] && [ -d "$LL/lib" ]; then
        chk=$OUT/inflated_llama_check
        cc -O2 -I"$LL/include" bench/inflated_llama_check.c -o "$chk" -L"$LL/lib" -lllama -lggml \
            -lggml-base -Wl,-rpath,"$(cd "$LL/lib" && pwd)"
        echo
        echo "== llama.cpp ($(cat "$LL/VERSION")) on the inflated files, greedy, 16 tokens"
        prompt="Once upon a time, there was a"
        for spec in "$TARGET|$BT" "$DRAFT_BIG|$S/tok512.bin"; do
            IFS='|' read -r model tok <<< "$spec"
            # the ids hsd generate feeds the model: BOS (1 in both llama2.c vocabularies), then
            # the prompt as hsd tokenize encodes it
            ids=1,$("$HSD" tokenize -t "$tok" "$prompt" | sed -n 's/^ids: //p' | tr ' ' ',')
            ll=$("$chk" "$(cd "$LL/lib" && pwd)" "$model" "$ids" 16 | sed -n 's/^ids //p')
            hs=$("$HSD" generate --model "$model" --tokenizer "$tok" -p "$prompt" -n 16 --temp 0 \
                --json | grep -o '"ids":\[[^]]*\]' | tr -d '"ids:[]' | tr ',' ' ')
            verdict="equal"
            [ "$ll" = "$hs" ] || { verdict="DIFFERENT"; status=1; }
            echo "$(basename "$model"): llama.cpp [$ll] hsd [$hs]: $verdict"
        done
    else
        echo "skipped the llama.cpp check: llama.cpp not installed; run scripts/install_llama_cpp.sh"
    fi
fi

common=(--target-tokenizer "$BT" --prompts bench/prompts/summarization.jsonl
        --prompts bench/prompts/code.jsonl --max-prompts "$PROMPTS" --clip "$CLIP" -n "$N" -k "$K"
        --threads "$THREADS" --temps 0,1)
# --- a: trained drafter, every algorithm, fixed k ---------------------------------------------
if [[ " $PARTS " == *" a "* ]]; then
    echo
    echo "== a: target inflated babyllama (1B cost), drafter stories260K, k = $K"
    "$HSD" bench generate --target "$TARGET" --draft "$S/stories260K.bin" --draft-tokenizer "$S/tok512.bin" \
        "${common[@]}" --algos ar,union,tli,slem,slrs \
        --results-md "$OUT/a_trained_drafter.md" --svg "$OUT/a_trained_drafter.svg"
fi
# --- r: the other direction (stories260K as target, the 1B-cost model drafting: no speedup
# is possible, it checks the algorithms both ways); a run of its own so that each SVG has one
# scale (one plot over both would flatten the 1B target's bars against stories260K's AR)
if [[ " $PARTS " == *" r "* ]]; then
    echo
    echo "== r: reverse direction: target stories260K, drafter the inflated babyllama, k = $K"
    "$HSD" bench generate --target "$S/stories260K.bin" --target-tokenizer "$S/tok512.bin" \
        --draft "$TARGET" --draft-tokenizer "$BT" "${common[@]:2}" --algos ar,union,tli,slem,slrs \
        --results-md "$OUT/r_reverse.md" --svg "$OUT/r_reverse.svg"
fi
# --- b: the same pair with adaptive k -----------------------------------------------------------
if [[ " $PARTS " == *" b "* ]]; then
    echo
    echo "== b: same pair, adaptive k (start $K)"
    "$HSD" bench generate --target "$TARGET" --draft "$S/stories260K.bin" --draft-tokenizer "$S/tok512.bin" \
        "${common[@]}" --algos ar,tli,slem --adaptive-k \
        --results-md "$OUT/b_adaptive_k.md" --svg "$OUT/b_adaptive_k.svg"
fi
# --- c: realistic drafter cost (stories260K inflated to smollm-135m) --------------------------
if [[ " $PARTS " == *" c "* ]]; then
    echo
    echo "== c: target inflated babyllama, drafter stories260K inflated to smollm-135m, k = $K"
    "$HSD" bench generate --target "$TARGET" --draft "$DRAFT_BIG" --draft-tokenizer "$S/tok512.bin" \
        "${common[@]}" --algos ar,tli,slem,slrs \
        --results-md "$OUT/c_realistic_drafter.md" --svg "$OUT/c_realistic_drafter.svg"
fi
echo
echo "end: $(date -u '+%F %T') UTC, load $(cut -d' ' -f1-3 /proc/loadavg); tables and SVGs in $OUT"
exit $status
