"""push.py's protocol, spoken as the stage speaks it (staging/push.cpp): a
fresh worker is sent what it lacks, a second snapshot links what the first
has, a snapshot already there is answered at once, and a push that breaks
off leaves nothing half made."""
import os
import stat
import tempfile
import unittest

from worker_build import start, tokens

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


class PushTest(unittest.TestCase):
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


if __name__ == "__main__":
    unittest.main()
