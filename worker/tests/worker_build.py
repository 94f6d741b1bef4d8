"""Where the tests find the programs as the build made them (worker/embed.cmake):
$TPURUN_WORKER_BUILD, which ctest sets to <build>/generated/worker. The tests
run what is sent to the workers, tokens and pieces in place."""
import importlib.util
import os
import subprocess
import sys
import unittest

BUILD = os.environ.get("TPURUN_WORKER_BUILD", "")


def program(name):
    path = os.path.join(BUILD, name)
    if not BUILD or not os.path.isfile(path):
        raise unittest.SkipTest("no %s: set TPURUN_WORKER_BUILD to <build>/generated/worker (ctest does)" % name)
    return path


def module(name):
    """A program of worker/ imported as a module (its main() does not run)."""
    spec = importlib.util.spec_from_file_location(name.rsplit(".", 1)[0], program(name))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def tokens():
    return module("protocol_tokens.py")


def start(name, *args):
    """The program run as a worker runs it: python3 -I -S, its stdin and
    stdout pipes (binary)."""
    return subprocess.Popen([sys.executable, "-I", "-S", program(name)] + list(args),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
