"""launch.sh and its wrappers as a worker runs them (`sh -s`, a header like
runs/launch/launch_script's before the program), on this host: once with
perl (job_wrapper.pl checks the log dir, makes its dirs, writes the stacks
bootstrap and the holder record) and once with a PATH that has no perl
(launch.sh does those itself and starts job_wrapper.sh). Both must leave the
same things behind, and both must refuse a log dir that is not the user's
own or that others may write to, writing nothing there."""
import os
import shlex
import shutil
import subprocess
import tempfile
import time
import unittest

from worker_build import program, tokens

T = tokens()
# What the no-perl PATH holds: what launch.sh, job_wrapper.sh and the jobs
# here run, and nothing else.
TOOLS = ["sh", "setsid", "mkdir", "cat", "mv", "rm", "find", "id", "date", "sleep", "hostname", "test", "true"]


def wait_for(what, check, bound=10.0):
    deadline = time.monotonic() + bound
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.02)


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


class LaunchTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tpurun-launch-test.")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.logdir = os.path.join(self.tmp, "logs")
        os.mkdir(self.logdir, 0o755)
        os.chmod(self.logdir, 0o755)
        self.snapshot = os.path.join(self.tmp, "snap")
        os.mkdir(self.snapshot)
        nobin = os.path.join(self.tmp, "bin")
        os.mkdir(nobin)
        for tool in TOOLS:
            found = shutil.which(tool, path="/usr/bin:/bin")
            self.assertIsNotNone(found, tool)
            os.symlink(found, os.path.join(nobin, tool))
        self.paths = {"perl": "/usr/bin:/bin", "no perl": nobin}
        self.assertIsNotNone(shutil.which("perl", path="/usr/bin:/bin"), "perl-base is Essential")
        self.assertIsNone(shutil.which("perl", path=nobin))

    def launch(self, path, command, max_attempts=1, reserved=None):
        """Runs launch.sh; returns (exit code, stdout, stderr)."""
        job_env = "".join("export %s=%s\n" % (k, shlex.quote(v)) for k, v in
                          [(T.RUN_ID_VARIABLE, "run-1"), ("TPURUN_WORKER", "2")])
        header = [
            "set -u",
            "run_id=run-1",
            "logdir=" + shlex.quote(self.logdir),
            "log=" + shlex.quote(os.path.join(self.logdir, "worker2.log")),
            "snapshot=" + shlex.quote(self.snapshot),
            "worker=2",
            "attempt=1 max_attempts=%d" % max_attempts,
            "pidf=" + shlex.quote(os.path.join(self.logdir, "worker2.pid")),
            "exitf=" + shlex.quote(os.path.join(self.logdir, "worker2.exit")),
            "pendingf=" + shlex.quote(os.path.join(self.logdir, "worker2.exit.pending")),
            "job_env=" + shlex.quote(job_env),
            "set -- " + " ".join(shlex.quote(a) for a in command),
        ]
        if reserved:
            # What reserve.sh exports once it holds the lock (its fd 9).
            header.insert(0, "tpurun_reserved=1 record=%s tpurun_me=alice tpurun_since=2026-12-03T10:00:00Z; "
                          "export tpurun_reserved record tpurun_me tpurun_since; exec 9<%s"
                          % (shlex.quote(reserved + ".0"), shlex.quote(reserved)))
        with open(program("launch.sh")) as f:
            script = "\n".join(header) + "\n" + f.read()
        env = {"PATH": self.paths[path], "LOGNAME": "alice", "HOME": self.tmp}
        p = subprocess.run(["/bin/sh", "-s"], input=script, capture_output=True, text=True, env=env,
                           timeout=60)
        return p.returncode, p.stdout, p.stderr

    def test_a_job_is_launched_and_recorded_alike_with_and_without_perl(self):
        for path in self.paths:
            with self.subTest(path=path):
                self.setUp()
                code, out, err = self.launch(path, ["sh", "-c", 'echo "env:$TPURUN_STACKS_DIR|$PYTHONPATH|$%s"; '
                                                    'exit 3' % T.RUN_ID_VARIABLE], max_attempts=2)
                self.assertEqual(code, 0, err)
                self.assertRegex(out, r"^%s [0-9]+\n$" % T.LAUNCHED)
                exitf = os.path.join(self.logdir, "worker2.exit")
                self.assertEqual(wait_for("the exit record", lambda: read(exitf)), "3\n")
                log = read(os.path.join(self.logdir, "worker2.log"))
                self.assertRegex(log, r"^==== tpurun: attempt 1 of 2 on \S+ at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ ====\n")
                stacks = os.path.join(self.logdir, T.LOG_TMP_DIR, "stacks", "w2")
                self.assertIn("env:%s|%s/py|run-1\n" % (stacks, stacks), log)
                with open(program("sitecustomize.py")) as f:
                    self.assertEqual(read(os.path.join(stacks, "py", "sitecustomize.py")), f.read())
                pid_record = read(os.path.join(self.logdir, "worker2.pid"))
                self.assertRegex(pid_record, r"^[0-9]+ [0-9]+\n$")
                # Nothing but the log, the records and the temp dir in the log dir.
                self.assertEqual(sorted(os.listdir(self.logdir)),
                                 sorted([T.LOG_TMP_DIR, "worker2.exit", "worker2.log", "worker2.pid"]))

    def test_the_holder_record_names_the_wrapper_until_the_job_ends(self):
        for path in self.paths:
            with self.subTest(path=path):
                self.setUp()
                lock = os.path.join(self.tmp, "lock")
                open(lock, "w").close()
                record = lock + ".0"
                go = os.path.join(self.tmp, "go")
                # The job waits for go, at most 30 s (a failed test leaves nothing running).
                job = 'i=0; while [ ! -e "$0" ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i + 1)); done'
                self.addCleanup(lambda go=go: os.path.isdir(os.path.dirname(go)) and open(go, "w").close())
                code, out, err = self.launch(path, ["sh", "-c", job, go], reserved=lock)
                self.assertEqual(code, 0, err)
                text = wait_for("the holder record", lambda: read(record))
                holder, run, user, since = text.split()
                self.assertEqual((run, user, since), ("run-1", "alice", "2026-12-03T10:00:00Z"))
                with open("/proc/%s/cmdline" % holder, "rb") as f:
                    self.assertIn(b"tpurun-job run-1 w2", f.read())
                open(go, "w").close()
                wait_for("the exit record", lambda: read(os.path.join(self.logdir, "worker2.exit")))
                wait_for("the record's removal", lambda: not os.path.exists(record))

    def test_a_log_dir_others_may_write_or_a_link_is_refused_and_left_alone(self):
        for path in self.paths:
            for how in ("others may write", "a symbolic link"):
                with self.subTest(path=path, how=how):
                    self.setUp()
                    if how == "others may write":
                        os.chmod(self.logdir, 0o777)
                    else:
                        real = self.logdir + ".real"
                        os.rename(self.logdir, real)
                        os.symlink(real, self.logdir)
                    code, out, err = self.launch(path, ["true"])
                    self.assertEqual(code, T.LAUNCH_LOG_DIR_UNSAFE, err)
                    self.assertIn("log dir %s is not alice's own, or others may write to it: refusing to write there"
                                  % self.logdir, err)
                    self.assertNotIn(T.LAUNCHED, out)
                    self.assertEqual(os.listdir(self.logdir), [])

    def test_a_log_dir_of_another_owner_is_refused_and_left_alone(self):
        # Squatted: another user made the log dir first (0755, not writable
        # by the user at all, as root is here). Root can write anywhere, so
        # only the owner check stops the launch.
        if os.geteuid() != 0:
            self.skipTest("needs root to give the log dir to another user")
        for path in self.paths:
            with self.subTest(path=path):
                self.setUp()
                os.chown(self.logdir, 65534, 65534)
                code, out, err = self.launch(path, ["true"])
                self.assertEqual(code, T.LAUNCH_LOG_DIR_UNSAFE, err)
                self.assertIn("log dir %s is not alice's own" % self.logdir, err)
                self.assertNotIn(T.LAUNCHED, out)
                self.assertEqual(os.listdir(self.logdir), [])


if __name__ == "__main__":
    unittest.main()
