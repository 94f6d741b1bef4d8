#!/usr/bin/python3
"""Host-side /proc scans for the e2e tests, in one process.

A bash loop over /proc forks readlink and tr for every process on the host:
with test_scale's 256-worker pod up beside the other lanes that is thousands
of forks per scan (seconds of CPU each time, minutes under load, and the
tests poll them). Here a scan is one read of /proc.

  procs.py ns-pids INIT_PID        the processes in INIT_PID's PID namespace
  procs.py freeze INIT_PID         SIGSTOP all of them, again until every one is
                                   stopped (sessions forked during a sweep escape
                                   it); exit 1 naming the ones still running
  procs.py thaw INIT_PID           SIGCONT all of them
  procs.py pod STATE_DIR           "PID CMDLINE" of a pod's processes: its unshare
                                   parents, everything in its workers' PID
                                   namespaces, its daemons (STATE_DIR/lib/)
"""
import glob
import os
import signal
import sys
import time


def pid_ns(pid):
    try:
        return os.readlink("/proc/%s/ns/pid" % pid)
    except OSError:
        return None


def all_pids():
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def ns_pids(init_pid):
    """([] once INIT_PID is gone: a worker stopped since has nothing to thaw.)"""
    ns = pid_ns(init_pid)
    return [p for p in all_pids() if pid_ns(p) == ns] if ns else []


def state(pid):
    """The one-letter state of /proc/PID/stat ("" once it is gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def signal_all(pids, sig):
    for p in pids:
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            pass


def freeze(init_pid):
    if pid_ns(init_pid) is None:
        print("no process %s" % init_pid)
        return 1
    running = []
    for _ in range(100):  # bounded: 100 sweeps, 0.1 s apart
        signal_all(ns_pids(init_pid), signal.SIGSTOP)
        running = [p for p in ns_pids(init_pid) if state(p) not in ("T", "t", "Z", "X", "")]
        if not running:
            return 0
        time.sleep(0.1)
    print("still running after SIGSTOP: %s" % " ".join(map(str, running)))
    return 1


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None


def pod(state_dir):
    me = pid_ns("self")
    nss = set()
    for p in glob.glob(os.path.join(state_dir, "w*", "init.pid")):
        try:
            with open(p) as f:
                ns = pid_ns(f.read().strip())
        except OSError:
            ns = None
        if ns:
            nss.add(ns)
    for p in sorted(all_pids()):
        ns, cmd = pid_ns(p), cmdline(p)
        if ns is None or cmd is None:
            continue
        if (ns != me and ns in nss) or (cmd.startswith("unshare ") and state_dir + "/init.sh" in cmd) \
                or state_dir + "/lib/" in cmd:
            print(p, cmd)
    return 0


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    what, arg = argv[1], argv[2]
    if what == "ns-pids":
        print("\n".join(map(str, ns_pids(arg))))
        return 0
    if what == "freeze":
        return freeze(arg)
    if what == "thaw":
        signal_all(ns_pids(arg), signal.SIGCONT)
        return 0
    if what == "pod":
        return pod(arg)
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
