# tpurun's bootstrap in a job's Python (docs/stacks.md): launch.sh writes
# this file into the run's dir on the worker and puts that dir first on the
# job's PYTHONPATH, as ddtrace-run does. Python's site module imports it at
# start-up (not under -I, -S or -E); it then:
#   - registers faulthandler for one real-time signal (SIGRTMIN +
#     STACKS_SIGNAL_OFFSET), every thread's stack dumped into
#     $TPURUN_STACKS_DIR/<pid>-<start time>.txt: worker/stacks.py sends that
#     signal and reads the dump. faulthandler writes from the signal handler
#     itself, so a main thread stuck in C code still answers; the job's own
#     handlers (SIGUSR1, SIGUSR2, any other) are never called by a capture;
#   - notes each thread's name in <pid>-<start time>.names once started
#     (faulthandler prints thread ids only);
#   - imports the sitecustomize that would otherwise have run (Debian's and
#     Ubuntu's python3 ship one).
# Nothing here may break the job: any failure leaves the job as it was.
# tpurun-embed: tokens
import os
import sys

_kept = {}


def _start_time():
    """The process's start time (field 22 of /proc/self/stat): with the pid,
    names this process and no later one that gets its pid."""
    with open("/proc/self/stat", "rb") as f:
        data = f.read()
    return data[data.rindex(b")") + 2:].split()[19].decode()


def _open_append(path):
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def _note_thread(ident, name):
    fd = _kept.get("names")
    if fd is not None:
        try:
            os.write(fd, ("%d %s\n" % (ident, name.replace("\n", " "))).encode("utf-8", "replace"))
        except OSError:
            pass


def _register():
    """This process's dump file and names file, and the signal's handler."""
    import faulthandler
    import signal
    import threading
    base = os.path.join(os.environ[STACKS_DIR_VARIABLE], "%d-%s" % (os.getpid(), _start_time()))
    for key in ("dump", "names"):
        old = _kept.pop(key, None)
        if old is not None:
            os.close(old)
    _kept["names"] = _open_append(base + ".names")
    _kept["dump"] = _open_append(base + ".txt")
    faulthandler.register(signal.SIGRTMIN + STACKS_SIGNAL_OFFSET, file=_kept["dump"], all_threads=True, chain=False)
    current = threading.current_thread()
    _note_thread(threading.get_ident(), current.name)


def _install():
    import signal
    import threading
    if signal.getsignal(signal.SIGRTMIN + STACKS_SIGNAL_OFFSET) != signal.SIG_DFL:
        return  # the signal is someone else's: no capture in this process
    _register()
    start = threading.Thread.start

    def _start(self):
        # Noted by the starting thread once the new one has its ident: no
        # frame of tpurun's in the new thread's stack.
        start(self)
        _note_thread(self.ident, self.name)
    threading.Thread.start = _start
    # A forked child (multiprocessing) dumps into files of its own pid.
    os.register_at_fork(after_in_child=_register)


def _chain():
    """The sitecustomize that this one stands in front of, run as itself."""
    import importlib.machinery
    import importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


if os.environ.get(STACKS_DIR_VARIABLE):
    try:
        _install()
    except Exception:
        pass
_chain()
