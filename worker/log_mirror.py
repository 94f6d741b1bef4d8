# The worker's side of the log mirror (runs/watcher/log_mirror.hpp;
# docs/protocols.md): on a pod with no shared mount, the run's watcher keeps
# one running on each worker, as the login user, this program on its stdin.
# It shows in ps as "tpurun-mirror RUN_ID".
#
# argv: DIR [PATH=OFFSET...]: the run's log dir there, and how much of each
# file the watcher has already. Writes frames to stdout, a round of them
# every 0.25 s:
#   "MIRROR_APPEND <len> <offset> <pathlen>\n<path><bytes>"   bytes appended to a file
#   "MIRROR_WHOLE <len> 0 <pathlen>\n<path><bytes>"           a record file, whole
# Files of at most 4 KiB that are not logs (exit and pid records, written by
# rename) are sent whole when they change; the rest as what was appended.
# A line MIRROR_QUIT on stdin (or EOF) ends it after one last round, with
# "MIRROR_END\n".
import os
import select
import stat
import sys

# tpurun-embed: tokens
# tpurun-embed: include lib/proc_title.py
# tpurun-embed: include lib/files_under.py


def is_record(rel, st):
    return not rel.endswith(".log") and st.st_size <= 4096


def walk(d):
    """The run's files: (path relative to d, full path, lstat), regular files
    only (a planted symlink is no file of the run) and no temp files."""
    return [(os.path.relpath(full, d), full, st) for full, name, st in files_under(d)
            if stat.S_ISREG(st.st_mode) and ".tmp" not in name]


class Mirror:
    def __init__(self, d, sent, out):
        self.d = d
        self.sent = sent  # path -> bytes the watcher has
        self.seen = {}    # record path -> (inode, mtime, size) last sent
        self.out = out

    def frame(self, kind, rel, offset, data):
        p = rel.encode("utf-8", "surrogateescape")
        self.out.write(b"%s %d %d %d\n" % (kind.encode(), len(data), offset, len(p)) + p + data)

    def one_round(self, flush=True):
        files = walk(self.d)
        records = [f for f in files if is_record(f[0], f[2])]
        for rel, full, st in files:
            if is_record(rel, st):
                continue
            off = self.sent.get(rel, 0)
            try:
                with open(full, "rb") as f:
                    if os.fstat(f.fileno()).st_size < off:
                        off = 0
                    f.seek(off)
                    while True:
                        data = f.read(1 << 20)
                        if not data:
                            break
                        self.frame(MIRROR_APPEND, rel, off, data)
                        off += len(data)
            except OSError:
                continue
            self.sent[rel] = off
        for rel, full, st in records:
            key = (st.st_ino, st.st_mtime_ns, st.st_size)
            if self.seen.get(rel) == key:
                continue
            try:
                with open(full, "rb") as f:
                    data = f.read()
            except OSError:
                continue
            self.frame(MIRROR_WHOLE, rel, 0, data)
            self.seen[rel] = key
            self.sent[rel] = len(data)
        if flush:
            self.out.flush()


def main():
    d = sys.argv[1]
    proc_title("tpurun-mirror " + os.path.basename(d.rstrip("/")))
    sent = {}
    for a in sys.argv[2:]:
        p, _, o = a.rpartition("=")
        sent[p] = int(o)
    out = sys.stdout.buffer
    mirror = Mirror(d, sent, out)
    while True:
        mirror.one_round()
        r, _, _ = select.select([sys.stdin], [], [], 0.25)
        if r:
            line = sys.stdin.readline()
            if not line or line.strip() == MIRROR_QUIT:
                mirror.one_round(False)  # with END in one write (a second small one waits out a delayed ACK)
                out.write(MIRROR_END.encode() + b"\n")
                out.flush()
                break


if __name__ == "__main__":
    main()
