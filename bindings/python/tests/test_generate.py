"""Models, pairing and generation with every algorithm through the binding, on the real
TinyStories pair in shared/models (babyllama/tok105 target, stories260K/tok512 drafter)."""
import json
import os
import subprocess
import math
import unittest

import hsd
from tests import shared

PROMPT = "Once upon a time, there was a little dog named Max. Max liked to"


def load_pair():
    paths = shared.require(shared.TARGET, shared.TARGET_TOK, shared.DRAFT, shared.DRAFT_TOK)
    return hsd.Model(paths[0]), hsd.Tokenizer(paths[1]), hsd.Model(paths[2]), hsd.Tokenizer(paths[3])


class TestPairing(unittest.TestCase):
    def test_vocabulary_mismatch_refused_naming_the_side(self):
        """A tokenizer that is not the model's is refused when the engine is made, naming the
        side and both sizes (it used to run until some forward, or silently)."""
        tm, tt, dm, dt = load_pair()
        (qwen,) = shared.require("tokenizers/qwen3/tokenizer.json")
        big = hsd.Tokenizer(qwen)
        with self.assertRaises(hsd.HsdError) as cm:
            hsd.Engine(dm, big)  # 151,669 ids on stories260K's 512 rows
        self.assertEqual(cm.exception.status, hsd.Status.ERR_INVALID_ARG)
        for word in ("target tokenizer", "151669 ids", "512 rows"):
            self.assertIn(word, str(cm.exception))
        with self.assertRaises(hsd.HsdError) as cm:
            hsd.Engine(tm, tt, tm, dt)  # tok512 on babyllama's 105 rows, as the drafter
        for word in ("drafter tokenizer", "512 ids", "105 rows"):
            self.assertIn(word, str(cm.exception))


class TestModel(unittest.TestCase):
    def test_load_and_forward_matches_reference(self):
        (p,) = shared.require(shared.DRAFT)
        with open(shared.path("models/reference_outputs.json")) as f:
            ref = json.load(f)["stories260K"]["greedy_ids"]
        m = hsd.Model(p, n_ctx=64)
        self.assertEqual((m.vocab_size, m.n_ctx), (512, 64))
        self.assertIn("llama2c", m.desc)
        # greedy from BOS, one token at a time: the independent numpy run's ids
        tok = 1
        for step in range(12):
            (logits,) = m.forward([tok])
            tok = max(range(len(logits)), key=logits.__getitem__)
            self.assertEqual(tok, ref[step], "step %d" % step)
        self.assertEqual(m.kv_len, 12)
        # a 3-token chain forward equals the cached steps: logits of the last row agree
        m.kv_truncate(9)
        rows = m.forward(ref[8:11], rows=[2])
        self.assertEqual(len(rows), 1)
        self.assertEqual(max(range(512), key=rows[0].__getitem__), ref[11])
        with self.assertRaises(hsd.HsdError) as cm:
            m.forward([512])
        self.assertEqual(cm.exception.status, hsd.Status.ERR_OUT_OF_RANGE)
        with self.assertRaises(hsd.HsdError):
            m.kv_truncate(m.kv_len + 1)

    def test_bad_params(self):
        with self.assertRaises(hsd.HsdError) as cm:
            hsd.Model("/nonexistent/model.bin")
        self.assertEqual(cm.exception.status, hsd.Status.ERR_IO)
        with self.assertRaises(hsd.HsdError) as cm:
            hsd.Model("/nonexistent/model.bin", n_threads=-1)
        self.assertEqual(cm.exception.status, hsd.Status.ERR_INVALID_ARG)


