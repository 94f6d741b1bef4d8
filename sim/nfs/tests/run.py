"""Runs sim/nfs's tests; the mount tests need root, /dev/fuse and pyfuse3 and
exit 125 (skipped, said loudly) without them.

    /usr/bin/python3 sim/nfs/tests/run.py unit     # pure logic, anywhere
    /usr/bin/python3 sim/nfs/tests/run.py mounts   # two client mounts of one export
"""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, ROOT)

from sim.nfs.tests.harness import requirements  # noqa: E402

PATTERNS = {"unit": "test_logic*.py", "mounts": "test_mount*.py"}


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "unit"
    if which not in PATTERNS:
        print(f"usage: run.py {'|'.join(PATTERNS)}", file=sys.stderr)
        return 2
    if which == "mounts":
        why = requirements()
        if why:
            print(f"SKIPPED: sim/nfs mount tests cannot run here: {why}", file=sys.stderr)
            return 125
    suite = unittest.defaultTestLoader.discover(HERE, pattern=PATTERNS[which], top_level_dir=ROOT)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    if result.testsRun == 0:
        print("no tests ran", file=sys.stderr)
        return 1
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
