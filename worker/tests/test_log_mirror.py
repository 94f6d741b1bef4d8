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
        if head.startswith(T.MIRROR_SPACE.encode() + b" "):
            out.append((T.MIRROR_SPACE, int(head.split()[1])))
            data = rest
            continue
        kind, length, offset, path_length, _ino, _mtime = head.split()
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

    def test_the_walk_takes_every_regular_file_but_no_symlink_and_not_the_wrappers_temp_dir(self):
        self.write("worker0.log", b"x")
        self.write("tb/events.out", b"y")
        self.write("results.tmp.json", b"{}")
        self.write("my.tmpl", b"t")
        self.write("sub/%s/kept" % T.LOG_TMP_DIR, b"k")  # only the top's is the wrapper's
        self.write("%s/worker0.exit.123" % T.LOG_TMP_DIR, b"0\n")
        os.symlink("/etc/passwd", os.path.join(self.d, "planted"))
        self.assertEqual(sorted(rel for rel, full, st in self.mirror.walk(self.d)),
                         ["my.tmpl", "results.tmp.json", "sub/%s/kept" % T.LOG_TMP_DIR, "tb/events.out",
                          "worker0.log"])

    def test_logs_are_sent_as_they_grow_and_small_records_whole_when_they_change(self):
        self.write("worker0.log", b"line 1\n")
        self.write("worker0.pid", b"42 42\n")
        m = self.mirror.Mirror(self.d, {}, None)
        self.assertEqual(sorted(self.round(m)), [(T.MIRROR_APPEND, "worker0.log", 0, b"line 1\n"),
                                                 (T.MIRROR_WHOLE, "worker0.pid", 0, b"42 42\n")])
        self.assertEqual(self.round(m), [])  # nothing changed: nothing sent
        self.write("worker0.log", b"line 2\n", "ab")
        self.write("%s/worker0.exit.1" % T.LOG_TMP_DIR, b"3\n")
        os.rename(os.path.join(self.d, T.LOG_TMP_DIR, "worker0.exit.1"), os.path.join(self.d, "worker0.exit"))
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
        ino = os.stat(os.path.join(self.d, "worker0.log")).st_ino
        m = self.mirror.Mirror(self.d, {"worker0.log": self.mirror.Sent(4, ino, 0)}, None)
        self.assertEqual(self.round(m), [(T.MIRROR_APPEND, "worker0.log", 4, b"456789")])

    def test_a_file_replaced_by_rename_is_sent_again_from_its_start(self):
        self.write("app.out", b"a" * 5000)
        m = self.mirror.Mirror(self.d, {}, None)
        self.round(m)
        self.write("new", b"b" * 6000)
        os.rename(os.path.join(self.d, "new"), os.path.join(self.d, "app.out"))
        self.assertEqual(self.round(m), [(T.MIRROR_APPEND, "app.out", 0, b"b" * 6000)])

    def test_a_file_rewritten_in_place_is_sent_again(self):
        path = os.path.join(self.d, "data.bin")
        self.write("data.bin", b"a" * 5000)
        m = self.mirror.Mirror(self.d, {}, None)
        self.round(m)
        with open(path, "r+b") as f:  # the same size, other bytes
            f.write(b"b" * 5000)
        st = os.stat(path)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1000))  # a later mtime, whatever the clock's grain
        self.assertEqual(self.round(m), [(T.MIRROR_APPEND, "data.bin", 0, b"b" * 5000)])
        with open(path, "r+b") as f:  # other bytes, and more of them
            f.write(b"c" * 6000)
        self.assertEqual(self.round(m), [(T.MIRROR_APPEND, "data.bin", 0, b"c" * 6000)])

    def test_a_truncated_and_shorter_file_is_sent_again_whole(self):
        self.write("app.log", b"x" * 8000)
        m = self.mirror.Mirror(self.d, {}, None)
        self.round(m)
        self.write("app.log", b"short\n")
        self.assertEqual(self.round(m), [(T.MIRROR_APPEND, "app.log", 0, b"short\n")])

    def test_an_empty_file_is_sent_once(self):
        self.write("empty.log", b"")
        m = self.mirror.Mirror(self.d, {}, None)
        self.assertEqual(self.round(m), [(T.MIRROR_APPEND, "empty.log", 0, b"")])
        self.assertEqual(self.round(m), [])

    def test_a_full_disk_is_said_once(self):
        m = self.mirror.Mirror(self.d, {}, None)
        self.mirror.LOW_SPACE = 1 << 62  # any disk is full by this measure
        first = self.round(m)
        self.assertEqual([f[0] for f in first], [T.MIRROR_SPACE])
        self.assertEqual(self.round(m), [])

    def test_the_program_sends_a_last_round_and_its_end_when_asked_to_finish(self):
        self.write("worker0.log", b"hello\n")
        ino = os.stat(os.path.join(self.d, "worker0.log")).st_ino
        self.write("many/a\nname", b"odd")
        proc = start("log_mirror.py", self.d)
        have = b"1\n2 %d 0 11\nworker0.log" % ino
        out, _ = proc.communicate(have + (T.MIRROR_QUIT + "\n").encode(), timeout=60)
        self.assertEqual(proc.returncode, 0)
        sent, end = frames(out)
        self.assertEqual(end, T.MIRROR_END)
        self.assertEqual(sorted(sent), [(T.MIRROR_APPEND, "worker0.log", 2, b"llo\n"),
                                        (T.MIRROR_WHOLE, "many/a\nname", 0, b"odd")])


if __name__ == "__main__":
    unittest.main()
