#!/usr/bin/env python3
"""Chat-template oracle: renders templates with Python Jinja2 configured exactly as HF
transformers' apply_chat_template configures it (transformers/utils/chat_template_utils.py):
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols,
a {% generation %} block that renders its body]), tojson = json.dumps(ensure_ascii=False, ...),
globals raise_exception and strftime_now. strftime_now uses a fixed day (--now) so renders are
reproducible.

  chat_ref.py render TEMPLATE CONTEXT.json [--now YYYY-MM-DD]   -> rendered text on stdout
                   (TEMPLATE: a template file, or a tokenizer_config.json)
  chat_ref.py corpus DATA_DIR OUT_DIR [--now YYYY-MM-DD]       -> reference files (see below)

corpus: for every template in DATA_DIR/chat_templates/index.tsv and every conversation in
DATA_DIR/chat_conversations/*.json, for add_generation_prompt false and true, writes
OUT_DIR/<template>__<conv>__<agp>.ctx.json (the exact variable set), and either .out (the
rendered bytes) or .err (the exception text) next to it, plus OUT_DIR/MANIFEST (one case a
line) and OUT_DIR/VERSION (jinja2 and python versions). Exit 77 when jinja2 is missing."""
import datetime
import json
import os
import sys

try:
    import jinja2
    from jinja2.ext import Extension, loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    from jinja2 import nodes
except ImportError:
    sys.stderr.write("chat_ref.py: Python Jinja2 missing (apt-get install -y python3-jinja2)\n")
    sys.exit(77)


class GenerationExtension(Extension):
    # transformers' AssistantTracker without the tracking: {% generation %} renders its body
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_env(now):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return now.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationExtension, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(env, source, ctx):
    return env.from_string(source).render(**ctx)


def parse_now(argv):
    day = "2024-07-26"
    if "--now" in argv:
        i = argv.index("--now")
        day = argv[i + 1]
        del argv[i:i + 2]
    return datetime.datetime.strptime(day, "%Y-%m-%d")


def corpus(data_dir, out_dir, env):
    os.makedirs(out_dir, exist_ok=True)
    tdir = os.path.join(data_dir, "chat_templates")
    cdir = os.path.join(data_dir, "chat_conversations")
    templates = []
    with open(os.path.join(tdir, "index.tsv"), encoding="utf-8") as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            name, file, bos, eos = line.rstrip("\n").split("\t")[:4]
            templates.append((name, file, bos, eos))
    convs = sorted(c[:-5] for c in os.listdir(cdir) if c.endswith(".json"))
    manifest = []
    for name, file, bos, eos in templates:
        repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        file = file.replace("$HSD_SHARED", os.environ.get("HSD_SHARED") or
                            os.environ.get("HSD_SHARED_DEFAULT") or os.path.join(repo, "..", "shared"))
        path = os.path.abspath(file if os.path.isabs(file) else os.path.join(tdir, file))
        if file.endswith(".json"):  # a tokenizer_config.json (the shared ones)
            if not os.path.exists(path):
                sys.stderr.write(f"chat_ref.py: {path} missing, {name} left out\n")
                continue
            with open(path, encoding="utf-8") as f:
                cfg = json.load(f)
            source = cfg["chat_template"]
            if isinstance(source, list):
                source = next(t["template"] for t in source if t["name"] == "default")
        else:
            with open(path, encoding="utf-8", newline="") as f:
                source = f.read()
        try:
            compiled = env.from_string(source)
        except Exception as e:  # a syntax error: every case of this template raises
            compiled = e
        for conv in convs:
            with open(os.path.join(cdir, conv + ".json"), encoding="utf-8") as f:
                base = json.load(f)
            for agp in (False, True):
                ctx = dict(base)
                if bos != "-":  # "-": the tokenizer has no such token (the variable stays undefined)
                    ctx.setdefault("bos_token", bos)
                if eos != "-":
                    ctx.setdefault("eos_token", eos)
                ctx["add_generation_prompt"] = agp
                case = f"{name}__{conv}__{int(agp)}"
                with open(os.path.join(out_dir, case + ".ctx.json"), "w", encoding="utf-8") as f:
                    json.dump(ctx, f, ensure_ascii=False)
                for ext in (".out", ".err"):
                    try:
                        os.unlink(os.path.join(out_dir, case + ext))
                    except FileNotFoundError:
                        pass
                try:
                    if isinstance(compiled, Exception):
                        raise compiled
                    text = compiled.render(**ctx)
                    with open(os.path.join(out_dir, case + ".out"), "w", encoding="utf-8",
                              newline="") as f:
                        f.write(text)
                    kind = "ok"
                except Exception as e:  # the case must raise in hsd too
                    with open(os.path.join(out_dir, case + ".err"), "w", encoding="utf-8") as f:
                        f.write(f"{type(e).__name__}: {e}")
                    kind = "err"
                manifest.append(f"{case}\t{path}\t{kind}")
    with open(os.path.join(out_dir, "MANIFEST"), "w", encoding="utf-8") as f:
        f.write("\n".join(manifest) + "\n")
    with open(os.path.join(out_dir, "VERSION"), "w", encoding="utf-8") as f:
        f.write(f"jinja2 {jinja2.__version__} python {sys.version.split()[0]}\n")
    print(f"chat_ref.py: {len(manifest)} cases, jinja2 {jinja2.__version__}")


def main():
    argv = sys.argv[1:]
    now = parse_now(argv)
    env = make_env(now)
    if len(argv) == 3 and argv[0] == "render":
        with open(argv[1], encoding="utf-8", newline="") as f:
            source = f.read()
        if argv[1].endswith(".json"):  # a tokenizer_config.json: its (default) chat_template
            source = json.loads(source)["chat_template"]
            if isinstance(source, list):
                source = next(t["template"] for t in source if t["name"] == "default")
        with open(argv[2], encoding="utf-8") as f:
            ctx = json.load(f)
        try:
            sys.stdout.buffer.write(render(env, source, ctx).encode("utf-8", "surrogatepass"))
        except Exception as e:
            sys.stderr.write(f"{type(e).__name__}: {e}\n")
            return 1
        return 0
    if len(argv) == 3 and argv[0] == "corpus":
        corpus(argv[1], argv[2], env)
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
