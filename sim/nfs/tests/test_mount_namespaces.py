"""The recipe docs/simulator-nfs.md gives fakepod: a "worker" in its own mount
and PID namespaces drops the host's inherited client and mounts its own at the
same path (nsenter -m -p). Then host and worker are two clients of one export."""
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from sim.nfs.tests.harness import PYTHON, ROOT, eventually, mount, unmount

U1 = 4101
G_EXTRA = 4150


class WorkerNamespaceTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="simnfs-ns-", dir="/var/tmp")
        os.chmod(cls.tmp, 0o755)
        cls.export = os.path.join(cls.tmp, "export")
        cls.mp = os.path.join(cls.tmp, "nfs")
        os.mkdir(cls.export)
        os.mkdir(cls.mp)
        os.chmod(cls.export, 0o1777)
        cls.worker = None
        mount(cls.export, cls.mp, "--actimeo", "600", "--writeback", "600")  # the host's client
        try:
            # A worker made after the host mounted: it inherits a copy of the host's client.
            cls.worker = subprocess.Popen(
                ["unshare", "--mount", "--pid", "--fork", "--propagation", "private", "--",
                 "bash", "-c", "mount -t proc proc /proc && exec sleep 600"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            assert eventually(lambda: cls._init_pid() is not None, timeout=10), "no worker init"
            cls.init = cls._init_pid()
            assert eventually(lambda: cls._in_worker("test", "-d", "/proc/1") == 0, timeout=10)
            log = os.path.join(cls.tmp, "worker-nfs.log")
            rc = cls._in_worker(
                "sh", "-c", f"umount -l {cls.mp} && cd {ROOT} && {PYTHON} -m sim.nfs.mount "
                f"--export {cls.export} --mountpoint {cls.mp} --actimeo 600 --writeback 600 --log {log}")
            assert rc == 0, "the worker's client did not mount"
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def _init_pid(cls):
        try:
            kids = open(f"/proc/{cls.worker.pid}/task/{cls.worker.pid}/children").read().split()
        except OSError:
            return None
        return int(kids[0]) if kids else None

    @classmethod
    def _in_worker(cls, *argv, user=None, capture=False):
        cmd = ["nsenter", "-t", str(cls.init), "-m", "-p", "--"]
        if user is not None:
            cmd += ["setpriv", f"--reuid={user}", f"--regid={user}", f"--groups={G_EXTRA}", "--"]
        r = subprocess.run(cmd + list(argv), capture_output=capture, text=True)
        return (r.returncode, r.stdout) if capture else r.returncode

    @classmethod
    def tearDownClass(cls):
        if cls.worker is not None:
            # The namespace's init dies, and with it everything in the
            # namespace (the worker's daemon) and its mounts.
            init = cls._init_pid()
            if init is not None:
                os.kill(init, 9)
            cls.worker.kill()
            cls.worker.wait()
        unmount(cls.mp)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_the_worker_has_its_own_client(self):
        n = f"n-{time.monotonic_ns()}"
        rc = self._in_worker("test", "-e", f"{self.mp}/{n}")
        self.assertEqual(rc, 1)  # the worker caches the miss
        open(f"{self.mp}/{n}", "w").close()  # through the host's client
        self.assertEqual(self._in_worker("test", "-e", f"{self.mp}/{n}"), 1)
        self.assertEqual(self._in_worker("ls", f"{self.mp}", capture=True)[0], 0)  # opendir revalidates
        self.assertEqual(self._in_worker("test", "-e", f"{self.mp}/{n}"), 0)

    def test_a_worker_job_s_output_reaches_the_host_at_close(self):
        n = f"log-{time.monotonic_ns()}"
        script = (f"import time\nf = open('{self.mp}/{n}', 'w')\nf.write('line\\n'); f.flush()\n"
                  f"open('{self.mp}/{n}.ready', 'w').close()\ntime.sleep(2)\nf.close()\n")
        job = subprocess.Popen(["nsenter", "-t", str(self.init), "-m", "-p", "--",
                                "setpriv", f"--reuid={U1}", f"--regid={U1}", "--clear-groups", "--",
                                PYTHON, "-c", script])
        try:
            self.assertTrue(eventually(lambda: self._opendir_then(n)))
            with open(f"{self.mp}/{n}") as f:
                self.assertEqual(f.read(), "")  # written on the worker, not yet closed
        finally:
            self.assertEqual(job.wait(timeout=30), 0)
        with open(f"{self.mp}/{n}") as f:
            self.assertEqual(f.read(), "line\n")
        self.assertEqual(os.stat(f"{self.export}/{n}").st_uid, U1)

    def _opendir_then(self, n):
        os.listdir(self.mp)  # the host's client caches the miss: revalidate the directory
        return os.path.exists(f"{self.mp}/{n}.ready")

    def test_the_worker_s_callers_bring_their_groups(self):
        n = f"g-{time.monotonic_ns()}"
        with open(f"{self.export}/{n}", "w") as f:
            f.write("group only")
        os.chown(f"{self.export}/{n}", 0, G_EXTRA)
        os.chmod(f"{self.export}/{n}", 0o040)
        rc, out = self._in_worker("cat", f"{self.mp}/{n}", user=U1, capture=True)
        self.assertEqual((rc, out), (0, "group only"))


if __name__ == "__main__":
    unittest.main()
