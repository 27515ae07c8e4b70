#!/usr/bin/env bash
# Installs the Debian packages hsd needs to build and test. Idempotent: does nothing when
# everything is present. Called by `make` and `.ci/run`, so a fresh machine needs no setup.
# `--ci` adds what CI needs beyond the build, when its command is missing (node and npm often
# come from elsewhere than Debian, and Debian's npm package then conflicts): jq (fuzz seeds),
# node + npm (the pinned llama.cpp oracle, the HF tokenizers oracle and the Unicode table
# check). python3-jinja2 is the chat-template oracle (tests/oracle/chat_ref.py).
set -euo pipefail
pkgs="cmake make gcc clang pkg-config libpcre2-dev libutf8proc-dev libxxhash-dev libcmocka-dev
      libjansson-dev libopenblas-dev libicu-dev libmicrohttpd-dev curl python3 python3-jinja2"
if [ "${1:-}" = --ci ]; then
    command -v jq >/dev/null || pkgs="$pkgs jq"
    command -v npm >/dev/null || pkgs="$pkgs nodejs npm"
fi
missing=()
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "bootstrap: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
