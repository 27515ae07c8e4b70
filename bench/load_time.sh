#!/usr/bin/env bash
# Model load time and memory, interleaved between hsd binaries (e.g. before/after a change):
# `hsd bench forward --n 1 --reps 1` prints the load time ("loaded in N ms": hsd_model_load,
# packing included); /usr/bin/time gives peak RSS and user/sys CPU of the whole run (load plus
# one forward). The order of the binaries rotates each round; SLEEP seconds of idle before each
# run let the memory freed by the previous run go cold, as for a user starting hsd (on a VM the
# kernel's first touch of fresh memory — the packed copy — dominates the load and depends on it).
#   usage: bench/load_time.sh HSD_BINARY... (env: FILES "q4_k_m q8_0 bf16", DIR
#          /tmp/hsd-big/peer (bench/peer/run.sh's files: DIR/llama-3.2-1b-TYPE/model.gguf),
#          ROUNDS 3, SLEEP 5, THREADS 2)
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 HSD_BINARY..." >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "load_time.sh: /usr/bin/time is needed (Debian package time)" >&2; exit 2; }
DIR=${DIR:-/tmp/hsd-big/peer} ROUNDS=${ROUNDS:-3} SLEEP=${SLEEP:-5} THREADS=${THREADS:-2}
FILES=${FILES:-q4_k_m q8_0 bf16}
bins=("$@")
for f in $FILES; do
    m=$DIR/llama-3.2-1b-$f/model.gguf
    [ -f "$m" ] || { echo "load_time.sh: $m missing (bench/peer/run.sh writes it)" >&2; exit 2; }
    cat "$m" >/dev/null # the page cache holds the file for every run
done
echo "# $(date -u '+%F %T UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), threads $THREADS, idle ${SLEEP}s before each run"
n=${#bins[@]}
for r in $(seq 1 "$ROUNDS"); do
    for f in $FILES; do
        for i in $(seq 0 $((n - 1))); do
            b=${bins[$(((i + r) % n))]}
            sleep "$SLEEP"
            out=$({ /usr/bin/time -f "TIME wall_s %e maxrss_kb %M user_s %U sys_s %S" "$b" bench forward \
                -m "$DIR/llama-3.2-1b-$f/model.gguf" --n 1 --reps 1 --prefix 1 --threads "$THREADS"; } 2>&1)
            ms=$(echo "$out" | sed -n 's/.*(loaded in \([0-9]*\) ms).*/\1/p')
            echo "round $r $f $b load_ms $ms $(echo "$out" | sed -n 's/^TIME //p') loadavg $(cut -d' ' -f1 /proc/loadavg)"
        done
    done
done
