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
# Writes $OUT/gpu_results.md (a block for bench/notes/gpu_h100.md; the headline numbers go to
# bench/RESULTS.md#cuda-h100) and the raw logs.
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

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/nvidia-smi.txt"

if [ -n "${HSD_GPU_PREBUILT:-}" ]; then
    # binaries built elsewhere by bench/gpu_pack.sh (a device machine with no packages and no
    # network): unpack the libraries they load, find the device's cuBLAS, run from there
    PRE=$(cd "$HSD_GPU_PREBUILT" && pwd)
    log "prebuilt binaries from $PRE (commit $(cat "$PRE/commit" 2>/dev/null | tr '\n' ' '))"
    [ -d "$PRE/lib" ] || tar xJf "$PRE/lib.tar.xz" -C "$PRE"
    blasdir=$(dirname "$(find /usr/local /usr/lib /opt -name 'libcublas.so.1[0-9]*' 2>/dev/null | head -1)" 2>/dev/null)
    export LD_LIBRARY_PATH="$PRE/lib${blasdir:+:$blasdir}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    log "cuBLAS from ${blasdir:-(not found)}"
    BUILD="$PRE/bin"
    [ -d "$PRE/shared/models" ] && export HSD_SHARED="$PRE/shared"
    build_s=0
else
    for p in libpcre2-8 libutf8proc jansson libxxhash cmocka icu-uc; do
        pkg-config --exists "$p" || { echo "gpu.sh: missing build dependency $p (scripts/bootstrap.sh installs it)" >&2; exit 2; }
    done
    log "configure + build ($BUILD, HSD_CUDA=ON, sm_90)"
    t0=$(date +%s)
    cmake -S . -B "$BUILD" -DHSD_CUDA=ON -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
        > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 2; }
    cmake --build "$BUILD" -j "$JOBS" --target hsd_cli hsd_gpu_bench hsd_ar_compare test_cuda_fallback test_model_llama2c \
        > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 2; }
    build_s=$(( $(date +%s) - t0 ))
    log "built in ${build_s} s"
fi

log "hsd_gpu_bench (kernel checks + benchmarks)"
timeout "${GPU_BENCH_TIMEOUT:-300}" "$BUILD/hsd_gpu_bench" --md "$OUT/gpu_bench.md" 2>&1 | tee "$OUT/gpu_bench.txt"
bench_rc=${PIPESTATUS[0]}
[ "$bench_rc" -ne 0 ] && status=1

# shared data: $HSD_SHARED, ../shared next to the repo, or /work/shared
SHARED=""
for d in "${HSD_SHARED:-}" "$ROOT/../shared" /work/shared; do
    [ -n "$d" ] && [ -f "$d/models/stories260K/stories260K.bin" ] && { SHARED=$(cd "$d" && pwd); break; }
done

log "ctest (device path of the model tests)"
# the test executables directly: a prebuilt tree has no ctest files for this machine's paths
ctest_rc=0
for t in test_cuda_fallback test_model_llama2c; do
    HSD_SHARED="${SHARED:-/nonexistent}" "$BUILD/$t" >> "$OUT/ctest.txt" 2>&1 || ctest_rc=1
done
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

