// @huggingface/jinja's render cost for a chat template (npm, installed in .deps/hf-jinja by
// bench/chat_template.sh): microseconds per render of one context, the template parsed once,
// best of 5 runs of N renders. transformers' tojson/raise_exception/strftime_now are its
// built-ins.   node hf_jinja_bench.mjs MODULE_DIR TEMPLATE CONTEXT.json [N]
import fs from 'fs';
import path from 'path';
import { pathToFileURL } from 'url';

const [modDir, tmplPath, ctxPath, nArg] = process.argv.slice(2);
const n = Number(nArg || 2000);
const pkg = path.join(modDir, 'node_modules', '@huggingface', 'jinja');
const main = JSON.parse(fs.readFileSync(path.join(pkg, 'package.json'), 'utf8'));
const entry = main.exports?.['.']?.import || main.exports?.['.']?.default || main.module || main.main;
const { Template } = await import(pathToFileURL(path.join(pkg, typeof entry === 'string' ? entry : entry.default)).href);
let source = fs.readFileSync(tmplPath, 'utf8');
if (tmplPath.endsWith('.json')) source = JSON.parse(source).chat_template;
const ctx = JSON.parse(fs.readFileSync(ctxPath, 'utf8'));
const t = new Template(source);
const out = t.render(ctx);
let best = Infinity;
for (let r = 0; r < 5; r++) {
  const s = process.hrtime.bigint();
  for (let i = 0; i < n; i++) t.render(ctx);
  const us = Number(process.hrtime.bigint() - s) / 1e3 / n;
  if (us < best) best = us;
}
const s = process.hrtime.bigint();
for (let i = 0; i < 20; i++) new Template(source);
const parse_us = Number(process.hrtime.bigint() - s) / 1e3 / 20;
console.log(JSON.stringify({ render_us: +best.toFixed(3), parse_us: +parse_us.toFixed(1),
  output_bytes: Buffer.byteLength(out), version: main.version, node: process.version }));
