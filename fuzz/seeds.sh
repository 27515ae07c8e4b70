#!/usr/bin/env bash
# Builds the seed corpora for the fuzz harnesses from the shared data (never copied into the
# repo): OUT/<harness>/ for each harness. Usage: fuzz/seeds.sh SHARED_DIR OUT_DIR HSD_CLI
set -euo pipefail
shared=$1 out=$2 cli=$3
mkdir -p "$out"
d() { rm -rf "${out:?}/$1"; mkdir -p "$out/$1"; echo "$out/$1"; }

# tokenizer.json: the two small synthetic tokenizers whole, and every family cut down to its
# first 300 vocabulary entries with the merges among them (keeps each format's structure while
# keeping inputs small enough for fast mutation).
o=$(d fuzz_tokenizer_json)
cp "$shared"/tokenizers/synthetic_wordpiece/tokenizer.json "$o/synthetic_wordpiece.json"
for t in "$shared"/tokenizers/*/tokenizer.json; do
    fam=$(basename "$(dirname "$t")")
    jq -c '
      def cut: if type == "array" then .[:300] else (to_entries | sort_by(.value) | .[:300] | from_entries) end;
      (.model.vocab | cut) as $v
      | .model.vocab = $v
      | if (.model.merges | type) == "array" and ($v | type) == "object" then
          .model.merges |= map(select(
            (if type == "string" then split(" ") else . end) as $p
            | ($p | length) == 2 and $v[$p[0]] != null and $v[$p[1]] != null
              and $v[$p[0] + $p[1]] != null))
        else . end
      | .added_tokens |= (.[:40])' "$t" > "$o/$fam.mini.json"
done

o=$(d fuzz_tokenizer_bin)
cp "$shared"/models/stories260K/tok512.bin "$o/tok512.bin"
cp "$shared"/models/babyllama-tok105/tok105.bin "$o/tok105.bin"
head -c 20000 "$shared"/models/llama2-tokenizer/tokenizer.bin > "$o/llama2.head.bin"

o=$(d fuzz_gguf_vocab)
for g in "$shared"/models/vocab-gguf/*.gguf; do cp "$g" "$o/"; done

# text: every corpus sample, with a leading byte choosing the tokenizer (cycling)
o=$(d fuzz_roundtrip)
i=0
jq -r '.text | @base64' "$shared/corpus/corpus.jsonl" | while read -r b; do
    { printf "\\$(printf %03o $((i % 8)))"; printf '%s' "$b" | base64 -d; } > "$o/s$i"
    i=$((i + 1))
done

# bridge: byte 0 = pair, then corpus text cut into 0xFF-separated chunks of ~12 bytes
o=$(d fuzz_bridge)
i=0
jq -r '.text | @base64' "$shared/corpus/corpus.jsonl" | sed -n 1,120p | while read -r b; do
    { printf "\\$(printf %03o $((i % 16)))"; { printf '%s' "$b" | base64 -d || true; } | dd bs=400 count=1 iflag=fullblock 2>/dev/null |
        sed -e 's/\(............\)/\1\xff/g'; } > "$o/s$i"
    i=$((i + 1))
done

o=$(d fuzz_model_llama2c)
cp "$shared"/models/stories260K/stories260K.bin "$o/"

o=$(d fuzz_model_gguf)
tmp=$(mktemp -d)
"$cli" synth --shape tiny --format gguf --dtype q8_0 -o "$tmp/q8" >/dev/null
"$cli" synth --shape tiny-qwen2 --format gguf --dtype f16 -o "$tmp/f16" >/dev/null
cp "$tmp/q8/model.gguf" "$o/tiny_q8.gguf"
cp "$tmp/f16/model.gguf" "$o/tiny_qwen2_f16.gguf"
# files quantised by llama.cpp (its oracle tool, from the regular build: the fuzz build has no
# llama.cpp), so the harness starts from every block type hsd reads: "small" (widths of 256)
# holds the k-quants, "tiny" (widths of 64) the 32-element blocks llama.cpp falls back to
oracle=${HSD_LLAMA_ORACLE:-build/llama_oracle}
if [ -x "$oracle" ]; then
    "$cli" synth --shape small --format gguf --dtype f32 -o "$tmp/small" >/dev/null
    "$cli" synth --shape tiny --format gguf --dtype f32 -o "$tmp/tiny" >/dev/null
    for t in Q2_K Q3_K_M Q4_K_M Q5_K_M Q6_K; do
        LLAMA_ORACLE_PURE=1 "$oracle" quantize "$tmp/small/model.gguf" "$o/small_$t.gguf" $t
    done
    for t in Q4_0 Q4_1 Q5_0 Q5_1; do
        LLAMA_ORACLE_PURE=1 "$oracle" quantize "$tmp/tiny/model.gguf" "$o/tiny_$t.gguf" $t
    done
else
    echo "fuzz/seeds.sh: no llama.cpp oracle ($oracle): GGUF seeds without the block types" \
        "(run scripts/install_llama_cpp.sh and build)" >&2
fi

o=$(d fuzz_model_safetensors)
"$cli" synth --shape tiny --format safetensors --dtype bf16 -o "$tmp/st" >/dev/null
cp "$tmp/st/model.safetensors" "$o/tiny_bf16.safetensors"
rm -rf "$tmp"

# draft-head factor files for the harness's 16 x 8 classifier: router and low-rank pairs of
# rank 1..4 in F32 and BF16 (written here, so the seeds need no model)
o=$(d fuzz_head_factors)
python3 - "$o" <<'PY'
import json, struct, sys
out = sys.argv[1]
for names in (("router.w_down", "router.w_vocab"), ("lm_head.w_down", "lm_head.w_up")):
    for rank in (1, 2, 4):
        for dt, size in (("F32", 4), ("BF16", 2)):
            shapes = ((rank, 8), (16, rank))
            hdr, off, data = {}, 0, b""
            for name, (r, c) in zip(names, shapes):
                vals = [((i * 13) % 7 - 3) / 4.0 for i in range(r * c)]
                if dt == "F32":
                    raw = b"".join(struct.pack("<f", v) for v in vals)
                else:
                    raw = b"".join(struct.pack("<f", v)[2:] for v in vals)
                hdr[name] = {"dtype": dt, "shape": [r, c], "data_offsets": [off, off + len(raw)]}
                off += len(raw)
                data += raw
            text = json.dumps(hdr, separators=(",", ":")).encode()
            text += b" " * (-len(text) % 8)
            with open("%s/%s_r%d_%s.safetensors" % (out, names[0].split(".")[0], rank, dt), "wb") as f:
                f.write(struct.pack("<Q", len(text)) + text + data)
PY

# chat templates: every template of the test corpus (tests/data/chat_templates, and the shared
# configs' chat_template), each followed by a NUL and one of the test conversations as context
o=$(d fuzz_chat_template)
root=$(cd "$(dirname "$0")/.." && pwd)
convs=("$root"/tests/data/chat_conversations/*.json)
i=0
for t in "$root"/tests/data/chat_templates/*.jinja "$shared"/tokenizers/*/tokenizer_config.json; do
    c=${convs[$((i % ${#convs[@]}))]}
    i=$((i + 1))
    if [ "${t##*.}" = json ]; then
        jq -j 'select(.chat_template | type == "string") | .chat_template' "$t" > "$o/seed$i" 2>/dev/null || continue
        [ -s "$o/seed$i" ] || { rm -f "$o/seed$i"; continue; }
    else
        cat "$t" > "$o/seed$i"
    fi
    printf '\0' >> "$o/seed$i"
    jq -c '. + {add_generation_prompt: true, bos_token: "<s>", eos_token: "</s>"}' "$c" >> "$o/seed$i"
done
# hsd serve request bodies: byte 0 picks the endpoint (0 completions, 1 chat, 2 tokenize,
# 3 detokenize; bit 2: the server has a drafter)
o=$(d fuzz_server_request)
printf '\004{"prompt":"Once upon a time","max_tokens":16,"temperature":0.7,"top_p":0.9,"top_k":40,"seed":3,"stop":[".","\\n"],"stream":true,"stream_options":{"include_usage":true},"hsd":{"algo":"tli","k":3,"adaptive_k":true}}' >"$o/completion.json"
printf '\000{"prompt":[1,403,407],"max_tokens":4,"stop":"x","n":1,"logprobs":null}' >"$o/ids.json"
printf '\005{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"Hi"}]}],"max_completion_tokens":8,"tools":[],"response_format":{"type":"text"}}' >"$o/chat.json"
printf '\002{"content":"Once upon a time","add_special":true,"with_pieces":true}' >"$o/tokenize.json"
printf '\003{"tokens":[1,403,407,261]}' >"$o/detokenize.json"
printf '\000{"prompt":"x","n":2,"echo":true}' >"$o/unsupported.json"
