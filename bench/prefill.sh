#!/usr/bin/env bash
# Prefill and time to first token (issue 22): `hsd generate --json` ttft_ms for AR, SLEM, TLI
# and SLRS on prompts of about 512 and 2,048 target tokens (bench/prompts/long_context.jsonl
# one after the other, cut to length), and llama.cpp v0.5.0's prefill of the same number of
# tokens on the same GGUF (bench/peer/llama_prefill.c: one llama_decode, n_ubatch 512, logits
# for the last row). The tools and algorithms alternate within each round so that all see the
# same machine state; medians over rounds.
#
#   bench/prefill.sh --target T.gguf --draft D.gguf [--build DIR] [--p "512 2048"]
#                    [--rounds 2] [--threads 2] [--algos "ar slem tli slrs"]
#                    [--sd-draft D2.gguf] [--base HSD] [--no-peer 1]
#
# The target and the drafter are GGUFs with their tokenizers (e.g. `hsd synth --shape
# llama-3.2-1b --format gguf --dtype bf16 --tokenizer .../llama3/tokenizer.json` and
# `hsd synth --shape tiny-262k ... --tokenizer .../gemma3/tokenizer.json`). `sd` in --algos
# needs --sd-draft, a drafter with the target's vocabulary (e.g. `--shape tiny-llama` with the
# llama3 tokenizer). --base HSD: a second hsd binary (a "before" build), run interleaved with
# this one (the order alternates between rounds); its rows are named base-*. --no-peer 1
# leaves llama.cpp out. A bench tool, not part of `make test`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build target="" draft="" ps="512 2048" rounds=2 threads=2
algos="ar slem tli slrs" sd_draft="" base="" no_peer=0
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build=$2 ;;
    --target) target=$2 ;;
    --draft) draft=$2 ;;
    --p) ps=$2 ;;
    --rounds) rounds=$2 ;;
    --threads) threads=$2 ;;
    --algos) algos=$2 ;;
    --sd-draft) sd_draft=$2 ;;
    --base) base=$2 ;;
    --no-peer) no_peer=$2 ;;
    *) sed -n '2,22p' "$0" >&2; exit 2 ;;
    esac
    shift 2
done
[ -n "$target" ] && [ -n "$draft" ] || { sed -n '2,22p' "$0" >&2; exit 2; }
case " $algos " in *" sd "*) [ -n "$sd_draft" ] || { echo "prefill.sh: sd needs --sd-draft" >&2; exit 2; } ;; esac
hsd=$build/hsd
llama=${HSD_LLAMA_CPP:-$root/.deps/llama.cpp}
driver=$build/llama_prefill
if [ "$no_peer" = 0 ]; then
    [ -f "$llama/VERSION" ] || "$root/scripts/install_llama_cpp.sh" "$llama"
    cc -O2 -Wall -Wextra -Werror -I"$llama/include" "$root/bench/peer/llama_prefill.c" \
        -L"$llama/lib" -lllama -lggml -lggml-base -Wl,-rpath,"$llama/lib" -o "$driver"
    export LLAMA_LIB_DIR=$llama/lib
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# a prompt of about P target tokens: the long_context prompts, cut by characters until the
# target's tokenizer gives P (BOS included)
make_prompt() {
    python3 - "$root/bench/prompts/long_context.jsonl" "$1" "$hsd" "$target" <<'EOF'
import json, subprocess, sys
path, want, hsd, tok = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
text = "\n\n".join(json.loads(l)["prompt"] for l in open(path))
def count(t):
    r = subprocess.run([hsd, "tokenize", "-t", tok, "--jsonl"], input=json.dumps({"text": t}) + "\n",
                       capture_output=True, text=True, check=True)
    return len(json.loads(r.stdout)["ids"]) + 1
lo, hi = 1, len(text)
while lo < hi:  # the longest cut with at most `want` tokens
    mid = (lo + hi + 1) // 2
    if count(text[:mid]) <= want: lo = mid
    else: hi = mid - 1
sys.stdout.write(text[:lo])
EOF
}

peer="llama.cpp"
[ "$no_peer" = 0 ] && peer=$(cat "$llama/VERSION") || peer="no peer"
echo "# prefill / TTFT: hsd $(git -C "$root" rev-parse --short HEAD)${base:+ and base $base} vs $peer, $threads threads, $rounds rounds"
echo "# $(date -u '+%F %T UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) CPUs, load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# target $target; drafter $draft"
for P in $ps; do
    make_prompt "$P" > "$out/prompt$P"
    for r in $(seq 1 "$rounds"); do
        [ "$no_peer" = 0 ] && "$driver" "$target" --p "$P" --reps 1 --threads "$threads" | awk -v P="$P" '$1 == P {print "llama.cpp", P, $2}' >> "$out/times"
        for a in $algos; do
            d=""
            [ "$a" = ar ] || d="--draft $draft"
            [ "$a" = sd ] && d="--draft $sd_draft"
            # this build and the base alternate which goes first from round to round
            bins="hsd:$hsd"
            if [ -n "$base" ]; then
                if [ $((r % 2)) = 1 ]; then bins="base:$base hsd:$hsd"; else bins="hsd:$hsd base:$base"; fi
            fi
            for nb in $bins; do
                # shellcheck disable=SC2086
                "${nb#*:}" generate --target "$target" $d --algo "$a" -p "$(cat "$out/prompt$P")" -n 4 \
                    --json --threads "$threads" 2>/dev/null |
                    python3 -c "import json,sys; j=json.loads(sys.stdin.readline()); print('${nb%%:*}-$a', $P, j['ttft_ms'], j['tpot_ms'])" >> "$out/times"
            done
        done
        echo "# round $r of P=$P done, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    done
done
python3 - "$out/times" <<'EOF'
import sys, statistics
rows, tpot = {}, {}
for l in open(sys.argv[1]):
    who, p, ms, *tp = l.split()
    rows.setdefault((who, int(p)), []).append(float(ms))
    if tp: tpot.setdefault((who, int(p)), []).append(float(tp[0]))
ps = sorted({p for _, p in rows})
print("| tool / algorithm | " + " | ".join(f"P={p}: ms (tokens/s, vs AR)" for p in ps) + " |")
print("|---|" + "---|" * len(ps))
order = ["llama.cpp"] + [f"{b}-{a}" for a in ["ar", "sd", "slem", "tli", "slrs"] for b in ["base", "hsd"]]
for who in [w for w in order if any(k[0] == w for k in rows)]:
    cells = []
    for p in ps:
        v = rows.get((who, p))
        ar = rows.get((who.split("-")[0] + "-ar", p)) if who != "llama.cpp" else rows.get(("hsd-ar", p))
        if not v: cells.append("-"); continue
        m = statistics.median(v)
        rel = f", {m / statistics.median(ar):.2f}x AR" if ar else ""
        cells.append(f"{m:.0f} ({1000 * p / m:.0f}{rel})")
    print(f"| {who} | " + " | ".join(cells) + " |")
print("raw:", {f"{k[0]}@{k[1]}": v for k, v in sorted(rows.items())})
# a decode step's time in the same runs (hsd: tpot_ms), the scale of one forward(1)
print("tpot_ms medians:", {f"{k[0]}@{k[1]}": round(statistics.median(v), 1) for k, v in sorted(tpot.items())})
EOF
