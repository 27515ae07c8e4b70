#!/usr/bin/env python3
"""Python Jinja2's render cost for a chat template, configured as transformers'
apply_chat_template (tests/oracle/chat_ref.py's environment): microseconds per render of one
context, the template compiled once (transformers caches it), best of 5 runs of N renders.
    jinja2_bench.py TEMPLATE(.jinja|tokenizer_config.json) CONTEXT.json [N]"""
import datetime
import json
import os
import sys
import timeit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "oracle"))
import chat_ref  # noqa: E402
import jinja2  # noqa: E402

path, ctx_path = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
with open(path, encoding="utf-8") as f:
    source = f.read()
if path.endswith(".json"):
    source = json.loads(source)["chat_template"]
with open(ctx_path, encoding="utf-8") as f:
    ctx = json.load(f)
env = chat_ref.make_env(datetime.datetime(2024, 7, 26))
tmpl = env.from_string(source)
out = tmpl.render(**ctx)
best = min(timeit.repeat(lambda: tmpl.render(**ctx), number=n, repeat=5)) / n * 1e6
compile_us = min(timeit.repeat(lambda: env.from_string(source), number=20, repeat=3)) / 20 * 1e6
print(json.dumps({"render_us": round(best, 3), "compile_us": round(compile_us, 1), "output_bytes": len(out.encode()),
                  "jinja2": jinja2.__version__, "python": sys.version.split()[0]}))
