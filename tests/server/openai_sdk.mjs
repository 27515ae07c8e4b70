// hsd serve driven by the official OpenAI SDK (npm `openai`, pinned by
// scripts/install_openai_sdk.sh). The oracle for every text is `hsd generate` on the same
// pair with the same parameters (temperature 0, or a seed): a request's output must not
// depend on the server, the batch, or what runs beside it.
//   node openai_sdk.mjs SDK_DIR BASE_URL
// Environment: HSD_CLI, PAIR_ARGS (the model flags, tab-separated).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [sdkDir, baseURL] = process.argv.slice(2);
const { default: OpenAI } = await import(
    pathToFileURL(path.join(sdkDir, 'node_modules/openai/index.mjs')).href);
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
const hsd = process.env.HSD_CLI;
const pair = process.env.PAIR_ARGS.split('\t');
const tokArgs = ['--tokenizer', pair[pair.indexOf('--target-tokenizer') + 1]];

let failures = 0, checks = 0;
function check(what, cond, detail = '') {
    checks++;
    if (cond) console.log(`ok: ${what}`);
    else { failures++; console.log(`FAIL: ${what} ${detail}`); }
}
function eq(what, got, want) {
    check(what, got === want, `\n   got:  ${JSON.stringify(got)}\n   want: ${JSON.stringify(want)}`);
}

// `hsd generate` as the oracle
function generate(prompt, { n, algo = 'auto', k = 4, temp = 0, seed, stop = [], noBos = false }) {
    const args = ['generate', ...pair, '-p', prompt, '-n', String(n), '--algo', algo,
        '-k', String(k), '--temp', String(temp), '--json'];
    if (noBos) args.push('--no-bos');
    if (seed !== undefined) args.push('--seed', String(seed));
    for (const s of stop) args.push('--stop', s);
    return JSON.parse(execFileSync(hsd, args, { encoding: 'utf8' }));
}
function promptTokens(text) {
    const out = execFileSync(hsd, ['tokenize', ...tokArgs, '--jsonl'],
        { input: JSON.stringify({ text }) + '\n', encoding: 'utf8' });
    return JSON.parse(out).ids.length + 1; // + the BOS hsd generate puts first
}
// ChatML as llama-server's fallback writes it (the server has no --chat-template here)
const chatml = (msgs) =>
    msgs.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join('') +
    '<|im_start|>assistant\n';
async function collect(stream) {
    let text = '', finish = null, usage = null, chunks = 0, extra = null, t0 = 0, t1 = 0;
    for await (const c of stream) {
        if (!chunks) t0 = performance.now();
        t1 = performance.now();
        chunks++;
        if (c.usage) usage = c.usage;
        for (const ch of c.choices) {
            text += ch.text ?? ch.delta?.content ?? '';
            if (ch.finish_reason) { finish = ch.finish_reason; extra = c; }
        }
    }
    return { text, finish, usage, chunks, extra, t0, t1 };
}

const prompts = ['Once upon a time', 'The little dog', 'Lily and Tom went to the park. They'];