# 5. CPU vs GPU greedy AR, step by step (hsd_ar_compare: first divergence and its top-2 logit
#    gaps), then the inflated pair of `make demo` on the device: AR vs SLEM/TLI, the speedup
#    and whether the greedy text is AR's. The inflated GGUFs (1.9 GB) are made here.
arc="$OUT/ar_compare.md"
inf="$OUT/inflated.md"
: > "$arc"; : > "$inf"
if [ -n "$SHARED" ] && [ "${HSD_GPU_NO_INFLATED:-0}" != 1 ]; then
    M="$SHARED/models"
    THREADS=${THREADS:-8}
    P1="Once upon a time, there was a little dog named Max. Max liked to"
    P2="The little girl looked at the big tree and said"
    {
        echo "| model | steps | CPU vs CUDA greedy ids | max rel logit diff | smallest CPU top-2 gap | ms/token |"
        echo "|---|---|---|---|---|---|"
    } >> "$arc"
    log "CPU vs CUDA greedy AR (stories260K)"
    "$BUILD/hsd_ar_compare" --model "$M/stories260K/stories260K.bin" --tokenizer "$M/stories260K/tok512.bin" \
        -p "$P2" -n 200 --threads "$THREADS" --md "$arc" || true
    INF_DIR=${INF_DIR:-/tmp/hsd_inflated}
    mkdir -p "$INF_DIR"
    TGT=$INF_DIR/babyllama-llama-3.2-1b-bf16.gguf
    DBIG=$INF_DIR/stories260K-smollm-135m-bf16.gguf
    t0=$(date +%s)
    [ -f "$TGT" ] || "$BUILD/hsd" inflate --model "$M/babyllama-tok105/model5000.bin" --tokenizer "$M/babyllama-tok105/tok105.bin" \
        --shape llama-3.2-1b --dtype bf16 -o "$TGT" > "$OUT/inflate.log" 2>&1 || { status=1; tail -5 "$OUT/inflate.log"; }
    [ -f "$DBIG" ] || "$BUILD/hsd" inflate --model "$M/stories260K/stories260K.bin" --tokenizer "$M/stories260K/tok512.bin" \
        --shape smollm-135m --dtype bf16 -o "$DBIG" >> "$OUT/inflate.log" 2>&1 || { status=1; tail -5 "$OUT/inflate.log"; }
    log "inflated in $(( $(date +%s) - t0 )) s"
    log "CPU vs CUDA greedy AR (inflated babyllama, llama-3.2-1b shape, bf16)"
    "$BUILD/hsd_ar_compare" --model "$TGT" --tokenizer "$M/babyllama-tok105/tok105.bin" \
        -p "$P1" -n 128 --threads "$THREADS" --md "$arc" || true
    cat "$arc"
    TT=(--target "$TGT" --target-tokenizer "$M/babyllama-tok105/tok105.bin")
    DS=(--draft "$M/stories260K/stories260K.bin" --draft-tokenizer "$M/stories260K/tok512.bin")
    DB=(--draft "$DBIG" --draft-tokenizer "$M/stories260K/tok512.bin")
    N=${N_INFLATED:-128}
    pi=0
    for prompt in "$P1" "$P2"; do
        pi=$((pi + 1))
        # name|backend|algo|drafter: AR on both backends, then the drafts on the device
        for cfg in "ar_cpu|cpu|ar|" "ar|cuda|ar|" "slem|cuda|slem|S" "slem_big|cuda|slem|B" \
                   "tli|cuda|tli|S" "slem_t1|cuda|slem|S|t1" "ar_t1|cuda|ar||t1"; do
            IFS='|' read -r name be algo dr temp <<< "$cfg"
            extra=()
            [ "$dr" = S ] && extra=("${DS[@]}")
            [ "$dr" = B ] && extra=("${DB[@]}")
            [ "$temp" = t1 ] && extra+=(--temp 1 --seed 7)
            timeout 150 "$BUILD/hsd" generate "${TT[@]}" "${extra[@]}" --algo "$algo" -k 6 -p "$prompt" -n "$N" \
                --backend "$be" --threads "$THREADS" --json > "$OUT/inf${pi}_${name}.json" 2> "$OUT/inf${pi}_${name}.err" \
                || { status=1; tail -3 "$OUT/inf${pi}_${name}.err" >&2; }
        done
    done
    # four prompts as one batch on the device (sequence slots: one target forward per round
    # for all of them), each checked against its own single run
    printf '%s\n' "$P1" "$P2" "One day, a little bird" "Tom and his mom went to the park." > "$OUT/batch_prompts.txt"
    for algo in ar slem; do
        extra=()
        [ "$algo" = slem ] && extra=("${DS[@]}")
        t0=$(date +%s.%N)
        timeout 150 "$BUILD/hsd" generate "${TT[@]}" "${extra[@]}" --algo "$algo" -k 6 -n "$N" \
            --batch-file "$OUT/batch_prompts.txt" --backend cuda --threads "$THREADS" --json \
            > "$OUT/batch_${algo}.jsonl" 2> "$OUT/batch_${algo}.err" || { status=1; tail -3 "$OUT/batch_${algo}.err" >&2; }
        echo "$t0 $(date +%s.%N)" > "$OUT/batch_${algo}.wall"
        i=0
        while IFS= read -r pr; do
            timeout 150 "$BUILD/hsd" generate "${TT[@]}" "${extra[@]}" --algo "$algo" -k 6 -n "$N" -p "$pr" \
                --backend cuda --threads "$THREADS" --json > "$OUT/batch_${algo}_single$i.json" 2>/dev/null || status=1
            i=$((i + 1))
        done < "$OUT/batch_prompts.txt"
    done
    python3 - "$OUT" >> "$OUT/batch.md" <<'PYEOF' || status=1
import json, os, sys
out = sys.argv[1]
print("| batch of 4 on the device | outputs equal to their single runs | sum of tokens | batch wall s |")
print("|---|---|---|---|")
ok = True
for algo in ("ar", "slem"):
    try:
        rows = [json.loads(l) for l in open(os.path.join(out, f"batch_{algo}.jsonl")) if l.strip()]
        rows.sort(key=lambda r: r.get("index", 0))
        singles = [json.load(open(os.path.join(out, f"batch_{algo}_single{i}.json"))) for i in range(4)]
        same = sum(r["ids"] == s["ids"] for r, s in zip(rows, singles))
        t0, t1 = map(float, open(os.path.join(out, f"batch_{algo}.wall")).read().split())
        print(f"| {algo} | {same}/4 | {sum(len(r['ids']) for r in rows)} | {t1 - t0:.2f} (load included) |")
        ok &= same == 4 and len(rows) == 4
    except Exception as e:
        print(f"| {algo} | failed: {e} | | |"); ok = False
sys.exit(0 if ok else 1)
PYEOF
    cat "$OUT/batch.md"
    python3 - "$OUT" >> "$inf" <<'PYEOF' || status=1
