#!/usr/bin/env python3
"""Per-step overhead of hsd.vllm.HsdProposer: what a vLLM step spends in propose() (the
bridge, the drafter, the binding), with R concurrent requests.

The requests are driven as vLLM's GPU model runner drives a custom_class proposer (the same
stand-ins as tests/test_vllm_proposer.py: stdlib arrays for the input batch's numpy buffers;
vLLM itself is not installed here). The target's verification is simulated exactly for
greedy requests and costs nothing here: its greedy continuation is computed once with hsd's
AR, and each step accepts the longest prefix of a proposal that matches it plus one target
token (what vLLM's rejection sampler does for a greedy request). Only propose() is timed.

    python3 bench/vllm_proposer.py --draft build/inflated/stories260K-smollm-135m-bf16.gguf

Defaults: the demo's pair direction (scripts/demo.sh): target babyllama-tok105 (its tokenizer,
and its model for the AR continuation; the inflated target writes the same text), drafter
stories260K with tok512 (or the inflated GGUF, which carries tok512)."""
import argparse
import array
import os
import statistics
import sys
import time
import types

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
import hsd  # noqa: E402
from hsd.vllm import HsdProposer  # noqa: E402

PROMPTS = ["Once upon a time, there was a little", "The cat sat on the",
           "Lily and Tom went to the park. They", "One day, a big dog",
           "Sam had a red ball.", "The sun was hot and the birds", "Mom said, \"Let's",
           "There was a tree in the garden", "Ben liked to play with his",
           "It was a rainy day and", "The little girl saw a", "Tim and his friend found a box"]


def main():
    shared = os.environ.get("HSD_SHARED") or os.path.join(os.path.dirname(ROOT), "shared")
    m = os.path.join(shared, "models")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--draft", default=os.path.join(m, "stories260K", "stories260K.bin"))
    ap.add_argument("--draft-tokenizer", default=None,
                    help="default: the GGUF itself, else shared tok512.bin")
    ap.add_argument("--target", default=os.path.join(m, "babyllama-tok105", "model5000.bin"))
    ap.add_argument("--target-tokenizer", default=os.path.join(m, "babyllama-tok105", "tok105.bin"))
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--k", type=int, default=8, help="num_speculative_tokens")
    ap.add_argument("--n-draft", type=int, default=4, help="SLEM's k (drafter forwards per step)")
    ap.add_argument("--tokens", type=int, default=120, help="new tokens per request")
    ap.add_argument("--max-model-len", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    dtok = a.draft_tokenizer or (a.draft if a.draft.endswith(".gguf")
                                 else os.path.join(m, "stories260K", "tok512.bin"))
    R = a.requests
    tt = hsd.Tokenizer(a.target_tokenizer)
    target = hsd.Model(a.target, n_threads=a.threads)
    prompts = (PROMPTS * ((R + len(PROMPTS) - 1) // len(PROMPTS)))[:R]
    conts = []
    with hsd.Engine(target, tt) as e:  # the target's greedy continuation of each prompt
        for p in prompts:
            e.reset()
            r = e.generate(p, algo="ar", max_new_tokens=a.tokens, stop_at_eos=False)
            conts.append(([tt.bos_id] + tt.encode(p), list(r.ids)))
    cfg = types.SimpleNamespace(
        speculative_config=types.SimpleNamespace(method="custom_class",
                                                 model="hsd.vllm.HsdProposer",
                                                 num_speculative_tokens=a.k),
        model_config=types.SimpleNamespace(max_model_len=a.max_model_len,
                                           get_vocab_size=lambda: tt.vocab_size),
        scheduler_config=types.SimpleNamespace(max_num_seqs=R),
        additional_config={"hsd": {"draft": a.draft, "draft_tokenizer": dtok,
                                   "target_tokenizer": a.target_tokenizer,
                                   "n_draft": a.n_draft, "n_threads": a.threads,
                                   "max_states": R}})
    runs = []
    for rep in range(a.repeats):
        prop = HsdProposer(cfg)
        t0 = time.perf_counter()
        prop.load_model(None)
        load_ms = 1000 * (time.perf_counter() - t0)
        rows = [array.array("i", [0] * a.max_model_len) for _ in range(R)]
        ntok = array.array("i", [0] * R)
        ctx = [pr + cont[:1] for pr, cont in conts]  # prefill made the first token
        out = [1] * R
        new = [cont[:1] for _, cont in conts]
        step_ms, c_ms, accepted, drafted, steps, first_ms, live = [], [], 0, 0, 0, None, 0
        while any(out[i] < a.tokens for i in range(R)):
            sampled = []
            for i in range(R):
                rows[i][:len(ctx[i])] = array.array("i", ctx[i])
                ntok[i] = len(ctx[i])
                sampled.append(new[i] if out[i] < a.tokens else [])
                live += out[i] < a.tokens
            st0 = prop._prop.stats()
            t = time.perf_counter()
            props = prop.propose(sampled, ntok, rows, None)
            dt = 1000 * (time.perf_counter() - t)
            st1 = prop._prop.stats()
            steps += 1
            if first_ms is None:
                first_ms = dt  # fresh states: every prompt prefilled into the drafter
            else:
                step_ms.append(dt)
                c_ms.append((st1["draft_ms"] - st0["draft_ms"], st1["bridge_ms"] - st0["bridge_ms"]))
            for i in range(R):
                if out[i] >= a.tokens:
                    continue
                cont = conts[i][1]
                want = cont[out[i]:]
                acc = 0
                while acc < len(props[i]) and acc < len(want) and props[i][acc] == want[acc]:
                    acc += 1
                drafted += len(props[i])
                accepted += acc
                got = want[:acc + 1]
                ctx[i] += got
                out[i] += len(got)
                new[i] = got
        runs.append(dict(load_ms=load_ms, first_ms=first_ms, step_ms=step_ms, c_ms=c_ms,
                         steps=steps, accepted=accepted, drafted=drafted, live=live,
                         generated=sum(out) - R,
                         stats=prop.stats()))
        prop._prop.close()
    print("drafter: %s (%s)" % (a.draft, hsd.Model(a.draft).desc))
    print("requests %d, k %d, n_draft %d, %d new tokens each, %d threads, %d repeats"
          % (R, a.k, a.n_draft, a.tokens, a.threads, a.repeats))
    for i, r in enumerate(runs):
        s = sorted(r["step_ms"])
        draft = statistics.mean(d for d, _ in r["c_ms"])
        bridge = statistics.mean(b for _, b in r["c_ms"])
        mean = statistics.mean(s)
        print("run %d: load %.0f ms, first step %.1f ms; %d steps after it: per step mean %.2f "
              "ms, median %.2f, p90 %.2f (drafter %.2f, C bridge %.2f, Python %.2f); per "
              "request-step %.3f ms; accepted %d of %d drafted, %.2f tokens per request-step"
              % (i, r["load_ms"], r["first_ms"], len(s), mean, statistics.median(s),
                 s[int(0.9 * (len(s) - 1))], draft, bridge, mean - draft - bridge, mean / R,
                 r["accepted"], r["drafted"], r["generated"] / r["live"]))


if __name__ == "__main__":
    main()
