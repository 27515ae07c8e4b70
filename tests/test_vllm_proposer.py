"""ctest `vllm_proposer`: hsd.vllm.HsdProposer driven the way vLLM drives a `custom_class`
speculative proposer.

vLLM ITSELF IS NOT INSTALLED HERE, and neither are torch nor numpy. What stands in for them,
taken from vLLM's source (docs/VLLM.md names the files and commits read):
  - construction as vllm/v1/spec_decode/custom_class_proposer.py does it: the class is
    imported from its dotted path, built with the VllmConfig (here a namespace with the
    fields the proposer reads: speculative_config.num_speculative_tokens,
    model_config.max_model_len / get_vocab_size() / tokenizer, scheduler_config.max_num_seqs,
    additional_config), then load_model(target_model);
  - each step, after the runner's bookkeeping has written the sampled ids into the input
    batch, propose(sampled_token_ids, input_batch.num_tokens_no_spec,
    input_batch.token_ids_cpu, slot_mappings=None) with positional arguments and vLLM's
    shapes: sampled_token_ids a list (one list per request of the batch, empty for a request
    that must not draft), num_tokens_no_spec an int32 vector of max_num_reqs entries and
    token_ids_cpu max_num_reqs rows of max_model_len int32 (stdlib array('i') where vLLM has
    numpy arrays). Requests move between batch rows from step to step, as vLLM's batch
    condensing moves them, since the proposer gets no request ids.

Checks, on the shared real pair (target stories260K with tok512; drafter babyllama-tok105
with tok105, 105 characters against 512 BPE tokens):
  (a) every proposal equals what hsd_engine's SLEM drafts for the same context: the engine
      runs each prompt on its own (hsd_engine_generate, greedy) with a target that records
      the candidate tree of every verification forward; the proposer, batched over 8
      requests, must have built the same tree (ids and parents) and propose that tree's
      deepest path (first of the deepest in trie order), recomputed here from the recorded
      tree;
  (b) a verify loop where the real target, run greedily through hsd, accepts the longest
      prefix of each proposal that matches its own argmax, plus one token of its own (what
      vLLM's rejection sampler does for greedy requests), with more requests than states
      (eviction) and requests that arrive and finish at different steps: every final text
      equals hsd's AR greedy text, and the proposals were accepted often enough to matter;
  (c) sampled requests: point-mass verification (vLLM's rule for drafts without
      probabilities) of a real proposal keeps the target's law: a chi-square test of the
      first emitted token against the target's own distribution.
Exit 77 (skipped, reason printed) when the shared models are missing."""
import array
import importlib
import math
import os
import random
import sys
import types
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
import hsd  # noqa: E402
from hsd import vllm as hsd_vllm  # noqa: E402

SHARED = (os.environ.get("HSD_SHARED") or os.environ.get("HSD_SHARED_DEFAULT")
          or os.path.join(os.path.dirname(ROOT), "shared"))
M = os.path.join(SHARED, "models")
TARGET = os.path.join(M, "stories260K", "stories260K.bin")
TARGET_TOK = os.path.join(M, "stories260K", "tok512.bin")
DRAFT = os.path.join(M, "babyllama-tok105", "model5000.bin")
DRAFT_TOK = os.path.join(M, "babyllama-tok105", "tok105.bin")

PROMPTS = ["Once upon a time, there was a little", "The cat sat on the",
           "Lily and Tom went to the park. They", "One day, a big dog",
           "Sam had a red ball.", "The sun was hot and the birds", "Mom said, \"Let's",
           "There was a tree in the garden"]
MORE = ["Ben liked to play with his", "It was a rainy day and", "The little girl saw a",
        "Tim and his friend found a box"]
K = 8          # num_speculative_tokens
N_DRAFT = 4    # SLEM's k (drafter forwards per step), as the engine's n_draft
MAX_LEN = 256  # max_model_len
MAX_REQS = 8   # max_num_seqs: rows of the input batch
N_NEW = 64


def missing():
    return [p for p in (TARGET, TARGET_TOK, DRAFT, DRAFT_TOK) if not os.path.exists(p)]


