# tpurun stacks on one worker (runs/stacks/stacks.hpp; docs/stacks.md,
# docs/protocols.md), run as the login user by python3 -I -S, never as root:
# argv RUN_ID LOG TIMEOUT_MS NATIVE [GLOB...]. It looks at the user's own
# processes only (the owner of /proc/PID checked before anything of it is
# read, and the kernel refuses the rest anyway) whose environment names the
# run, or, with RUN_ID "-", those that hold a TPU device file (an open fd
# whose target matches a GLOB), and takes each one's Python stacks (LOG "-":
# no log to look at):
#   - a process whose bootstrap (worker/sitecustomize.py) registered
#     faulthandler gets that one real-time signal, through a pidfd opened
#     before its owner and start time are checked (no other process can get
#     it), only when /proc/PID/status says the process catches it (so a
#     capture never kills); its dump is read from the file it appends to;
#   - with NATIVE 1 and py-spy on PATH, `py-spy dump --native` instead, with
#     a timeout, then --nonblocking;
#   - any other process gets a reason: not Python, started with -I/-S/-E, ...
# Answers STACKS_HEADER, then one JSON line: {"processes": [{"pid", "ppid",
# "command", "threads": [{"name", "frames": [{"function", "file", "line"}]}]}
# or {..., "no_stack": why}], "last_line", "last_line_age_s"}; frames are
# innermost first, as faulthandler and py-spy print them.
# tpurun-embed: tokens
import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

THREAD_RE = re.compile(r"^(?:Current thread|Thread) (0x[0-9a-fA-F]+)(?: \[(.*)\])? \(most recent call first\):")
FRAME_RE = re.compile(r'^\s+File "(.*)", line (\d+) in (.*)$')
SPY_THREAD_RE = re.compile(r'^Thread (0x[0-9a-fA-F]+|\d+) \(([^)]*)\)(?:: "(.*)")?$')
SPY_FRAME_RE = re.compile(r"^\s+(.+?) \(([^()]*?)(?::(\d+))?\)$")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def parse_faulthandler(text, names):
    """faulthandler's dump (the first one in text) as threads; names maps a
    thread's ident to its name."""
    threads, seen = [], set()
    for line in text.splitlines():
        m = THREAD_RE.match(line)
        if m:
            ident = int(m.group(1), 16)
            if ident in seen:
                break  # a second dump begins (another capture at the same time)
            seen.add(ident)
            threads.append({"name": m.group(2) or names.get(ident, "Thread %s" % m.group(1)), "frames": []})
            continue
        m = FRAME_RE.match(line)
        if m and threads:
            threads[-1]["frames"].append({"function": m.group(3), "file": m.group(1), "line": int(m.group(2))})
    return threads


def parse_py_spy(text):
    """py-spy dump's text (with or without --native) as threads."""
    threads = []
    for line in text.splitlines():
        m = SPY_THREAD_RE.match(line)
        if m:
            threads.append({"name": m.group(3) or "Thread %s" % m.group(1), "frames": []})
            continue
        m = SPY_FRAME_RE.match(line)
        if m and threads and line.startswith("    ") and not line.startswith("        "):
            frame = {"function": m.group(1), "file": m.group(2), "line": int(m.group(3)) if m.group(3) else 0}
            threads[-1]["frames"].append(frame)
    return threads


def sort_threads(threads):
    return sorted(threads, key=lambda t: (t["name"] != "MainThread", t["name"]))


def read_names(path):
    names = {}
    try:
        for line in read(path).decode("utf-8", "replace").splitlines():
            ident, _, name = line.partition(" ")
            if ident.isdigit():
                names[int(ident)] = name
    except OSError:
        pass
    return names


def python_flags(argv):
    """The isolating flags (-I, -S, -E) of a python command line."""
    found, args = [], argv[1:]
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-", "--") or not arg.startswith("-") or arg.startswith("--"):
            break
        if arg in ("-X", "-W"):
            i += 2
            continue
        for letter in arg[1:]:
            if letter in "cm":
                return found
            if letter in "ISE" and "-" + letter not in found:
                found.append("-" + letter)
            if letter in "XW":
                break
        i += 1
    return found


def is_python(argv, exe):
    return any(os.path.basename(p).startswith("python") for p in (exe, argv[0] if argv else ""))


def start_time(stat):
    return stat[stat.rindex(b")") + 2:].split()[19].decode()


class Process:
    def __init__(self, pid, uid):
        base = "/proc/%d" % pid
        self.pid = pid
        self.fd = None
        self.why = None
        self.dump = None
        if os.stat(base).st_uid != uid:
            raise PermissionError(pid)  # another user's: nothing more is read
        self.env = dict(e.split(b"=", 1) for e in read(base + "/environ").split(b"\0") if b"=" in e)
        stat = read(base + "/stat")
        self.start = start_time(stat)
        self.ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        self.argv = [a.decode("utf-8", "replace") for a in read(base + "/cmdline").split(b"\0")[:-1]]
        try:
            self.exe = os.readlink(base + "/exe")
        except OSError:
            self.exe = ""
        self.status = read(base + "/status").decode("utf-8", "replace")

    def field(self, name):
        for line in self.status.splitlines():
            if line.startswith(name + ":"):
                return line.split(":", 1)[1].strip()
        return ""

    def catches(self, signum):
        return bool(int(self.field("SigCgt") or "0", 16) >> (signum - 1) & 1)

    def json(self):
        out = {"pid": self.pid, "ppid": self.ppid, "command": " ".join(self.argv)[:300]}
        if self.why:
            out["no_stack"] = self.why
        else:
            out["threads"] = self.threads
        return out