// 1. completions, not streamed, temperature 0
for (const p of prompts) {
    const r = await client.completions.create({ model: 'any-name', prompt: p, max_tokens: 40, temperature: 0 });
    const g = generate(p, { n: 40 });
    eq(`completion text = hsd generate ("${p}")`, r.choices[0].text, g.text);
    eq('usage.completion_tokens', r.usage.completion_tokens, g.n_generated);
    eq('usage.prompt_tokens', r.usage.prompt_tokens, promptTokens(p));
    eq('usage.total_tokens', r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
    eq('finish_reason', r.choices[0].finish_reason, g.stop_reason === 'max_tokens' ? 'length' : 'stop');
    eq('object', r.object, 'text_completion');
    check('timings (llama-server) present', r.timings && r.timings.predicted_n === g.n_generated &&
        r.timings.prompt_n === r.usage.prompt_tokens && typeof r.timings.draft_n_accepted === 'number');
}

// 2. completions, streamed, with usage
{
    const p = prompts[0];
    const s = await client.completions.create({ prompt: p, max_tokens: 60, temperature: 0, stream: true,
        stream_options: { include_usage: true }, model: 'x' });
    const r = await collect(s);
    const g = generate(p, { n: 60 });
    eq('streamed completion = hsd generate', r.text, g.text);
    check('streamed in several chunks', r.chunks > 3, `(${r.chunks})`);
    check('stream usage chunk', r.usage && r.usage.completion_tokens === g.n_generated &&
        r.usage.prompt_tokens === promptTokens(p), JSON.stringify(r.usage));
    eq('stream finish_reason', r.finish, 'length');
}

// 3. chat, not streamed and streamed
{
    const msgs = [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: 'Tell me about a cat.' }];
    const g = generate(chatml(msgs), { n: 30 });
    const r = await client.chat.completions.create({ model: 'm', messages: msgs, max_tokens: 30, temperature: 0 });
    eq('chat text = hsd generate on the ChatML prompt', r.choices[0].message.content, g.text);
    eq('chat role', r.choices[0].message.role, 'assistant');
    eq('chat object', r.object, 'chat.completion');
    eq('chat usage.prompt_tokens', r.usage.prompt_tokens, promptTokens(chatml(msgs)));
    const s = await client.chat.completions.create({ model: 'm', messages: msgs, max_tokens: 30,
        temperature: 0, stream: true, stream_options: { include_usage: true } });
    const rs = await collect(s);
    eq('streamed chat = hsd generate', rs.text, g.text);
    eq('streamed chat usage', rs.usage?.completion_tokens, g.n_generated);
    // max_completion_tokens, the newer name
    const r2 = await client.chat.completions.create({ model: 'm', messages: msgs, max_completion_tokens: 7, temperature: 0 });
    eq('max_completion_tokens', r2.usage.completion_tokens, 7);
}

// 4. stop strings: the text ends before the first stop string (OpenAI), finish_reason stop
{
    const p = prompts[2];
    const g = generate(p, { n: 80 });
    const stops = ['.', ' she'];
    let cut = g.text.length;
    for (const s of stops) { const i = g.text.indexOf(s); if (i >= 0 && i < cut) cut = i; }
    check('the oracle text contains a stop string', cut < g.text.length);
    const r = await client.completions.create({ prompt: p, max_tokens: 80, temperature: 0, stop: stops });
    eq('stop: text cut before the stop string', r.choices[0].text, g.text.slice(0, cut));
    eq('stop: finish_reason', r.choices[0].finish_reason, 'stop');
    const rs = await collect(await client.completions.create({ prompt: p, max_tokens: 80,
        temperature: 0, stop: stops, stream: true }));
    eq('stop, streamed: same text', rs.text, g.text.slice(0, cut));
    eq('stop, streamed: finish_reason', rs.finish, 'stop');
    const one = await client.completions.create({ prompt: p, max_tokens: 80, temperature: 0, stop: '.' });
    eq('stop as one string', one.choices[0].text, g.text.slice(0, g.text.indexOf('.')));
}

// 5. overlapping streams, different algorithms, started at different times; some sample with
// a seed. Each equals its own `hsd generate` run. The last asks for the cost-aware k
// (hsd.cost_k): its k follows the server's measured times, and SLEM's sampled text does not
// depend on k, so it still equals the fixed-k run.
{
    const jobs = [
        { prompt: prompts[0], algo: 'slem', k: 4, temp: 0, n: 200 },
        { prompt: prompts[1], algo: 'tli', k: 3, temp: 0, n: 180 },
        { prompt: prompts[2], algo: 'ar', k: 4, temp: 0.8, seed: 1234, n: 160 },
        { prompt: 'One day, a bird', algo: 'slrs', k: 3, temp: 0, n: 150 },
        { prompt: prompts[0], algo: 'union', k: 2, temp: 1.0, seed: 7, n: 170 },
        { prompt: prompts[1], algo: 'slem', k: 4, temp: 1.0, seed: 99, n: 160, costK: true },
    ];
    const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
    const runs = jobs.map(async (j, i) => {
        await sleep(4 * i);
        const s = await client.completions.create({ prompt: j.prompt, max_tokens: j.n,
            temperature: j.temp, seed: j.seed, stream: true,
            hsd: { algo: j.algo, k: j.k, ...(j.costK ? { cost_k: true } : {}) } });
        return collect(s);
    });
    const got = await Promise.all(runs);
    // they did run at the same time: each stream's first chunk came before another's last
    let overlapping = 0;
    for (let i = 0; i < got.length; i++)
        if (got.some((o, j) => j !== i && got[i].t0 < o.t1 && o.t0 < got[i].t1)) overlapping++;
    check('the streams overlapped in time', overlapping >= 4, `(${overlapping} of ${got.length})`);
    check('no stream ended at EOS too early to tell', got.every((r) => r.chunks > 5));
    jobs.forEach((j, i) => {
        const g = generate(j.prompt, j);
        eq(`overlapping stream ${i} (${j.algo}, temp ${j.temp}) = hsd generate`, got[i].text, g.text);
        eq(`overlapping stream ${i}: the algorithm it ran`, got[i].extra?.hsd?.algo, j.algo);
    });
}

