"""The ctypes structs in hsd/_lib.py must list the same fields, in the same order, as the
structs in include/hsd.h: a field added to the header without the binding would shift every
later field. Parsed from the header, so this fails as soon as the two drift apart."""
import ctypes
import os
import re
import unittest

from hsd import _lib
from tests import shared

STRUCTS = _lib.MIRRORED  # every struct the binding mirrors (and checks at load)


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


class TestLoadCheck(unittest.TestCase):
    """At import the binding compares hsd_version() and hsd_struct_size() of every mirrored
    struct with its own; a library that differs is refused with a message saying why."""

    def test_loaded_library_matches(self):
        self.assertEqual(_lib.check_library(_lib.lib), _lib.lib.hsd_version().decode())
        for name, cls in _lib.MIRRORED.items():
            with self.subTest(struct=name):
                self.assertEqual(_lib.lib.hsd_struct_size(name.encode()), ctypes.sizeof(cls))

    def test_other_major_version_refused(self):
        with self.assertRaises(ImportError) as cm:
            _lib.check_library(_lib.lib, so_major=_lib.SO_MAJOR + 1)
        self.assertIn("major version %d" % (_lib.SO_MAJOR + 1), str(cm.exception))

    def test_struct_size_mismatch_refused(self):
        # a binding whose mirror of hsd_gen_params has one field more than the library's
        class Longer(ctypes.Structure):
            _fields_ = _lib.GenParams._fields_ + [("future", ctypes.c_int64)]
        with self.assertRaises(ImportError) as cm:
            _lib.check_library(_lib.lib, mirrored={"hsd_gen_params": Longer})
        msg = str(cm.exception)
        self.assertIn("hsd_gen_params is %d bytes in the library, %d in the binding"
                      % (ctypes.sizeof(_lib.GenParams), ctypes.sizeof(Longer)), msg)

    def test_not_an_hsd_library_refused(self):
        libc = ctypes.CDLL(None)
        with self.assertRaises(ImportError) as cm:
            _lib.check_library(libc)
        self.assertIn("hsd_version", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
