"""Tokenizers through the binding, against HF tokenizers' outputs in shared/reference."""
import json
import os
import re
import unittest

import hsd
from tests import shared

# one family per tokenizer kind: byte-level BPE (gpt2, llama3, qwen3), SentencePiece BPE with
# byte fallback (llama2), Unigram and WordPiece
FAMILIES = ("gpt2", "llama3", "qwen3", "llama2", "synthetic_unigram", "synthetic_wordpiece")


class TestVersion(unittest.TestCase):
    def test_version_matches_header(self):
        with open(os.path.join(shared.ROOT, "include", "hsd.h")) as f:
            h = f.read()
        parts = [re.search(r"#define HSD_VERSION_%s (\d+)" % k, h).group(1)
                 for k in ("MAJOR", "MINOR", "PATCH")]
        self.assertEqual(hsd.version(), ".".join(parts))
        self.assertEqual(hsd.__version__, hsd.version())


class TestReference(unittest.TestCase):
    def check_family(self, fam):
        tok_path, ref_path = shared.require("tokenizers/%s/tokenizer.json" % fam,
                                            "reference/%s.jsonl" % fam)
        with hsd.Tokenizer(tok_path) as tok, open(ref_path, encoding="utf-8") as f:
            n = 0
            for line in f:
                r = json.loads(line)
                text = r["text"]
                self.assertEqual(tok.encode(text), r["ids"], text)
                self.assertEqual(tok.encode(text, add_special=True), r["ids_with_special"], text)
                self.assertEqual(tok.decode(r["ids"]), r["decoded"], text)
                self.assertEqual(tok.decode(r["ids_with_special"]), r["decoded_with_special"])
                self.assertEqual(tok.decode(r["ids_with_special"], skip_special=True),
                                 r["decoded_skip_special"])
                n += 1
            self.assertGreater(n, 100)

    def test_families(self):
        for fam in FAMILIES:
            with self.subTest(family=fam):
                self.check_family(fam)


class TestVocabulary(unittest.TestCase):
    def test_gpt2_surface_bytes(self):
        (p,) = shared.require("tokenizers/gpt2/tokenizer.json")
        tok = hsd.Tokenizer(p)
        self.assertEqual(tok.vocab_size, 50257)
        i = tok.token_to_id("Ġhello")
        self.assertIsNotNone(i)
        self.assertEqual(tok.id_to_token(i), "Ġhello")
        self.assertEqual(tok.token_bytes(i), b" hello")  # byte-level escape undone
        self.assertIsNone(tok.token_to_id("no such token"))
        self.assertIsNone(tok.token_bytes(-1))
        self.assertIsNone(tok.id_to_token(tok.vocab_size))

    def test_llama2_specials_and_byte_tokens(self):
        (p,) = shared.require("tokenizers/llama2/tokenizer.json")
        tok = hsd.Tokenizer(p)
        self.assertEqual((tok.bos_id, tok.eos_id, tok.unk_id), (1, 2, 0))
        self.assertTrue(tok.is_special(2))
        self.assertFalse(tok.is_special(tok.token_to_id("▁the")))
        self.assertEqual(tok.token_bytes(tok.token_to_id("▁the")), b" the")
        self.assertEqual(tok.token_bytes(tok.token_to_id("<0x41>")), b"A")
        # the llama2.c encode examples in shared/models/reference_outputs.json (BOS first)
        with open(shared.path("models/reference_outputs.json")) as f:
            ex = json.load(f)["llama2-tokenizer"]["encode_examples"]
        for text, ids in ex.items():
            self.assertEqual([tok.bos_id] + tok.encode(text), ids, text)

    def test_from_bytes_equals_file(self):
        (p,) = shared.require(shared.DRAFT_TOK)
        with open(p, "rb") as f:
            data = f.read()
        a, b = hsd.Tokenizer(p), hsd.Tokenizer.from_bytes(data, format="llama2c", name="tok512")
        text = "Once upon a time, there was a little girl named Lily."
        self.assertEqual(a.encode(text), b.encode(text))
        self.assertEqual(b.vocab_size, 512)
        self.assertEqual(b.decode(b.encode(text)), text)


class TestErrors(unittest.TestCase):
    def test_missing_file(self):
        with self.assertRaises(hsd.HsdError) as cm:
            hsd.Tokenizer("/nonexistent/tokenizer.json")
        self.assertEqual(cm.exception.status, hsd.Status.ERR_IO)
        self.assertIn("/nonexistent/tokenizer.json", cm.exception.message)

    def test_malformed_memory(self):
        with self.assertRaises(hsd.HsdError) as cm:
            hsd.Tokenizer.from_bytes(b'{"model": [', format="hf_json")
        self.assertEqual(cm.exception.status, hsd.Status.ERR_PARSE)
        with self.assertRaises(ValueError):
            hsd.Tokenizer.from_bytes(b"{}", format="sentencepiece")

    def test_bad_input(self):
        (p,) = shared.require(shared.DRAFT_TOK)
        tok = hsd.Tokenizer(p)
        with self.assertRaises(hsd.HsdError) as cm:
            tok.encode(b"ok \xff bad")
        self.assertEqual(cm.exception.status, hsd.Status.ERR_INVALID_UTF8)
        self.assertIn("3", cm.exception.message)  # the byte offset
        with self.assertRaises(hsd.HsdError) as cm:
            tok.decode([5, 512])
        self.assertEqual(cm.exception.status, hsd.Status.ERR_OUT_OF_RANGE)
        tok.close()
        tok.close()  # twice is harmless
        with self.assertRaises(ValueError):
            tok.encode("closed")


if __name__ == "__main__":
    unittest.main()
