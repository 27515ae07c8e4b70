#!/usr/bin/env node
// The tokenizer oracle for chat prompts: HF `tokenizers` (npm 0.23.2, installed by
// scripts/install_hf_tokenizers.sh; NODE_PATH points at its node_modules).
//   node hf_encode.js TOKENIZER.json TEXT_FILE [TOKEN ...]
// prints {"ids": encode(text, add_special_tokens=false), "token_ids": {TOKEN: id or null}}
'use strict';
const fs = require('fs');
const { Tokenizer } = require('tokenizers');

async function main() {
  const [tokPath, textPath, ...tokens] = process.argv.slice(2);
  const tok = Tokenizer.fromFile(tokPath);
  const text = fs.readFileSync(textPath, 'utf8');
  const enc = await tok.encode(text, null, { addSpecialTokens: false });
  const tokenIds = {};
  for (const t of tokens) {
    const id = tok.tokenToId(t);
    tokenIds[t] = id === undefined ? null : id;
  }
  process.stdout.write(JSON.stringify({ ids: enc.getIds(), token_ids: tokenIds }) + '\n');
}
main().catch((e) => { process.stderr.write(String(e) + '\n'); process.exit(1); });
