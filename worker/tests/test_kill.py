"""kill.sh and clean.sh as a worker runs them (`sh -s` with their arguments),
against real processes on this host: what each re-checks at the last moment
(docs/ownership.md). A pid is signalled only while it is the process the scan
saw (its start time) with the owner it had; a group only while one of the
plan's victims is alive in it; a stale lockfile is removed only while no
process holds a device, whoever that process belongs to.

The processes are this test's own (and, as root, one of another uid's);
the "device" and the lockfile are files in a temp dir, never the real
/tmp/libtpu_lockfile."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from worker_build import program, tokens

T = tokens()
OTHER_UID = 65534  # nobody: another user, as root can make one


def wait_for(what, check, bound=30.0):
    deadline = time.monotonic() + bound
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.01)


def stat_fields(pid):
    """(pgid, start time) from /proc/PID/stat, as kill.sh reads them."""
    with open("/proc/%d/stat" % pid) as f:
        rest = f.read().rsplit(") ", 1)[1].split()
    return int(rest[2]), int(rest[19])


def gone(pid):
    """The process has exited (a zombie of ours counts as gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(") ", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


class Processes(unittest.TestCase):
    """Processes in sessions (and so groups) of their own, each waiting on a
    fd until it holds what it was asked to; all killed at the end."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tpurun-kill-test.")
        os.chmod(self.tmp, 0o755)
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.procs = []
        self.addCleanup(self.reap)

    def reap(self):
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            p.wait()

    def spawn(self, script="exec sleep 300", user=None):
        """sh -c SCRIPT in a new session; returns its pid once it runs SCRIPT
        (it says so on a pipe first)."""
        r, w = os.pipe()
        p = subprocess.Popen(["/bin/sh", "-c", 'echo x >&%d; exec %d>&-; %s' % (w, w, script)],
                             start_new_session=True, pass_fds=(w,), user=user, group=user,
                             extra_groups=None if user is None else [],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        os.close(w)
        with os.fdopen(r) as ready:
            self.assertEqual(ready.read(), "x\n")
        self.procs.append(p)
        return p.pid

    def item(self, pid, uid=None, start=None):
        """A kill item as kill_workers.cpp writes it: PID:UID:PGID:START."""
        pgid, st = stat_fields(pid)
        return "%d:%d:%d:%d" % (pid, os.geteuid() if uid is None else uid, pgid, st if start is None else start)

    def kill_sh(self, *items, grace_cs=200):
        with open(program("kill.sh")) as f:
            text = f.read()
        p = subprocess.run(["/bin/sh", "-s", "--", str(grace_cs), "0"] + list(items), input=text,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0], T.KILL_HEADER)
        self.assertEqual(lines[-1], "end", p.stdout)
        return lines[1:-1]


class KillTest(Processes):
    def test_a_victim_is_signalled_and_gone(self):
        v = self.spawn()
        out = self.kill_sh(self.item(v))
        self.assertIn("signal TERM %d ok" % v, out)
        self.assertIn("gone %d term" % v, out)
        self.assertTrue(gone(v))

    def test_a_planned_group_with_no_victim_alive_in_it_is_not_signalled(self):
        # The plan names group B (its victim has gone since the scan, and the
        # pgid may be reused by now); U, another process of the user's, is in
        # B. Only V, a victim in its own group, may be signalled.
        v = self.spawn()
        u = self.spawn()
        b = stat_fields(u)[0]
        self.assertEqual(b, u)
        out = self.kill_sh("g:%d" % b, self.item(v))
        self.assertNotIn("signal TERM -%d ok" % b, out)
        self.assertIn("signal TERM %d ok" % v, out)
        self.assertTrue(gone(v))
        self.assertFalse(gone(u), "a process in a group with no live victim was signalled: %s" % out)

    def test_a_planned_group_with_a_victim_alive_in_it_is_signalled_whole(self):
        # The group's leader ignores TERM and is no victim; its child is one.
        leader = self.spawn("trap '' TERM; sleep 300 & echo $! >%s/child; wait" % self.tmp)
        child = int(wait_for("the child's pid", lambda: open(self.tmp + "/child").read().strip()
                             if os.path.exists(self.tmp + "/child") else ""))
        wait_for("the child to be sleep", lambda: open("/proc/%d/comm" % child).read() == "sleep\n")
        out = self.kill_sh("g:%d" % leader, self.item(child), grace_cs=100)
        self.assertIn("signal TERM -%d ok" % leader, out)
        self.assertTrue(wait_for("the child's end", lambda: gone(child)))

    def test_a_pid_whose_start_time_changed_is_skipped(self):
        v = self.spawn()
        out = self.kill_sh(self.item(v, start=stat_fields(v)[1] + 1))
        self.assertIn("skipped %d pid-reused" % v, out)
        self.assertFalse([line for line in out if line.startswith("signal")], out)
        self.assertFalse(gone(v))

    def test_a_pid_whose_owner_changed_is_skipped(self):
        v = self.spawn()
        out = self.kill_sh(self.item(v, uid=os.geteuid() + 4242))
        self.assertIn("skipped %d owner-changed" % v, out)
        self.assertFalse([line for line in out if line.startswith("signal")], out)
        self.assertFalse(gone(v))

    def test_bad_items_are_skipped_and_nothing_is_signalled(self):
        v = self.spawn()
        pgid, st = stat_fields(v)
        out = self.kill_sh("g:1x", "%d:0:%d" % (v, pgid), "%d::%d:%d" % (v, pgid, st), "-%d:0:0:0" % v)
        self.assertEqual(out, ["skipped 1x bad-group"] + ["skipped 0 bad-item"] * 3)
        self.assertFalse(gone(v))


class CleanTest(Processes):
    """clean.sh with its lockfile and logs dir moved into the temp dir (the
    tokens the program starts with)."""

    def setUp(self):
        super().setUp()
        self.device = os.path.join(self.tmp, "accel0")
        with open(self.device, "w") as f:
            f.write("\n")
        os.chmod(self.device, 0o644)
        self.lockfile = os.path.join(self.tmp, "libtpu_lockfile")
        with open(self.lockfile, "w") as f:
            f.write("1\n")

    def clean_sh(self, ino):
        with open(program("clean.sh")) as f:
            text = f.read()
        for name, value in (("LIBTPU_LOCKFILE", T.LIBTPU_LOCKFILE), ("TPU_LOGS_DIR", T.TPU_LOGS_DIR)):
            line = "%s='%s'\n" % (name, value)
            self.assertIn(line, text)
            text = text.replace(line, "%s='%s'\n" % (name, os.path.join(self.tmp, os.path.basename(value))), 1)
        p = subprocess.run(["/bin/sh", "-s", "--", str(ino), "0", os.path.join(self.tmp, "accel*")], input=text,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual((lines[0], lines[-1]), (T.CLEAN_HEADER, "end"), p.stdout)
        return lines[1:-1]

    def test_a_stale_lockfile_is_removed_when_nothing_holds_a_device(self):
        out = self.clean_sh(os.stat(self.lockfile).st_ino)
        self.assertEqual(out, ["removed " + self.lockfile])
        self.assertFalse(os.path.exists(self.lockfile))

    def test_a_stale_lockfile_stays_while_another_users_process_holds_a_device(self):
        # Another user's job has the device open and holds no lock (a job of
        # an older libtpu, or one between its open and its lock): the
        # lockfile is not stale, and removing it would let a second job start.
        user = OTHER_UID if os.geteuid() == 0 else None
        holder = self.spawn("exec 3<%s; exec sleep 300" % self.device, user=user)
        wait_for("the device to be open", lambda: any(
            os.readlink("/proc/%d/fd/%s" % (holder, fd)) == self.device for fd in os.listdir("/proc/%d/fd" % holder)))
        out = self.clean_sh(os.stat(self.lockfile).st_ino)
        self.assertEqual(out, ["busy %d" % holder])
        self.assertTrue(os.path.exists(self.lockfile))

    def test_a_lockfile_replaced_since_the_scan_stays(self):
        ino = os.stat(self.lockfile).st_ino
        os.rename(self.lockfile, self.lockfile + ".old")
        with open(self.lockfile, "w") as f:
            f.write("2\n")
        self.assertNotEqual(os.stat(self.lockfile).st_ino, ino)
        out = self.clean_sh(ino)
        self.assertEqual(out, ["kept %s replaced" % self.lockfile])
        self.assertTrue(os.path.exists(self.lockfile))

    def test_a_lockfile_whose_lock_is_held_stays(self):
        holder = self.spawn("exec 3<%s; flock 3; exec sleep 300" % self.lockfile)
        ino = os.stat(self.lockfile).st_ino

        def held():
            with open("/proc/locks") as f:
                return any(":%d " % ino in line for line in f)
        wait_for("the lock to be held", held)
        out = self.clean_sh(ino)
        # (/proc/locks names the flock(1) that took the lock for the shell)
        self.assertEqual(len(out), 1, out)
        self.assertRegex(out[0], r"^kept %s held-by-[0-9]+$" % re.escape(self.lockfile))
        self.assertFalse(gone(holder))
        self.assertTrue(os.path.exists(self.lockfile))


if __name__ == "__main__":
    unittest.main()
