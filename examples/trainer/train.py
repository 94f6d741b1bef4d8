#!/usr/bin/env python3
"""A fake JAX trainer that claims the TPU the way libtpu does.

Standard library only. On a fakepod worker (or a real TPU VM) it:
  1. opens /tmp/libtpu_lockfile (O_RDWR|O_CREAT, 0600) and holds lockf(F_TLOCK)
     on it for its lifetime, writing its pid into it (like libtpu);
  2. opens every TPU device file (/dev/accel*, else /dev/vfio/*) read-write and
     keeps them open (that open handle is what `lsof /dev/accel0` and tpu-info
     see); a device already held by another process fails to open, as on a
     real TPU;
  3. writes a log under /tmp/tpu_logs (noisy but harmless when another user
     owns that directory);
  4. prints "worker <id> step <k> loss <x>" every --step-time seconds;
  5. on a normal exit (or SIGTERM) closes the devices and deletes the lockfile.
     SIGKILL leaves the lockfile behind, just like a killed JAX job.
While it holds the TPU it also serves libtpu's runtime metrics (gRPC, on
127.0.0.1:8431) the way tpu-info reads them, when python3-grpcio is installed:
see libtpu_metrics.py. Asked to (--profiler-port, as a JAX program calls
jax.profiler.start_server(PORT)), it serves the profiler's Profile call too,
writing traces of its own steps: see profiler_server.py. Those parts alone are
not standard library, and are optional.
"""
import argparse
import errno
import fcntl
import glob
import math
import os
import pwd
import random
import re
import signal
import socket
import struct
import sys
import threading
import time

LOCKFILE = "/tmp/libtpu_lockfile"
LOGDIR = "/tmp/tpu_logs"

OTHER_USER_MSG = (
    'The TPU is already in use by another process probably owned by another user. '
    'Run "$ sudo lsof -w /dev/accel0" to figure out which process is using the TPU. '
    'If you still get this message, run "$ sudo rm /tmp/libtpu_lockfile".')


def worker_id():
    return os.environ.get("TPU_WORKER_ID") or os.environ.get("TPURUN_WORKER") or "0"


def username():
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def abort(msg, code=1):
    """libtpu's failure as JAX reports it, then exit."""
    sys.stderr.write(
        "jaxlib.xla_extension.XlaRuntimeError: ABORTED: %s\n"
        "RuntimeError: Unable to initialize backend 'tpu': ABORTED: %s "
        "(set JAX_PLATFORMS='' to automatically choose an available backend)\n" % (msg, msg))
    sys.stderr.flush()
    sys.exit(code)


def natural_key(path):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path)]


def find_devices():
    """TPU device files: /dev/accel* (v2-v4), else /dev/vfio/<n> + /dev/vfio/vfio (v5e+)."""
    accel = sorted(glob.glob("/dev/accel*"), key=natural_key)
    if accel:
        return accel, accel
    groups = sorted(glob.glob("/dev/vfio/[0-9]*"), key=natural_key)
    extra = ["/dev/vfio/vfio"] if groups and os.path.exists("/dev/vfio/vfio") else []
    return groups, groups + extra


def lock_holder_pid(fd):
    """pid holding the lockf lock (F_GETLK), else the pid written in the file."""
    try:
        # struct flock on Linux/x86_64 and aarch64: short, short, off_t, off_t, pid_t (+pad)
        req = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
        res = fcntl.fcntl(fd, fcntl.F_GETLK, req)
        l_type, _, _, _, pid = struct.unpack("hhqqi4x", res)
        if l_type != fcntl.F_UNLCK and pid > 0:
            return pid
    except OSError:
        pass
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 64).decode(errors="replace").strip()
        if text.isdigit():
            return int(text)
    except OSError:
        pass
    return 0


def take_lockfile():
    try:
        fd = os.open(LOCKFILE, os.O_RDWR | os.O_CREAT, 0o600)
    except PermissionError:
        abort(OTHER_USER_MSG)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno not in (errno.EACCES, errno.EAGAIN):
            raise
        pid = lock_holder_pid(fd)
        abort("The TPU is already in use by process with pid %d. "
              "Not attempting to load libtpu.so in this process." % pid)
    os.ftruncate(fd, 0)
    os.pwrite(fd, b"%d\n" % os.getpid(), 0)
    return fd


def release_lockfile(lock_fd):
    if lock_fd is None:
        return
    try:
        # Only delete the file if it is still ours (root may have removed it and
        # another job may have created a new one).
        if os.fstat(lock_fd).st_ino == os.stat(LOCKFILE).st_ino:
            os.unlink(LOCKFILE)
    except OSError:
        pass
    os.close(lock_fd)


def open_devices(paths):
    """Open every device read-write; a device another process holds is 'busy'.

    A real /dev/accel* can be opened by one process at a time. The simulator's
    devices are plain files, so an exclusive flock() stands in for that; flock
    locks belong to the open file, so forked children that inherit the fds keep
    the device busy even after the parent dies.
    """
    fds = []
    for p in paths:
        try:
            fd = os.open(p, os.O_RDWR)
        except OSError as e:
            for f in fds:
                os.close(f)
            return None, "TPU initialization failed: open(%s): %s" % (p, e.strerror)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            for f in fds:
                os.close(f)
            return None, "TPU initialization failed: open(%s): Operation not permitted" % p
        fds.append(fd)
    return fds, None


