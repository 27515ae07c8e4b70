#!/usr/bin/env node
// Writes tokenize/unicode_*.c: the character tables hsd uses where HF tokenizers' Rust
// crates follow a different Unicode version than Debian's utf8proc / PCRE2 / ICU. The tables
// are read off the whole-code-space HF references (tests/unicode/ref/, see gen.js), so they
// are HF's behaviour by construction, whatever the system libraries' versions:
//
//   lower        Lowercase / BertNormalizer(lowercase): Rust char::to_lowercase (std's
//                Unicode version), every code point whose lowercase is not itself
//   marks        StripAccents: the code points it removes (unicode-normalization-alignments'
//                is_combining_mark, Unicode 9.0)
//   bert_mn      BertNormalizer(strip_accents): the non-spacing marks it removes after NFD
//                (unicode_categories crate, Unicode 8.0-era categories)
//   bert_control BertNormalizer(clean_text): the code points it removes
//   bert_punct   BertPreTokenizer / Punctuation: the code points split off as punctuation
//   numeric      Digits: Rust char::is_numeric (std's Unicode version)
//   *_word_extra \w of Oniguruma (Split, Replace) and of the Rust regex crate (Whitespace)
//   scripts      UnicodeScripts: which code points share a script (HF's own Scripts table)
//   regex_gc     the general category of every assigned code point as HF's regex engine
//                (Oniguruma, Unicode 16.0) sees it; tokenize/regex_unicode.c adds the code
//                points that PCRE2 does not know yet to the \p{..} classes of patterns
//
// One file per table concept, each well under the tree's 800-line limit (all declared in
// tokenize/unicode_tables.h):
//   unicode_case.c     lower
//   unicode_classes.c  marks, bert_*, numeric, *_word_extra (code point sets)
//   unicode_scripts.c  scripts
//   unicode_gc_bmp.c   regex_gc below U+10000 and unicode_gc_supp.c from U+10000 on: one
//                      table of 3,000+ runs would be a file of 800+ lines by itself
//
// Usage: node gen_tables.js <ref dir> <out dir (tokenize/)>
'use strict';
const fs = require('fs');
const path = require('path');

const [refDir, outDir] = process.argv.slice(2);
if (!outDir) {
  console.error('usage: node gen_tables.js <ref dir> <out dir>');
  process.exit(2);
}

function hangul(cp) {
  const s = cp - 0xac00;
  if (s < 0 || s >= 11172) return null;
  const l = 0x1100 + Math.floor(s / 588), v = 0x1161 + Math.floor((s % 588) / 28), t = s % 28;
  return t ? [l, v, 0x11a7 + t] : [l, v];
}

// Calls fn(cp, pieces) for every scalar value with the result of context 0 (the code point
// alone): pieces is an array of code point arrays (a normalizer has one piece; none: []).
function eachAlone(name, fn) {
  const lines = fs.readFileSync(`${refDir}/${name}.txt`, 'utf8').split('\n');
  const tmpls = [];
  let cp = 0;
  for (const line of lines) {
    if (!line || line[0] === '#' || line[0] === 'B') continue;
    const sp = line.indexOf(' ');
    const count = parseInt(line.slice(0, sp), 16);
    let t;
    if (line[sp + 1] === '=') {
      t = line.slice(sp + 2).split(' ; ')[0];
      tmpls.push(t);
    } else t = tmpls[parseInt(line.slice(sp + 1), 10)];
    for (let i = 0; i < count; i++, cp++) {
      if (cp === 0xd800) cp = 0xe000;
      const pieces = t === '~' ? [] : t.split(' | ').map((p) =>
        p === '^' ? [] : p.split(' ').flatMap((tok) =>
          tok === 'X' ? [cp] : tok === 'H' ? hangul(cp) : [parseInt(tok, 16)]));
      fn(cp, pieces);
    }
  }
  if (cp !== 0x110000) throw new Error(`${name}: covers up to ${cp.toString(16)}`);
}

