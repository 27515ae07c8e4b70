#!/usr/bin/env bash
# hsd vs llama.cpp (v0.5.0, its C API), side by side on the SAME GGUF: the cost of one forward
# over n new tokens after a cached prefix (hsd bench forward / bench/peer/llama_forward.c, the
# same method), alternating the two tools round after round so that both see the same machine
# state, plus the read-bandwidth floor of forward(1) (hsd bench bandwidth, same threads).
#
#   bench/peer/run.sh [--build DIR] [--dir DIR] [--shape S] [--dtypes "bf16 q8_0 q4_k_m"]
#                     [--threads 2] [--rounds 3] [--n 1,2,4,8,16] [--hsd-kernels "avx512 amx"]
#
# Installs llama.cpp (scripts/install_llama_cpp.sh, or $HSD_LLAMA_CPP), builds the driver into
# the build directory, writes `hsd synth --shape S --dtype D` GGUFs under --dir (default
# /tmp/hsd-big/peer, ~3.8 GB for llama-3.2-1b bf16 + q8_0; reused when present); q4_k_m,
# q5_k_m and q6_k are quantised from the bf16 one by llama.cpp (build/llama_oracle quantize).
# Prints the CPU model, the CPU kernels each tool took (hsd: its level and features; llama.cpp:
# its system info, i.e. the ggml CPU variant's features), and per dtype the median over rounds
# of ms/forward for both, forward(n)/forward(1), and hsd/llama.cpp. --hsd-kernels runs hsd once
# per listed level in each round (HSD_MATMUL), the first level's numbers in the table, the
# others' per round below it. A bench tool, not part of `make test`.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build dir=/tmp/hsd-big/peer shape=llama-3.2-1b dtypes="bf16 q8_0" threads=2 rounds=3 ns=1,2,4,8,16
levels=""
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2 ;;
    --dir) dir=$2 ;;
    --shape) shape=$2 ;;
    --dtypes) dtypes=$2 ;;
    --threads) threads=$2 ;;
    --rounds) rounds=$2 ;;
    --n) ns=$2 ;;
    --hsd-kernels) levels=$2 ;;
    *) sed -n '2,20p' "$0" >&2; exit 2 ;;
    esac
    shift 2
done
hsd=$build/hsd
[ -x "$hsd" ] || { echo "run.sh: $hsd not built (make build)" >&2; exit 1; }
llama=${HSD_LLAMA_CPP:-$root/.deps/llama.cpp}
[ -f "$llama/VERSION" ] || "$root/scripts/install_llama_cpp.sh" "$llama"
driver=$build/llama_forward
cc -O2 -Wall -Wextra -Werror -I"$llama/include" "$root/bench/peer/llama_forward.c" \
    -L"$llama/lib" -lllama -lggml -lggml-base -Wl,-rpath,"$llama/lib" -o "$driver"
export LLAMA_LIB_DIR=$llama/lib
mkdir -p "$dir"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "# hsd vs llama.cpp ($(cat "$llama/VERSION")), shape $shape, $threads threads, $rounds rounds"
echo "# $(date -u '+%F %T UTC'), $(uname -n), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_bf16|avx512_vnni|amx_tile|amx_bf16|amx_int8)$' | xargs)"
"$hsd" bench bandwidth --threads "$threads" | tee "$out/bw"
gbs=$(awk '/median/ {for (i = 1; i <= NF; i++) if ($i == "GB/s") {print $(i - 1); exit}}' "$out/bw")
# the best repetition too: this VM's read bandwidth swings between ~47 and ~82 GB/s within
# seconds, and a floor at the median can sit above what a forward reaches in a fast phase
best=$(awk '/median/ {for (i = 1; i <= NF; i++) if ($i == "GB/s)") {print $(i - 1); exit}}' "$out/bw")

