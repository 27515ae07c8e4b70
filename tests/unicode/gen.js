#!/usr/bin/env node
// Whole-code-space reference for hsd's Unicode-dependent tokenizer components, produced by
// the official HuggingFace `tokenizers` Node binding (the version pinned in
// ../shared/tools/package.json, 0.23.2: the same package the corpus references come from).
//
// Usage: node gen.js <components.json> <shared/tokenizers dir> <out dir> [name ...]
//   (tests/unicode/regen.sh installs the pinned package and runs this; `name`s restrict the
//   run to some components / families, e.g. `nfkc rt_qwen3`.)
//
// Every scalar value U+0000..U+10FFFF (surrogates excluded) is run, in each context of
// components.json ("%" stands for the code point: alone, after a letter, after a space,
// doubled, before and after a combining mark), through each normalizer (normalizeString)
// and pre-tokenizer (preTokenizeString). Output, one file per component (<name>.txt):
//
//   line 1..k  "# ..." comments
//   then runs  "<count, hex> <template id>"  or  "<count, hex> =<template>"  (a new template,
//              whose id is the number of templates defined before it); the runs cover the
//              scalar values in order, surrogates skipped.
//
// A template is the result for every context, joined by " ; ". A normalizer result is one
// string, a pre-tokenizer result a list of pieces joined by " | " ("~": no output/no piece,
// "^": an empty piece). A string is a space-separated list of tokens: a hex code point,
// "X" (the input code point; for components with a ByteLevel step, the byte-level
// characters of its UTF-8 bytes, as HF's pieces show them), "A" (the component's result for
// the code point alone, contexts 1.. of normalizers only) or "H" (the canonical
// decomposition of a Hangul syllable, Unicode 3.12). Results that follow a rule become the
// same template for whole ranges of code points, which keeps the files small.
//
// Round trip, one file per family (rt_<family>.txt): the same run format with one context,
// decode(encode(c)) (no special tokens added, none skipped), then lines "B <block> <hash>":
// FNV-1a 32 over the ids of encode(c) for every c of the 1024-code-point block (each id as
// 4 little-endian bytes, each code point's ids followed by 0xFFFFFFFF).
//
// Also: regex_gc.txt (general category per HF's regex engine), scripts.txt (UnicodeScripts
// classes), long.txt (30k-character runs through the regex pre-tokenizers); see below.
'use strict';
const fs = require('fs');
const path = require('path');
const T = require('tokenizers');

const [compPath, famDir, outDir, ...only] = process.argv.slice(2);
if (!outDir) {
  console.error('usage: node gen.js <components.json> <shared/tokenizers dir> <out dir> [name ...]');
  process.exit(2);
}
const conf = JSON.parse(fs.readFileSync(compPath, 'utf8'));
const FAMILIES = ['claude', 'deepseek_v3', 'gemma3', 'gpt2', 'gpt4o', 'gptoss', 'llama2', 'llama3',
  'llama3_1', 'mistral', 'qwen3', 'synthetic_unigram', 'synthetic_wordpiece'];
const VERSION = require('tokenizers/package.json').version;
fs.mkdirSync(outDir, { recursive: true });

// GPT-2 bytes_to_unicode
const BL = new Array(256);
{
  let n = 0;
  for (let b = 0; b < 256; b++) {
    const keep = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    BL[b] = keep ? b : 256 + n++;
  }
}
function byteLevelCps(cp) {
  return [...Buffer.from(String.fromCodePoint(cp), 'utf8')].map((b) => BL[b]);
}
function hangul(cp) {
  const s = cp - 0xac00;
  if (s < 0 || s >= 11172) return null;
  const l = 0x1100 + Math.floor(s / 588), v = 0x1161 + Math.floor((s % 588) / 28), t = s % 28;
  return t ? [l, v, 0x11a7 + t] : [l, v];
}
function hasByteLevel(spec) {
  if (!spec) return false;
  if (spec.type === 'ByteLevel') return true;
  return (spec.pretokenizers || []).some(hasByteLevel);
}
function makeTok(kind, spec) {
  const j = { version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null,
    pre_tokenizer: null, post_processor: null, decoder: null,
    model: { type: 'WordLevel', vocab: { '[UNK]': 0 }, unk_token: '[UNK]' } };
  j[kind] = spec;
  return T.Tokenizer.fromString(JSON.stringify(j));
}

