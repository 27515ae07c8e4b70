#!/usr/bin/env bash
# Old vs new hsd tokenizer speed, interleaved in one run (A B A B ... per family), so that
# machine load hits both alike. Prints one line per measurement and a median table.
#   OLD=/path/to/old/hsd NEW=build/hsd bench/tokenize_ab.sh [MB] [RUNS] [ROUNDS] [families...]
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${HSD_SHARED:-../shared}
MB=${1:-2}
RUNS=${2:-3}
ROUNDS=${3:-2}
shift $(($# > 3 ? 3 : $#)) || true
FAMS=${*:-"claude deepseek_v3 gemma3 gpt2 gpt4o gptoss llama2 llama3 llama3_1 mistral qwen3 synthetic_unigram synthetic_wordpiece"}
OLD=${OLD:?set OLD to the hsd binary to compare with}
NEW=${NEW:-build/hsd}
CORPUS=$(realpath "$SHARED/corpus/corpus.jsonl")
out=$(mktemp)
for r in $(seq "$ROUNDS"); do
    for f in $FAMS; do
        tj=$(realpath "$SHARED/tokenizers/$f/tokenizer.json")
        for impl in old new; do
            bin=$OLD
            [ $impl = new ] && bin=$NEW
            j=$("$bin" bench tokenize -t "$tj" --corpus "$CORPUS" --mb "$MB" --runs "$RUNS" --json)
            echo "$f $impl $j" | tee -a "$out"
        done
    done
done
python3 - "$out" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    fam, impl, js = line.split(" ", 2)
    rows.setdefault(fam, {}).setdefault(impl, []).append(json.loads(js))
print("\n| family | old MB/s | new MB/s | new/old | old load ms | new load ms | tokens equal |")
print("|---|---|---|---|---|---|---|")
for fam, r in rows.items():
    o = statistics.median(x["median_mb_s"] for x in r["old"])
    n = statistics.median(x["median_mb_s"] for x in r["new"])
    lo = statistics.median(x["load_ms"] for x in r["old"])
    ln = statistics.median(x["load_ms"] for x in r["new"])
    eq = r["old"][0]["tokens"] == r["new"][0]["tokens"]
    print(f"| {fam} | {o:.2f} | {n:.2f} | {n/o:.3f} | {lo:.0f} | {ln:.0f} | {eq} |")
PY
rm -f "$out"
