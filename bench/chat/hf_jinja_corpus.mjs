// The second opinion over the test corpus: @huggingface/jinja renders every case the Jinja2
// oracle wrote (build/chat_ref), and this counts agreements with Jinja2 (identical text, or an
// error where Jinja2 raised), differences and errors where Jinja2 rendered.
//   node hf_jinja_corpus.mjs MODULE_DIR REF_DIR
import fs from 'fs';
import path from 'path';
import { pathToFileURL } from 'url';

const [modDir, refDir] = process.argv.slice(2);
const pkg = path.join(modDir, 'node_modules', '@huggingface', 'jinja');
const main = JSON.parse(fs.readFileSync(path.join(pkg, 'package.json'), 'utf8'));
const entry = main.exports?.['.']?.import || main.exports?.['.']?.default || main.module || main.main;
const { Template } = await import(pathToFileURL(path.join(pkg, typeof entry === 'string' ? entry : entry.default)).href);
const cache = new Map();
const stats = { same: 0, both_raise: 0, differ: 0, raised_only_here: 0, rendered_only_here: 0 };
const byTemplate = {};
for (const line of fs.readFileSync(path.join(refDir, 'MANIFEST'), 'utf8').split('\n')) {
  if (!line) continue;
  const [cas, tpath, kind] = line.split('\t');
  const tname = cas.split('__')[0];
  byTemplate[tname] ??= { same: 0, other: 0 };
  let t = cache.get(tpath);
  if (t === undefined) {
    let src = fs.readFileSync(tpath, 'utf8');
    if (tpath.endsWith('.json')) src = JSON.parse(src).chat_template;
    try { t = new Template(src); } catch (e) { t = e; }
    cache.set(tpath, t);
  }
  const ctx = JSON.parse(fs.readFileSync(path.join(refDir, cas + '.ctx.json'), 'utf8'));
  // raise_exception and strftime_now are its built-ins (the latter reads the current date,
  // so templates that print the date differ from the oracle's fixed day)
  let out = null;
  try { if (t instanceof Error) throw t; out = t.render(ctx); } catch (e) { out = null; }
  let k;
  if (kind === 'ok') {
    const want = fs.readFileSync(path.join(refDir, cas + '.out'), 'utf8');
    k = out === null ? 'raised_only_here' : out === want ? 'same' : 'differ';
  } else {
    k = out === null ? 'both_raise' : 'rendered_only_here';
  }
  stats[k]++;
  if (k === 'same' || k === 'both_raise') byTemplate[tname].same++; else byTemplate[tname].other++;
}
const bad = Object.entries(byTemplate).filter(([, v]) => v.other).map(([k, v]) => `${k} ${v.other}`);
console.log(JSON.stringify({ version: main.version, ...stats, templates_with_disagreements: bad }));
