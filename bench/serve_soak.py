#!/usr/bin/env python3
"""Soak test client for `hsd serve` (bench/serve_soak.sh runs it): for DURATION seconds, W
workers send a random mix of
  - good streaming requests (random prompt, budget, algorithm, greedy or seeded sampling):
    each must answer 200 and end with data: [DONE] and no error event;
  - good requests whose client disconnects after a few pieces (the server must cancel them);
  - good non-streaming requests (200 with a completion);
  - malformed requests (broken JSON, wrong types, unsupported fields, invalid UTF-8, bodies
    over the limit, garbage HTTP): each must get a 4xx, never a 5xx, and the server must live.
Every few seconds the server's RSS (/proc/PID/status) is sampled. At the end /metrics must
show no busy slot. Prints a JSON summary; exit 1 on any failure. Standard library only."""
import argparse
import http.client
import json
import os
import random
import socket
import sys
import threading
import time

PROMPTS = ["Once upon a time", "The little dog", "One day, a bird", "Lily and Tom went to the park.",
           "There was a big red ball", "Sam liked to play", "The sun was hot and", "A cat sat"]
MALFORMED = [
    b'{"prompt": "x",', b'[1, 2, 3]', b'{"prompt": 5}', b'{"prompt": "x", "max_tokens": "ten"}',
    b'{"prompt": "x", "n": 3}', b'{"prompt": "x", "logprobs": 1}', b'{"prompt": [1, -4]}',
    b'{"prompt": "x", "temperature": -1}', b'{"prompt": "\xff\xfe"}', b'{"prompt": "x", "stop": [1]}',
    b'{"prompt": "x", "hsd": {"algo": "nope"}}', b'{"messages": "hi"}', b'', b'null',
    b'{"prompt": "x", "top_p": 0}', b'{"prompt": "x", "seed": 1.5}', b'{"prompt": ["a", "b"]}',
    b'{"prompt": "x", "stream_options": {"include_usage": true}}', b'{"prompt": "x"}' * 3,
]


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.c = {}
        self.fail = []

    def add(self, k, bad=None):
        with self.lock:
            self.c[k] = self.c.get(k, 0) + 1
            if bad:
                self.fail.append("%s: %s" % (k, bad))


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return -1
    return -1


def good_body(rng, stream, algos):
    b = {"prompt": rng.choice(PROMPTS), "max_tokens": rng.randint(4, 48), "stream": stream,
         "hsd": {"algo": rng.choice(algos), "k": rng.randint(1, 6)}}
    if rng.random() < 0.4:
        b["temperature"] = 0.8
        b["seed"] = rng.randint(0, 1 << 30)
        b["top_k"] = rng.choice([0, 20])
    if rng.random() < 0.3:
        b["stop"] = rng.choice([".", [" the", "!"]])
    if stream and rng.random() < 0.5:
        b["stream_options"] = {"include_usage": True}
    return json.dumps(b)


