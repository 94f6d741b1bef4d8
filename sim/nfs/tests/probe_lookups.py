"""Which calls see another NFS client's new file over a cached miss, and which
wait for the negative lookup cache (docs/simulator-nfs.md, "Seeing another
host's new file"). A standalone check, not a unit test: it takes as long as
the cache lasts (acdirmin, 30 s by default).

    /usr/bin/python3 sim/nfs/tests/probe_lookups.py [--acdirmin S] [--acdirmax S] [--limit S]

As root (it mounts). It mounts two clients of one scratch export under
/var/tmp: A plays worker 3, B the dev VM's watcher. For each sequence, in a
directory of its own: B looks up d/x and caches the miss; A writes d/x as
tpurun's job wrapper writes workerN.exit (a temp file, then rename); B then
polls d/x every 0.2 s with that sequence's calls and the time it first sees
the file is printed. All sequences run at once, so the whole probe takes
about acdirmin.
"""
import argparse
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))

_libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW = 0x100
AT_STATX_FORCE_SYNC = 0x2000


def openat_read(dir_fd, name):
    """tpurun's read_small_file_at."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    os.close(fd)
    return True


def open_dir_then_openat(d):
    # tpurun's read_worker_jobs: open(log_dir, O_RDONLY|O_DIRECTORY), then
    # openat(fd, "workerN.exit", O_RDONLY|O_NOFOLLOW) for each worker.
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return openat_read(fd, "x")
    finally:
        os.close(fd)


def open_dir_then_fstatat(d):
    # tpurun's stop_requested: open(log_dir, O_RDONLY|O_DIRECTORY), fstatat(fd, "stop").
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.stat("x", dir_fd=fd, follow_symlinks=False)
        return True
    except FileNotFoundError:
        return False
    finally:
        os.close(fd)


def opath_dir_then_openat(d):
    fd = os.open(d, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return openat_read(fd, "x")
    finally:
        os.close(fd)


def open_by_path(d):
    # read_small_file(path): std::ifstream, i.e. open("dir/x", O_RDONLY).
    try:
        os.close(os.open(f"{d}/x", os.O_RDONLY | os.O_CLOEXEC))
        return True
    except FileNotFoundError:
        return False


def statx_force_sync(d):
    buf = (ctypes.c_uint8 * 256)()
    rc = _libc.statx(AT_FDCWD, os.fsencode(f"{d}/x"), AT_SYMLINK_NOFOLLOW | AT_STATX_FORCE_SYNC, 0x7FF, buf)
    return rc == 0


def lookup_another_name_first(d):
    os.path.exists(f"{d}/never-{time.monotonic_ns()}")  # a LOOKUP in d: it brings d's attributes
    return os.path.exists(f"{d}/x")


SEQUENCES = [
    ("open(dir, O_RDONLY|O_DIRECTORY); openat(fd, x)", open_dir_then_openat, None),
    ("open(dir, O_RDONLY|O_DIRECTORY); fstatat(fd, x)", open_dir_then_fstatat, None),
    ("lookup of a new name in dir; stat(dir/x)", lookup_another_name_first, None),
    ("open(dir, O_PATH|O_DIRECTORY); openat(fd, x)", opath_dir_then_openat, None),
    ("dir fd opened before the write; openat(fd, x)", None, "held"),
    ("open(dir/x) by path", open_by_path, None),
    ("statx(dir/x, AT_STATX_FORCE_SYNC)", statx_force_sync, None),
]


def mount(export, mp, opts):
    subprocess.run([sys.executable, "-m", "sim.nfs.mount", "--export", export, "--mountpoint", mp,
                    "--log", mp + ".log", *opts], cwd=ROOT, check=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--acdirmin", default="30")
    p.add_argument("--acdirmax", default="60")
    p.add_argument("--limit", type=float, default=75.0, help="give up after this many seconds")
    a = p.parse_args()
    if os.geteuid() != 0:
        print("probe_lookups.py: run as root (it mounts)", file=sys.stderr)
        return 2
    opts = ["--acdirmin", a.acdirmin, "--acdirmax", a.acdirmax]
    tmp = tempfile.mkdtemp(prefix="simnfs-probe-", dir="/var/tmp")
    os.chmod(tmp, 0o755)
    export, A, B = (os.path.join(tmp, n) for n in ("export", "a", "b"))
    for d in (export, A, B):
        os.mkdir(d)
    os.chmod(export, 0o1777)
    mounted = []
    results = {}
    try:
        for mp in (A, B):
            mount(export, mp, opts)
            mounted.append(mp)
        print(f"two clients of one export, acdirmin={a.acdirmin} acdirmax={a.acdirmax}", flush=True)

        # All set up before anything is written: a change to the root (a new
        # d<i>) would make B look each d<i> up again, and that LOOKUP brings
        # d<i>'s attributes (changed) with it, on NFS as here.
        held = {}
        for i, (_, _, kind) in enumerate(SEQUENCES):
            os.mkdir(f"{A}/d{i}")
        for i, (_, _, kind) in enumerate(SEQUENCES):
            if os.path.exists(f"{B}/d{i}/x"):  # B caches the miss
                raise AssertionError("x exists already")
            if kind == "held":
                held[i] = os.open(f"{B}/d{i}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        for i in range(len(SEQUENCES)):  # worker 3 writes its exit record: the wrapper's put()
            with open(f"{A}/d{i}/x.tmp", "w") as f:
                f.write("0\n")
            os.rename(f"{A}/d{i}/x.tmp", f"{A}/d{i}/x")
        t0 = time.monotonic()

        def run(i, label, check, kind):
            bd = f"{B}/d{i}"
            while time.monotonic() - t0 < a.limit:
                if openat_read(held[i], "x") if i in held else check(bd):
                    results[i] = time.monotonic() - t0
                    return
                time.sleep(0.2)
            results[i] = None

        threads = [threading.Thread(target=run, args=(i, *s)) for i, s in enumerate(SEQUENCES)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for fd in held.values():
            os.close(fd)
        for i, (label, _, _) in enumerate(SEQUENCES):
            r = results.get(i)
            if r is None:
                verdict = f"not seen within {a.limit:.0f} s"
            elif r < 0.5:
                verdict = f"seen at once ({r:.2f} s)"
            else:
                verdict = f"seen after {r:.1f} s (the cached miss)"
            print(f"  {label:50s} {verdict}", flush=True)
    finally:
        for mp in mounted:
            subprocess.run(["umount", mp])
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
