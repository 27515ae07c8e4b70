#!/usr/bin/env bash
# Per-token work that scales with the vocabulary (issue 22), before/after, at real vocabularies:
#
#   1. bench/vocab_rows.c for both trees' libraries: the per-row kernels alone (argmax,
#      sampling with and without top-k / top-p, draws, soft-cap), thread CPU time;
#   2. greedy outputs: every algorithm, both binaries, the same ids (the TinyStories pair of
#      ../shared and the real-vocabulary synth pair below);
#   3. user-visible: `hsd generate --json` tpot_ms and `hsd bench forward` on synth models of
#      real shapes with real tokenizers (target qwen3-0.6b BF16 with the qwen3 tokenizer,
#      151,936 ids; drafter tiny-262k BF16 with the llama3 tokenizer: 128,256 ids in a
#      262,208-row head, the shape `hsd synth --tokenizer` offers for any real tokenizer; SD
#      needs identical vocabularies, so its drafter is the target file itself), rounds
#      alternating the two binaries: AR greedy per-token time minus the forward, and
#      temperature 1 with vs without --top-k 40 --top-p 0.9 for AR, SD, TLI, SLEM, SLRS.
#
#   bench/vocab_scale.sh --before BIN [--after BIN] [--models DIR] [--rounds 3] [-n 16]
#                        [--skip-rows] [--skip-greedy] [--skip-generate] [--cpu]
#
# --cpu: step 3 in CPU time with one thread (see below) instead of wall time.
#
# BIN: an hsd CLI built from the tree before the change (the row kernels' "before" needs no
# other tree: bench/vocab_rows.c carries the replaced code itself).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
after=$root/build/hsd before="" models=/tmp/hsd_vocab_models rounds=3 n=16
skip_rows=0 skip_greedy=0 skip_gen=0 cpu=0
shared=${HSD_SHARED:-$root/../shared}
while [ $# -gt 0 ]; do
    case "$1" in
    --before) before=$2; shift ;;
    --after) after=$2; shift ;;
    --models) models=$2; shift ;;
    --rounds) rounds=$2; shift ;;
    -n) n=$2; shift ;;
    --skip-rows) skip_rows=1 ;;
    --skip-greedy) skip_greedy=1 ;;
    --skip-generate) skip_gen=1 ;;
    --cpu) cpu=1 ;;
    *) echo "vocab_scale.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$before" ] || { echo "vocab_scale.sh: --before BIN is required" >&2; exit 2; }
echo "# $(date -u '+%F %T UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# after: $after ($(git -C "$root" rev-parse --short HEAD))"
echo "# before: $before"

mkdir -p "$models"
mk() { # dir shape tokenizer
    [ -f "$models/$1/model.gguf" ] || "$after" synth --shape "$2" --format gguf --dtype bf16 \
        --tokenizer "$shared/tokenizers/$3/tokenizer.json" -o "$models/$1" >/dev/null
}
mk q06 qwen3-0.6b qwen3
mk dl3 tiny-262k llama3
T=$models/q06/model.gguf D=$models/dl3/model.gguf
prompt="The quick brown fox jumps over the lazy dog. Once upon a time, in a small village, there lived"

if [ $skip_rows = 0 ]; then
    bin=$(mktemp -d)
    trap 'rm -rf "$bin"' EXIT
    cc -O2 -I"$root" -I"$root/include" "$root/bench/vocab_rows.c" "$root/build/libhsd.a" -lm -lpthread -o "$bin/rows"
    echo "## per-row kernels (this tree; 'before' rows are the replaced code, compiled here)"
    for r in $(seq 1 "$rounds"); do echo "### round $r"; "$bin/rows"; done
fi

ids() { python3 -c 'import json,sys; print(" ".join(str(json.loads(l)["ids"]) for l in sys.stdin if l.startswith("{")))'; }
if [ $skip_greedy = 0 ]; then
    echo "## greedy outputs, before vs after"
    st=$shared/models/stories260K bl=$shared/models/babyllama-tok105
    bad=0
    for p in "Once upon a time" "The little dog ran to the park and" "Lily and Ben were friends. One day"; do
        for a in ar tli union slem slrs; do
            args=(-m "$bl/model5000.bin" -t "$bl/tok105.bin" --draft "$st/stories260K.bin" --draft-tokenizer "$st/tok512.bin" --algo "$a" -p "$p" -n 48 --json)
            x=$("$before" generate "${args[@]}" 2>/dev/null | ids); y=$("$after" generate "${args[@]}" 2>/dev/null | ids)
            [ -n "$x" ] && [ "$x" = "$y" ] && echo "same  tinystories $a '$p'" || { echo "DIFF  tinystories $a '$p': $x | $y"; bad=1; }
        done
        args=(-m "$st/stories260K.bin" -t "$st/tok512.bin" --draft "$st/stories260K.bin" --draft-tokenizer "$st/tok512.bin" --algo sd -p "$p" -n 48 --json)
        x=$("$before" generate "${args[@]}" 2>/dev/null | ids); y=$("$after" generate "${args[@]}" 2>/dev/null | ids)
        [ -n "$x" ] && [ "$x" = "$y" ] && echo "same  tinystories sd '$p'" || { echo "DIFF  tinystories sd '$p': $x | $y"; bad=1; }
    done
    for a in ar sd tli union slem slrs; do
        d=$D; [ $a = sd ] && d=$T
        args=(-m "$T" --draft "$d" --algo "$a" -p "$prompt" -n 8 --json)
        x=$("$before" generate "${args[@]}" 2>/dev/null | ids); y=$("$after" generate "${args[@]}" 2>/dev/null | ids)
        [ -n "$x" ] && [ "$x" = "$y" ] && echo "same  qwen3-0.6b/llama3 $a" || { echo "DIFF  qwen3-0.6b/llama3 $a: $x | $y"; bad=1; }
    done
    echo "greedy: $([ $bad = 0 ] && echo all identical || echo DIFFERENCES)"
