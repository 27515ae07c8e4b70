#!/usr/bin/env bash
# llama.cpp's own tokenizer on the GGUF vocabularies hsd writes: for each shared tokenizer
# family, `hsd synth --shape tiny --tokenizer tokenizer.json` writes a small model whose
# vocabulary is that tokenizer's (or refuses, naming what GGUF cannot hold); llama.cpp v0.5.0
# (build/llama_oracle tokenize: vocabulary only, special tokens parsed, none added) encodes
# every corpus line, and its ids are compared with HF tokenizers 0.23.2's (../shared/reference,
# the "ids" field) and with hsd's own tokenizer reading the same GGUF (`hsd tokenize`).
# A check, not a timing: prints one line per family and a markdown table.
#   bench/gguf_vocab.sh [families...]
# Needs llama.cpp (scripts/install_llama_cpp.sh, then re-run cmake so build/llama_oracle exists).
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${HSD_SHARED:-../shared}
HSD=${HSD:-build/hsd}
ORACLE=${LLAMA_ORACLE:-build/llama_oracle}
FAMS=${*:-"claude deepseek_v3 gemma3 gpt2 gpt4o gptoss llama2 llama3 llama3_1 mistral qwen3 synthetic_unigram synthetic_wordpiece"}
[ -x "$HSD" ] || { echo "gguf_vocab: build hsd first (make build)" >&2; exit 1; }
[ -x "$ORACLE" ] || { echo "gguf_vocab: no $ORACLE: install llama.cpp (scripts/install_llama_cpp.sh) and re-run cmake" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the corpus in llama.cpp's test-tokenizer .inp format
python3 - "$SHARED/corpus/corpus.jsonl" "$tmp/corpus.inp" <<'PY'
import json, sys
with open(sys.argv[2], "w", encoding="utf-8", newline="") as out:
    for line in open(sys.argv[1], encoding="utf-8"):
        out.write(json.loads(line)["text"] + "\n__ggml_vocab_test__\n")
PY
# a family refused for its normalizer is also written without it (--gguf-drop-normalizer),
# as "FAMILY-without-normalizer": that GGUF can match only on text the normalizer keeps
check() {
    local run=$1
    local f=${run%%+*} name d tj msg
    flags=()
    [ "$run" != "$f" ] && flags=(--gguf-drop-normalizer)
    tj="$SHARED/tokenizers/$f/tokenizer.json"
    d="$tmp/$run"
    name=$f
    [ "$run" != "$f" ] && name="$f-without-normalizer"
    if ! msg=$("$HSD" synth --shape tiny --format gguf --dtype q8_0 -o "$d" --tokenizer "$tj" "${flags[@]}" 2>&1 >/dev/null); then
        echo "$name refused ${msg#*: }" | tee -a "$tmp/results"
        case $msg in *"normalizer N"*) [ "$run" = "$f" ] && FAMS_DROP="${FAMS_DROP:-} $f+drop" ;; esac
        return
    fi
    "$ORACLE" tokenize "$d/model.gguf" "$tmp/corpus.inp" > "$tmp/$run.llama" 2> "$tmp/$run.err" ||
        { echo "$name llama.cpp-failed $(tail -1 "$tmp/$run.err")" | tee -a "$tmp/results"; return; }
    python3 - "$SHARED/reference/$f.jsonl" "$tmp/$run.llama" "$name" "$HSD" "$d/model.gguf" <<'PY' | tee -a "$tmp/results"
import json, subprocess, sys
ref = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
got = [[int(x) for x in l.split()] for l in open(sys.argv[2], encoding="utf-8")]
hsd, model = sys.argv[4], sys.argv[5]
same, first = 0, None
for i, (r, g) in enumerate(zip(ref, got)):
    if r["ids"] == g:
        same += 1
    elif first is None:
        first = i + 1
if len(got) != len(ref):
    print(f"{sys.argv[3]} line-count-mismatch {len(got)} {len(ref)}")
    sys.exit(0)
# hsd's own GGUF tokenizer on the same lines (hsd tokenize --jsonl: one object per line)
inp = "".join(json.dumps({"text": r["text"]}) + "\n" for r in ref)
out = subprocess.run([hsd, "tokenize", "-t", model, "--jsonl"], input=inp, capture_output=True,
                     text=True)
hsd_ids = [json.loads(l)["ids"] for l in out.stdout.splitlines()]
hsd_same = sum(a == r["ids"] for a, r in zip(hsd_ids, ref)) if len(hsd_ids) == len(ref) else 0
note = ""
if sys.argv[3].endswith("-without-normalizer"):
    # lines the dropped normalizer leaves as they are (Python's unicodedata as the judge)
    import unicodedata
    form = json.load(open(sys.argv[1].replace("reference/", "tokenizers/").replace(".jsonl", "/tokenizer.json"),
                          encoding="utf-8"))["normalizer"]["type"]
    inv = [i for i, r in enumerate(ref) if unicodedata.normalize(form, r["text"]) == r["text"]]
    ok = sum(ref[i]["ids"] == got[i] for i in inv)
    hok = sum(ref[i]["ids"] == hsd_ids[i] for i in inv) if len(hsd_ids) == len(ref) else 0
    note = f" ({form}-invariant lines: llama.cpp {ok}/{len(inv)}, hsd {hok}/{len(inv)})"
print(f"{sys.argv[3]} written llama.cpp {same}/{len(ref)} hsd {hsd_same}/{len(ref)} first-diff {first}{note}")
PY
}
FAMS_DROP=""
for f in $FAMS; do check "$f"; done
for r in $FAMS_DROP; do check "$r"; done
echo
echo "| family | GGUF vocabulary | llama.cpp ids = HF | hsd ids = HF | first differing line |"
echo "|---|---|---|---|---|"
while read -r fam what rest; do
    case $what in
        refused) echo "| $fam | refused: ${rest//|/\\|} | - | - | - |" ;;
        written) set -- $rest; echo "| $fam | written | $2 | $4 | ${6/None/-} ${*:7} |" ;;
        *) echo "| $fam | $what $rest | | | |" ;;
    esac
done < "$tmp/results"
