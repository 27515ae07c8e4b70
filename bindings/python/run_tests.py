"""Runs the binding's unittest suite for ctest (`make test`): exit 0 when everything passed,
1 on any failure or error, 77 (ctest: skipped, reasons printed) when tests were skipped
because shared data is missing."""
import os
import sys
import unittest

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
suite = unittest.defaultTestLoader.discover(os.path.join(here, "tests"), top_level_dir=here)
result = unittest.TextTestRunner(verbosity=2).run(suite)
if not result.wasSuccessful() or result.testsRun == 0:
    sys.exit(1)
if result.skipped:
    for test, reason in result.skipped:
        print("SKIP: %s: %s" % (test.id(), reason))
    sys.exit(77)
sys.exit(0)
