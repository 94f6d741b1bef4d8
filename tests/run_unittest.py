"""`python3 -m unittest MODULE...` for ctest, where a skip is a skip: exit 0
when every test ran and passed, 1 when one failed or erred (or none ran),
125 (the tests' SKIP_RETURN_CODE) when none failed but a test or a whole class
or module was skipped. Plain unittest exits 0 then, and ctest would say
Passed of a module that never ran (no gcloud, no grpc, not root). The
skipped tests and their reasons are the last lines of the output.

    cd sim && /usr/bin/python3 -B ../tests/run_unittest.py tests.test_api

Names are imported from the working directory, as `python3 -m unittest` does.
"""
import os
import sys
import unittest

SKIP = 125


def main(argv):
    sys.path.insert(0, os.getcwd())
    try:
        program = unittest.main(module=None, argv=["run_unittest"] + argv, exit=False)
    except unittest.SkipTest as e:  # raised as the module was imported
        print("run_unittest: SKIPPED: %s" % e, file=sys.stderr)
        return SKIP
    result = program.result
    if not result.wasSuccessful():
        return 1
    if result.testsRun == 0:
        print("run_unittest: no tests ran", file=sys.stderr)
        return 1
    if result.skipped:
        print("run_unittest: %d of %d skipped, so the whole is SKIPPED:" % (len(result.skipped), result.testsRun),
              file=sys.stderr)
        for test, reason in result.skipped:
            print("  SKIP %s: %s" % (test.id(), reason), file=sys.stderr)
        return SKIP
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