def reason(p, signum):
    """Why p's stack cannot be taken by its bootstrap; None when it can."""
    if not is_python(p.argv, p.exe):
        return "no Python stack (not Python: %s)" % os.path.basename(p.exe or (p.argv or ["?"])[0])
    flags = python_flags(p.argv)
    if flags:
        return "no Python stack (started with %s: Python skips tpurun's bootstrap)" % " ".join(flags)
    d = p.env.get(STACKS_DIR_VARIABLE.encode())
    if not d:
        return ("no Python stack (started without tpurun's bootstrap: not a run of this tpurun; "
                "--native asks py-spy where it is installed)")
    p.dump = os.path.join(os.fsdecode(d), "%d-%s.txt" % (p.pid, p.start))
    try:
        if os.lstat(p.dump).st_uid != os.getuid():
            return "no Python stack (its dump file is not yours)"
    except OSError:
        return "no Python stack (tpurun's bootstrap did not load: PYTHONPATH replaced, or the signal was taken)"
    if not p.catches(signum):
        return "no Python stack (the job reset tpurun's signal handler)"
    return None


def send(p, signum, uid):
    """The signal, through a pidfd checked to still be p (owner, start time)."""
    if hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal"):
        fd = os.pidfd_open(p.pid)
        try:
            again = Process(p.pid, uid)
            if again.start != p.start or not again.catches(signum):
                raise ProcessLookupError(p.pid)
            signal.pidfd_send_signal(fd, signum)
        finally:
            os.close(fd)
    else:
        os.kill(p.pid, signum)


def take_dumps(procs, signum, uid, timeout_s):
    before = {}
    for p in procs:
        try:
            before[p.pid] = os.path.getsize(p.dump)
            send(p, signum, uid)
        except OSError:
            p.why = "no Python stack (the process ended)"
    pending = {p.pid: p for p in procs if not p.why}
    last = dict(before)
    deadline = time.monotonic() + timeout_s
    while pending and time.monotonic() < deadline:
        time.sleep(0.02)
        for pid, p in list(pending.items()):
            try:
                size = os.path.getsize(p.dump)
            except OSError:  # the run's dir went (cleaned up as the process ended)
                p.why = "no Python stack (its dump file went away)"
                del pending[pid]
                continue
            if size > before[pid] and size == last[pid]:  # grown, then still for a tick
                with open(p.dump, "rb") as f:
                    f.seek(before[pid])
                    text = f.read(size - before[pid]).decode("utf-8", "replace")
                names = read_names(p.dump[:-4] + ".names")
                p.threads = sort_threads(parse_faulthandler(text, names))
                del pending[pid]
            last[pid] = size
    for p in pending.values():
        p.why = "no Python stack (no answer within %gs; process state %s)" % (timeout_s, p.field("State")[:1])


def py_spy(p, timeout_s):
    tool = shutil.which("py-spy")
    if not tool:
        return False
    for extra in ([], ["--nonblocking"]):
        try:
            r = subprocess.run([tool, "dump", "--pid", str(p.pid), "--native"] + extra, capture_output=True,
                               timeout=timeout_s, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            continue
        threads = parse_py_spy(r.stdout.decode("utf-8", "replace")) if r.returncode == 0 else []
        if threads:
            p.threads, p.why = threads, None
            return True
    return False


def last_line(path):
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(max(0, size - 4096))
            tail = f.read().decode("utf-8", "replace")
            age = max(0.0, time.time() - os.fstat(f.fileno()).st_mtime)
    except OSError:
        return None, None
    lines = [ln.rsplit("\r", 1)[-1] for ln in tail.splitlines() if ln.strip()]
    return (lines[-1][:300] if lines else None), round(age, 1)


def holds_tpu(pid, globs):
    """An open fd of pid whose target matches one of the device globs."""
    base = "/proc/%d/fd" % pid
    try:
        fds = os.listdir(base)
    except OSError:
        return False
    for fd in fds:
        try:
            target = os.readlink(base + "/" + fd)
        except OSError:
            continue
        if any(fnmatch.fnmatchcase(target, g) for g in globs):
            return True
    return False


def own_processes(run_id, uid, globs=()):
    """The run's processes of uid, or with run_id "-" uid's TPU holders."""
    want = run_id.encode()
    procs = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            p = Process(int(name), uid)
        except (OSError, ValueError, IndexError):
            continue  # gone, or another user's
        if holds_tpu(p.pid, globs) if run_id == "-" else p.env.get(RUN_ID_VARIABLE.encode()) == want:
            procs.append(p)
    return sorted(procs, key=lambda p: p.pid)


def main(argv):
    run_id, log, timeout_ms, native = argv[1], argv[2], int(argv[3]), argv[4] == "1"
    uid = os.getuid()
    signum = signal.SIGRTMIN + STACKS_SIGNAL_OFFSET
    timeout_s = timeout_ms / 1000.0
    procs = own_processes(run_id, uid, argv[5:])
    ready = []
    for p in procs:
        p.why = reason(p, signum)
        if native and py_spy(p, timeout_s):
            continue
        if not p.why:
            ready.append(p)
    take_dumps(ready, signum, uid, timeout_s)
    line, age = last_line(log) if log != "-" else (None, None)
    doc = {"processes": [p.json() for p in procs], "last_line": line, "last_line_age_s": age}
    sys.stdout.write(STACKS_HEADER + "\n" + json.dumps(doc) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