def open_log():
    """/tmp/tpu_logs like libtpu: another user's directory only makes noise."""
    name = "%s/tpu_driver.%s.%s.log.INFO.%s.%d" % (
        LOGDIR, socket.gethostname(), username(), time.strftime("%Y%m%d-%H%M%S"), os.getpid())
    try:
        os.makedirs(LOGDIR, exist_ok=True)
        return open(name, "a", buffering=1)
    except OSError as e:
        if e.errno in (errno.EACCES, errno.EPERM):
            for _ in range(3):
                sys.stderr.write("Could not open the log file '%s': Permission denied\n"
                                 "Could not open any log file.\n" % name)
            sys.stderr.flush()
            return None
        raise


class Stop(Exception):
    pass


def chip_device_ids(chips):
    """libtpu's device ids: /dev/accelN is device N; /dev/vfio/<group> chips
    are numbered 0.. in order (the group is an IOMMU number, not an id)."""
    ids = []
    for i, path in enumerate(chips):
        m = re.match(r"/dev/accel(\d+)$", path)
        ids.append(int(m.group(1)) if m else i)
    return ids


def import_beside():
    """The trainer's optional modules sit beside it."""
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    sys.dont_write_bytecode = True  # no __pycache__ left in the user's project


def start_metrics(args, chips, log):
    """Imported here: only a trainer that serves metrics needs grpcio."""
    import_beside()
    try:
        import libtpu_metrics
    except ImportError as e:
        if log:
            log.write("metrics: not served (%s)\n" % e)
        return None, []
    kind = "accel" if chips[0].startswith("/dev/accel") else "vfio"
    runtime = libtpu_metrics.FakeRuntime(chip_device_ids(chips), kind, args.hbm_fraction, args.duty_cycle)
    return runtime, (libtpu_metrics, libtpu_metrics.start(args.metrics_addr, runtime, log))


def profiler_addr(value):
    """--profiler-port: PORT binds [::]:PORT, every address of the host, as
    jax.profiler.start_server(PORT) does (tsl profiler_server.cc); HOST:PORT
    binds that address only."""
    return value if ":" in value else "[::]:" + value


def start_profiler(args, log):
    """The profiler server, started in the background (importing grpc takes
    ~0.1 s), and the timeline of this trainer's steps it traces; (None, None)
    when profiler_server.py is missing."""
    import_beside()
    try:
        import profiler_server
    except ImportError as e:
        if log:
            log.write("profiler: not served (%s)\n" % e)
        return None, None
    server = profiler_server.ProfilerServer(profiler_server.Timeline(), log)

    def serve():
        try:
            server.start(profiler_addr(args.profiler_port))
        except ImportError as e:
            server.note("profiler: not served (%s; install python3-grpcio and python3-protobuf)" % e)
    threading.Thread(target=serve, daemon=True).start()
    return server, server.timeline


def mark(timeline, name, **stats):
    """What the main thread does from now on, for the profiler's traces."""
    if timeline is not None:
        timeline.begin(name, **stats)


def set_phase(runtime, phase):
    if runtime is not None:
        runtime.phase = phase


