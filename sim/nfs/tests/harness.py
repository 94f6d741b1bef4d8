"""Two client mounts of one export, and the syscalls Python lacks (statx,
renameat2, inotify), for the mount tests. Needs root and /dev/fuse."""
import ctypes
import json
import os
import pickle
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PYTHON = "/usr/bin/python3"  # Debian's, with python3-pyfuse3

AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW = 0x100
AT_STATX_FORCE_SYNC = 0x2000
STATX_BASIC_STATS = 0x7FF
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
IN_NONBLOCK = os.O_NONBLOCK
IN_ALL_EVENTS = 0xFFF

_libc = ctypes.CDLL(None, use_errno=True)


def _check(rc):
    if rc < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return rc


def statx_size(path, force_sync=False):
    """statx(2) of `path`; returns st_size. AT_STATX_FORCE_SYNC asks the server."""
    buf = (ctypes.c_uint8 * 256)()
    flags = AT_SYMLINK_NOFOLLOW | (AT_STATX_FORCE_SYNC if force_sync else 0)
    _check(_libc.statx(AT_FDCWD, os.fsencode(path), flags, STATX_BASIC_STATS, buf))
    return struct.unpack_from("<Q", bytes(buf), 40)[0]  # stx_size


def renameat2(old, new, flags):
    _check(_libc.renameat2(AT_FDCWD, os.fsencode(old), AT_FDCWD, os.fsencode(new), flags))


class Inotify:
    def __init__(self, path):
        self.fd = _check(_libc.inotify_init1(IN_NONBLOCK | os.O_CLOEXEC))
        _check(_libc.inotify_add_watch(self.fd, os.fsencode(path), IN_ALL_EVENTS))

    def events(self, wait):
        """Event names seen within `wait` seconds."""
        names = []
        ready, _, _ = select.select([self.fd], [], [], wait)
        if not ready:
            return names
        data = os.read(self.fd, 65536)
        off = 0
        while off < len(data):
            _, _, _, length = struct.unpack_from("iIII", data, off)
            names.append(data[off + 16:off + 16 + length].rstrip(b"\0").decode())
            off += 16 + length
        return names

    def close(self):
        os.close(self.fd)


def as_user(uid, gid, groups, fn, *args):
    """Runs fn(*args) in a child with these ids; returns its result or raises its OSError."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.setgroups(list(groups))
            os.setgid(gid)
            os.setuid(uid)
            out = ("ok", fn(*args))
        except OSError as e:
            out = ("err", e.errno)
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            out = ("exc", repr(e))
        os.write(w, pickle.dumps(out))
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        kind, value = pickle.loads(f.read())
    os.waitpid(pid, 0)
    if kind == "err":
        raise OSError(value, os.strerror(value))
    if kind == "exc":
        raise AssertionError(f"child failed: {value}")
    return value


def eventually(predicate, timeout=20.0, step=0.1):
    """Polls until predicate() is true; False if it never became true."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def mount(export, mountpoint, *options):
    cmd = [PYTHON, "-m", "sim.nfs.mount", "--export", export, "--mountpoint", mountpoint,
           "--log", mountpoint + ".log", "--stats", mountpoint + ".stats",
           "--pidfile", mountpoint + ".pid", *options]
    subprocess.run(cmd, cwd=ROOT, check=True)


def requests(mountpoint, kind):
    """How many requests of `kind` ("lookup", "getattr", ...) the client
    mounted at `mountpoint` has served so far (its --stats, on SIGUSR1)."""
    stats = mountpoint + ".stats"
    with open(mountpoint + ".pid") as f:
        pid = int(f.read())
    try:
        os.unlink(stats)
    except FileNotFoundError:
        pass
    os.kill(pid, signal.SIGUSR1)
    if not eventually(lambda: os.path.exists(stats), timeout=5.0, step=0.01):
        raise AssertionError(f"no {stats} after SIGUSR1")
    with open(stats) as f:
        return json.load(f).get(kind, 0)


def unmount(mountpoint):
    if subprocess.run(["umount", mountpoint], stderr=subprocess.DEVNULL).returncode != 0:
        subprocess.run(["umount", "-l", mountpoint], stderr=subprocess.DEVNULL)


class TwoClients(unittest.TestCase):
    """Client A and client B of one export. Subclasses set the mount options."""

    options_a = ()
    options_b = ()

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="simnfs-test-", dir="/var/tmp")
        os.chmod(cls.tmp, 0o755)  # other uids walk to the mount points
        cls.export = os.path.join(cls.tmp, "export")
        cls.A = os.path.join(cls.tmp, "a")
        cls.B = os.path.join(cls.tmp, "b")
        for d in (cls.export, cls.A, cls.B):
            os.mkdir(d)
        os.chmod(cls.export, 0o1777)  # the seeds' world-writable share root
        cls.mounted = []
        try:
            mount(cls.export, cls.A, *cls.options_a)
            cls.mounted.append(cls.A)
            mount(cls.export, cls.B, *cls.options_b)
            cls.mounted.append(cls.B)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for mp in cls.mounted:
            unmount(mp)
        if os.environ.get("SIMNFS_KEEP"):
            print(f"kept {cls.tmp}", file=sys.stderr)
        else:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def name(self):
        """A fresh file name for one test."""
        return f"{self._testMethodName}-{time.monotonic_ns()}"


def requirements():
    """Why the mount tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "not root"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse"
    probe = subprocess.run([PYTHON, "-c", "import pyfuse3, trio"], capture_output=True)
    if probe.returncode != 0:
        return f"{PYTHON} lacks pyfuse3/trio (apt-get install python3-pyfuse3)"
    return None