const cpsOf = (s) => Array.from(s, (ch) => ch.codePointAt(0));
function startsAt(a, i, b) {
  if (!b || !b.length || i + b.length > a.length) return false;
  for (let k = 0; k < b.length; k++) if (a[i + k] !== b[k]) return false;
  return true;
}
// subs: [[token, cps], ...] tried in order at each position
function render(cps, subs) {
  if (!cps.length) return '^';
  const out = [];
  for (let i = 0; i < cps.length;) {
    let hit = false;
    for (const [tok, seq] of subs)
      if (startsAt(cps, i, seq)) {
        out.push(tok);
        i += seq.length;
        hit = true;
        break;
      }
    if (!hit) out.push(cps[i++].toString(16).toUpperCase());
  }
  return out.join(' ');
}

class RunWriter {
  constructor(file, header) {
    this.fd = fs.openSync(file, 'w');
    this.buf = header.map((h) => '# ' + h + '\n').join('');
    this.ids = new Map();
    this.cur = null;
    this.count = 0;
  }
  push(t) {
    if (t === this.cur) {
      this.count++;
      return;
    }
    this.flush();
    this.cur = t;
    this.count = 1;
  }
  flush() {
    if (this.cur === null) return;
    const id = this.ids.get(this.cur);
    if (id === undefined) {
      this.ids.set(this.cur, this.ids.size);
      this.buf += this.count.toString(16) + ' =' + this.cur + '\n';
    } else this.buf += this.count.toString(16) + ' ' + id + '\n';
    if (this.buf.length > 1 << 20) {
      fs.writeSync(this.fd, this.buf);
      this.buf = '';
    }
  }
  close(extra) {
    this.flush();
    this.cur = null;
    fs.writeSync(this.fd, this.buf + (extra || ''));
    fs.closeSync(this.fd);
  }
}

function* scalars() {
  for (let c = 0; c <= 0x10ffff; c++) if (c < 0xd800 || c > 0xdfff) yield c;
}

function runComponent(comp) {
  const tok = makeTok(comp.kind, comp.spec);
  const isNorm = comp.kind === 'normalizer';
  const norm = isNorm ? tok.getNormalizer() : null;
  const pre = isNorm ? null : tok.getPreTokenizer();
  const bl = !isNorm && hasByteLevel(comp.spec);
  const ctxs = conf.contexts.map((c) => c.split('%'));
  const file = path.join(outDir, comp.name + '.txt');
  const w = new RunWriter(file, [
    `hsd unicode reference v1: ${comp.kind} ${comp.name} = ${JSON.stringify(comp.spec)}`,
    `HF tokenizers ${VERSION} (node); contexts ${JSON.stringify(conf.contexts)}`,
  ]);
  const t0 = Date.now();
  for (const c of scalars()) {
    const ch = String.fromCodePoint(c);
    const x = bl ? byteLevelCps(c) : [c];
    const h = hangul(c);
    const parts = [];
    let alone = null;
    for (let k = 0; k < ctxs.length; k++) {
      const input = ctxs[k].join(ch);
      const subs = [];
      if (k > 0 && alone && !(alone.length === 1 && alone[0] === c)) subs.push(['A', alone]);
      if (h) subs.push(['H', h]);
      subs.push(['X', x]);
      if (isNorm) {
        const r = cpsOf(norm.normalizeString(input));
        if (k === 0) alone = r;
        parts.push(r.length ? render(r, subs) : '~');
      } else {
        const pieces = pre.preTokenizeString(input);
        parts.push(pieces.length ? pieces.map((p) => render(cpsOf(p[0]), subs)).join(' | ') : '~');
      }
    }
    w.push(parts.join(' ; '));
  }
  w.close();
  console.error(`${comp.name}: ${w.ids.size} templates, ${fs.statSync(file).size} bytes, ${(Date.now() - t0) / 1000}s`);
}

