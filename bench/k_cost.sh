#!/usr/bin/env bash
# Cost-aware k (`hsd generate --cost-k`) against fixed k, SLEM on the inflated pair of
# bench/kquant_slem.sh (run that first: it writes the files), decode speed (tpot_ms of
# `hsd generate --json`). Per prompt and temperature, AR, then SLEM at each fixed k, then SLEM
# with --cost-k (its first round at k = KC0), back to back, so that the host's phases hit
# every configuration alike. Greedy texts must equal AR's.
#   usage: bench/k_cost.sh [BUILD_DIR]   (env: N (64), KS "3 6" (the fixed k), KC0 (4),
#          THREADS (2), DIR (/tmp/hsd-big/inf), TARGETS "q4_k_m q4_k_m_llama", DRAFT_DTYPE
#          (q4_k_m), TEMPS "0 1")
set -euo pipefail
build=${1:-build}
hsd=$build/hsd
SHARED=${HSD_SHARED:-../shared}
M=$SHARED/models
N=${N:-64} KS=${KS:-3 6} KC0=${KC0:-4} THREADS=${THREADS:-2} TEMPS=${TEMPS:-0 1}
DIR=${DIR:-/tmp/hsd-big/inf}
TARGETS=${TARGETS:-q4_k_m q4_k_m_llama}
DRAFT_DTYPE=${DRAFT_DTYPE:-q4_k_m}
BT=$M/babyllama-tok105/tok105.bin
S=$M/stories260K
D=$DIR/stories-smollm-$DRAFT_DTYPE.gguf
for tg in $TARGETS; do
    [ -f "$DIR/baby-l1b-$tg.gguf" ] || { echo "k_cost: $DIR/baby-l1b-$tg.gguf missing: run bench/kquant_slem.sh first" >&2; exit 1; }
done
[ -f "$D" ] || { echo "k_cost: $D missing: run bench/kquant_slem.sh with DRAFT_DTYPE=$DRAFT_DTYPE first" >&2; exit 1; }
# openings written for this benchmark: the first three are kquant_slem.sh's, the others new
prompts=("The old man walked to the river and" "Tom had a red ball. One day he"
         "It was a cold morning. Sara looked out of the window and saw"
         "Lily and her brother found a small box under the bed." "The sun was hot, so the dog"
         "Once there was a tiny frog who wanted to")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
field() { sed -e "s/.*\"$1\":\([^,}]*\).*/\1/" "$2"; }
echo "# $(date -u '+%F %T UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# N $N, fixed k: $KS, cost-k from k $KC0, threads $THREADS, drafter $D"
hdr="target        temp p  AR tpot"
for k in $KS; do hdr+=$(printf " %9s" "k=$k"); done
echo "$hdr   cost-k (mean k)   speedups: $(for k in $KS; do printf 'k=%s ' "$k"; done)cost-k"
for tg in $TARGETS; do
    T=$DIR/baby-l1b-$tg.gguf
    for temp in $TEMPS; do
        for i in "${!prompts[@]}"; do
            run() { # name, then hsd generate flags
                local name=$1
                shift
                "$hsd" generate --json --target "$T" --target-tokenizer "$BT" --draft "$D" \
                    --draft-tokenizer "$S/tok512.bin" --threads "$THREADS" --temp "$temp" --seed 1 \
                    -p "${prompts[$i]}" -n "$N" "$@" > "$tmp/$name.json"
            }
            run ar --algo ar
            for k in $KS; do run "k$k" --algo slem -k "$k"; done
            run kc --algo slem -k "$KC0" --cost-k
            a=$(field tpot_ms "$tmp/ar.json")
            line=$(printf "%-13s %-4s %-2s %7.1f" "$tg" "$temp" "$i" "$a")
            sp=""
            for x in $(for k in $KS; do echo "k$k"; done) kc; do
                t=$(field tpot_ms "$tmp/$x.json")
                [ "$x" = kc ] && line+=$(printf " %9.1f (%4.2f)" "$t" "$(field k_mean "$tmp/kc.json")") \
                              || line+=$(printf " %9.1f" "$t")
                sp+=$(awk -v a="$a" -v s="$t" 'BEGIN { printf " %5.2f", (s > 0 ? a / s : 0) }')
                if [ "$temp" = 0 ] && [ "$(field text "$tmp/ar.json")" != "$(field text "$tmp/$x.json")" ]; then
                    sp+="!DIFFERENT"
                fi
            done
            echo "$line  $sp"
        done
    done
done
echo "# end $(date -u '+%T UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
