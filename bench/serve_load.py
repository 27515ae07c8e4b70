#!/usr/bin/env python3
"""Loopback load client for `hsd serve` (bench/serve_load.sh runs it). Standard library only.

  serve_load.py URL --levels 1,2,4,8 --requests R --max-tokens N [--algo A] [--k K]

For each concurrency level c, the same work (R streaming /v1/completions requests, temperature
0, prompts from bench/prompts) is sent by c concurrent clients; c = 1 is the work done one
request at a time. Per level: wall time, aggregate completion tokens/s (usage), p50/p99 time
to first token (first non-empty text piece), p50/p99 inter-token latency two ways: the gap
between two streamed pieces (a speculative round streams several tokens as one piece), and
per request (last piece - first piece) / (tokens - 1); and how many greedy texts equal
level 1's (batching must not change them). Bounded: every request has a timeout; prints
one JSON line per level and a table."""
import argparse
import http.client
import json
import os
import statistics
import sys
import threading
import time
import urllib.parse


def prompts(n, clip):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prompts")
    out = []
    for name in ("summarization.jsonl", "code.jsonl", "long_context.jsonl"):
        try:
            with open(os.path.join(root, name), encoding="utf-8") as f:
                for line in f:
                    p = json.loads(line).get("prompt", "")
                    # the small models' contexts are short: the last words of each prompt
                    p = p[-clip:]
                    cut = p.find(" ")
                    out.append(p[cut + 1:] if cut >= 0 else p)
        except OSError:
            pass
    if not out:
        out = ["Once upon a time", "The little dog", "One day, a bird"]
    return [out[(i * 7) % len(out)] for i in range(n)]


def one(url, prompt, args, res, i):
    u = urllib.parse.urlsplit(url)
    body = {"prompt": prompt, "max_tokens": args.max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}, "ignore_eos": True}
    hsd = {}
    if args.algo:
        hsd["algo"] = args.algo
    if args.k:
        hsd["k"] = args.k
    if hsd:
        body["hsd"] = hsd
    t0 = time.perf_counter()
    r = {"ok": False, "ttft": None, "gaps": [], "tokens": 0, "text": "", "error": None}
    try:
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=args.timeout)
        c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
        resp = c.getresponse()
        if resp.status != 200:
            r["error"] = "HTTP %d %s" % (resp.status, resp.read()[:200])
        else:
            last = None
            pieces = []
            buf = b""
            done = False
            while not done:
                chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(1)
                if not chunk:
                    break
                buf += chunk
                while b"\n\n" in buf:
                    ev, buf = buf.split(b"\n\n", 1)
                    if not ev.startswith(b"data: "):
                        continue
                    data = ev[6:]
                    if data == b"[DONE]":
                        done = True
                        break
                    j = json.loads(data)
                    if "error" in j:
                        r["error"] = j["error"].get("message")
                        continue
                    if j.get("usage"):
                        r["tokens"] = j["usage"]["completion_tokens"]
                    for ch in j.get("choices", []):
                        t = ch.get("text") or ""
                        if t:
                            now = time.perf_counter()
                            if r["ttft"] is None:
                                r["ttft"] = now - t0
                            elif last is not None:
                                pieces.append(now - last)
                            last = now
                            r["text"] += t
            r["gaps"] = pieces
            r["ok"] = done and r["error"] is None
        c.close()
    except Exception as e:  # a bench never crashes on one request: it reports it
        r["error"] = repr(e)
    r["total"] = time.perf_counter() - t0
    res[i] = r


def pct(v, q):
    if not v:
        return float("nan")
    v = sorted(v)
    k = min(len(v) - 1, max(0, int(round(q * (len(v) - 1)))))
    return v[k]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--levels", default="1,2,4,8")
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--algo", default="")
    ap.add_argument("--k", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--clip", type=int, default=200, help="prompt characters (the last ones)")
    args = ap.parse_args()
    ps = prompts(args.requests, args.clip)
    base_texts = None
    base_tps = None
    rows = []
    for c in [int(x) for x in args.levels.split(",")]:
        res = [None] * len(ps)
        nxt = [0]
        lock = threading.Lock()

        def worker():
            while True:
                with lock:
                    i = nxt[0]
                    nxt[0] += 1
                if i >= len(ps):
                    return
                one(args.url, ps[i], args, res, i)

        t0 = time.perf_counter()
        th = [threading.Thread(target=worker) for _ in range(c)]
        for t in th:
            t.start()
        for t in th:
            t.join()
        wall = time.perf_counter() - t0
        ok = [r for r in res if r["ok"]]
        toks = sum(r["tokens"] for r in ok)
        ttft = [r["ttft"] for r in ok if r["ttft"] is not None]
        gaps = [g for r in ok for g in r["gaps"]]
        per_tok = [(r["total"] - r["ttft"]) / (r["tokens"] - 1) for r in ok
                   if r["ttft"] is not None and r["tokens"] > 1]
        texts = [r["text"] for r in res]
        if base_texts is None:
            base_texts = texts
        same = sum(1 for a, b in zip(texts, base_texts) if a == b)
        tps = toks / wall if wall > 0 else 0
        if base_tps is None:
            base_tps = tps
        row = {"clients": c, "requests": len(ps), "ok": len(ok), "wall_s": round(wall, 3),
               "tokens": toks, "tokens_per_s": round(tps, 2),
               "speedup_vs_one_at_a_time": round(tps / base_tps, 2) if base_tps else None,
               "ttft_p50_ms": round(1e3 * pct(ttft, 0.5), 1),
               "ttft_p99_ms": round(1e3 * pct(ttft, 0.99), 1),
               "piece_gap_p50_ms": round(1e3 * pct(gaps, 0.5), 1),
               "piece_gap_p99_ms": round(1e3 * pct(gaps, 0.99), 1),
               "tpot_p50_ms": round(1e3 * pct(per_tok, 0.5), 1),
               "tpot_p99_ms": round(1e3 * pct(per_tok, 0.99), 1),
               "texts_equal_to_one_at_a_time": same,
               "errors": [r["error"] for r in res if not r["ok"]][:3]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    print()
    print("| clients | tokens/s | vs 1 at a time | TTFT p50 / p99 ms | piece gap p50 / p99 ms |"
          " per-token p50 / p99 ms | texts = 1-at-a-time |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %d | %.1f | %.2fx | %.0f / %.0f | %.1f / %.1f | %.1f / %.1f | %d/%d |" % (
            r["clients"], r["tokens_per_s"], r["speedup_vs_one_at_a_time"] or 0,
            r["ttft_p50_ms"], r["ttft_p99_ms"], r["piece_gap_p50_ms"], r["piece_gap_p99_ms"],
            r["tpot_p50_ms"], r["tpot_p99_ms"], r["texts_equal_to_one_at_a_time"], r["requests"]))
    bad = sum(r["requests"] - r["ok"] for r in rows)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
