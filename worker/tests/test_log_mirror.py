"""The log mirror's walk and rounds (log_mirror.py): what a round sends of a
run's dir, and what the next one sends again; and the program itself, ended
by the watcher's word."""
import io
import os
import tempfile
import unittest

from worker_build import module, start, tokens

T = tokens()


def frames(data):
    """(kind, path, offset, bytes) of a mirror's output, and what ended it."""
    out, end = [], None
    while data:
        head, _, rest = data.partition(b"\n")
        if head == T.MIRROR_END.encode():
            end = head.decode()
            data = rest
            continue
        kind, length, offset, path_length = head.split()
        length, path_length = int(length), int(path_length)
        out.append((kind.decode(), rest[:path_length].decode(), int(offset), rest[path_length:path_length + length]))
        data = rest[path_length + length:]
    return out, end


class MirrorTest(unittest.TestCase):
    def setUp(self):
        self.mirror = module("log_mirror.py")
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, rel, data, mode="wb"):
        path = os.path.join(self.d, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, mode) as f:
            f.write(data)

    def round(self, m):
        m.out = io.BytesIO()
        m.one_round()
        return frames(m.out.getvalue())[0]

    def test_the_walk_takes_the_runs_regular_files_and_no_symlinks_or_temp_files(self):
        self.write("worker0.log", b"x")
        self.write("tb/events.out", b"y")
        self.write("worker0.exit.tmp123", b"0\n")
        os.symlink("/etc/passwd", os.path.join(self.d, "planted"))
        self.assertEqual(sorted(rel for rel, full, st in self.mirror.walk(self.d)), ["tb/events.out", "worker0.log"])

    def test_logs_are_sent_as_they_grow_and_small_records_whole_when_they_change(self):
        self.write("worker0.log", b"line 1\n")
        self.write("worker0.pid", b"42 42\n")
        m = self.mirror.Mirror(self.d, {}, None)
        self.assertEqual(sorted(self.round(m)), [(T.MIRROR_APPEND, "worker0.log", 0, b"line 1\n"),
                                                 (T.MIRROR_WHOLE, "worker0.pid", 0, b"42 42\n")])
        self.assertEqual(self.round(m), [])  # nothing changed: nothing sent
        self.write("worker0.log", b"line 2\n", "ab")
        self.write("worker0.exit.tmp1", b"3\n")
        os.rename(os.path.join(self.d, "worker0.exit.tmp1"), os.path.join(self.d, "worker0.exit"))
        self.assertEqual(sorted(self.round(m)), [(T.MIRROR_APPEND, "worker0.log", 7, b"line 2\n"),
                                                 (T.MIRROR_WHOLE, "worker0.exit", 0, b"3\n")])

    def test_a_log_that_shrank_is_sent_again_from_its_start(self):
        self.write("worker0.log", b"a long first attempt\n")
        m = self.mirror.Mirror(self.d, {}, None)
        self.round(m)
        self.write("worker0.log", b"again\n")
        self.assertEqual(self.round(m), [(T.MIRROR_APPEND, "worker0.log", 0, b"again\n")])

    def test_what_the_watcher_has_is_not_sent_again(self):
        self.write("worker0.log", b"0123456789")
        m = self.mirror.Mirror(self.d, {"worker0.log": 4}, None)
        self.assertEqual(self.round(m), [(T.MIRROR_APPEND, "worker0.log", 4, b"456789")])

    def test_the_program_sends_a_last_round_and_its_end_when_asked_to_finish(self):
        self.write("worker0.log", b"hello\n")
        proc = start("log_mirror.py", self.d, "worker0.log=2")
        out, _ = proc.communicate((T.MIRROR_QUIT + "\n").encode(), timeout=60)
        self.assertEqual(proc.returncode, 0)
        sent, end = frames(out)
        self.assertEqual(end, T.MIRROR_END)
        self.assertEqual(sent[0], (T.MIRROR_APPEND, "worker0.log", 2, b"llo\n"))


if __name__ == "__main__":
    unittest.main()
