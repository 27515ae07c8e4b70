#!/usr/bin/env bash
# Installs the official OpenAI SDK for JavaScript (npm `openai`), pinned, into a repo-local
# directory: the real client that tests/server/openai_sdk.mjs drives `hsd serve` with.
# 5.23.2 is the last line that runs on Node 20 (6.x and later need Node >= 22).
#
#   scripts/install_openai_sdk.sh [DEST]     (default: .deps/openai under the repo)
#
# Idempotent: a DEST whose VERSION matches is left as it is. Nothing of it is committed.
set -euo pipefail
VERSION=5.23.2
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-${HSD_OPENAI_SDK:-$root/.deps/openai}}
if [ -f "$dest/VERSION" ] && [ "$(cat "$dest/VERSION")" = "openai@$VERSION" ]; then
    echo "openai@$VERSION already in $dest"
    exit 0
fi
command -v npm >/dev/null || { echo "install_openai_sdk: npm not found (apt-get install nodejs npm)" >&2; exit 1; }
mkdir -p "$dest"
npm install --silent --no-audit --no-fund --prefix "$dest" "openai@$VERSION" >/dev/null
echo "openai@$VERSION" >"$dest/VERSION"
echo "openai@$VERSION installed in $dest"