def work(host, port, deadline, rng, st, algos):
    while time.time() < deadline:
        r = rng.random()
        kind = "good_stream" if r < 0.45 else "disconnect" if r < 0.65 else "good_plain" if r < 0.75 \
            else "malformed" if r < 0.95 else "garbage"
        try:
            if r < 0.45:  # good stream, read to the end
                c = http.client.HTTPConnection(host, port, timeout=120)
                c.request("POST", "/v1/completions", good_body(rng, True, algos))
                resp = c.getresponse()
                data = resp.read()
                c.close()
                if resp.status != 200:
                    st.add("good_stream", "HTTP %d %s" % (resp.status, data[:200]))
                elif not data.endswith(b"data: [DONE]\n\n") or b'"error"' in data:
                    st.add("good_stream", "bad end: %r" % data[-300:])
                else:
                    st.add("good_stream")
            elif r < 0.65:  # good stream, the client leaves after a few pieces
                s = socket.create_connection((host, port), timeout=60)
                body = good_body(rng, True, algos).encode()
                s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          b"Content-Length: %d\r\n\r\n" % len(body) + body)
                got = b""
                want = rng.randint(1, 4)
                while got.count(b"data: ") < want and b"[DONE]" not in got:
                    ch = s.recv(4096)
                    if not ch:
                        break
                    got += ch
                s.close()
                st.add("disconnect")
            elif r < 0.75:  # good, not streamed
                c = http.client.HTTPConnection(host, port, timeout=120)
                if rng.random() < 0.5:
                    c.request("POST", "/v1/completions", good_body(rng, False, algos))
                else:
                    c.request("POST", "/v1/chat/completions", json.dumps(
                        {"messages": [{"role": "user", "content": rng.choice(PROMPTS)}],
                         "max_tokens": rng.randint(1, 30)}))
                resp = c.getresponse()
                data = resp.read()
                c.close()
                if resp.status != 200 or b'"choices"' not in data:
                    st.add("good_plain", "HTTP %d %s" % (resp.status, data[:200]))
                else:
                    st.add("good_plain")
            elif r < 0.95:  # malformed JSON / parameters
                c = http.client.HTTPConnection(host, port, timeout=60)
                body = rng.choice(MALFORMED)
                if rng.random() < 0.1:
                    body = b'{"prompt": "' + b"a" * (5 << 20) + b'"}'  # over --max-body
                path = rng.choice(["/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"])
                c.request("POST", path, body)
                resp = c.getresponse()
                data = resp.read()
                c.close()
                if not (400 <= resp.status < 500):
                    st.add("malformed", "HTTP %d for %r: %s" % (resp.status, body[:80], data[:200]))
                else:
                    st.add("malformed")
            else:  # garbage HTTP
                s = socket.create_connection((host, port), timeout=10)
                s.sendall(bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 300))) + b"\r\n\r\n")
                try:
                    s.recv(4096)
                except OSError:
                    pass
                s.close()
                st.add("garbage")
        except Exception as e:
            st.add("client_exception", "%s: %r" % (kind, e))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--duration", type=float, default=600)
    ap.add_argument("--workers", type=int, default=6)
    ap.add_argument("--algos", default="ar,slem,tli,union,slrs")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    host, port = a.url.split("//")[1].split(":")
    port = int(port)
    st = Stats()
    t0 = time.time()
    deadline = t0 + a.duration
    algos = a.algos.split(",")
    th = [threading.Thread(target=work, args=(host, port, deadline, random.Random(a.seed * 100 + i), st, algos))
          for i in range(a.workers)]
    for t in th:
        t.start()
    samples = []
    while any(t.is_alive() for t in th):
        samples.append((round(time.time() - t0, 1), rss_kb(a.pid)))
        time.sleep(5)
    for t in th:
        t.join()
    time.sleep(1)
    c = http.client.HTTPConnection(host, port, timeout=10)
    c.request("GET", "/metrics")
    m = c.getresponse().read().decode()
    busy = [l for l in m.splitlines() if l.startswith("hsd_slots_busy ")]
    cancelled = [l for l in m.splitlines() if l.startswith("hsd_requests_cancelled_total ")]
    alive = rss_kb(a.pid) > 0
    warm = [s for s in samples if s[0] >= 0.2 * a.duration] or samples
    summary = {"duration_s": a.duration, "workers": a.workers, "counts": st.c,
               "failures": st.fail[:20], "n_failures": len(st.fail),
               "rss_kb_first": samples[0][1] if samples else None,
               "rss_kb_after_warmup": warm[0][1] if warm else None,
               "rss_kb_last": samples[-1][1] if samples else None,
               "rss_kb_max": max(s[1] for s in samples) if samples else None,
               "rss_samples": samples[:: max(1, len(samples) // 24)],
               "metrics": busy + cancelled, "server_alive": alive}
    print(json.dumps(summary, indent=1))
    ok = not st.fail and alive and busy == ["hsd_slots_busy 0"]
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
