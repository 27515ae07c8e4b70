#!/usr/bin/env bash
# Open crashes in models/ found by the fuzzers (docs/FUZZING.md, "Open"). The llama2.c one is a
# 1-byte patch of the shared stories260K.bin, so it is generated here rather than stored.
# Usage: fuzz/known/make_repros.sh SHARED_DIR OUT_DIR; then e.g.
#   build-fuzz/fuzz_model_llama2c OUT_DIR/stories260K-hidden-dim-3.bin
set -euo pipefail
shared=$1 out=$2
mkdir -p "$out"
f="$out/stories260K-hidden-dim-3.bin"
cp "$shared/models/stories260K/stories260K.bin" "$f"
chmod u+w "$f"
printf '\003' | dd of="$f" bs=1 seek=4 conv=notrunc status=none # header hidden_dim 172 -> 3