function fnv(h, v) {
  for (let k = 0; k < 4; k++) {
    h ^= (v >>> (8 * k)) & 0xff;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

async function runFamily(fam) {
  const tok = T.Tokenizer.fromFile(path.join(famDir, fam, 'tokenizer.json'));
  const file = path.join(outDir, 'rt_' + fam + '.txt');
  const w = new RunWriter(file, [
    `hsd unicode reference v1: round trip ${fam}: decode(encode(c)), no special tokens`,
    `HF tokenizers ${VERSION} (node); blocks: FNV-1a 32 of the ids per 1024 code points`,
  ]);
  const t0 = Date.now();
  const hashes = new Map();
  const all = [...scalars()];
  const B = 8192;
  for (let i = 0; i < all.length; i += B) {
    const cps = all.slice(i, i + B);
    const encs = await tok.encodeBatch(cps.map((c) => String.fromCodePoint(c)), { addSpecialTokens: false });
    const ids = encs.map((e) => e.getIds());
    const dec = await tok.decodeBatch(ids, false);
    for (let j = 0; j < cps.length; j++) {
      const c = cps[j];
      const blk = c >> 10;
      let hh = hashes.has(blk) ? hashes.get(blk) : 0x811c9dc5;
      for (const id of ids[j]) hh = fnv(hh, id);
      hashes.set(blk, fnv(hh, 0xffffffff));
      const r = cpsOf(dec[j]);
      w.push(r.length ? render(r, [['X', [c]]]) : '~');
    }
  }
  let extra = '';
  for (const [blk, hh] of hashes) extra += `B ${blk.toString(16)} ${hh.toString(16)}\n`;
  w.close(extra);
  console.error(`rt_${fam}: ${w.ids.size} templates, ${fs.statSync(file).size} bytes, ${(Date.now() - t0) / 1000}s`);
}

// General category of every code point as HF's regex engine (Oniguruma) sees it, probed with
// Split(\p{Xx}, Removed) over strings of 4096 code points: the pieces left are the
// code points outside the class. Written as runs "<count, hex> <category>" (Cn: none).
const GC = ['Lu', 'Ll', 'Lt', 'Lm', 'Lo', 'Mn', 'Mc', 'Me', 'Nd', 'Nl', 'No', 'Pc', 'Pd', 'Ps',
  'Pe', 'Pi', 'Pf', 'Po', 'Sm', 'Sc', 'Sk', 'So', 'Zs', 'Zl', 'Zp', 'Cc', 'Cf', 'Co'];
function runRegexGc() {
  const t0 = Date.now();
  const all = [...scalars()];
  const gc = new Array(all.length).fill('Cn');
  const N = 4096;
  for (const g of GC) {
    const pre = makeTok('pre_tokenizer', { type: 'Split', pattern: { Regex: `\\p{${g}}` },
      behavior: 'Removed', invert: false }).getPreTokenizer();
    for (let i = 0; i < all.length; i += N) {
      const chunk = all.slice(i, i + N);
      const left = new Uint8Array(chunk.length);
      for (const [, [a, b]] of pre.preTokenizeString(String.fromCodePoint(...chunk)))
        for (let k = a; k < b; k++) left[k] = 1;
      for (let k = 0; k < chunk.length; k++)
        if (!left[k]) {
          if (gc[i + k] !== 'Cn') throw new Error(`U+${chunk[k].toString(16)} in ${gc[i + k]} and ${g}`);
          gc[i + k] = g;
        }
    }
  }
  const w = new RunWriter(path.join(outDir, 'regex_gc.txt'), [
    'hsd unicode reference v1: general category per HF regex (\\p{Xx} in a Split pattern)',
    `HF tokenizers ${VERSION} (node); runs "<count> =<category>" over the scalar values`,
  ]);
  for (const g of gc) w.push(g);
  w.close();
  console.error(`regex_gc: ${(Date.now() - t0) / 1000}s`);
}

// Script classes of HF's UnicodeScripts pre-tokenizer (its own Scripts.txt table, with
// Hiragana/Katakana/U+30FC counted as Han and ' ' as "Any"). Only "same script or not" can
// be observed, so: Any = code points that alone give no piece; runs of consecutive other
// code points of one script from the splits of long strings of them; then each run joins
// the class of the first earlier run whose representative does not split from it.
// Written as runs "<count, hex> =<class>" (0: Any; classes numbered in order of appearance).
function runScripts() {
  const t0 = Date.now();
  const pre = makeTok('pre_tokenizer', { type: 'UnicodeScripts' }).getPreTokenizer();
  const all = [...scalars()];
  const cls = new Int32Array(all.length).fill(-1);
  const others = [];
  for (let i = 0; i < all.length; i++) {
    if (pre.preTokenizeString(String.fromCodePoint(all[i])).length === 0) cls[i] = 0;
    else others.push(i);
  }
  const reps = []; // [code point] per class 1..
  const N = 4096;
  for (let s0 = 0; s0 < others.length; s0 += N) {
    const idx = others.slice(s0, s0 + N);
    const pieces = pre.preTokenizeString(String.fromCodePoint(...idx.map((i) => all[i])));
    for (const [, [a, b]] of pieces) {
      const cp = all[idx[a]];
      let k = reps.findIndex((r) => pre.preTokenizeString(String.fromCodePoint(r, cp)).length === 1);
      if (k < 0) {
        reps.push(cp);
        k = reps.length - 1;
      }
      for (let q = a; q < b; q++) cls[idx[q]] = k + 1;
    }
  }
  const w = new RunWriter(path.join(outDir, 'scripts.txt'), [
    'hsd unicode reference v1: UnicodeScripts classes (0: Any, else same number = same script)',
    `HF tokenizers ${VERSION} (node); runs "<count> =<class>" over the scalar values`,
  ]);
  for (const c of cls) w.push(String(c));
  w.close();
  console.error(`scripts: ${reps.length} classes, ${(Date.now() - t0) / 1000}s`);
}

// Long runs (tens of thousands of characters of one class) through the regex-based
// pre-tokenizers: the piece lengths in code points, from HF's offsets. One line per
// component and input: "<component> <input index> <length> <length> ...".
const LONG_INPUTS = ['a'.repeat(30000), '\u{11F04}'.repeat(30000), ' ' + '\u{11F04}'.repeat(30000) + '!',
  '1'.repeat(30000), ' '.repeat(30000) + 'x', '\u{1C89}'.repeat(30000)];
const LONG_COMPONENTS = ['bytelevel', 'llama3_pre', 'qwen3_pre', 'gpt4o_pre', 'gptoss_pre',
  'deepseek_v3_pre', 'whitespace', 'split_regex_classes'];
function runLong() {
  let out = `# hsd unicode reference v1: long runs, HF tokenizers ${VERSION}; inputs (JS):\n` +
    '# ' + JSON.stringify(LONG_INPUTS.map((x) => [x.codePointAt(0).toString(16), [...x].length])) + '\n';
  for (const comp of conf.components) {
    if (!LONG_COMPONENTS.includes(comp.name)) continue;
    const pre = makeTok(comp.kind, comp.spec).getPreTokenizer();
    LONG_INPUTS.forEach((x, i) => {
      const lens = pre.preTokenizeString(x).map(([, [a, b]]) => b - a);
      out += `${comp.name} ${i} ${lens.join(' ')}\n`;
    });
  }
  fs.writeFileSync(path.join(outDir, 'long.txt'), out);
  console.error('long: done');
}

(async () => {
  const want = (n) => !only.length || only.includes(n);
  if (want('long')) runLong();
  if (want('scripts')) runScripts();
  if (want('regex_gc')) runRegexGc();
  for (const comp of conf.components) if (want(comp.name)) runComponent(comp);
  for (const fam of FAMILIES) if (want('rt_' + fam)) await runFamily(fam);
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
