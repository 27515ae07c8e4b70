#!/usr/bin/env bash
# The Q8_0, BF16, Q4_K, Q5_K or Q6_K products alone (bench/mm_kernel.c: 1B-shaped matrices, one thread, CPU
# time), for this tree's library and optionally another tree's (before/after, alternating rounds).
#
#   bench/mm_kernel.sh [--build DIR] [--other TREE] [--type q8_0|bf16|q4_k|q5_k|q6_k] [--layers 4] [--rounds 3]
#                      [--levels "avx512 amx"]
#
# --levels: run this tree once per kernel level in each round (HSD_MATMUL=level).
# --other TREE: a checkout whose TREE/build/libhsd.a is built; compiled without the packing
# call when TREE has no hsd_mm_pack (trees before issue 12's Q8_0 layout).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build other="" type=q8_0 layers=4 rounds=3 levels=""
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2 ;;
    --other) other=$2 ;;
    --type) type=$2 ;;
    --layers) layers=$2 ;;
    --rounds) rounds=$2 ;;
    --levels) levels=$2 ;;
    *) sed -n '2,11p' "$0" >&2; exit 2 ;;
    esac
    shift 2
done
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
cc -O2 -I"$root" -I"$root/include" "$root/bench/mm_kernel.c" "$build/libhsd.a" -lm -lpthread \
    -o "$bin/this"
if [ -n "$other" ]; then
    flag=""
    grep -q hsd_mm_pack "$other/kernels/matmul.h" || flag=-DMMK_NO_PACK
    cc -O2 $flag -I"$other" -I"$other/include" "$root/bench/mm_kernel.c" "$other/build/libhsd.a" \
        -lm -lpthread -o "$bin/other"
fi
echo "# $(date -u '+%F %T UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$rounds"); do
    for lv in ${levels:-default}; do
        echo "## round $r: this tree ($root), kernels $lv"
        if [ "$lv" = default ]; then "$bin/this" "$type" "$layers"; else HSD_MATMUL=$lv "$bin/this" "$type" "$layers"; fi
    done
    if [ -n "$other" ]; then
        echo "## round $r: other tree ($other)"
        "$bin/other" "$type" "$layers"
    fi
done
echo "# end load $(cut -d' ' -f1-3 /proc/loadavg)"
