#!/usr/bin/env bash
# `make demo`: the README's main job — heterogeneous speculative decoding on the real pair in
# ../shared/models: babyllama (character-level tok105) as target, stories260K (512-token BPE)
# as drafter, with SLEM and TLI; then AR for reference. Greedy outputs are identical.
set -euo pipefail
HSD=${1:-build/hsd}
SHARED=${HSD_SHARED:-../shared}
M=$SHARED/models
for f in "$M/babyllama-tok105/model5000.bin" "$M/babyllama-tok105/tok105.bin" \
         "$M/stories260K/stories260K.bin" "$M/stories260K/tok512.bin"; do
    [ -f "$f" ] || { echo "demo: missing $f (set HSD_SHARED to the shared directory)" >&2; exit 1; }
done
PROMPT=${PROMPT:-"Once upon a time, there was a little dog named Max. Max liked to"}
pair=(--target "$M/babyllama-tok105/model5000.bin" --target-tokenizer "$M/babyllama-tok105/tok105.bin"
      --draft "$M/stories260K/stories260K.bin" --draft-tokenizer "$M/stories260K/tok512.bin")
echo "== tokenizers: the same text seen by the two vocabularies"
"$HSD" tokenize -t "$M/stories260K/tok512.bin" "$PROMPT" | sed -n 2p
"$HSD" tokenize -t "$M/babyllama-tok105/tok105.bin" "$PROMPT" | sed -n 2p
for algo in slem tli ar; do
    echo
    echo "== $algo: target babyllama (tok105), drafter stories260K (tok512), greedy, 120 tokens"
    "$HSD" generate "${pair[@]}" --algo "$algo" -k 6 -p "$PROMPT" -n 120
done
echo
echo "== slem at temperature 1 (seed 7)"
"$HSD" generate "${pair[@]}" --algo slem -k 6 -p "$PROMPT" -n 120 --temp 1 --seed 7
