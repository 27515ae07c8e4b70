"""hsd.ChatTemplate against the oracle, Python Jinja2 configured as transformers'
apply_chat_template (tests/oracle/chat_ref.py's environment, in this process): the shared
templates over a few conversations, byte for byte; raise_exception's message verbatim."""
import datetime
import json
import os
import sys
import unittest

import hsd
from tests import shared

sys.path.insert(0, os.path.join(shared.ROOT, "tests", "oracle"))
try:
    import chat_ref  # noqa: E402  (needs Python Jinja2)
except SystemExit:
    chat_ref = None

CONVS = os.path.join(shared.ROOT, "tests", "data", "chat_conversations")
DAY = datetime.date(2024, 7, 26)


@unittest.skipIf(chat_ref is None, "Python Jinja2 missing (apt-get install -y python3-jinja2)")
class TestChatTemplate(unittest.TestCase):
    def oracle(self, source, ctx):
        env = chat_ref.make_env(datetime.datetime(DAY.year, DAY.month, DAY.day))
        return env.from_string(source).render(**ctx)

    def test_shared_templates_match_jinja2(self):
        n = 0
        for fam in ("qwen3", "llama3", "llama3_1", "gemma3", "deepseek_v3"):
            cfg_path = shared.path("tokenizers/%s/tokenizer_config.json" % fam)
            if not os.path.exists(cfg_path):
                self.skipTest("shared data missing: %s" % cfg_path)
            with open(cfg_path, encoding="utf-8") as f:
                source = json.load(f)["chat_template"]
            with hsd.ChatTemplate(cfg_path) as t:
                for conv in ("basic", "multi_turn", "unicode", "tools", "special_chars"):
                    with open(os.path.join(CONVS, conv + ".json"), encoding="utf-8") as f:
                        c = json.load(f)
                    for agp in (False, True):
                        ctx = dict(c, add_generation_prompt=agp)
                        for key, value in (("bos_token", t.bos_token), ("eos_token", t.eos_token)):
                            if value is not None:
                                ctx[key] = value
                        try:
                            want = self.oracle(source, ctx)
                        except Exception as e:  # noqa: BLE001 - must raise in hsd too
                            with self.assertRaises(hsd.HsdError, msg="%s %s: %s" % (fam, conv, e)):
                                t.render(c["messages"], add_generation_prompt=agp,
                                         tools=c.get("tools"), now=DAY)
                            continue
                        got = t.render(c["messages"], add_generation_prompt=agp,
                                       tools=c.get("tools"), now=DAY)
                        self.assertEqual(got, want, "%s %s agp=%s" % (fam, conv, agp))
                        n += 1
        self.assertGreater(n, 20)

    def test_from_string_context_and_errors(self):
        src = ("{% for m in messages %}[{{ m.role }}] {{ m.content|trim }}\n{% endfor %}"
               "{% if add_generation_prompt is not defined %}(undefined){% endif %}"
               "{{ strftime_now('%d %b %Y') }}")
        ctx = {"messages": [{"role": "user", "content": "  héllo 🌍 "}]}
        with hsd.ChatTemplate.from_string(src) as t:
            self.assertEqual(t.render_context(ctx, now=DAY), self.oracle(src, ctx))
            self.assertIsNone(t.bos_token)
        with hsd.ChatTemplate.from_string("{{ raise_exception('bad role: ' ~ r) }}") as t:
            with self.assertRaises(hsd.HsdError) as cm:
                t.render_context({"r": "tool"})
            self.assertEqual(cm.exception.message, "bad role: tool")
            self.assertEqual(cm.exception.status, hsd.Status.ERR_INVALID_ARG)
        with self.assertRaises(hsd.HsdError) as cm:
            hsd.ChatTemplate.from_string("line one\n{% if %}")
        self.assertEqual(cm.exception.status, hsd.Status.ERR_PARSE)
        self.assertIn("line 2", cm.exception.message)


if __name__ == "__main__":
    unittest.main()
