"""tpurun stacks on a worker: the bootstrap (sitecustomize.py) in a real
Python job, the capture (stacks.py) of it, and the parsers of faulthandler's
and py-spy's real output formats."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from worker_build import module, program, tokens

T = tokens()

# A job: SIGUSR1/SIGUSR2 handlers of its own that print when called, a named
# thread, and its main thread blocked in wait_for_peers.
JOB = r"""
import signal, threading
def on_usr(signum, frame):
    print("USR handler called", flush=True)
signal.signal(signal.SIGUSR1, on_usr)
signal.signal(signal.SIGUSR2, on_usr)
def loader_loop():
    threading.Event().wait()
threading.Thread(target=loader_loop, name="loader", daemon=True).start()
def wait_for_peers():
    print("ready", flush=True)
    threading.Event().wait()
wait_for_peers()
"""

# py-spy 0.3.14's `py-spy dump --pid P --native` of a job like the one above.
PY_SPY_NATIVE = """Process 48211: /usr/bin/python3 train.py --hang
Python v3.11.2 (/usr/bin/python3.11)

Thread 48211 (idle): "MainThread"
    __futex_abstimed_wait_common (libc.so.6)
    sem_wait@@GLIBC_2.34 (libc.so.6)
    PyThread_acquire_lock_timed (python3.11)
    wait (threading.py:320)
    wait_for_peers (hang.py:29)
    main (train.py:371)
    <module> (train.py:420)
Thread 48220 (idle): "loader"
    put (queue.py:140)
        Arguments:
            self: <Queue at 0x7f2c1c5b3d10>
    loader_loop (hang.py:15)
    run (threading.py:975)
    _bootstrap (threading.py:995)
"""

FAULTHANDLER = """Thread 0x00007f1a2b3c4700 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 320 in wait
  File "/snap/hang.py", line 15 in loader_loop

Current thread 0x00007f1a2d0f1740 (most recent call first):
  File "/snap/hang.py", line 29 in wait_for_peers
  File "/snap/train.py", line 371 in main
Thread 0x00007f1a2b3c4700 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 320 in wait
"""


class ParseTest(unittest.TestCase):
    def setUp(self):
        self.s = module("stacks.py")

    def test_faulthandler_first_dump_with_names(self):
        threads = self.s.parse_faulthandler(FAULTHANDLER, {0x7f1a2d0f1740: "MainThread"})
        self.assertEqual([t["name"] for t in threads], ["Thread 0x00007f1a2b3c4700", "MainThread"])
        self.assertEqual(threads[1]["frames"][0], {"function": "wait_for_peers", "file": "/snap/hang.py", "line": 29})

    def test_py_spy_native(self):
        threads = self.s.parse_py_spy(PY_SPY_NATIVE)
        self.assertEqual([t["name"] for t in threads], ["MainThread", "loader"])
        self.assertEqual(threads[0]["frames"][0], {"function": "__futex_abstimed_wait_common", "file": "libc.so.6",
                                                   "line": 0})
        self.assertEqual(threads[0]["frames"][4], {"function": "wait_for_peers", "file": "hang.py", "line": 29})
        self.assertEqual([f["function"] for f in threads[1]["frames"]], ["put", "loader_loop", "run", "_bootstrap"])

    def test_python_flags(self):
        f = self.s.python_flags
        self.assertEqual(f(["python3", "-u", "train.py", "-E"]), [])
        self.assertEqual(f(["python3", "-IS", "x.py"]), ["-I", "-S"])
        self.assertEqual(f(["python3", "-X", "dev", "-E", "-c", "pass"]), ["-E"])
        self.assertEqual(f(["python3", "-c", "-I"]), [])


class CaptureTest(unittest.TestCase):
    """The bootstrap in a real job, and a capture of it."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.py = os.path.join(self.tmp, "py")
        self.other = os.path.join(self.tmp, "other")
        os.makedirs(self.py)
        os.makedirs(self.other)
        shutil.copy(program("sitecustomize.py"), self.py)
        # The sitecustomize the bootstrap stands in front of (Debian's, say).
        with open(os.path.join(self.other, "sitecustomize.py"), "w") as f:
            f.write("import os\nopen(os.path.join(%r, 'chained'), 'w').close()\n" % self.tmp)
        self.run_id = "test-run-%d" % os.getpid()
        self.log = os.path.join(self.tmp, "worker0.log")
        self.jobs = []

    def tearDown(self):
        for job in self.jobs:
            job.kill()
            job.wait()
        shutil.rmtree(self.tmp)

    def job(self, *flags):
        env = dict(os.environ, PYTHONPATH=self.py + os.pathsep + self.other)
        env[T.STACKS_DIR_VARIABLE] = self.tmp
        env[T.RUN_ID_VARIABLE] = self.run_id
        with open(self.log, "ab") as log:
            job = subprocess.Popen([sys.executable] + list(flags) + ["-c", JOB], env=env, stdout=log,
                                   stderr=subprocess.STDOUT)
        self.jobs.append(job)
        return job

    def wait_ready(self, count):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with open(self.log) as f:
                if f.read().count("ready") >= count:
                    return
            time.sleep(0.02)
        self.fail("the job did not start")

    def capture(self):
        out = subprocess.run([sys.executable, "-I", "-S", program("stacks.py"), self.run_id, self.log, "5000", "0"],
                             capture_output=True, check=True).stdout.decode()
        head, _, body = out.partition("\n")
        self.assertEqual(head, T.STACKS_HEADER)
        return json.loads(body)

    def test_stacks_of_a_job_its_usr_handlers_untouched(self):
        job = self.job()
        isolated = self.job("-E")
        self.wait_ready(2)
        doc = self.capture()
        by_pid = {p["pid"]: p for p in doc["processes"]}
        main = by_pid[job.pid]["threads"][0]
        self.assertEqual(main["name"], "MainThread")
        self.assertIn("wait_for_peers", [f["function"] for f in main["frames"]])
        self.assertEqual(by_pid[job.pid]["threads"][1]["name"], "loader")
        self.assertIn("-E", by_pid[isolated.pid]["no_stack"])
        self.assertEqual(doc["last_line"], "ready")
        # A second capture: the first's dump is not read again.
        again = {p["pid"]: p for p in self.capture()["processes"]}
        self.assertEqual(again[job.pid]["threads"], by_pid[job.pid]["threads"])
        self.assertIsNone(job.poll())
        with open(self.log) as f:
            self.assertNotIn("USR handler called", f.read())
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "chained")))


if __name__ == "__main__":
    unittest.main()
