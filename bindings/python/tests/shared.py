"""Locating the shared data (../shared, or $HSD_SHARED) for the binding's tests."""
import os
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SHARED = (os.environ.get("HSD_SHARED") or os.environ.get("HSD_SHARED_DEFAULT")
          or os.path.join(os.path.dirname(ROOT), "shared"))


def path(rel):
    return os.path.join(SHARED, rel)


def require(*rels):
    """Skips the calling test (with the reason) unless every shared file exists."""
    for rel in rels:
        if not os.path.exists(path(rel)):
            raise unittest.SkipTest("shared data missing: %s (set HSD_SHARED)" % path(rel))
    return [path(r) for r in rels]


TARGET = "models/babyllama-tok105/model5000.bin"
TARGET_TOK = "models/babyllama-tok105/tok105.bin"
DRAFT = "models/stories260K/stories260K.bin"
DRAFT_TOK = "models/stories260K/tok512.bin"
