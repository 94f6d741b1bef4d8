# The worker's side of the log mirror (runs/watcher/log_mirror.hpp;
# docs/protocols.md): on a pod with no shared mount, the run's watcher keeps
# one running on each worker, as the login user, this program on its stdin.
# It shows in ps as "tpurun-mirror RUN_ID".
#
# argv: DIR, the run's log dir there. Its stdin, after the program: what the
# watcher has already (never in argv: a reconnect with thousands of files
# would pass the kernel's limit), a line "COUNT" then per file
# "OFFSET INO MTIME_NS PATHLEN\nPATH"; then the watcher's words. Writes frames
# to stdout, a round of them every 0.25 s:
#   "MIRROR_APPEND LEN OFFSET PATHLEN INO MTIME_NS\nPATH BYTES"  bytes of a file from OFFSET
#   "MIRROR_WHOLE LEN 0 PATHLEN INO MTIME_NS\nPATH BYTES"        a small file, whole
#   "MIRROR_SPACE FREE\n"  the dir's disk is (nearly) full: FREE bytes left
# Files of at most 4 KiB that are not logs are sent whole when they change;
# the rest as what was appended. A file replaced (another inode), truncated,
# or rewritten (the same size with another mtime, or other bytes before
# where the watcher's copy ends) is sent again from 0. MTIME_NS is 0 when
# the file changed while it was read. No name is left out but LOG_TMP_DIR,
# the wrapper's own temp files. A line MIRROR_QUIT on stdin (or EOF) ends it
# after one last round, with "MIRROR_END\n".
import os
import select
import stat
import sys
import time

# tpurun-embed: tokens
# tpurun-embed: include lib/proc_title.py

# Less free than this on the dir's disk, and the watcher hears of it.
LOW_SPACE = 1 << 20
# The bytes kept of the end of what was sent, to see a rewrite that grew.
TAIL = 64


def is_record(rel, size):
    return not rel.endswith(".log") and size <= 4096


def walk(d):
    """The run's files: (path relative to d, full path, lstat), regular files
    only (a planted symlink is no file of the run); the wrapper's temp dir
    (LOG_TMP_DIR, at the top) is left out, by its exact name only. One
    scandir per dir: a dir entry's type costs no syscall."""
    files, dirs = [], [(d, "")]
    while dirs:
        folder, prefix = dirs.pop()
        try:
            entries = os.scandir(folder)
        except OSError:
            continue
        with entries:
            for e in entries:
                try:
                    if e.is_dir(follow_symlinks=False):
                        if prefix or e.name != LOG_TMP_DIR:
                            dirs.append((e.path, prefix + e.name + "/"))
                        continue
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    files.append((prefix + e.name, e.path, st))
    return files


class Sent:
    """What the watcher has of one file: how far, from which inode, and the
    mtime when that was all of it (0: unknown); `tail`, the last bytes sent
    (None after a reconnect)."""
    __slots__ = ("offset", "ino", "mtime", "tail")

    def __init__(self, offset, ino, mtime, tail=None):
        self.offset, self.ino, self.mtime, self.tail = offset, ino, mtime, tail