for dt in $dtypes; do
    gguf=$dir/$shape-$dt/model.gguf
    case "$dt" in
    q4_k_m | q5_k_m | q6_k | q4_k_s | q5_k_s | q4_0 | q4_1 | q5_0 | q5_1)
        src=$dir/$shape-bf16/model.gguf
        [ -f "$src" ] || "$hsd" synth --shape "$shape" --format gguf --dtype bf16 -o "$dir/$shape-bf16"
        [ -x "$build/llama_oracle" ] || { echo "run.sh: $build/llama_oracle not built (re-run cmake after install_llama_cpp.sh)" >&2; exit 1; }
        mkdir -p "$dir/$shape-$dt"
        [ -f "$gguf" ] || "$build/llama_oracle" quantize "$src" "$gguf" "$(echo "$dt" | tr a-z A-Z)" >/dev/null
        ;;
    *) [ -f "$gguf" ] || "$hsd" synth --shape "$shape" --format gguf --dtype "$dt" -o "$dir/$shape-$dt" ;;
    esac
    : > "$out/hsd.$dt"
    : > "$out/llama.$dt"
    : > "$out/ratios.$dt"
    for r in $(seq 1 "$rounds"); do
        # alternate which tool goes first, so neither always runs on a warmer page cache
        order="hsd llama"
        [ $((r % 2)) -eq 0 ] && order="llama hsd"
        for tool in $order; do
            if [ "$tool" = hsd ]; then
                first=1
                for lv in ${levels:-default}; do
                    if [ "$lv" = default ]; then
                        "$hsd" bench forward --model "$gguf" --threads "$threads" --n "$ns" > "$out/lv"
                    else
                        HSD_MATMUL=$lv "$hsd" bench forward --model "$gguf" --threads "$threads" --n "$ns" > "$out/lv"
                    fi
                    [ "$r" = 1 ] && echo "  hsd $dt: $(grep -m1 '^cpu kernels' "$out/lv")" >&2
                    if [ $first = 1 ]; then cp "$out/lv" "$out/run"; first=0; else
                        awk -v r="$r" -v lv="$lv" '$1 ~ /^[0-9]+$/ && NF == 4 { if (!f1) f1 = $2
                                s = s sprintf(" %s:%.2fms(%.2f)", $1, $2, $2 / f1) }
                            END { printf "  round %d hsd kernels %s:%s\n", r, lv, s }' "$out/lv" >> "$out/ratios.$dt"
                    fi
                done
            else
                "$driver" "$gguf" --threads "$threads" --n "$ns" > "$out/run" 2> "$out/err" ||
                    { echo "llama.cpp failed on $gguf:" >&2; cat "$out/err" >&2; exit 1; }
                [ "$r" = 1 ] && echo "  llama.cpp $dt: $(grep -m1 'system info' "$out/err")" >&2
            fi
            # rows of the table: n ms/forward ms/token ratio
            awk '$1 ~ /^[0-9]+$/ && NF == 4 {print $1, $2}' "$out/run" >> "$out/$tool.$dt"
            # this round's f(n)/f(1) within one process: the machine's read bandwidth drifts
            # between rounds (±30% over minutes here), a ratio of medians mixes states
            awk -v t="$tool" -v r="$r" '$1 ~ /^[0-9]+$/ && NF == 4 { if (!f1) f1 = $2
                    s = s sprintf(" %s:%.2f", $1, $2 / f1) }
                END { printf "  round %d %-5s f(n)/f(1)%s\n", r, t, s }' "$out/run" >> "$out/ratios.$dt"
        done
        echo "  $dt round $r done (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    done
    bytes=$(stat -L -c %s "$gguf")
    echo
    echo "## $shape $dt ($(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1e6}') MB file), median over $rounds rounds"
    awk -v gbs="$gbs" -v best="$best" -v mbytes="$(awk -v b="$bytes" 'BEGIN {print b / 1e6}')" '
        function median(a, k,    i, j, t, m) { # sort a[1..k] in place
            for (i = 2; i <= k; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
            m = int((k + 1) / 2); return k % 2 ? a[m] : (a[m] + a[m + 1]) / 2 }
        FNR == 1 { tool = FILENAME ~ /hsd\./ ? "hsd" : "llama" }
        { k = ++cnt[tool, $1]; v[tool, $1, k] = $2; if (!seen[$1]++) ns[++nn] = $1 }
        END {
            for (t = 1; t <= 2; t++) { tool = t == 1 ? "hsd" : "llama"
                for (i = 1; i <= nn; i++) { n = ns[i]; delete a; for (k = 1; k <= cnt[tool, n]; k++) a[k] = v[tool, n, k]
                    med[tool, n] = median(a, cnt[tool, n]) } }
            printf "%4s %12s %12s %10s %10s %12s\n", "n", "hsd ms", "llama ms", "hsd f(n)/f(1)", "llama f(n)/f(1)", "hsd/llama"
            for (i = 1; i <= nn; i++) { n = ns[i]
                printf "%4d %12.2f %12.2f %13.2f %15.2f %12.2f\n", n, med["hsd", n], med["llama", n],
                    med["hsd", n] / med["hsd", ns[1]], med["llama", n] / med["llama", ns[1]], med["hsd", n] / med["llama", n] }
            floor = mbytes / gbs
            printf "bandwidth floor: %.1f MB / %.2f GB/s = %.1f ms; hsd forward(1) at %.0f%% of it, llama.cpp at %.0f%%\n",
                mbytes, gbs, floor, 100 * floor / med["hsd", ns[1]], 100 * floor / med["llama", ns[1]]
            if (best > 0) { floor = mbytes / best
                printf "at the best repetition, %.2f GB/s: %.1f ms; hsd forward(1) at %.0f%%, llama.cpp at %.0f%%\n",
                    best, floor, 100 * floor / med["hsd", ns[1]], 100 * floor / med["llama", ns[1]] }
        }' "$out/hsd.$dt" "$out/llama.$dt"
    echo "per round (one process each):"
    cat "$out/ratios.$dt"
done
echo "# end: $(date -u '+%T UTC'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