def vllm_config(**hsd_cfg):
    """The VllmConfig fields a custom_class proposer sees (names as in vllm/config)."""
    cfg = {"draft": DRAFT, "draft_tokenizer": DRAFT_TOK, "target_tokenizer": TARGET_TOK,
           "n_draft": N_DRAFT, "n_threads": 1}
    cfg.update(hsd_cfg)
    return types.SimpleNamespace(
        speculative_config=types.SimpleNamespace(method="custom_class",
                                                 model="hsd.vllm.HsdProposer",
                                                 num_speculative_tokens=K),
        model_config=types.SimpleNamespace(max_model_len=MAX_LEN, get_vocab_size=lambda: 512,
                                           tokenizer=os.path.dirname(TARGET_TOK),
                                           model=TARGET),
        scheduler_config=types.SimpleNamespace(max_num_seqs=MAX_REQS),
        additional_config={"hsd": cfg})


def create_custom_proposer(config):
    """As vLLM's factory: import the class from speculative_config.model, build it with the
    config, require a callable propose."""
    module_path, class_name = config.speculative_config.model.rsplit(".", 1)
    cls = getattr(importlib.import_module(module_path), class_name)
    inst = cls(config)
    assert callable(getattr(inst, "propose", None))
    return inst


class InputBatch:
    """The CPU buffers of vLLM's InputBatch the runner passes to propose()."""

    def __init__(self):
        self.token_ids_cpu = [array.array("i", [0] * MAX_LEN) for _ in range(MAX_REQS)]
        self.num_tokens_no_spec = array.array("i", [0] * MAX_REQS)

    def put(self, row, ids):
        self.token_ids_cpu[row][:len(ids)] = array.array("i", ids)
        self.num_tokens_no_spec[row] = len(ids)


class RecordingTarget:
    """The real target behind hsd's model interface, recording what each verification
    forward of the engine holds: the context (cache + pending ids) and the candidate tree."""

    def __init__(self, model):
        self.m = model
        self.vocab_size, self.n_ctx = model.vocab_size, model.n_ctx
        self.kv, self.rounds = [], []

    def forward(self, toks, pars, rows):
        toks = list(toks)
        if not rows:  # a prefill chunk (lib/engine/prefill.c): causal, no logits
            out = self.m.forward(toks, None, [])
            self.kv += toks
            return out
        pend = rows[0] + 1  # rows: the last pending id, then one per candidate
        cand = toks[pend:]
        if pars is None:
            cpar = [j - 1 for j in range(len(cand))]
        else:
            cpar = [pars[pend + j] - pend if pars[pend + j] >= pend else -1
                    for j in range(len(cand))]
        self.rounds.append((self.kv + toks[:pend], cand, cpar))
        out = self.m.forward(toks, list(pars) if pars is not None else None, list(rows))
        self.kv += toks
        return out

    def kv_len(self):
        return self.m.kv_len

    def kv_truncate(self, n):
        self.m.kv_truncate(n)
        del self.kv[n:]

    def kv_keep(self, base, keep):
        self.m.kv_keep(base, list(keep))
        self.kv = self.kv[:base] + [self.kv[base + k] for k in keep]


def deepest_path(cand, cpar, k):
    """The recorded tree's deepest path, the first (in trie order) of the deepest."""
    depth = []
    for j in range(len(cand)):
        depth.append(1 + (depth[cpar[j]] if cpar[j] >= 0 else 0))
    if not cand:
        return []
    leaf = max(range(len(cand)), key=lambda j: (depth[j], -j))
    path = []
    while leaf >= 0:
        path.append(cand[leaf])
        leaf = cpar[leaf]
    return path[::-1][:k]


def argmax(row):
    return max(range(len(row)), key=lambda i: row[i])


