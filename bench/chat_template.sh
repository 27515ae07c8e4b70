#!/usr/bin/env bash
# Chat-template render cost: microseconds per conversation for one template (default: the shared
# Qwen3 tokenizer_config.json) in hsd (`hsd bench chat`), Python Jinja2 (configured as
# transformers' apply_chat_template) and @huggingface/jinja (npm, pinned, installed into
# .deps/hf-jinja). Contexts: tests/data/chat_conversations/{basic,multi_turn,tools}.json with
# add_generation_prompt and the template's special tokens. Each renderer renders the parsed
# template N times per run, best of 5 runs; all three outputs are checked byte-identical first.
#   bench/chat_template.sh [HSD_CLI] [TEMPLATE] [N]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
hsd=${1:-$root/build/hsd}
shared=${HSD_SHARED:-$root/../shared}
tmpl=${2:-$shared/tokenizers/qwen3/tokenizer_config.json}
n=${3:-2000}
jdir=$root/.deps/hf-jinja
if [ ! -f "$jdir/node_modules/@huggingface/jinja/package.json" ]; then
    mkdir -p "$jdir"
    (cd "$jdir" && npm install --silent --no-audit --no-fund @huggingface/jinja@0.5.11)
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p') ($(nproc) cores); $(date -u +%Y-%m-%dT%H:%MZ)"
echo "template: $tmpl"
for conv in basic multi_turn tools; do
    python3 - "$root/tests/data/chat_conversations/$conv.json" "$tmpl" > "$tmp/$conv.json" <<'PY'
import json, sys
ctx = json.load(open(sys.argv[1], encoding="utf-8"))
cfg = json.load(open(sys.argv[2], encoding="utf-8")) if sys.argv[2].endswith(".json") else {}
for k in ("bos_token", "eos_token"):
    v = cfg.get(k)
    v = v.get("content") if isinstance(v, dict) else v
    if v is not None:
        ctx[k] = v
ctx["add_generation_prompt"] = True
print(json.dumps(ctx, ensure_ascii=False))
PY
    # the same text from all three (the oracle's reference first)
    python3 "$root/tests/oracle/chat_ref.py" render "$tmpl" "$tmp/$conv.json" > "$tmp/ref.txt"
    "$hsd" template -t "$tmpl" --context "$tmp/$conv.json" --now 2024-07-26 > "$tmp/hsd.txt"
    cmp -s "$tmp/ref.txt" "$tmp/hsd.txt" || { echo "$conv: hsd differs from Jinja2" >&2; exit 1; }
    h=$("$hsd" bench chat -t "$tmpl" --context "$tmp/$conv.json" --iters "$n" --json)
    p=$(python3 "$root/bench/chat/jinja2_bench.py" "$tmpl" "$tmp/$conv.json" "$n")
    j=$(node "$root/bench/chat/hf_jinja_bench.mjs" "$jdir" "$tmpl" "$tmp/$conv.json" "$n")
    python3 - "$conv" "$h" "$p" "$j" <<'PY'
import json, sys
conv, h, p, j = sys.argv[1], *map(json.loads, sys.argv[2:])
print(f"{conv:11s} {h['output_bytes']:5d} B  hsd {h['render_us']:8.2f} us  Jinja2 {p['jinja2']} {p['render_us']:8.2f} us"
      f" ({p['render_us'] / h['render_us']:5.1f}x)  @huggingface/jinja {j['version']} {j['render_us']:8.2f} us"
      f" ({j['render_us'] / h['render_us']:5.1f}x)   parse: hsd {h['load_us']:.0f} us (file load included),"
      f" Jinja2 {p['compile_us']:.0f} us, hf/jinja {j['parse_us']:.0f} us")
PY
done