def stop_metrics(metrics):
    if metrics:
        module, started = metrics
        module.stop(started)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--step-time", type=float, default=0.5)
    ap.add_argument("--exit-code", type=int, default=0)
    ap.add_argument("--ignore-sigterm", action="store_true",
                    help="ignore SIGTERM (only SIGKILL stops it)")
    ap.add_argument("--children", type=int, default=0,
                    help="fork K children that hold the TPU devices too (like multiprocessing/Ray)")
    ap.add_argument("--forever", action="store_true", help="run until killed")
    ap.add_argument("--stall", action="store_true",
                    help="after compiling, hang: hold the TPU at 0%% duty cycle, print nothing, until killed")
    ap.add_argument("--hang", action="store_true",
                    help="after compiling, hang like a multi-host job (hang.py): every worker in a collective, "
                         "the --hang-odd one in a checkpoint write; 0%% duty cycle, nothing printed")
    ap.add_argument("--hang-odd", default="-1", metavar="WORKER",
                    help="with --hang: the worker stuck in a checkpoint write (default: none)")
    ap.add_argument("--loader-thread", action="store_true", help="a background data-loader thread (hang.py)")
    ap.add_argument("--usr-handlers", action="store_true",
                    help="install SIGUSR1/SIGUSR2 handlers that print a line when called")
    ap.add_argument("--compile-time", type=float, default=0.0,
                    help="seconds of 'compiling' before the first step (which also counts as compiling)")
    ap.add_argument("--compile-until", metavar="FILE",
                    help="stay 'compiling' until FILE exists (after --compile-time): a test ends the "
                         "phase once it has seen it, instead of betting on a clock")
    ap.add_argument("--duty-cycle", type=float, default=87.5,
                    help="the duty cycle %% the metrics service reports while training")
    ap.add_argument("--hbm-fraction", type=float, default=0.62,
                    help="the share of each chip's HBM in use once compiled")
    ap.add_argument("--metrics-addr", default="127.0.0.1:8431",
                    help="where to serve libtpu's metrics service ('none': not at all)")
    ap.add_argument("--profiler-port", metavar="PORT|HOST:PORT",
                    default=os.environ.get("FAKE_TRAINER_PROFILER_PORT", "none"),
                    help="serve the profiler's Profile call like jax.profiler.start_server(PORT): "
                         "PORT on every address, HOST:PORT on one ('none', the default: not at all; "
                         "env FAKE_TRAINER_PROFILER_PORT)")
    args = ap.parse_args()

    wid = worker_id()
    if args.usr_handlers:
        def on_usr(signum, frame):
            print("fake-trainer: worker %s got %s" % (wid, signal.Signals(signum).name), flush=True)
        signal.signal(signal.SIGUSR1, on_usr)
        signal.signal(signal.SIGUSR2, on_usr)
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    lock_fd = take_lockfile()
    if not args.ignore_sigterm:
        def on_term(signum, frame):
            # Once: GNU timeout (and a kill of the process group) can deliver TERM
            # twice, and a second Stop raised inside the shutdown would lose it.
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            raise Stop()
        signal.signal(signal.SIGTERM, on_term)
    dev_fds = None
    log = None
    code = args.exit_code
    children = []
    runtime = None
    metrics = []
    profiler, timeline = None, None
    try:
        chips, paths = find_devices()
        if not chips:
            release_lockfile(lock_fd)
            lock_fd = None
            abort("TPU initialization failed: no TPU devices found (/dev/accel*, /dev/vfio/*)")
        dev_fds, err = open_devices(paths)
        if err:
            release_lockfile(lock_fd)
            lock_fd = None
            abort(err)
        log = open_log()
        print("fake-trainer: worker %s pid %d user %s host %s holds %s" % (
            wid, os.getpid(), username(), socket.gethostname(), " ".join(paths)), flush=True)
        if log:
            log.write("pid %d started, devices %s\n" % (os.getpid(), " ".join(paths)))

        for k in range(args.children):
            pid = os.fork()
            if pid == 0:
                # Same process group and session as the parent. Inherit the device
                # fds and also open the chips again, then sleep until killed.
                try:
                    signal.signal(signal.SIGTERM, signal.SIG_IGN if args.ignore_sigterm
                                  else signal.SIG_DFL)
                    os.close(lock_fd)  # the lockf lock stays the parent's alone
                    mine = [os.open(p, os.O_RDWR) for p in paths]
                    print("fake-trainer: worker %s child %d pid %d holds %s" % (
                        wid, k, os.getpid(), " ".join(paths)), flush=True)
                    while True:
                        signal.pause()
                finally:
                    os._exit(0)
            children.append(pid)

        # Like libtpu, serve the metrics once the TPU is ours (after the fork:
        # the children must not inherit gRPC's threads).
        if args.metrics_addr != "none":
            runtime, metrics = start_metrics(args, chips, log)
        if args.profiler_port != "none":
            profiler, timeline = start_profiler(args, log)

        rng = random.Random(int(wid) if wid.isdigit() else 0)
        mark(timeline, "compile")
        if args.compile_time > 0:
            time.sleep(args.compile_time)
        while args.compile_until and not os.path.exists(args.compile_until):
            time.sleep(0.05)
        if args.loader_thread or args.hang:
            import_beside()
            import hang
            if args.loader_thread:
                hang.start_loader()
        if args.hang:
            set_phase(runtime, "stalled")
            hang.hang(wid, args.hang_odd)
        if args.stall:
            mark(timeline, "train", step_num=1)
            time.sleep(args.step_time)
            set_phase(runtime, "stalled")
            mark(timeline, "stalled in collective")
            while True:
                time.sleep(3600)
        k = 0
        while args.forever or k < args.steps:
            # As jax.profiler.StepTraceAnnotation("train", step_num=k) marks a step.
            mark(timeline, "train", step_num=k + 1)
            time.sleep(args.step_time)
            k += 1
            if k == 1:
                set_phase(runtime, "training")
            loss = 2.5 * math.exp(-0.05 * k) + 0.01 * rng.random()
            line = "worker %s step %d loss %.4f" % (wid, k, loss)
            print(line, flush=True)
            if log:
                log.write(line + "\n")
        print("fake-trainer: worker %s done, exit %d" % (wid, code), flush=True)
    except Stop:
        print("fake-trainer: worker %s got SIGTERM, shutting down" % wid, flush=True)
        code = 143
    except KeyboardInterrupt:
        code = 130
    finally:
        stop_metrics(metrics)
        if profiler is not None:
            profiler.stop()
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
        for fd in dev_fds or []:
            os.close(fd)
        release_lockfile(lock_fd)
        if log:
            log.close()
    sys.stdout.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
