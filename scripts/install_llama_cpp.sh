#!/usr/bin/env bash
# Installs llama.cpp release v0.5.0 — the peer and oracle hsd is measured and checked against —
# from the npm registry, pinned: @node-llama-cpp/linux-x64@3.22.1 ships the prebuilt libraries
# (libllama, libggml*, one libggml-cpu-* per CPU family, picked by ggml at run time), and
# node-llama-cpp@3.22.1 carries a git bundle of the llama.cpp source of that release, from which
# only the public headers are taken. Nothing is built; nothing of it is committed.
#
#   scripts/install_llama_cpp.sh [DEST]     (default: .deps/llama.cpp under the repo)
#
# Result: DEST/lib/*.so, DEST/include/{llama.h,ggml*.h,gguf.h}, DEST/VERSION.
# Idempotent: a DEST whose VERSION matches is left as it is. Used by bench/peer, the llama.cpp
# oracle tests (they skip, naming this script, when DEST is missing) and by .ci/run.
set -euo pipefail
PKG_VERSION=3.22.1
RELEASE=v0.5.0
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-${HSD_LLAMA_CPP:-$root/.deps/llama.cpp}}
stamp="npm @node-llama-cpp/linux-x64@$PKG_VERSION llama.cpp $RELEASE"
if [ -f "$dest/VERSION" ] && [ "$(cat "$dest/VERSION")" = "$stamp" ]; then
    echo "llama.cpp $RELEASE already in $dest"
    exit 0
fi
case "$(uname -m)" in x86_64) ;; *) echo "install_llama_cpp: only linux-x64 binaries are pinned (this is $(uname -m))" >&2; exit 1 ;; esac
command -v npm >/dev/null || { echo "install_llama_cpp: npm not found (apt-get install npm)" >&2; exit 1; }
command -v git >/dev/null || { echo "install_llama_cpp: git not found (apt-get install git)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
( cd "$tmp" && npm pack --silent "@node-llama-cpp/linux-x64@$PKG_VERSION" "node-llama-cpp@$PKG_VERSION" >/dev/null )
mkdir -p "$tmp/bin" "$tmp/src"
tar xzf "$tmp/node-llama-cpp-linux-x64-$PKG_VERSION.tgz" -C "$tmp/bin"
tar xzf "$tmp/node-llama-cpp-$PKG_VERSION.tgz" -C "$tmp/src" package/llama/gitRelease.bundle \
    package/llama/binariesGithubRelease.json
grep -q "\"$RELEASE\"" "$tmp/src/package/llama/binariesGithubRelease.json" ||
    { echo "install_llama_cpp: node-llama-cpp@$PKG_VERSION is not llama.cpp $RELEASE" >&2; exit 1; }
git clone -q --no-checkout "$tmp/src/package/llama/gitRelease.bundle" "$tmp/repo"
rm -rf "$dest.new" && mkdir -p "$dest.new/lib" "$dest.new/include"
cp "$tmp"/bin/package/bins/linux-x64/*.so "$dest.new/lib/"
# The libraries' SONAMEs are libllama.v0.5.0.so / libggml.v0.5.0.so: plain names for -lllama.
ln -s libllama.v0.5.0.so "$dest.new/lib/libllama.so"
ln -s libggml.v0.5.0.so "$dest.new/lib/libggml.so"
for h in include/llama.h ggml/include/ggml.h ggml/include/ggml-backend.h ggml/include/ggml-alloc.h \
         ggml/include/ggml-cpu.h ggml/include/ggml-opt.h ggml/include/gguf.h; do
    git -C "$tmp/repo" show "HEAD:$h" > "$dest.new/include/$(basename "$h")"
done
echo "$stamp" > "$dest.new/VERSION"
rm -rf "$dest" && mv "$dest.new" "$dest"
echo "llama.cpp $RELEASE installed in $dest"