function ranges(set) {
  const out = [];
  for (const c of [...set].sort((a, b) => a - b)) {
    const last = out[out.length - 1];
    if (last && last[1] + 1 === c) last[1] = c;
    else out.push([c, c]);
  }
  return out;
}
const hex = (c) => '0x' + c.toString(16).toUpperCase();
// entries (strings) several to a line, to keep the generated file short
const pack = (items, per) => {
  const out = [];
  for (let i = 0; i < items.length; i += per) out.push('    ' + items.slice(i, i + per).join(' '));
  return out.join('\n');
};
function rangeTable(name, set, what) {
  const r = ranges(set);
  return `/* ${what}: ${set.size} code points */\n` +
    `const hsd_uc_range hsd_uc_${name}[] = {\n` +
    pack(r.map(([a, b]) => `{${hex(a)}, ${hex(b)}},`), 5) +
    `\n};\nconst size_t hsd_uc_n_${name} = ${r.length};\n\n`;
}

// lowercase: one code point, except the few whose lowercase is longer (U+0130)
const lower = [], lowerLong = [];
eachAlone('lowercase', (cp, p) => {
  const r = p[0] || [];
  if (r.length === 1 && r[0] === cp) return;
  if (r.length === 1) lower.push([cp, r[0]]);
  else lowerLong.push([cp, r]);
});
if (lowerLong.some(([, r]) => r.length > 3)) throw new Error('lowercase longer than 3');

const marks = new Set();
eachAlone('strip_accents', (cp, p) => {
  if (!p.length) marks.add(cp);
});

const nfdSelf = new Set();
eachAlone('nfd', (cp, p) => {
  if (p.length === 1 && p[0].length === 1 && p[0][0] === cp) nfdSelf.add(cp);
});
const bertMn = new Set();
eachAlone('bert_strip_accents', (cp, p) => {
  if (!p.length && nfdSelf.has(cp)) bertMn.add(cp);
});
const bertControl = new Set();
eachAlone('bert_clean', (cp, p) => {
  if (!p.length) bertControl.add(cp);
});
// Sets read off the "a%" context (index 1) of a pre-tokenizer: the code points c for which
// "a" + c gives exactly the template `want`.
function afterA(name, want) {
  const set = new Set();
  const tmpls = [];
  let cp = 0;
  for (const line of fs.readFileSync(`${refDir}/${name}.txt`, 'utf8').split('\n')) {
    if (!line || line[0] === '#') continue;
    const sp = line.indexOf(' ');
    const count = parseInt(line.slice(0, sp), 16);
    let t;
    if (line[sp + 1] === '=') {
      t = line.slice(sp + 2).split(' ; ')[1];
      tmpls.push(t);
    } else t = tmpls[parseInt(line.slice(sp + 1), 10)];
    for (let i = 0; i < count; i++, cp++) {
      if (cp === 0xd800) cp = 0xe000;
      if (t === want) set.add(cp);
    }
  }
  return set;
}
// BertPreTokenizer isolates punctuation: "a" + c is [a] [c]; letters etc. stay [a c]
const bertPunct = afterA('bert_pre', '61 | X');
// Digits (Rust char::is_numeric) splits numbers off: [a] [c]
const numeric = afterA('digits', '61 | X');
// Whitespace (\w+|[^\w\s]+): a word character joins the "a": [a c] ("aa" is "X X")
const word = afterA('whitespace', '61 X');
word.add(0x61);

// regex_gc.txt: runs of one category name per template (ICU's UCharCategory order, as
// tokenize/regex_unicode.c's gc_names)
const GC_NAMES = ['Cn', 'Lu', 'Ll', 'Lt', 'Lm', 'Lo', 'Mn', 'Me', 'Mc', 'Nd', 'Nl', 'No', 'Zs',
  'Zl', 'Zp', 'Cc', 'Cf', 'Co', 'Cs', 'Pd', 'Ps', 'Pe', 'Pc', 'Po', 'Sm', 'Sc', 'Sk', 'So', 'Pi',
  'Pf'];