// 6. the prompt as token ids equals the prompt as text
{
    const ids = JSON.parse(execFileSync(hsd, ['tokenize', ...tokArgs, '--jsonl'],
        { input: JSON.stringify({ text: prompts[1] }) + '\n', encoding: 'utf8' })).ids;
    const a = await client.completions.create({ prompt: ids, max_tokens: 25, temperature: 0 });
    eq('prompt as ids = hsd generate on the text', a.choices[0].text, generate(prompts[1], { n: 25 }).text);
}

// 7. models and errors through the SDK
{
    const list = await client.models.list();
    check('models.list lists the target', list.data.length === 1 && list.data[0].id === 'stories260K.bin',
        JSON.stringify(list.data));
    try {
        await client.completions.create({ prompt: 'x', n: 2 });
        check('n = 2 is refused', false);
    } catch (e) {
        check('n = 2: BadRequestError 400 naming n', e.status === 400 && e.error?.param === 'n' &&
            /n = 1/.test(e.message), `${e.status} ${e.message}`);
    }
    try {
        await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], logprobs: true });
        check('logprobs is refused', false);
    } catch (e) {
        check('logprobs: 400 naming it', e.status === 400 && e.error?.param === 'logprobs', `${e.status}`);
    }
}

// 8. a real chat template (--chat-template): the prompt is what Python Jinja2 renders, as HF
// transformers' apply_chat_template (tests/oracle/chat_ref.py), generated with no BOS added
// (as `hsd generate --chat`)
if (process.env.CHAT_TEMPLATE_URL) {
    const c2 = new OpenAI({ baseURL: process.env.CHAT_TEMPLATE_URL, apiKey: 'unused', maxRetries: 0 });
    const file = process.env.CHAT_TEMPLATE_FILE;
    const cfg = JSON.parse(fs.readFileSync(file, 'utf8'));
    const tokstr = (v) => (typeof v === 'string' ? v : v && typeof v.content === 'string' ? v.content : undefined);
    const msgs = [{ role: 'system', content: 'You are a storyteller.' },
        { role: 'user', content: 'A story about a frog.' },
        { role: 'assistant', content: 'Once there was a frog.' },
        { role: 'user', content: 'Go on.' }];
    const ctx = { messages: msgs, add_generation_prompt: true };
    if (tokstr(cfg.bos_token) !== undefined) ctx.bos_token = tokstr(cfg.bos_token);
    if (tokstr(cfg.eos_token) !== undefined) ctx.eos_token = tokstr(cfg.eos_token);
    const ctxPath = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'hsd-sdk-')), 'ctx.json');
    fs.writeFileSync(ctxPath, JSON.stringify(ctx));
    const rendered = execFileSync('python3', [process.env.CHAT_REF, 'render', file, ctxPath], { encoding: 'utf8' });
    check('the template rendered the conversation', rendered.includes('Go on.') && rendered.length > 40);
    const g = generate(rendered, { n: 30, noBos: true });
    const r = await c2.chat.completions.create({ model: 'm', messages: msgs, max_tokens: 30, temperature: 0 });
    eq('template chat = hsd generate --no-bos on the Jinja2 rendering', r.choices[0].message.content, g.text);
    eq('template chat: prompt tokens (no BOS)', r.usage.prompt_tokens, promptTokens(rendered) - 1);
    const rs = await collect(await c2.chat.completions.create({ model: 'm', messages: msgs,
        max_tokens: 30, temperature: 0, stream: true }));
    eq('template chat, streamed', rs.text, g.text);
} else {
    console.log('SKIP: chat template part (this build has no chat-template engine)');
}

console.log(`openai sdk: ${checks} checks, ${failures} failed`);
process.exit(failures ? 1 : 0);
