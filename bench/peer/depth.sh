#!/usr/bin/env bash
# Decode cost at context depth: one forward of 1 new token after a cached prefix of each
# depth (hsd bench forward --prefix 32,512,2048 / bench/peer/llama_forward.c, the same method,
# the cache extended from one depth to the next), hsd with each KV cache type and llama.cpp
# (v0.5.0, its defaults: F16 KV; with q8_0 / q4_0 in --kv also its Q8_0 / Q4_0 K/V caches,
# flash attention on) on the SAME GGUF, the tools alternating per model.
#
#   bench/peer/depth.sh [--build DIR] [--base DIR] [--threads 2] [--depths 32,512,2048]
#                       [--kv "f16 f32"] [--interleave] MODEL.gguf...
#
# --interleave: each tool keeps every depth in its own sequence and times them in turn, round
# by round (hsd bench forward --interleave, llama_forward --interleave), and last/first is the
# median of the per-round ratios: a shared host's drift then reaches every depth alike (not
# --base, whose older build lacks it).
# --base DIR: also an older build's hsd (DIR/hsd) for before/after. Prints the CPU, the load
# before each run (the machine may be shared), per model and tool ms/token at each depth and
# decode(last)/decode(first). A bench tool, not part of `make test`.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build base="" threads=2 depths=32,512,2048 kvs="f16 f32" inter=""
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --depths) depths=$2; shift 2 ;;
    --kv) kvs=$2; shift 2 ;;
    --interleave) inter=--interleave; shift ;;
    -*) sed -n '2,17p' "$0" >&2; exit 2 ;;
    *) break ;;
    esac
done
[ $# -gt 0 ] || { sed -n '2,17p' "$0" >&2; exit 2; }
[ -z "$inter" ] || [ -z "$base" ] || { echo "depth.sh: --interleave takes no --base (an older build lacks it)" >&2; exit 2; }
llama=${HSD_LLAMA_CPP:-$root/.deps/llama.cpp}
[ -f "$llama/VERSION" ] || "$root/scripts/install_llama_cpp.sh" "$llama"
driver=$build/llama_forward
cc -O2 -Wall -Wextra -Werror -I"$llama/include" "$root/bench/peer/llama_forward.c" \
    -L"$llama/lib" -lllama -lggml -lggml-base -Wl,-rpath,"$llama/lib" -o "$driver"
export LLAMA_LIB_DIR=$llama/lib
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "# decode at depth $depths, $threads threads, $(date -u '+%F %T UTC'), commit $(git -C "$root" rev-parse --short HEAD)"
echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cpus; llama.cpp $(cat "$llama/VERSION")"
# rows "prefix P" then "1 ms ms/token ratio": ms/token per depth, in order; interleaved: rows
# "depth ms ms/token ratio" (the ratio the per-round median against the first depth)
rows() {
    if [ -n "$inter" ]; then awk 'NF == 4 && $4 ~ /x$/ && $1 ~ /^[0-9]+$/ {sub(/x$/, "", $4); printf "%s %.2f %s\n", $1, $2, $4}' "$1"
    else awk '/^prefix/ {p = $2} $1 == 1 && NF == 4 {printf "%s %.2f\n", p, $2}' "$1"; fi
}
for model in "$@"; do
    echo
    echo "## $model ($(awk -v b="$(stat -L -c %s "$model")" 'BEGIN {printf "%.0f", b / 1e6}') MB)"
    printf "%-16s" "tool"
    for d in ${depths//,/ }; do printf " %10s" "d=$d ms"; done
    printf " %12s  %s\n" "last/first" "load before"
    tools=""
    for kv in $kvs; do tools="$tools hsd-$kv"; done
    [ -n "$base" ] && tools="$tools base"
    tools="$tools llama.cpp"
    case " $kvs " in *" q8_0 "*) tools="$tools llama.cpp-q8_0" ;; esac
    case " $kvs " in *" q4_0 "*) tools="$tools llama.cpp-q4_0" ;; esac
    for tool in $tools; do
        load=$(cut -d' ' -f1 /proc/loadavg)
        case "$tool" in
        hsd-*) "$build/hsd" bench forward --model "$model" --threads "$threads" --n 1 --prefix "$depths" $inter --kv-type "${tool#hsd-}" > "$out/run" ;;
        base) : > "$out/run" # an older build takes one depth per process
              for d in ${depths//,/ }; do
                  echo "prefix $d" >> "$out/run"
                  "$base/hsd" bench forward --model "$model" --threads "$threads" --n 1 --prefix "$d" | awk '$1 == 1 && NF == 4' >> "$out/run"
              done ;;
        llama.cpp) "$driver" "$model" --threads "$threads" --n 1 --prefix "$depths" $inter > "$out/run" 2> "$out/err" ||
                     { cat "$out/err" >&2; exit 1; } ;;
        llama.cpp-q8_0|llama.cpp-q4_0)
            "$driver" "$model" --threads "$threads" --n 1 --prefix "$depths" $inter --kv "${tool#llama.cpp-}" > "$out/run" 2> "$out/err" ||
                     { cat "$out/err" >&2; exit 1; } ;;
        esac
        rows "$out/run" > "$out/rows"
        printf "%-16s" "$tool"
        awk '{printf " %10.2f", $2}' "$out/rows"
        if [ -n "$inter" ]; then awk '{l = $3} END {printf " %12.2f", l}' "$out/rows"
        else awk 'NR == 1 {f = $2} {l = $2} END {printf " %12.2f", l / f}' "$out/rows"; fi
        printf "  %s\n" "$load"
    done
done
echo "# end: $(date -u '+%T UTC'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
