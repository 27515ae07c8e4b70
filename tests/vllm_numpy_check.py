"""A manual check (not in ctest: numpy is no dependency of hsd): HsdProposer fed numpy buffers
as vLLM's InputBatch holds them (token_ids_cpu int32 [max_num_reqs, max_model_len],
num_tokens_no_spec int32 [max_num_reqs]) must propose exactly what the stdlib-array path of
ctest vllm_proposer proposes, step after step of a greedy verify loop, and hand hsd the
numpy rows without a copy. Exit 77 when numpy or the shared models are missing.

    HSD_LIBRARY=build/libhsd.so python3 tests/vllm_numpy_check.py"""
import array
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "bindings", "python"))
sys.path.insert(0, HERE)
try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed (this check needs it; ctest vllm_proposer does not)")
    sys.exit(77)
import test_vllm_proposer as T  # noqa: E402
if T.missing():
    print("SKIP: shared models missing: %s" % ", ".join(T.missing()))
    sys.exit(77)
import hsd  # noqa: E402

MAXR, L = 8, 256
tt = hsd.Tokenizer(T.TARGET_TOK); target = hsd.Model(T.TARGET, n_threads=1)
def argmax(r): return max(range(len(r)), key=lambda i: r[i])
pa = T.create_custom_proposer(T.vllm_config()); pn = T.create_custom_proposer(T.vllm_config())
tok_np = np.zeros((MAXR, L), dtype=np.int32); n_np = np.zeros(MAXR, dtype=np.int32)
tok_ar = [array.array("i", [0] * L) for _ in range(MAXR)]; n_ar = array.array("i", [0] * MAXR)
ctx = {i: [tt.bos_id] + tt.encode(p) for i, p in enumerate(T.PROMPTS)}
new = {i: ctx[i][-1:] for i in ctx}
steps = same = 0
for step in range(25):
    rows = list(ctx); random.Random(step).shuffle(rows)
    sampled = []
    for r, i in enumerate(rows):
        c = ctx[i]
        tok_np[r, :len(c)] = c; n_np[r] = len(c)
        tok_ar[r][:len(c)] = array.array("i", c); n_ar[r] = len(c)
        sampled.append(list(new[i]))
    a = pa.propose(sampled, n_ar, tok_ar, None)
    b = pn.propose(sampled, n_np, tok_np, slot_mappings=None)
    assert all(type(t) is int for x in b for t in x)
    steps += 1; same += a == b
    assert a == b, (step, a, b)
    for r, i in enumerate(rows):  # the target's greedy verification
        prop = a[r]; target.kv_truncate(0)
        lg = target.forward(ctx[i] + prop, rows=range(len(ctx[i]) - 1, len(ctx[i]) + len(prop)))
        got = []
        for j, row in enumerate(lg):
            t = argmax(row); got.append(t)
            if j == len(prop) or prop[j] != t: break
        ctx[i] += got; new[i] = got
# zero copy: the ctypes array handed to hsd aliases the numpy row
v, n = hsd._int32_view(tok_np[3][:5]); tok_np[3][0] = 77
assert v[0] == 77 and n == 5
print("numpy path: %d steps, proposals identical to the array path in %d; zero-copy ok; stats %s"
      % (steps, same, pn.stats()))