class TestPair(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tm, cls.tt, cls.dm, cls.dt = load_pair()
        cls.engine = hsd.Engine(cls.tm, cls.tt, cls.dm, cls.dt)

    @classmethod
    def tearDownClass(cls):
        cls.engine.close()

    def test_every_algorithm_greedy_equals_ar(self):
        ar = self.engine.generate(PROMPT, algo="ar", max_new_tokens=80)
        self.assertEqual(ar.algo, "ar")
        self.assertEqual(len(ar.ids), 80)
        self.assertEqual(ar.text, self.tt.decode(ar.ids, skip_special=True))
        for algo in ("union", "tli", "slem", "slrs", "auto"):
            with self.subTest(algo=algo):
                r = self.engine.generate(PROMPT, algo=algo, max_new_tokens=80, n_draft=5)
                self.assertEqual(r.ids, ar.ids)
                self.assertEqual(r.text, ar.text)
                self.assertGreater(r.n_drafted, 0)
                self.assertTrue(0 <= r.acceptance_rate <= 1)
                # fewer target forwards than tokens is the point of drafting
                self.assertLess(r.n_rounds, len(r.ids))
                if algo == "auto":
                    self.assertEqual(r.algo, self.engine.auto_algo()[0])
                    self.assertIn("T∩D", r.reason)
        # the cost-aware k moves k with measured times; the text stays AR's
        r = self.engine.generate(PROMPT, algo="slem", max_new_tokens=80, cost_k=True, k_max=8)
        self.assertEqual(r.ids, ar.ids)
        self.assertTrue(1 <= r.k_mean <= 8, r.k_mean)

    def test_result_follows_cli_json(self):
        """Result's statistics carry `hsd generate --json`'s names (the CLI is the oracle:
        its JSON fields are an interface), with the same values for the counts."""
        cli = os.environ.get("HSD_CLI")
        if not cli or not os.path.exists(cli):
            self.skipTest("HSD_CLI not set: the hsd CLI is the oracle of the field names")
        tm, tt, dm, dt = shared.require(shared.TARGET, shared.TARGET_TOK, shared.DRAFT,
                                        shared.DRAFT_TOK)
        for algo in ("slrs", "slem"):
            with self.subTest(algo=algo):
                out = subprocess.run([cli, "generate", "--target", tm, "--target-tokenizer", tt,
                                      "--draft", dm, "--draft-tokenizer", dt, "--algo", algo,
                                      "-p", PROMPT, "-n", "30", "--json"],
                                     check=True, capture_output=True, text=True).stdout
                j = json.loads(out)
                self.engine.reset()
                r = self.engine.generate(PROMPT, algo=algo, max_new_tokens=30)
                self.assertEqual(r.ids, j["ids"])
                self.assertEqual(r.text, j["text"])
                self.assertEqual(r.algo, j["algo"])
                self.assertEqual(r.reason, j["reason"])
                self.assertEqual(r.stop_reason, j["stop_reason"])
                for k in ("n_generated", "rounds", "drafted", "accepted", "acceptance_rate",
                          "tau", "first_accept_rate", "k_mean", "tree_nodes", "tree_forwards",
                          "expected_accept", "expected_accept_em"):
                    if k in j:  # SLRS's fields only for SLRS
                        self.assertEqual(getattr(r, k), j[k], k)
                for k in ("ttft_ms", "tpot_ms", "tokens_per_s", "total_ms", "draft_ms",
                          "verify_ms", "bridge_ms", "psi_ms"):
                    if k in j:  # times differ run to run: the name must exist
                        self.assertIsInstance(getattr(r, k), float, k)
                if algo != "slrs":
                    self.assertNotIn("psi_ms", j)
                    self.assertIsNone(r.psi_ms)
                # the deprecated aliases still answer
                self.assertEqual(r.n_rounds, r.rounds)
                self.assertEqual(r.n_drafted, r.drafted)
                self.assertEqual(r.n_accepted, r.accepted)
                self.assertEqual(r.n_generated, len(r.ids))

    def test_pairing(self):
        algo, reason = self.engine.auto_algo()
        self.assertIn(algo, ("tli", "slem"))  # different vocabularies: never sd
        self.assertGreater(self.engine.overlap, 0)
        with self.assertRaises(hsd.HsdError) as cm:
            self.engine.generate(PROMPT, algo="sd")
        self.assertEqual(cm.exception.status, hsd.Status.ERR_INVALID_ARG)
        with self.assertRaises(ValueError):
            self.engine.generate(PROMPT, algo="bogus")
        with self.assertRaises(hsd.HsdError):
            self.engine.generate(PROMPT, max_new_tokens=-1)
        with self.assertRaises(RuntimeError):  # borrowed by the open engine
            self.tm.close()

    def test_sampling_is_seeded(self):
        a = self.engine.generate(PROMPT, algo="slem", temp=1.0, seed=7, max_new_tokens=40)
        b = self.engine.generate(PROMPT, algo="slem", temp=1.0, seed=7, max_new_tokens=40)
        self.assertEqual(a.ids, b.ids)
        self.assertEqual(len(a.ids), 40)

    def test_stop_string(self):
        r = self.engine.generate(PROMPT, algo="tli", max_new_tokens=120, stop=["."])
        self.assertEqual(r.text.count("."), 1)
        self.assertTrue(r.text.rstrip().endswith("."))


class TestSameVocabulary(unittest.TestCase):
    def test_sd_with_itself_accepts_every_draft(self):
        (mp, tp) = shared.require(shared.DRAFT, shared.DRAFT_TOK)
        tok = hsd.Tokenizer(tp)
        target, drafter = hsd.Model(mp), hsd.Model(mp)
        with hsd.Engine(target, tok, drafter, tok) as e:
            self.assertEqual(e.auto_algo()[0], "sd")
            ar = e.generate(PROMPT, algo="ar", max_new_tokens=40)
            sd = e.generate(PROMPT, algo="sd", max_new_tokens=40)
            self.assertEqual(sd.ids, ar.ids)
            # the drafter is the target: every greedy draft is the target's own choice
            self.assertEqual(sd.acceptance_rate, 1.0)


class Bigram:
    """A bigram model counted from one sentence, written in Python, as hsd's target."""

    def __init__(self, tok, text):
        self.vocab_size, self.n_ctx, self.cache = tok.vocab_size, 512, []
        self.eos = tok.eos_id
        ids = [tok.bos_id] + tok.encode(text)
        self.next = {}
        for a, b in zip(ids, ids[1:]):
            self.next.setdefault(a, {}).setdefault(b, 0)
            self.next[a][b] += 1

    def forward(self, tokens, parents, rows):
        self.cache += tokens
        out = []
        for r in rows:
            seen = self.next.get(tokens[r])
            row = [-10.0] * self.vocab_size
            for v, c in (seen or {self.eos: 1}).items():
                row[v] = math.log(c)
            out.append(row)
        return out

    def kv_len(self):
        return len(self.cache)

    def kv_truncate(self, n):
        del self.cache[n:]


class TestCustomModel(unittest.TestCase):
    def test_python_model_as_target(self):
        _, tt, dm, dt = load_pair()
        tok = hsd.Tokenizer(shared.path(shared.DRAFT_TOK))
        # no token repeats in this sentence (tok512), so greedy decoding of its bigrams from
        # "Once upon" spells the rest of it and then ends
        m = hsd.Model.from_callbacks(Bigram(tok, "Once upon a time, Tom found his big red ball."))
        self.assertEqual(m.desc, "caller-provided model")
        with hsd.Engine(m, tok, dm, dt) as e:
            for algo in ("ar", "union", "tli", "slem", "slrs"):
                with self.subTest(algo=algo):
                    r = e.generate("Once upon", algo=algo, max_new_tokens=40)
                    self.assertEqual(r.text, "a time, Tom found his big red ball.")


if __name__ == "__main__":
    unittest.main()
