#!/usr/bin/env bash
# Installs the tokenizer oracle, HF `tokenizers` 0.23.2 (npm, a Rust native addon, pinned by the
# package-lock.json in $HSD_SHARED/tools), into DEST (default .deps/hf-tokenizers under the repo),
# for tests that encode text the oracle way at run time (tests/test_chat_generate.c: the rendered
# chat prompt, add_special_tokens off). They skip, naming this script, without it.
#   scripts/install_hf_tokenizers.sh [DEST]
# Idempotent: a DEST holding the pinned version is left as it is. Nothing of it is committed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${HSD_SHARED:-$root/../shared}
dest=${1:-$root/.deps/hf-tokenizers}
if [ -f "$dest/node_modules/tokenizers/package.json" ] &&
   grep -q '"version": "0.23.2"' "$dest/node_modules/tokenizers/package.json"; then
    echo "tokenizers 0.23.2 already in $dest"
    exit 0
fi
command -v npm >/dev/null || { echo "install_hf_tokenizers: npm not found (apt-get install npm)" >&2; exit 1; }
[ -f "$shared/tools/package-lock.json" ] || { echo "install_hf_tokenizers: $shared/tools/package-lock.json missing" >&2; exit 1; }
mkdir -p "$dest"
cp "$shared/tools/package.json" "$shared/tools/package-lock.json" "$dest/"
( cd "$dest" && npm ci --silent --no-audit --no-fund )
echo "tokenizers 0.23.2 installed in $dest"
