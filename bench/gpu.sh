#!/usr/bin/env bash
# GPU checks and benchmarks of the CUDA backend, in one command on a machine with a device
# (made for one H100/H200 and under 10 minutes; no network needed):
#
#   bench/gpu.sh            # results in $OUT (if set) else build-gpu/results
#
#  1. configures with HSD_CUDA=ON (sm_90) and builds the CLI, hsd_gpu_bench and the tests it runs;
#  2. hsd_gpu_bench: every CUDA kernel and whole models against the CPU reference on fresh
#     random inputs (PASS/FAIL), device copy bandwidth, AR decode and forward(n)/forward(1) of a
#     synth llama-3.2-1b vs weights-bytes / bandwidth, the indexed LM head vs the full head;
#  3. ctest: test_cuda_fallback and test_model_llama2c, which on a device run the CUDA model;
#  4. end to end on the real pair (stories260K target, babyllama-tok105 drafter) from the shared
#     data: AR, SLEM and TLI through `hsd generate --backend cuda`, checked equal to the CPU
#     backend (greedy output is AR's on both). Skipped, and said so, when the data is absent.
#
# Writes $OUT/gpu_results.md (a block to paste into bench/RESULTS.md) and the raw logs.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${BUILD:-build-gpu}
OUT=${OUT:-$BUILD/results}
mkdir -p "$OUT"
RES="$OUT/gpu_results.md"
JOBS=${JOBS:-$(nproc)}
status=0

log() { echo "== $*" >&2; }

for p in libpcre2-8 libutf8proc jansson libxxhash cmocka icu-uc; do
    pkg-config --exists "$p" || { echo "gpu.sh: missing build dependency $p (scripts/bootstrap.sh installs it)" >&2; exit 2; }
done
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/nvidia-smi.txt"

log "configure + build ($BUILD, HSD_CUDA=ON, sm_90)"
t0=$(date +%s)
cmake -S . -B "$BUILD" -DHSD_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 2; }
cmake --build "$BUILD" -j "$JOBS" --target hsd_cli hsd_gpu_bench test_cuda_fallback test_model_llama2c \
    > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 2; }
build_s=$(( $(date +%s) - t0 ))
log "built in ${build_s} s"

log "hsd_gpu_bench (kernel checks + benchmarks)"
"$BUILD/hsd_gpu_bench" --md "$OUT/gpu_bench.md" 2>&1 | tee "$OUT/gpu_bench.txt"
bench_rc=${PIPESTATUS[0]}
[ "$bench_rc" -ne 0 ] && status=1

# shared data: $HSD_SHARED, ../shared next to the repo, or /work/shared
SHARED=""
for d in "${HSD_SHARED:-}" "$ROOT/../shared" /work/shared; do
    [ -n "$d" ] && [ -f "$d/models/stories260K/stories260K.bin" ] && { SHARED=$(cd "$d" && pwd); break; }
done

log "ctest (device path of the model tests)"
( cd "$BUILD" && HSD_SHARED="${SHARED:-/nonexistent}" ctest -R 'test_cuda_fallback|test_model_llama2c' --output-on-failure ) \
    > "$OUT/ctest.txt" 2>&1
ctest_rc=$?
tail -5 "$OUT/ctest.txt"
[ "$ctest_rc" -ne 0 ] && status=1

e2e="$OUT/e2e.md"
: > "$e2e"
if [ -z "$SHARED" ]; then
    echo "End-to-end on the real pair: **skipped** (shared data not found: set HSD_SHARED)." > "$e2e"
    log "real pair: skipped (no shared data)"
else
    log "end to end on the real pair ($SHARED/models)"
    M="$SHARED/models"
    T=(--target "$M/stories260K/stories260K.bin" --target-tokenizer "$M/stories260K/tok512.bin")
    D=(--draft "$M/babyllama-tok105/model5000.bin" --draft-tokenizer "$M/babyllama-tok105/tok105.bin")
    P="Once upon a time, there was a little girl named Lily."
    {
        echo "| real pair, 200 tokens greedy | backend (asked → used) | tokens/s | acceptance | tau | ids equal to CPU |"
        echo "|---|---|---|---|---|---|"
    } >> "$e2e"
    for algo in ar slem tli; do
        extra=()
        [ "$algo" != ar ] && extra=("${D[@]}")
        for be in cpu cuda; do
            "$BUILD/hsd" generate "${T[@]}" "${extra[@]}" --algo "$algo" -p "$P" -n 200 -k 4 \
                --backend "$be" --json > "$OUT/e2e_${algo}_${be}.json" 2> "$OUT/e2e_${algo}_${be}.err" \
                || { status=1; cat "$OUT/e2e_${algo}_${be}.err" >&2; }
        done
        python3 - "$OUT/e2e_${algo}_cpu.json" "$OUT/e2e_${algo}_cuda.json" "$algo" >> "$e2e" <<'EOF' || status=1
import json, sys
try:
    c = json.load(open(sys.argv[1])); g = json.load(open(sys.argv[2]))
except Exception as e:
    print(f"| {sys.argv[3]} | failed to run: {e} | | | | |"); sys.exit(1)
same = c["ids"] == g["ids"]
for r, be in ((c, "cpu"), (g, "cuda → " + g.get("backend", "?"))):
    print(f"| {sys.argv[3]} | {be} | {r['tokens_per_s']:.1f} | {r.get('acceptance_rate', 0):.3f} | "
          f"{r.get('tau', 0):.2f} | {'yes' if same else '**NO**'} |")
sys.exit(0 if same and g.get("backend") == "cuda" else 1)
EOF
    done
    cat "$e2e"
fi

{
    dev=$(sed -n 's/^device: //p' "$OUT/gpu_bench.txt" 2>/dev/null | head -1)
    echo "### CUDA backend on ${dev:-no device} ($(date -u +%Y-%m-%d), bench/gpu.sh)"
    echo
    echo "Commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'); build (HSD_CUDA=ON, sm_90, $JOBS jobs): ${build_s} s."
    echo
    cat "$OUT/gpu_bench.md" 2>/dev/null || echo "hsd_gpu_bench wrote no results (exit $bench_rc)."
    echo
    echo "ctest test_cuda_fallback + test_model_llama2c (the models on the device when there is one): $( [ $ctest_rc -eq 0 ] && echo passed || echo '**failed**' )."
    echo
    cat "$e2e"
} > "$RES"
log "results: $RES (overall status $status)"
exit $status
