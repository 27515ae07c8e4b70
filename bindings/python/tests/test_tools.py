"""The tools the binding exposes (include/hsd_tools.h): synth writes a model hsd loads back with
the shape's dimensions, psi_summary's numbers follow from the definitions (a tokenizer against
itself), and bad input raises HsdError with the library's message."""
import os
import tempfile
import unittest

import hsd
from tests import shared


class TestSynth(unittest.TestCase):
    def test_writes_a_loadable_model(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.gguf")
            f32 = hsd.synth("tiny", path, dtype="f32", seed=3)
            with hsd.Model(path) as m:
                self.assertEqual(m.vocab_size, 256)  # the tiny shape's vocabulary
            # every tensor, vectors included, goes from 4 bytes an element to 2
            self.assertEqual(hsd.synth("tiny", os.path.join(d, "st"), "safetensors", "bf16") * 2,
                             f32)
            self.assertTrue(os.path.exists(os.path.join(d, "st", "config.json")))

    def test_errors(self):
        with self.assertRaises(hsd.HsdError) as cm:
            hsd.synth("gpt-5", "/tmp/never.gguf")
        self.assertEqual(cm.exception.status, hsd.Status.ERR_INVALID_ARG)
        self.assertIn("tiny-qwen2", cm.exception.message)  # the known shapes are listed
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(hsd.HsdError) as cm:  # safetensors has no Q8_0
                hsd.synth("tiny", os.path.join(d, "q8"), "safetensors", "q8_0")
            self.assertEqual(cm.exception.status, hsd.Status.ERR_UNSUPPORTED)
        self.assertRaises(ValueError, hsd.synth, "tiny", "/tmp/never", "onnx")


class TestPsiSummary(unittest.TestCase):
    def test_tokenizer_against_itself(self):
        (tok,) = shared.require(shared.DRAFT_TOK)
        with hsd.Tokenizer(tok) as t:
            s = hsd.psi_summary(t, t)
            # every text token spells itself: none without a decomposition, at least one each
            self.assertGreater(s["tokens"], 0)
            self.assertEqual(s["none"], 0)
            self.assertGreaterEqual(s["mean"], 1.0)
            self.assertGreaterEqual(s["max"], s["p75"])
            self.assertGreaterEqual(s["p75"], s["median"])
            self.assertGreaterEqual(s["median"], 1.0)

    def test_closed_tokenizer(self):
        (tok,) = shared.require(shared.DRAFT_TOK)
        t = hsd.Tokenizer(tok)
        t.close()
        self.assertRaises(ValueError, hsd.psi_summary, t, t)


if __name__ == "__main__":
    unittest.main()
