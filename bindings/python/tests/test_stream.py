"""Streaming through the binding: Engine.stream yields the text as it becomes final, and the
pieces add up to what generate() returns (the oracle: the library's own final decode of all
ids, which the pieces are checked against for every algorithm); leaving the loop stops the
generation; the on_text callback of generate() can stop it too."""
import unittest

import hsd
from tests import shared
from tests.test_generate import PROMPT, load_pair


class TestStream(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tm, cls.tt, cls.dm, cls.dt = load_pair()
        cls.engine = hsd.Engine(cls.tm, cls.tt, cls.dm, cls.dt)

    @classmethod
    def tearDownClass(cls):
        cls.engine.close()

    def test_pieces_add_up_to_the_text(self):
        for algo in ("ar", "union", "tli", "slem", "slrs"):
            for temp in (0.0, 1.0):
                with self.subTest(algo=algo, temp=temp):
                    kw = dict(algo=algo, max_new_tokens=60, temp=temp, seed=3)
                    pieces = list(self.engine.stream(PROMPT, **kw))
                    full = self.engine.generate(PROMPT, **kw)
                    self.assertGreater(len(pieces), 1)  # it streamed, not one final piece
                    self.assertEqual("".join(pieces), full.text)

    def test_leaving_the_loop_stops(self):
        it = self.engine.stream(PROMPT, algo="tli", max_new_tokens=400, stop_at_eos=False)
        first = next(it)
        self.assertTrue(first)
        it.close()  # joins the worker: the generation ended within one round
        # the engine is usable again at once
        r = self.engine.generate(PROMPT, algo="ar", max_new_tokens=5)
        self.assertEqual(len(r.ids), 5)

    def test_callback_stops_generation(self):
        seen = []

        def on_text(piece):
            seen.append(piece)
            return False  # stop after the first round

        r = self.engine.generate(PROMPT, algo="slem", max_new_tokens=100, on_text=on_text)
        self.assertEqual(r.stop_reason, "callback")
        self.assertEqual(r.n_rounds, 1)
        self.assertEqual(len(seen), 1)
        self.assertEqual(r.text.encode(), b"".join(seen))

    def test_context_limit(self):
        # stories260K was trained for 512 positions: a long budget stops there, cleanly
        (mp, tp) = shared.require(shared.DRAFT, shared.DRAFT_TOK)
        tok, m = hsd.Tokenizer(tp), hsd.Model(mp, n_ctx=1024)
        with hsd.Engine(m, tok) as e:
            r = e.generate("Once", algo="ar", max_new_tokens=2000, stop_at_eos=False)
            self.assertEqual(r.stop_reason, "context")
            n_prompt = len(tok.encode("Once")) + 1  # + BOS
            self.assertEqual(n_prompt + len(r.ids), 512)  # every position, none past it
            with self.assertRaises(hsd.HsdError) as cm:
                e.generate("Once " * 600, algo="ar", max_new_tokens=4)
            self.assertEqual(cm.exception.status, hsd.Status.ERR_OUT_OF_RANGE)


if __name__ == "__main__":
    unittest.main()
