"""fakepod scrub: a pod's workers as a test expects them between two tests.

From the host, in one pass over /proc (no session into each worker): every
process group on the pod's workers that holds a TPU device (/dev/accel*,
/dev/vfio/<group>, as tpu-info and lsof find holders) is SIGKILLed, and with
--users every process of those users there too (their jobs, wrappers and
sessions); then each worker's /tmp/libtpu_lockfile, /tmp/tpu_logs and the
fake trainers' /tmp/fake-trainer.*.log go. Only this state dir's workers:
other pods beside it are not touched.
"""
import glob
import os
import pwd
import shutil
import signal
import time

from . import procs, workers


def _holds_tpu(pid):
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return False
    for fd in fds:
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target.startswith("/dev/accel") or (target.startswith("/dev/vfio/") and target[10:].isdigit()):
            return True
    return False


def _stat(pid):
    """(uid, pgid) of pid, as the host sees them; None when it is gone."""
    try:
        uid = os.stat("/proc/%d" % pid).st_uid
        with open("/proc/%d/stat" % pid) as f:
            pgid = int(f.read().rsplit(")", 1)[1].split()[2])
    except (OSError, IndexError, ValueError):
        return None
    return uid, pgid


def _targets(inits, uids):
    """Host pids of the pod's workers to kill, and process groups to kill."""
    nss = {procs.pidns(p) for p in inits.values()} - {None}
    pids, groups = set(), set()
    for pid in procs.all_pids():
        if pid in inits.values() or procs.pidns(pid) not in nss or procs.is_zombie(pid):
            continue
        st = _stat(pid)
        if st is None:
            continue
        uid, pgid = st
        if uid in uids:
            pids.add(pid)
        if _holds_tpu(pid):
            pids.add(pid)
            if pgid not in inits.values():
                groups.add(pgid)
    return pids, groups


def scrub(env, slots, users=()):
    inits = {s: workers.init_pid(env, s) for s in slots}
    inits = {s: p for s, p in inits.items() if p}
    uids = set()
    for u in users:
        try:
            uids.add(pwd.getpwnam(u).pw_uid)
        except KeyError:
            pass
    killed = 0
    for _ in range(50):
        pids, groups = _targets(inits, uids)
        if not pids:
            break
        for g in groups:
            try:
                os.killpg(g, signal.SIGKILL)
            except OSError:
                pass
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
        time.sleep(0.05)
    for init in inits.values():
        tmp = "/proc/%d/root/tmp" % init
        for path in [tmp + "/libtpu_lockfile"] + glob.glob(tmp + "/fake-trainer.*.log"):
            try:
                os.unlink(path)
            except OSError:
                pass
        shutil.rmtree(tmp + "/tpu_logs", ignore_errors=True)
    return killed
