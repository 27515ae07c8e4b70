#!/usr/bin/env bash
# `make demo`: the README's main job. Until the decoding engine exists it tokenizes and
# detokenizes sample text with two tokenizer families and shows the token boundaries.
set -euo pipefail
HSD=${1:-build/hsd}
SHARED=${HSD_SHARED:-../shared}
text='Speculative decoding: a drafter guesses, the target verifies — naïve café, 東京, 🙂.'
for fam in llama3 gemma3; do
    tj="$SHARED/tokenizers/$fam/tokenizer.json"
    [ -f "$tj" ] || { echo "demo: missing $tj (set HSD_SHARED)" >&2; exit 1; }
    echo "== $fam"
    "$HSD" tokenize -t "$tj" "$text"
done