class Mirror:
    def __init__(self, d, sent, out):
        self.d = d
        self.sent = sent  # path -> Sent
        self.out = out
        self.space_said = False

    def frame(self, kind, rel, offset, data, ino, mtime):
        p = rel.encode("utf-8", "surrogateescape")
        self.out.write(b"%s %d %d %d %d %d\n" % (kind.encode(), len(data), offset, len(p), ino, mtime) + p + data)

    def changed(self, s, st):
        """From where a file is sent again: its offset, or 0 when it is not
        the file the watcher's copy is of any more; None when nothing is new."""
        if s is None:
            return 0
        if st.st_ino != s.ino or st.st_size < s.offset:
            return 0
        if st.st_size == s.offset:
            return 0 if s.mtime and st.st_mtime_ns != s.mtime else None
        return s.offset

    def send_file(self, rel, full, whole):
        """Sends the file from where the watcher's copy ends (or whole). The
        mtime kept is the one before the read: a write during it makes the
        next round see another mtime, and send the file again."""
        s = self.sent.get(rel)
        try:
            fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return
        try:
            st = os.fstat(fd)
            off = 0 if whole else self.changed(s, st)
            if off is None:
                return
            if off and s.tail and os.pread(fd, len(s.tail), off - len(s.tail)) != s.tail:
                off = 0  # other bytes where the copy ends: rewritten
            tail = s.tail if off and s.tail else b""
            any_sent = False
            while True:
                # What fstat saw and a little more: a 1 MiB buffer per small
                # file costs more than reading it.
                data = os.pread(fd, min(1 << 20, max(st.st_size - off, 0) + 4096), off)
                if not data and (any_sent or off > 0):
                    break  # (a file sent from 0 gets one frame, empty or not)
                # (an mtime only where fstat saw all that was read: more came during the read)
                mtime = st.st_mtime_ns if off + len(data) == st.st_size else 0
                self.frame(MIRROR_WHOLE if whole else MIRROR_APPEND, rel, off, data, st.st_ino, mtime)
                off += len(data)
                tail = (tail + data[-TAIL:])[-TAIL:]
                any_sent = True
                if whole or not data:
                    break
            if any_sent:
                self.sent[rel] = Sent(off, st.st_ino, mtime, tail)
        except OSError:
            pass
        finally:
            os.close(fd)

    def one_round(self, flush=True):
        files = walk(self.d)
        records = []
        for rel, full, st in files:
            if is_record(rel, st.st_size):
                records.append((rel, full, st))
                continue
            if self.changed(self.sent.get(rel), st) is not None:
                self.send_file(rel, full, False)
        # Records after the logs: an exit record never arrives before the
        # output that preceded it.
        for rel, full, st in records:
            s = self.sent.get(rel)
            if s and s.ino == st.st_ino and s.mtime == st.st_mtime_ns and s.offset == st.st_size:
                continue
            self.send_file(rel, full, True)
        self.look_at_space()
        if flush:
            self.out.flush()

    def look_at_space(self):
        try:
            v = os.statvfs(self.d)
        except OSError:
            return
        free = v.f_bavail * v.f_frsize
        low = free < LOW_SPACE
        if low and not self.space_said:
            self.out.write(b"%s %d\n" % (MIRROR_SPACE.encode(), free))
        self.space_said = low


class Input:
    """The watcher's side of stdin, read with os.read: what it has, then its
    words (select() sees only what no buffer holds yet)."""

    def __init__(self, fd):
        self.fd, self.buf, self.eof = fd, b"", False

    def fill(self):
        data = os.read(self.fd, 65536)
        if not data:
            self.eof = True
        self.buf += data

    def line(self):
        while b"\n" not in self.buf and not self.eof:
            self.fill()
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def exactly(self, n):
        while len(self.buf) < n and not self.eof:
            self.fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data


def read_have(inp):
    """The watcher's list: path -> Sent."""
    sent = {}
    count = inp.line().strip()
    for _ in range(int(count or 0)):
        offset, ino, mtime, plen = (int(x) for x in inp.line().split())
        path = inp.exactly(plen).decode("utf-8", "surrogateescape")
        sent[path] = Sent(offset, ino, mtime)
    return sent


def main():
    d = sys.argv[1]
    proc_title("tpurun-mirror " + os.path.basename(d.rstrip("/")))
    inp = Input(0)
    out = sys.stdout.buffer
    mirror = Mirror(d, read_have(inp), out)
    while True:
        began = time.monotonic()
        mirror.one_round()
        # A round over thousands of files costs CPU: the pause grows with it
        # (at most a third of a core), up to 5 s.
        pause = min(5.0, max(0.25, 2 * (time.monotonic() - began)))
        if b"\n" not in inp.buf and not inp.eof:
            r, _, _ = select.select([inp.fd], [], [], pause)
            if not r:
                continue
            inp.fill()
        if inp.eof or b"\n" in inp.buf:
            line = inp.line()
            if inp.eof or line.strip() == MIRROR_QUIT.encode():
                mirror.one_round(False)  # with END in one write (a second small one waits out a delayed ACK)
                out.write(MIRROR_END.encode() + b"\n")
                out.flush()
                break


if __name__ == "__main__":
    main()
