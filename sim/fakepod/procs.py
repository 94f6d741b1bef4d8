"""Small process helpers: who a pid is, waiting for pids to die, killing safely."""
import os
import signal
import time


def cmdline(pid):
    """The argv of pid joined by spaces, or None if it is gone."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            raw = f.read()
    except OSError:
        return None
    if not raw:
        return None
    return " ".join(a.decode(errors="replace") for a in raw.rstrip(b"\0").split(b"\0"))


def read_pid(path):
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def write_file(path, text, mode=0o644):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def is_zombie(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def alive(pid, expect=None):
    """pid exists, is not a zombie and (if expect) its cmdline is expect."""
    if not pid:
        return False
    cmd = cmdline(pid)
    if cmd is None or is_zombie(pid):
        return False
    return expect is None or cmd == expect


def kill_and_wait(pids, timeout=30.0):
    """SIGKILL every (pid, cmdline) pair and wait until each is gone. A pid whose
    cmdline changed (reused number) counts as gone."""
    for pid, _ in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    deadline = time.monotonic() + timeout
    for pid, was in pids:
        while True:
            cmd = cmdline(pid)
            if cmd is None or cmd != was or is_zombie(pid):
                break
            if time.monotonic() > deadline:
                raise RuntimeError("process %d (%s) did not die" % (pid, was))
            time.sleep(0.02)


def kill_until_gone(find, seconds, pause):
    """SIGKILLs the pids find() returns until it returns none; returns those
    still there when `seconds` are up (nothing when all went)."""
    deadline = time.monotonic() + seconds
    while True:
        left = find()
        if not left or time.monotonic() >= deadline:
            return left
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(pause)


def pidns(pid):
    try:
        return os.readlink("/proc/%d/ns/pid" % pid)
    except OSError:
        return None


def all_pids():
    for name in os.listdir("/proc"):
        if name.isdigit():
            yield int(name)
