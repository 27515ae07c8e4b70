#!/usr/bin/env bash
# Builds every fuzz/fuzz_*.c harness with clang (libFuzzer + ASan + UBSan) into build-fuzz/
# and runs each for SECONDS (default 60) on seeds generated from the shared data.
# Prints one summary line per harness (executions, crashes) and exits non-zero on a crash.
# Usage: fuzz/run.sh [SECONDS] [HARNESS...]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
B=build-fuzz
shared=${HSD_SHARED:-$(cd .. && pwd)/shared}
jobs=${JOBS:-$(nproc)}

cmake -S . -B $B -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHSD_FUZZ=ON \
    -DHSD_CUDA=OFF >/dev/null
harnesses=("$@")
if [ ${#harnesses[@]} -eq 0 ]; then
    for f in fuzz/fuzz_*.c; do harnesses+=("$(basename "$f" .c)"); done
fi
cmake --build $B -j "$jobs" --target hsd_cli "${harnesses[@]}" 2>&1 | grep -E "error:|warning:" || true
for h in "${harnesses[@]}"; do [ -x "$B/$h" ] || { echo "fuzz: $h did not build" >&2; exit 1; }; done
# HSD_FUZZ_KEEP_SEEDS=1 reuses existing seeds (lets several run.sh share one build-fuzz/)
if [ "${HSD_FUZZ_KEEP_SEEDS:-0}" != 1 ] || [ ! -d $B/seeds ]; then
    HSD_SHARED=$shared ./fuzz/seeds.sh "$shared" $B/seeds $B/hsd
fi

mkdir -p $B/corpus $B/artifacts $B/logs
status=0
for h in "${harnesses[@]}"; do
    mkdir -p $B/corpus/$h $B/artifacts/$h
    maxlen=65536
    case $h in
    fuzz_gguf_vocab | fuzz_model_*) maxlen=4000000 ;;
    esac
    # -rss_limit_mb: the loaders must refuse absurd sizes, not allocate them
    set +e
    HSD_SHARED=$shared ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
        "$B/$h" $B/corpus/$h $B/seeds/$h $(ls -d fuzz/regressions/$h 2>/dev/null) -max_total_time="$secs" -max_len=$maxlen \
        -rss_limit_mb=4096 -malloc_limit_mb=2048 -timeout=25 -print_final_stats=1 \
        -artifact_prefix=$B/artifacts/$h/ >$B/logs/$h.log 2>&1
    rc=$?
    set -e
    execs=$(grep -a "stat::number_of_executed_units" $B/logs/$h.log | awk '{print $2}' | tail -1)
    crashes=$(find $B/artifacts/$h -type f | wc -l)
    printf 'fuzz %-24s %4ss  execs %-10s exit %d  artifacts %d\n' "$h" "$secs" "${execs:-?}" $rc "$crashes"
    if [ $rc -ne 0 ]; then
        status=1
        grep -a -A25 "ERROR: \|==ERROR\|deadly signal\|runtime error" $B/logs/$h.log | head -40 >&2 || true
    fi
done
exit $status