const gcRuns = [];
{
  const tmpls = [];
  let cp = 0;
  for (const line of fs.readFileSync(`${refDir}/regex_gc.txt`, 'utf8').split('\n')) {
    if (!line || line[0] === '#') continue;
    const sp = line.indexOf(' ');
    const count = parseInt(line.slice(0, sp), 16);
    let g;
    if (line[sp + 1] === '=') tmpls.push((g = line.slice(sp + 2)));
    else g = tmpls[parseInt(line.slice(sp + 1), 10)];
    const gi = GC_NAMES.indexOf(g);
    if (gi < 0) throw new Error('regex_gc: unknown category ' + g);
    let lo = cp;
    cp += count;
    if (lo < 0xd800 && cp > 0xd800) throw new Error('regex_gc: run across the surrogates');
    if (lo >= 0xd800) lo += 0x800;
    const hi = (cp > 0xd800 ? cp + 0x800 : cp) - 1;
    if (gi) gcRuns.push([lo, hi, gi]);
  }
}

const header = `/* Generated by tests/unicode/gen_tables.js from tests/unicode/ref (HF tokenizers 0.23.2
 * over every Unicode scalar value); do not edit, re-run tests/unicode/regen.sh. See
 * docs/UNICODE.md for which Unicode version each table follows and why. */
#include "tokenize/unicode_tables.h"

`;
const files = {}; // file name -> contents
let c = header;
c += `/* Lowercase (Rust char::to_lowercase): ${lower.length} code points mapping to one other */\n`;
c += 'const hsd_uc_pair hsd_uc_lower_map[] = {\n' +
  pack(lower.map(([a, b]) => `{${hex(a)}, ${hex(b)}},`), 5) +
  `\n};\nconst size_t hsd_uc_n_lower_map = ${lower.length};\n\n`;
c += '/* ... and the ones whose lowercase is several code points */\n';
c += 'const hsd_uc_long hsd_uc_lower_long[] = {\n' +
  lowerLong.map(([a, r]) => `    {${hex(a)}, ${r.length}, {${r.map(hex).join(', ')}}},`).join('\n') +
  `\n};\nconst size_t hsd_uc_n_lower_long = ${lowerLong.length};\n\n`;
