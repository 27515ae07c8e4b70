"""The ctypes structs in hsd/_lib.py must list the same fields, in the same order, as the
structs in include/hsd.h: a field added to the header without the binding would shift every
later field. Parsed from the header, so this fails as soon as the two drift apart."""
import os
import re
import unittest

from hsd import _lib
from tests import shared

STRUCTS = {"hsd_model_params": _lib.ModelParams, "hsd_gen_params": _lib.GenParams,
           "hsd_gen_result": _lib.GenResult, "hsd_model_iface": _lib.ModelIface,
           "hsd_pair_psi": _lib.PairPsi, "hsd_synth_params": _lib.SynthParams,
           "hsd_proposer_params": _lib.ProposerParams, "hsd_proposer_stats": _lib.ProposerStats}


def header_fields(src, name):
    body = re.search(r"typedef struct %s \{(.*?)\n\} %s;" % (name, name), src, re.S).group(1)
    body = re.sub(r"/\*.*?\*/", " ", body, flags=re.S)
    fields = []
    for decl in body.split(";"):
        decl = " ".join(decl.split())
        if not decl:
            continue
        fp = re.search(r"\(\*\s*(\w+)\)", decl)  # function pointer member
        if fp:
            fields.append(fp.group(1))
            continue
        # "int32_t n_rounds, n_drafted" / "char reason[160]" / "const char *const *stop"
        first, *rest = decl.split(",")
        names = [re.search(r"(\w+)\s*(\[[^\]]*\])?$", first.strip()).group(1)]
        names += [re.search(r"(\w+)", r).group(1) for r in rest]
        fields += names
    return fields


class TestLayout(unittest.TestCase):
    def test_structs_match_header(self):
        src = ""
        for header in ("hsd.h", "hsd_tools.h"):
            with open(os.path.join(shared.ROOT, "include", header)) as f:
                src += f.read()
        for name, cls in STRUCTS.items():
            with self.subTest(struct=name):
                self.assertEqual([f[0] for f in cls._fields_], header_fields(src, name))


if __name__ == "__main__":
    unittest.main()