import json, os, sys
out = sys.argv[1]
print("| prompt | run | backend | tokens/s | decode ms/token (tpot) | tau | greedy text = GPU AR | speedup vs GPU AR (tpot) |")
print("|---|---|---|---|---|---|---|---|")
ok = True
for pi in (1, 2):
    def load(n):
        try:
            return json.load(open(os.path.join(out, f"inf{pi}_{n}.json")))
        except Exception:
            return None
    ar = load("ar")
    for n in ("ar_cpu", "ar", "slem", "slem_big", "tli", "ar_t1", "slem_t1"):
        r = load(n)
        if r is None or ar is None:
            print(f"| {pi} | {n} | failed | | | | | |"); ok = False; continue
        base = load("ar_t1") if n.endswith("_t1") else ar
        same = "n/a (sampled)" if n.endswith("_t1") else ("yes" if r["ids"] == ar["ids"] else "**NO**")
        if same == "**NO**" and n != "ar_cpu": ok = False
        sp = base["tpot_ms"] / r["tpot_ms"] if r.get("tpot_ms") and base and base.get("tpot_ms") else 0
        print(f"| {pi} | {n} | {r.get('backend','?')} | {r['tokens_per_s']:.1f} | {r.get('tpot_ms',0):.3f} | "
              f"{r.get('tau',0):.2f} | {same} | {sp:.2f}x |")
sys.exit(0 if ok else 1)
PYEOF
    cat "$inf"

    # 6. decode at depth on the device: the inflated target (llama-3.2-1b shape, GQA 4, head_dim
    #    64), each depth in its own sequence slot, timed in turn (hsd bench forward --interleave);
    #    the F16 cache (default) and F32, and the previous build's binary (hsd_old, packed by
    #    gpu_pack.sh from HSD_GPU_OLD when given) on the same file
    dep="$OUT/depth.md"
    : > "$dep"
    log "decode at depth on the device"
    run_depth() { # label binary depths [extra args]
        local label=$1 bin=$2 depths=$3; shift 3
        timeout 120 "$bin" bench forward --model "$TGT" --backend cuda --n 1 --prefix "$depths" --interleave "$@" \
            > "$OUT/depth_$label.txt" 2>&1 || { status=1; tail -3 "$OUT/depth_$label.txt" >&2; }
        awk -v l="$label" '/^ *[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+x/ { printf "| %s | %s | %s | %s |\n", l, $1, $2, $4 }' \
            "$OUT/depth_$label.txt" >> "$dep"
    }
    echo "| build, cache | depth | ms/token (median) | vs depth 32 (median of per-round ratios) |" >> "$dep"
    echo "|---|---|---|---|" >> "$dep"
    run_depth new_f16 "$BUILD/hsd" 32,512,2048,8192
    run_depth new_f32 "$BUILD/hsd" 32,512,2048,8192 --kv-type f32
    [ -x "$BUILD/hsd_old" ] && run_depth old_f32 "$BUILD/hsd_old" 32,512,2048,8192
    run_depth new_f16_16k "$BUILD/hsd" 32,2048,16384
    cat "$dep"
else
    echo "Inflated pair: **skipped** (no shared data, or HSD_GPU_NO_INFLATED=1)." > "$inf"
fi

{
    dev=$(sed -n 's/^device: //p' "$OUT/gpu_bench.txt" 2>/dev/null | head -1)
    echo "### CUDA backend on ${dev:-no device} ($(date -u +%Y-%m-%d), bench/gpu.sh)"
    echo
    if [ -n "${HSD_GPU_PREBUILT:-}" ]; then
        echo "Commit $(tr '\n' ' ' < "$PRE/commit" 2>/dev/null || echo '?'); binaries prebuilt by bench/gpu_pack.sh (HSD_CUDA=ON, sm_90)."
    else
        echo "Commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'); build (HSD_CUDA=ON, sm_90, $JOBS jobs): ${build_s} s."
    fi
    echo
    cat "$OUT/gpu_bench.md" 2>/dev/null || echo "hsd_gpu_bench wrote no results (exit $bench_rc)."
    echo
    echo "ctest test_cuda_fallback + test_model_llama2c (the models on the device when there is one): $( [ $ctest_rc -eq 0 ] && echo passed || echo '**failed**' )."
    echo
    cat "$e2e"
    echo
    echo "Greedy AR, CPU vs CUDA, step by step (hsd_ar_compare):"
    echo
    cat "$arc"
    echo
    echo "Sequence slots on the device:"
    echo
    cat "$OUT/batch.md" 2>/dev/null
    echo
    echo "Decode at depth on the device (inflated llama-3.2-1b-shaped target, bf16 weights):"
    echo
    cat "$OUT/depth.md" 2>/dev/null
    echo
    echo "Inflated pair (make demo's files: babyllama at the llama-3.2-1b shape, bf16; drafters stories260K as is (S) and at the smollm-135m shape (B)), -k 6, ${N_INFLATED:-128} tokens:"
    echo
    cat "$inf"
} > "$RES"
log "results: $RES (overall status $status)"
exit $status
