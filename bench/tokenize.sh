#!/usr/bin/env bash
# Side-by-side tokenizer benchmark: hsd vs HF tokenizers (npm tokenizers, via
# shared/tools/bench-hf.js), same machine, same corpus, single thread, one family after the
# other. Prints one JSON line per implementation and family, then a markdown table.
#   bench/tokenize.sh [MB] [RUNS] [families...]
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${HSD_SHARED:-../shared}
MB=${1:-8}
RUNS=${2:-5}
shift $(( $# > 2 ? 2 : $# )) || true
FAMS=${*:-"llama2 llama3 qwen3 gemma3 gpt2 deepseek_v3 gpt4o"}
HSD=${HSD:-build/hsd}
[ -x "$HSD" ] || { echo "bench: build hsd first (make build)" >&2; exit 1; }
HF_DIR=${HF_DIR:-/tmp/hsd-hf-bench}
if [ ! -d "$HF_DIR/node_modules/tokenizers" ]; then
    mkdir -p "$HF_DIR"
    cp "$SHARED"/tools/package.json "$SHARED"/tools/package-lock.json "$SHARED"/tools/bench-hf.js "$HF_DIR"/
    (cd "$HF_DIR" && npm ci --silent >/dev/null)
fi
CORPUS=$(realpath "$SHARED/corpus/corpus.jsonl")
out=$(mktemp)
for f in $FAMS; do
    tj=$(realpath "$SHARED/tokenizers/$f/tokenizer.json")
    h=$("$HSD" bench tokenize -t "$tj" --corpus "$CORPUS" --mb "$MB" --runs "$RUNS" --json)
    r=$(cd "$HF_DIR" && RAYON_NUM_THREADS=1 node bench-hf.js "$tj" "$CORPUS" --mb "$MB" --runs "$RUNS")
    echo "$f hsd $h" | tee -a "$out"
    echo "$f hf  $r" | tee -a "$out"
done
python3 - "$out" <<'PY'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    fam, impl, js = line.split(" ", 2)
    rows.setdefault(fam, {})[impl.strip()] = json.loads(js)
print("\n| family | hsd MB/s | HF MB/s | speedup | hsd load ms | HF load ms | load ratio | tokens equal |")
print("|---|---|---|---|---|---|---|---|")
for fam, r in rows.items():
    h, f = r["hsd"], r["hf"]
    print(f"| {fam} | {h['median_mb_s']:.2f} | {f['median_mb_s']:.2f} | {h['median_mb_s']/f['median_mb_s']:.1f}x | "
          f"{h['load_ms']:.0f} | {f['load_ms']:.0f} | {h['load_ms']/f['load_ms']:.2f} | {h['tokens']==f['tokens']} |")
PY
rm -f "$out"
# Peak RSS after loading gemma3 (262k vocabulary): hsd's getrusage maxrss right after load,
# HF's as node's peak RSS after Tokenizer.fromFile minus an empty node's peak RSS.
g3=$(realpath "$SHARED/tokenizers/gemma3/tokenizer.json")
h=$("$HSD" bench tokenize -t "$g3" --corpus "$CORPUS" --mb 0.01 --runs 1 --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["rss_after_load_kb"])')
base=$( { /usr/bin/time -f %M node -e '' ; } 2>&1 | tail -1)
hf=$( { cd "$HF_DIR" && /usr/bin/time -f %M node -e "require('tokenizers').Tokenizer.fromFile('$g3')" ; } 2>&1 | tail -1)
echo
echo "peak RSS after loading gemma3: hsd $((h / 1024)) MB; HF $((hf / 1024)) MB (node alone $((base / 1024)) MB, so HF's own $(((hf - base) / 1024)) MB)"