files['unicode_case.c'] = c;
c = header;
c += rangeTable('marks', marks, 'StripAccents: combining marks (removed)');
c += rangeTable('bert_mn', bertMn, 'BertNormalizer strip_accents: non-spacing marks (removed after NFD)');
c += rangeTable('bert_control', bertControl, 'BertNormalizer clean_text: removed code points');
c += rangeTable('bert_punct', bertPunct, 'BertPreTokenizer / Punctuation: punctuation');
c += rangeTable('numeric', numeric, 'Digits: numeric characters');
// \w is written [\p{L}\p{M}\p{Nd}\p{Pc}\p{Nl}extra] (regex_unicode.c): the extras (a few
// Alphabetic symbols, joiners; for Oniguruma also superscript digits and the like) must be
// all that differs, which is checked here.
const gcOf = new Map();
for (const [a, b, g] of gcRuns) for (let x = a; x <= b; x++) gcOf.set(x, GC_NAMES[g]);
function wordExtra(word, what) {
  const extra = new Set();
  for (let x = 0; x < 0x110000; x++) {
    const inCats = /^(L.|M.|Nd|Pc|Nl)$/.test(gcOf.get(x) || 'Cn');
    if (word.has(x) && !inCats) extra.add(x);
    if (!word.has(x) && inCats) throw new Error(`${what}: U+${x.toString(16)} (${gcOf.get(x)}) is not \\w`);
  }
  return extra;
}
// Oniguruma's \w (Split / Replace patterns), from a Split on \d+|\w+|\s+|\D|\W|\S
const onigWord = afterA('split_regex_classes', '61 X');
onigWord.add(0x61);
const onigExtra = wordExtra(onigWord, 'Oniguruma');
// Whitespace's \w is the Rust regex crate's (UTS #18: Alphabetic, M, Nd, Pc, Join_Control)
const rustExtra = wordExtra(word, 'Whitespace');
c += rangeTable('onig_word_extra', onigExtra, 'Oniguruma \\w beyond L, M, Nd, Pc, Nl');
c += rangeTable('rust_word_extra', rustExtra, 'Rust regex crate \\w (Whitespace) beyond L, M, Nd, Pc, Nl');
files['unicode_classes.c'] = c;
// regex_gc in two tables, below U+10000 and from there on (a run across it is cut in two)
const gcPlanes = [[], []];
for (const [a, b, g] of gcRuns) {
  if (a < 0x10000 && b >= 0x10000) {
    gcPlanes[0].push([a, 0xffff, g]);
    gcPlanes[1].push([0x10000, b, g]);
  } else gcPlanes[a < 0x10000 ? 0 : 1].push([a, b, g]);
}
for (const [i, part, what] of [[0, 'bmp', 'below U+10000'], [1, 'supp', 'from U+10000 on']]) {
  const runs = gcPlanes[i];
  files[`unicode_gc_${part}.c`] = header +
    `/* General categories of HF's regex engine, ${what}: ${runs.length} runs of assigned code\n` +
    ` * points (${gcRuns.length} in all with unicode_gc_${i ? 'bmp' : 'supp'}.c) */\n` +
    `const hsd_uc_gc_run hsd_uc_regex_gc_${part}[] = {\n` +
    pack(runs.map(([a, b, g]) => `{${hex(a)}, ${hex(b)}, ${g}},`), 4) +
    `\n};\nconst size_t hsd_uc_n_regex_gc_${part} = ${runs.length};\n`;
}
// scripts.txt: UnicodeScripts classes (0 = Any), as runs
const scriptRuns = [];
{
  const tmpls = [];
  let cp = 0;
  for (const line of fs.readFileSync(`${refDir}/scripts.txt`, 'utf8').split('\n')) {
    if (!line || line[0] === '#') continue;
    const sp = line.indexOf(' ');
    const count = parseInt(line.slice(0, sp), 16);
    let g;
    if (line[sp + 1] === '=') tmpls.push((g = +line.slice(sp + 2)));
    else g = tmpls[parseInt(line.slice(sp + 1), 10)];
    if (g > 255) throw new Error('scripts: more than 255 classes');
    for (let i = 0; i < count; i++, cp++) {
      if (cp === 0xd800) cp = 0xe000;
      const last = scriptRuns[scriptRuns.length - 1];
      if (last && last[2] === g && last[1] + 1 === cp) last[1] = cp;
      else scriptRuns.push([cp, cp, g]);
    }
  }
}
c = header;
c += `/* UnicodeScripts: script class per code point (0: "Any"; equal numbers, same script;
 * Hiragana and Katakana count as Han, as HF's fixed_script does): ${scriptRuns.length} runs */\n` +
  'const hsd_uc_gc_run hsd_uc_scripts[] = {\n' +
  pack(scriptRuns.map(([a, b, g]) => `{${hex(a)}, ${hex(b)}, ${g}},`), 4) +
  `\n};\nconst size_t hsd_uc_n_scripts = ${scriptRuns.length};\n`;
files['unicode_scripts.c'] = c;
for (const [name, text] of Object.entries(files)) {
  const body = text.replace(/\n+$/, '\n');
  const lines = body.split('\n').length - 1;
  if (lines > 800) throw new Error(`${name}: ${lines} lines, over the 800-line limit`);
  fs.writeFileSync(path.join(outDir, name), body);
}
console.error(`${outDir}: lower ${lower.length}+${lowerLong.length}, marks ${marks.size}, ` +
  `bert_mn ${bertMn.size}, bert_control ${bertControl.size}, bert_punct ${bertPunct.size}, ` +
  `numeric ${numeric.size}, word extra onig ${onigExtra.size} rust ${rustExtra.size}`);