class TestVllmProposer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tt = hsd.Tokenizer(TARGET_TOK)
        cls.dt = hsd.Tokenizer(DRAFT_TOK)
        cls.target = hsd.Model(TARGET, n_threads=1)
        cls.eos = cls.tt.eos_id

    def prompt_ids(self, prompt):
        return [self.tt.bos_id] + self.tt.encode(prompt)

    def test_interface(self):
        """Built like vLLM builds it; empty sampled lists, full contexts and ids outside the
        vocabulary get [] without failing the other requests of the step."""
        p = create_custom_proposer(vllm_config())
        p.load_model(object())  # vLLM passes its target model; hsd does not use it
        batch = InputBatch()
        ids = self.prompt_ids(PROMPTS[0])
        for row in range(4):
            batch.put(row, ids)
        batch.token_ids_cpu[2][3] = 100000          # not a target id
        batch.num_tokens_no_spec[3] = MAX_LEN       # a full context
        sampled = [[ids[-1]], [], [ids[-1]], [ids[-1]]]
        out = p.propose(sampled, batch.num_tokens_no_spec, batch.token_ids_cpu,
                        slot_mappings=None)
        self.assertIsInstance(out, list)
        self.assertEqual(len(out), 4)
        self.assertTrue(out[0], "a plain context gets a proposal")
        self.assertEqual(out[1:], [[], [], []])
        self.assertTrue(all(isinstance(t, int) and 0 <= t < 512 for t in out[0]))
        self.assertLessEqual(len(out[0]), K)
        # PR 39487's earlier wrapper (CustomClassProposer) calls with keywords
        again = p.propose(sampled_token_ids=sampled, num_tokens_no_spec=batch.num_tokens_no_spec,
                          token_ids_cpu=batch.token_ids_cpu, slot_mappings=None)
        self.assertEqual(again, out)

    def test_key_collision_starts_afresh(self):
        """States are found by a prefix's length and last ids; hsd checks the whole prefix. A
        request whose previous context has another request's key but not its ids must get
        the proposal of a fresh state, not one built on the other request's text."""
        tail = self.tt.encode(" and they played with the ball all day long in the sun. They ran"
                              " and jumped and laughed until the sky was dark. Then")
        self.assertGreater(len(tail), hsd_vllm._TAIL)
        a = self.prompt_ids("Tom had a dog") + tail
        b = self.prompt_ids("Mia saw a cat") + tail
        n = min(len(a), len(b))
        a, b = a[len(a) - n:], b[len(b) - n:]
        a[0] = b[0] = self.tt.bos_id
        self.assertNotEqual(a, b)
        b_next = b + [self.tt.encode(" Tom")[0]]
        self.assertEqual(hsd_vllm._key(a), hsd_vllm._key(b_next, len(b_next) - 1))
        p = create_custom_proposer(vllm_config())
        batch = InputBatch()
        batch.put(0, a)
        p.propose([[a[-1]]], batch.num_tokens_no_spec, batch.token_ids_cpu)
        batch.put(0, b_next)
        got = p.propose([b_next[-1:]], batch.num_tokens_no_spec, batch.token_ids_cpu)[0]
        self.assertEqual(p.stats()["n_fresh"], 2)  # hsd refused to extend a's state
        fresh = create_custom_proposer(vllm_config())
        want = fresh.propose([b_next[-1:]], batch.num_tokens_no_spec, batch.token_ids_cpu)[0]
        self.assertTrue(want)
        self.assertEqual(got, want)

    def test_a_proposals_equal_engine_slem(self):
        rec = RecordingTarget(self.target)
        tm = hsd.Model.from_callbacks(rec)
        dm = hsd.Model(DRAFT, n_threads=1)
        rounds = []
        with hsd.Engine(tm, self.tt, dm, self.dt) as e:
            for prompt in PROMPTS:
                e.reset()
                rec.kv, rec.rounds = [], []
                self.target.kv_truncate(0)
                r = e.generate(prompt, algo="slem", max_new_tokens=N_NEW, n_draft=N_DRAFT)
                self.assertEqual(r.algo, "slem")
                self.assertTrue(rec.rounds)
                self.assertEqual(rec.rounds[0][0], self.prompt_ids(prompt))
                rounds.append(rec.rounds)
        p = create_custom_proposer(vllm_config())
        p.load_model(None)
        batch, rng = InputBatch(), random.Random(5)
        prev = [None] * len(PROMPTS)
        checked = 0
        for step in range(max(len(r) for r in rounds)):
            live = [i for i in range(len(PROMPTS)) if step < len(rounds[i])]
            rows = list(range(MAX_REQS))
            rng.shuffle(rows)  # requests change rows between steps (batch condensing)
            sampled = [[] for _ in range(MAX_REQS)]
            where = {}
            for i, row in zip(live, rows):
                ctx = rounds[i][step][0]
                batch.put(row, ctx)
                # the ids this step added (the first step: its last prompt id)
                sampled[row] = ctx[len(prev[i]):] if prev[i] else ctx[-1:]
                prev[i] = ctx
                where[row] = i
            out = p.propose(sampled, batch.num_tokens_no_spec, batch.token_ids_cpu, None)
            self.assertEqual(len(out), MAX_REQS)
            for row in range(MAX_REQS):
                if row not in where:
                    self.assertEqual(out[row], [], "a request without sampled ids")
                    continue
                ctx, cand, cpar = rounds[where[row]][step]
                slot = p._by_key[hsd_vllm._key(array.array("i", ctx))]
                ids, par, _ = p._prop.last_tree(slot)
                self.assertEqual((ids, par), (cand, cpar),
                                 "prompt %d step %d: the tree differs from the engine's"
                                 % (where[row], step))
                self.assertEqual(out[row], deepest_path(cand, cpar, K))
                checked += 1
        st = p.stats()
        steps = max(len(r) for r in rounds)
        self.assertEqual(st["n_fresh"], len(PROMPTS))       # one fresh state per request
        self.assertEqual(st["n_reused"], checked - len(PROMPTS))
        # one batched drafter forward per draft position for the whole step
        self.assertLessEqual(st["n_drafter_forwards"], steps * N_DRAFT)
        self.assertGreater(checked, 4 * len(PROMPTS))

    def verify_loop(self, prompts, max_states, **hsd_cfg):
        """vLLM's step loop in miniature. Greedy: accept the longest matching prefix, then the
        target's own next token. Returns the generated ids per prompt and the acceptance."""
        p = create_custom_proposer(vllm_config(max_states=max_states, **hsd_cfg))
        p.load_model(None)
        batch = InputBatch()
        waiting = list(range(len(prompts)))
        running, ctx, out, new = [], {}, {}, {}
        drafted = accepted = steps = 0
        while waiting or running:
            while waiting and len(running) < MAX_REQS:  # arrivals: prefill + first token
                i = waiting.pop(0)
                ids = self.prompt_ids(prompts[i])
                self.target.kv_truncate(0)
                first = argmax(self.target.forward(ids, rows=[len(ids) - 1])[0])
                ctx[i], out[i], new[i] = ids + [first], [first], [first]
                running.append(i)
            steps += 1
            random.Random(steps).shuffle(running)  # batch rows move
            sampled = [[] for _ in range(MAX_REQS)]
            for row, i in enumerate(running):
                batch.put(row, ctx[i])
                sampled[row] = new[i]
            props = p.propose(sampled, batch.num_tokens_no_spec, batch.token_ids_cpu)
            for row, i in enumerate(list(running)):
                prop = props[row]
                self.assertLessEqual(len(prop), K)
                self.assertTrue(all(0 <= t < 512 for t in prop))
                self.target.kv_truncate(0)
                logits = self.target.forward(ctx[i] + prop,
                                             rows=range(len(ctx[i]) - 1, len(ctx[i]) + len(prop)))
                got = []
                for j, row_logits in enumerate(logits):  # the target's argmax at each place
                    t = argmax(row_logits)
                    got.append(t)
                    if j == len(prop) or prop[j] != t:
                        break
                drafted += len(prop)
                accepted += len(got) - 1
                done = False
                for t in got:
                    if t == self.eos or len(out[i]) >= N_NEW:
                        done = True
                        break
                    out[i].append(t)
                    ctx[i].append(t)
                new[i] = got
                if done or len(out[i]) >= N_NEW:
                    running.remove(i)
        return out, drafted, accepted, steps, p

    def test_b_verify_loop_equals_ar(self):
        prompts = PROMPTS + MORE  # 12 requests, 8 rows, 6 states: states are evicted
        out, drafted, accepted, steps, p = self.verify_loop(prompts, max_states=6)
        with hsd.Engine(self.target, self.tt) as e:
            for i, prompt in enumerate(prompts):
                e.reset()
                self.target.kv_truncate(0)
                ar = e.generate(prompt, algo="ar", max_new_tokens=N_NEW)
                self.assertEqual(out[i], list(ar.ids), "prompt %d" % i)
                self.assertEqual(self.tt.decode(out[i], skip_special=True), ar.text)
        total = sum(len(o) for o in out.values())
        st = p.stats()
        print("verify loop: %d tokens in %d steps, %d drafted, %d accepted (%.2f tokens per "
              "request-step), %d proposals skipped for lack of states, stats %s"
              % (total, steps, drafted, accepted, total / max(1, st["n_proposals"]),
                 p.proposals_skipped, st))
        self.assertGreater(p.proposals_skipped, 0, "8 running requests, 6 states")
        # 12 requests through 6 states: finished requests' states were given to newcomers,
        # and a running request never lost its state to one (each state built once)
        self.assertEqual(st["n_fresh"], len(prompts))
        self.assertEqual(st["n_reused"], st["n_proposals"] - st["n_fresh"])
        # the drafts are worth verifying: random ids would almost never be accepted
        self.assertGreater(accepted, 0.4 * st["n_proposals"])

    def test_b_low_rank_draft_head_stays_exact(self):
        """A cheaper drafter head (draft_head, hsd's --draft-head) changes the proposals, never
        the output: the verify loop still ends with AR's greedy text."""
        out, drafted, accepted, steps, p = self.verify_loop(PROMPTS[:4], max_states=4,
                                                            draft_head="lowrank:8")
        self.assertIn("lowrank", p.drafter.head_desc)
        with hsd.Engine(self.target, self.tt) as e:
            for i, prompt in enumerate(PROMPTS[:4]):
                e.reset()
                self.target.kv_truncate(0)
                self.assertEqual(out[i], list(e.generate(prompt, algo="ar",
                                                         max_new_tokens=N_NEW).ids))
        self.assertGreater(drafted, 0)

    def test_c_sampled_point_mass_keeps_law(self):
        """vLLM verifies hsd's drafts as point masses q = delta(d): the first draft is kept
        with probability p(d), else a token is drawn from p without d. The first emitted
        token must then follow p exactly: chi-square against p over 6000 draws."""
        p = create_custom_proposer(vllm_config())
        p.load_model(None)
        batch = InputBatch()
        ids = self.prompt_ids("Once upon a time, there was a")
        batch.put(0, ids)
        prop = p.propose([[ids[-1]]], batch.num_tokens_no_spec, batch.token_ids_cpu)[0]
        self.assertTrue(prop)
        self.target.kv_truncate(0)
        logits = self.target.forward(ids, rows=[len(ids) - 1])[0]
        mx = max(logits)
        w = [math.exp(x - mx) for x in logits]
        z = sum(w)
        probs = [x / z for x in w]
        d = prop[0]
        rest = [x if i != d else 0.0 for i, x in enumerate(probs)]
        zr = sum(rest)
        rng, n = random.Random(25), 6000
        counts = [0] * len(probs)

        def draw(dist, total):
            u, acc = rng.random() * total, 0.0
            for i, x in enumerate(dist):
                acc += x
                if u < acc:
                    return i
            return max(i for i, x in enumerate(dist) if x > 0)

        for _ in range(n):
            counts[d if rng.random() < probs[d] else draw(rest, zr)] += 1
        # bins with expected count >= 5, the rest pooled
        chi2, dof, pool_e, pool_o = 0.0, -1, 0.0, 0
        for i, pr in enumerate(probs):
            e = n * pr
            if e >= 5:
                chi2 += (counts[i] - e) ** 2 / e
                dof += 1
            else:
                pool_e += e
                pool_o += counts[i]
        if pool_e > 0:
            chi2 += (pool_o - pool_e) ** 2 / pool_e
            dof += 1
        self.assertGreaterEqual(dof, 2)
        # the 0.999 quantile of chi2(dof) (Wilson-Hilferty)
        z999 = 3.090
        crit = dof * (1 - 2 / (9 * dof) + z999 * math.sqrt(2 / (9 * dof))) ** 3
        print("point-mass verification: p(draft %d) = %.3f, chi2 %.1f with %d dof (crit %.1f)"
              % (d, probs[d], chi2, dof, crit))
        self.assertLess(chi2, crit)


if __name__ == "__main__":
    gone = missing()
    if gone:
        print("SKIP: shared models missing: %s (set HSD_SHARED)" % ", ".join(gone))
        sys.exit(77)
    print("vLLM is not installed here: HsdProposer is driven with vLLM's calling convention "
          "(arguments, shapes, order from its source), stdlib arrays in place of numpy.")
    res = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if res.wasSuccessful() and res.testsRun else 1)
