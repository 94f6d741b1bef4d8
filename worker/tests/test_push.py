"""push.py's protocol, spoken as the stage speaks it (staging/push.cpp): a
fresh worker is sent what it lacks, a second snapshot links what the first
has, a snapshot already there is answered at once, and a push that breaks
off leaves nothing half made. Nothing on the worker is trusted for being
there: a snapshot or an earlier file that was changed, even at the same size
with its mtime put back, is sent again (push_have.sh and push.py)."""
import os
import stat
import subprocess
import tempfile
import time
import unittest

from worker_build import program, start, tokens

T = tokens()


def entry(kind, x, size, obj, path, target=""):
    p, t = path.encode(), target.encode()
    return b"%s %d %d %s %d %d\n" % (kind.encode(), x, size, obj.encode(), len(p), len(t)) + p + t


def manifest(files, links=()):
    """files: {path: (object, bytes, x)}; links: {path: target}."""
    data = b"".join(entry("f", x, len(content), obj, path) for path, (obj, content, x) in files.items())
    data += b"".join(entry("l", 0, 0, "-", path, target) for path, target in dict(links).items())
    return b"%s %d %d\n" % (T.PUSH_MANIFEST.encode(), len(files) + len(dict(links)), len(data)) + data


class Worker:
    """One push.py run: the stage's side of the conversation."""

    def __init__(self, root, name, tree, run=("proj", "run1")):
        self.root = root
        self.name = name
        args = [os.path.join(root, "staging"), os.path.join(root, "logs"), "alice", name, tree]
        self.proc = start("push.py", *(args + list(run)))

    def line(self):
        return self.proc.stdout.readline().decode("utf-8", "surrogateescape").rstrip("\n")

    def send(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def finish(self):
        self.proc.stdin.close()
        code = self.proc.wait(timeout=60)
        self.proc.stdout.close()
        self.proc.stderr.close()
        return code

    def push(self, files, links=()):
        """The whole push; returns (the objects asked for, the last answer)."""
        first = self.line()
        if first.startswith(T.PUSH_HAVE + " "):
            self.finish()
            return None, first
        assert first == T.PUSH_NEED, first
        self.send(manifest(files, links))
        head = self.line().split()
        assert " ".join(head[:-2]) == T.PUSH_MISSING, head
        asked = [self.line() for _ in range(int(head[-2]))]
        by_object = {obj: content for obj, content, x in files.values()}
        for obj in asked:
            self.send(b"%s %d\n" % (obj.encode(), len(by_object[obj])) + by_object[obj])
        self.send(T.PUSH_END.encode() + b"\n")
        last = self.line()
        self.finish()
        return asked, last


class PushCase(unittest.TestCase):
    """A worker's dirs in a temp dir, and a project of four files."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name
        self.files = {
            "main.py": ("o1", b"print('hello')\n", 0),
            "bin/run.sh": ("o2.x", b"#!/bin/sh\necho run\n", 1),
            "same.py": ("o1", b"print('hello')\n", 0),
            "odd name\nwith newline.txt": ("o3", b"odd\n", 0),
        }

    def tearDown(self):
        for top, dirs, files in os.walk(self.root):
            os.chmod(top, 0o755)
        self.tmp.cleanup()


class PushTest(PushCase):
    def test_a_fresh_worker_is_sent_each_object_once_and_builds_the_snapshot_read_only(self):
        asked, last = Worker(self.root, "snap-1", "t1").push(self.files, {"link.py": "main.py"})
        self.assertEqual(sorted(asked), ["o1", "o2.x", "o3"])
        snap = os.path.join(self.root, "staging", "alice", "snap-1")
        log_dir = os.path.join(self.root, "logs", "alice", "proj", "run1")
        self.assertEqual(last, T.PUSH_HAVE + " " + snap + "\0" + log_dir)
        with open(os.path.join(snap, "same.py"), "rb") as f:
            self.assertEqual(f.read(), b"print('hello')\n")
        self.assertEqual(os.stat(os.path.join(snap, "main.py")).st_ino, os.stat(os.path.join(snap, "same.py")).st_ino)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(snap, "bin/run.sh")).st_mode), 0o555)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(snap, "main.py")).st_mode), 0o444)
        self.assertEqual(os.readlink(os.path.join(snap, "link.py")), "main.py")
        self.assertTrue(os.path.isfile(os.path.join(snap, "odd name\nwith newline.txt")))
        self.assertEqual(stat.S_IMODE(os.stat(snap).st_mode), 0o555)
        self.assertEqual(stat.S_IMODE(os.stat(log_dir).st_mode), 0o700)
        udir = os.path.join(self.root, "staging", "alice")
        self.assertEqual(os.readlink(os.path.join(udir, ".tree-t1")), "snap-1")
        self.assertTrue(os.path.isfile(os.path.join(udir, ".manifest-snap-1")))
        self.assertEqual([n for n in os.listdir(udir) if ".tmp-" in n], [])

    def test_a_snapshot_already_there_is_answered_at_once(self):
        Worker(self.root, "snap-1", "t1").push(self.files)
        asked, last = Worker(self.root, "snap-1", "t1").push(self.files)
        self.assertIsNone(asked)
        self.assertTrue(last.startswith(T.PUSH_HAVE + " "), last)

    def test_a_second_snapshot_links_what_the_first_has_and_is_sent_only_the_new(self):
        Worker(self.root, "snap-1", "t1").push(self.files)
        changed = dict(self.files)
        changed["main.py"] = ("o4", b"print('bye')\n", 0)
        asked, last = Worker(self.root, "snap-2", "t2").push(changed)
        self.assertEqual(asked, ["o4"])
        udir = os.path.join(self.root, "staging", "alice")
        self.assertEqual(os.stat(os.path.join(udir, "snap-1", "bin/run.sh")).st_ino,
                         os.stat(os.path.join(udir, "snap-2", "bin/run.sh")).st_ino)

    def test_a_push_that_breaks_off_leaves_nothing_half_made(self):
        w = Worker(self.root, "snap-1", "t1")
        self.assertEqual(w.line(), T.PUSH_NEED)
        w.send(manifest(self.files))
        for _ in range(int(w.line().split()[-2])):  # the objects it lacks
            w.line()
        w.send(b"o1 15\nprint(")  # and then the stage is gone
        w.proc.stdin.close()
        self.assertTrue(w.line().startswith(T.PUSH_ERROR + " "))
        self.assertEqual(w.proc.wait(timeout=60), 1)
        w.proc.stdout.close()
        w.proc.stderr.close()
        self.assertEqual(os.listdir(os.path.join(self.root, "staging", "alice")), [])

    def test_a_log_dir_others_may_write_to_is_refused(self):
        os.makedirs(os.path.join(self.root, "logs", "alice"), 0o700)
        os.chmod(os.path.join(self.root, "logs", "alice"), 0o770)
        asked, last = Worker(self.root, "snap-1", "t1").push(self.files)
        self.assertTrue(last.startswith(T.PUSH_ERROR + " "), last)
        self.assertIn("others may write", last)

    def test_a_log_dir_of_another_owner_is_refused(self):
        # Squatted: another user made alice's log dir first, private to them.
        if os.geteuid() != 0:
            self.skipTest("needs root to give the dir to another user")
        os.makedirs(os.path.join(self.root, "logs", "alice"), 0o700)
        os.chown(os.path.join(self.root, "logs", "alice"), 65534, 65534)
        asked, last = Worker(self.root, "snap-1", "t1").push(self.files)
        self.assertTrue(last.startswith(T.PUSH_ERROR + " "), last)
        self.assertIn("is not alice's own dir", last)
        self.assertEqual(os.listdir(os.path.join(self.root, "logs", "alice")), [])


class VerifiedReuseTest(PushCase):
    """What a worker has is checked before it is reused."""

    def udir(self, *names):
        return os.path.join(self.root, "staging", "alice", *names)

    def rewrite_in_place(self, snap, path, data):
        """The same size, written into the file (all the snapshots that link
        it see it), its mtime put back: only the ctime tells."""
        f = self.udir(snap, path)
        st = os.stat(f)
        os.chmod(f, 0o644)
        with open(f, "r+b") as out:
            out.write(data)
        os.chmod(f, stat.S_IMODE(st.st_mode))
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))

    def have_sh(self, snap, tree, run=()):
        """push_have.sh's answer, as the reservation runs it (run: PROJECT RUN)."""
        return subprocess.run(["sh", program("push_have.sh"), os.path.join(self.root, "staging"),
                               os.path.join(self.root, "logs"), "alice", snap, tree, *run],
                              stdout=subprocess.PIPE, check=True).stdout.decode().strip()

    def test_push_have_with_a_run_makes_its_log_dir_0700_and_names_it(self):
        Worker(self.root, "snap-1", "t1").push(self.files)
        log_dir = os.path.join(self.root, "logs", "alice", "my proj", "run 2")
        self.assertEqual(self.have_sh("snap-1", "t1", ("my proj", "run 2")),
                         T.PUSH_HAVE + " " + self.udir("snap-1") + "\0" + log_dir)
        for d in (os.path.dirname(log_dir), log_dir):
            self.assertEqual(stat.S_IMODE(os.stat(d).st_mode), 0o700, d)

    def test_push_have_refuses_a_log_dir_others_may_write_to(self):
        Worker(self.root, "snap-1", "t1").push(self.files)
        os.chmod(os.path.join(self.root, "logs", "alice", "proj"), 0o777)
        self.assertEqual(self.have_sh("snap-1", "t1", ("proj", "run2")), T.PUSH_NEED)
        os.chmod(os.path.join(self.root, "logs", "alice", "proj"), 0o700)
        os.makedirs(os.path.join(self.root, "logs", "alice", "proj", "run3"), 0o700)
        os.chmod(os.path.join(self.root, "logs", "alice", "proj", "run3"), 0o730)
        self.assertEqual(self.have_sh("snap-1", "t1", ("proj", "run3")), T.PUSH_NEED)
        self.assertTrue(self.have_sh("snap-1", "t1", ("proj", "run4")).startswith(T.PUSH_HAVE + " "))

    def test_push_have_needs_the_tree_link_to_name_the_snapshot(self):
        Worker(self.root, "snap-1", "t1").push(self.files)
        Worker(self.root, "snap-2", "t2").push(self.files)
        self.assertEqual(self.have_sh("snap-1", "t2"), T.PUSH_NEED)
        self.assertEqual(self.have_sh("snap-1", "t9"), T.PUSH_NEED)

    def test_push_have_renews_the_marker_for_gc(self):
        Worker(self.root, "snap-1", "t1").push(self.files)
        marked = os.stat(self.udir(".stat-snap-1")).st_mtime_ns
        while time.time_ns() < marked + 50_000_000:  # the clock, past the file system's timestamp grain
            time.sleep(0.01)
        self.assertTrue(self.have_sh("snap-1", "t1").startswith(T.PUSH_HAVE + " "))
        self.assertGreater(os.stat(self.udir(".stat-snap-1")).st_mtime_ns, marked)
        self.assertEqual(os.stat(self.udir(".stat-snap-1")).st_size, 0)

    def test_push_have_answers_have_for_a_snapshot_as_built_and_need_once_a_file_changed(self):
        Worker(self.root, "snap-1", "t1").push(self.files)
        self.assertTrue(self.have_sh("snap-1", "t1").startswith(T.PUSH_HAVE + " "))
        self.rewrite_in_place("snap-1", "main.py", b"print('HELLO')\n")
        self.assertEqual(self.have_sh("snap-1", "t1"), T.PUSH_NEED)
        self.assertEqual(self.have_sh("snap-1", "t1", ("proj", "run2")), T.PUSH_NEED)  # the log dirs' find, too

    def test_a_snapshot_rewritten_in_place_at_the_same_size_is_built_again(self):
        Worker(self.root, "snap-1", "t1").push(self.files)
        self.rewrite_in_place("snap-1", "main.py", b"print('HELLO')\n")
        asked, last = Worker(self.root, "snap-1", "t1").push(self.files)
        self.assertEqual(asked, ["o1"])  # main.py and same.py: one object, sent again
        self.assertTrue(last.startswith(T.PUSH_HAVE + " "), last)
        for path in ("main.py", "same.py"):
            with open(self.udir("snap-1", path), "rb") as f:
                self.assertEqual(f.read(), b"print('hello')\n")
        aside = [n for n in os.listdir(self.udir()) if n.startswith(".tmp-damaged-snap-1-")]
        self.assertEqual(len(aside), 1, os.listdir(self.udir()))  # for gc: a job may still run in it
        self.assertTrue(self.have_sh("snap-1", "t1").startswith(T.PUSH_HAVE + " "))

    def test_a_file_deleted_from_a_snapshot_is_sent_again(self):
        Worker(self.root, "snap-1", "t1").push(self.files)
        os.chmod(self.udir("snap-1", "bin"), 0o755)
        os.unlink(self.udir("snap-1", "bin", "run.sh"))
        asked, last = Worker(self.root, "snap-1", "t1").push(self.files)
        self.assertEqual(asked, ["o2.x"])
        with open(self.udir("snap-1", "bin", "run.sh"), "rb") as f:
            self.assertEqual(f.read(), b"#!/bin/sh\necho run\n")

    def test_a_file_added_to_a_snapshot_is_gone_when_it_is_reused(self):
        # A file the stage never sent, put into the snapshot afterwards (by
        # the user, a job, or anyone who could): a sitecustomize.py would run
        # in every job of the next run. The reused snapshot is built again
        # without it (the added file's dir is put back as the stage made it:
        # only the file tells).
        Worker(self.root, "snap-1", "t1").push(self.files)
        snap = self.udir("snap-1")
        st = os.stat(snap)
        os.chmod(snap, 0o755)
        with open(os.path.join(snap, "sitecustomize.py"), "w") as f:
            f.write("print('planted')\n")
        os.chmod(snap, stat.S_IMODE(st.st_mode))
        os.utime(snap, ns=(st.st_atime_ns, st.st_mtime_ns))
        asked, last = Worker(self.root, "snap-1", "t1").push(self.files)
        self.assertTrue(last.startswith(T.PUSH_HAVE + " "), last)
        self.assertFalse(os.path.exists(os.path.join(snap, "sitecustomize.py")), "the added file was reused")
        self.assertEqual(sorted(os.listdir(snap)), ["bin", "main.py", "odd name\nwith newline.txt", "same.py"])

    def test_a_damaged_earlier_file_is_not_linked_into_a_new_snapshot(self):
        Worker(self.root, "snap-1", "t1").push(self.files)
        self.rewrite_in_place("snap-1", "bin/run.sh", b"#!/bin/sh\necho RUN\n")
        changed = dict(self.files)
        changed["main.py"] = ("o4", b"print('bye')\n", 0)
        asked, last = Worker(self.root, "snap-2", "t2").push(changed)
        self.assertEqual(sorted(asked), ["o2.x", "o4"])
        with open(self.udir("snap-2", "bin", "run.sh"), "rb") as f:
            self.assertEqual(f.read(), b"#!/bin/sh\necho run\n")

    def test_a_snapshot_whose_files_a_later_one_linked_is_reused_after_a_content_check(self):
        Worker(self.root, "snap-1", "t1").push(self.files)
        changed = dict(self.files)
        changed["main.py"] = ("o4", b"print('bye')\n", 0)
        Worker(self.root, "snap-2", "t2").push(changed)  # links snap-1's files: their ctime moves
        self.assertEqual(self.have_sh("snap-1", "t1"), T.PUSH_NEED)
        asked, last = Worker(self.root, "snap-1", "t1").push(self.files)
        self.assertIsNone(asked)  # the bytes were checked: nothing to send, nothing rebuilt
        self.assertTrue(last.startswith(T.PUSH_HAVE + " "), last)
        self.assertEqual([n for n in os.listdir(self.udir()) if n.startswith(".tmp-")], [])
        self.assertTrue(self.have_sh("snap-1", "t1").startswith(T.PUSH_HAVE + " "))  # records renewed

    def test_blake2b_records_of_an_earlier_build_are_checked_as_blake2b(self):
        import hashlib
        Worker(self.root, "snap-1", "t1").push(self.files)
        sums = self.udir(".sums-snap-1")
        with open(sums, "rb") as f:
            paths = [r.split(b" ", 1)[1] for r in f.read().split(b"\0")[:-1]]
            f.seek(0)
            self.assertTrue(all(len(r.split(b" ")[0]) == 64 for r in f.read().split(b"\0")[:-1]))  # SHA-256

        def as_an_earlier_build(wrong=b""):  # BLAKE2b's 16 bytes; `wrong`'s digest is of other bytes
            recs = b""
            for p in paths:
                with open(self.udir("snap-1", os.fsdecode(p)), "rb") as f:
                    data = b"other" if p == wrong else f.read()
                recs += hashlib.blake2b(data, digest_size=16).hexdigest().encode() + b" " + p + b"\0"
            os.chmod(sums, 0o600)
            with open(sums, "wb") as f:
                f.write(recs)
        def move_ctimes():  # a chmod to the same mode: the bytes stay, the ctimes move past the marker
            for p in paths:
                f = self.udir("snap-1", os.fsdecode(p))
                os.chmod(f, os.stat(f).st_mode & 0o7777)
        as_an_earlier_build()
        move_ctimes()
        asked, last = Worker(self.root, "snap-1", "t1").push(self.files)
        self.assertIsNone(asked)  # each file's bytes checked against its BLAKE2b record: nothing sent
        self.assertTrue(last.startswith(T.PUSH_HAVE + " "), last)
        as_an_earlier_build(wrong=b"bin/run.sh")
        move_ctimes()
        asked, last = Worker(self.root, "snap-1", "t1").push(self.files)
        self.assertEqual(asked, ["o2.x"])  # its record does not vouch for its bytes: sent again
        self.assertTrue(last.startswith(T.PUSH_HAVE + " "), last)

    def test_a_snapshot_with_no_records_is_not_trusted(self):
        Worker(self.root, "snap-1", "t1").push(self.files)
        for kept in (".sums-snap-1", ".stat-snap-1"):  # as an earlier tpurun left it
            os.unlink(self.udir(kept))
        asked, last = Worker(self.root, "snap-1", "t1").push(self.files)
        self.assertEqual(sorted(asked), ["o1", "o2.x", "o3"])
        self.assertTrue(last.startswith(T.PUSH_HAVE + " "), last)


if __name__ == "__main__":
    unittest.main()
