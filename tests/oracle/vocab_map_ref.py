#!/usr/bin/env python3
"""Independent reference for lib/engine/vocab_map.c: T ∩ D by surface bytes, computed from the
two tokenizer.json files alone (no hsd code).

    python3 vocab_map_ref.py TARGET.json DRAFTER.json {text|specials}

prints one line "d2t D_0 D_1 ..." (the target id for each drafter id, -1 when none) and one
line "t2d T_0 T_1 ...", by the rule the header states: tokens match when their surface bytes
are equal and non-empty; text tokens match text tokens; special tokens are left out
("text") or match special tokens of the same bytes ("specials"); among ids of one side that
spell one surface, the one that is not a byte-fallback token <0xNN> represents it, then the
smallest id. Surfaces: byte-level BPE (a ByteLevel decoder) maps each character back through
GPT-2's bytes_to_unicode table; SentencePiece-style BPE (a Replace "▁" -> " " decoder) turns
"▁" into a space and, with byte_fallback, "<0xNN>" into that byte. Added tokens spell their
content. Other pipelines are refused (exit 2): this oracle covers only what it can derive."""
import json
import re
import sys


def bytes_to_unicode():
    # GPT-2's table, written from its definition: printable bytes map to themselves, the
    # others to 256, 257, ... in byte order
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + \
        list(range(0xAE, 0xFF + 1))
    table, n = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + n)
            n += 1
    return {c: b for b, c in table.items()}


def decoder_kinds(dec):
    if dec is None:
        return set()
    if dec.get("type") == "Sequence":
        out = set()
        for d in dec["decoders"]:
            out |= decoder_kinds(d)
        return out
    if dec.get("type") == "Replace" and dec.get("pattern", {}).get("String") == "\u2581":
        return {"metaspace"}
    return {dec.get("type")}


def load(path):
    """-> (n_ids, surface: id -> bytes or None, special: set of ids, byte_ids: set)"""
    j = json.load(open(path, encoding="utf-8"))
    m = j["model"]
    if m["type"] != "BPE":
        sys.exit("vocab_map_ref: %s: model %s not covered" % (path, m["type"]))
    kinds = decoder_kinds(j.get("decoder"))
    byte_level = "ByteLevel" in kinds
    spm = "metaspace" in kinds
    if byte_level == spm:
        print("vocab_map_ref: %s: decoder not covered" % path, file=sys.stderr)
        sys.exit(2)
    inv = bytes_to_unicode()
    fallback = bool(m.get("byte_fallback"))
    strs = {i: s for s, i in m["vocab"].items()}
    surface, special, byte_ids = {}, set(), set()
    for i, s in strs.items():
        if byte_level:
            surface[i] = bytes(inv[c] for c in s) if all(c in inv for c in s) else None
        else:
            mb = re.fullmatch(r"<0x([0-9A-Fa-f]{2})>", s)
            if fallback and mb:
                surface[i] = bytes([int(mb.group(1), 16)])
                byte_ids.add(i)
            else:
                surface[i] = s.replace("\u2581", " ").encode("utf-8")
    for a in j.get("added_tokens", []):
        i = a["id"]
        byte_ids.discard(i)
        surface[i] = a["content"].encode("utf-8")
        if a["special"]:
            special.add(i)
    n = max(surface) + 1 if surface else 0
    return n, surface, special, byte_ids


def reps(tok, specials):
    n, surface, special, byte_ids = tok
    best = {}
    for i in range(n):
        s = surface.get(i)
        if not s or (i in special and not specials):
            continue
        key = (i in special, s)
        cur = best.get(key)
        # not a byte-fallback token first, then the smaller id
        if cur is None or ((i in byte_ids) < (cur in byte_ids)) or \
                ((i in byte_ids) == (cur in byte_ids) and i < cur):
            best[key] = i
    return best


def mapping(src, other_reps, specials):
    n, surface, special, _ = src
    out = []
    for i in range(n):
        s = surface.get(i)
        if not s or (i in special and not specials):
            out.append(-1)
        else:
            out.append(other_reps.get((i in special, s), -1))
    return out


def main():
    t, d = load(sys.argv[1]), load(sys.argv[2])
    specials = sys.argv[3] == "specials"
    rt, rd = reps(t, specials), reps(d, specials)
    print("d2t", *mapping(d, rt, specials))
    print("t2d", *mapping(t, rd, specials))


main()