fi

[ $skip_gen = 1 ] && exit 0
if [ $cpu = 1 ]; then
    # User CPU time, one thread: per token = the user time of -n 28 minus that of -n 4 over the
    # tokens in between (load, prefill and start-up cancel; system time, mostly the model's
    # page faults, is left out as it varies with the load); per forward likewise from two
    # --reps counts of hsd bench forward (3 and 43: the load's page-fault time varies by more
    # than a few forwards). Less distorted by a loaded machine than wall time
    # (other processes' memory traffic still counts).
    run_cpu() { # prints "cpu_seconds n_generated" of one run
        python3 - "$@" <<'PY'
import json, resource, subprocess, sys
out = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
r = resource.getrusage(resource.RUSAGE_CHILDREN)
gen = [json.loads(l)["n_generated"] for l in out.splitlines() if l.startswith("{")]
print(r.ru_utime, gen[0] if gen else 0)
PY
    }
    per_tok() { # binary, generate args...: CPU ms per generated token
        local b=$1; shift
        read -r c1 g1 < <(run_cpu "$b" generate --threads 1 -n 4 "$@" --json)
        read -r c2 g2 < <(run_cpu "$b" generate --threads 1 -n 28 "$@" --json)
        python3 -c "import sys; c1,g1,c2,g2=map(float,sys.argv[1:]); print('%.2f' % (1000*(c2-c1)/(g2-g1)) if g2 > g1 else 'n/a')" "$c1" "$g1" "$c2" "$g2"
    }
    per_fwd() {
        read -r c1 _ < <(run_cpu "$1" bench forward -m "$T" --threads 1 --n 1 --prefix 24 --reps 3)
        read -r c2 _ < <(run_cpu "$1" bench forward -m "$T" --threads 1 --n 1 --prefix 24 --reps 43)
        python3 -c "import sys; print('%.2f' % (25*(float(sys.argv[2])-float(sys.argv[1]))))" "$c1" "$c2"
    }
    echo "## user CPU ms per token (generate, 1 thread, -n 28 minus -n 4) and per forward, rounds alternating the binaries"
    printf "%-6s %-7s %-24s %s\n" round binary run cpu_ms
    for r in $(seq 1 "$rounds"); do
        order="before after"; [ $((r % 2)) = 0 ] && order="after before"
        for which in $order; do
            b=$before; [ $which = after ] && b=$after
            printf "%-6s %-7s %-24s %s\n" "$r" "$which" "forward n=1" "$(per_fwd "$b")"
            printf "%-6s %-7s %-24s %s\n" "$r" "$which" "ar greedy" "$(per_tok "$b" -m "$T" --algo ar -p "$prompt")"
            for a in ar sd tli slem slrs; do
                d=$D; [ $a = sd ] && d=$T
                for cut in "" "--top-k 40 --top-p 0.9"; do
                    # shellcheck disable=SC2086
                    v=$(per_tok "$b" -m "$T" --draft "$d" --algo "$a" -p "$prompt" --temp 1 --seed 7 $cut)
                    printf "%-6s %-7s %-24s %s\n" "$r" "$which" "$a T=1 ${cut:+k40 p0.9}" "$v"
                done
            done
        done
    done
    echo "# end $(date -u '+%T UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
    exit 0
fi
field() { python3 -c 'import json,sys
for l in sys.stdin:
    if l.startswith("{"): print("%.3f" % json.loads(l)[sys.argv[1]])' "$1"; }
tpot() { field tpot_ms; }
fwd() { "$1" bench forward -m "$T" --n 1 --prefix 24 --reps 5 2>/dev/null | awk '$1 == 1 {print $2}'; }
echo "## generate (tpot_ms) and forward (ms), rounds alternating the binaries; -n $n"
printf "%-6s %-7s %-24s %s\n" round binary run ms
for r in $(seq 1 "$rounds"); do
    order="before after"; [ $((r % 2)) = 0 ] && order="after before"
    for which in $order; do
        b=$before; [ $which = after ] && b=$after
        printf "%-6s %-7s %-24s %s\n" "$r" "$which" "forward n=1" "$(fwd "$b")"
        printf "%-6s %-7s %-24s %s\n" "$r" "$which" "ar greedy" \
            "$("$b" generate -m "$T" --algo ar -p "$prompt" -n "$n" --json 2>/dev/null | tpot)"
        printf "%-6s %-7s %-24s %s\n" "$r" "$which" "slrs greedy psi_ms" \
            "$("$b" generate -m "$T" --draft "$D" --algo slrs -p "$prompt" -n "$n" --json 2>/dev/null | field psi_ms)"
        for a in ar sd tli slem slrs; do
            d=$D; [ $a = sd ] && d=$T
            for cut in "" "--top-k 40 --top-p 0.9"; do
                # shellcheck disable=SC2086
                v=$("$b" generate -m "$T" --draft "$d" --algo "$a" -p "$prompt" -n "$n" --temp 1 --seed 7 $cut --json 2>/dev/null | tpot)
                printf "%-6s %-7s %-24s %s\n" "$r" "$which" "$a T=1 ${cut:+k40 p0.9}" "$v"
            done
        done
    done
done
echo "# end $(date -u '+%T UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
