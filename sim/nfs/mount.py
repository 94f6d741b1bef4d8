"""Mounts one NFSv3-like client of an export (see docs/simulator-nfs.md).

    /usr/bin/python3 -m sim.nfs.mount --export DIR --mountpoint MP [options]

It returns once the mount is ready, leaving the daemon behind (or stays in the
foreground with --foreground). Unmount with `umount MP` (or fusermount3 -u);
the daemon then exits. Run it inside a worker's mount and PID namespaces
(nsenter -t PID -m -p) to give that worker its own client.
"""
import argparse
import json
import logging
import os
import re
import signal
import sys

from .attrcache import Timeouts


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="python3 -m sim.nfs.mount",
        description="Mount one NFSv3-like FUSE client of a shared export directory.")
    p.add_argument("--export", required=True, help="the backing directory (the server's export)")
    p.add_argument("--mountpoint", required=True, help="where this client mounts it")
    t = p.add_argument_group("client caching (nfs(5) names and defaults)")
    t.add_argument("--acregmin", type=float, default=3.0, help="seconds (default 3)")
    t.add_argument("--acregmax", type=float, default=60.0, help="seconds (default 60)")
    t.add_argument("--acdirmin", type=float, default=30.0, help="seconds (default 30)")
    t.add_argument("--acdirmax", type=float, default=60.0, help="seconds (default 60)")
    t.add_argument("--actimeo", type=float, help="sets all four")
    t.add_argument("--noac", action="store_true", help="no attribute caching (actimeo=0)")
    t.add_argument("--lookupcache", choices=["all", "positive", "none"], default="all",
                   help="which lookups are cached until the directory changes (default all)")
    t.add_argument("--nocto", action="store_true", help="no close-to-open revalidation")
    t.add_argument("--writeback", type=float, default=30.0,
                   help="seconds dirty data stays on this client before it is written back "
                        "(vm.dirty_expire_centisecs; default 30)")
    s = p.add_argument_group("server (export options)")
    s.add_argument("--no-root-squash", action="store_true", help="root stays root (default: squashed)")
    s.add_argument("--anonuid", type=int, default=65534)
    s.add_argument("--anongid", type=int, default=65534)
    p.add_argument("--fd-cache", type=int, default=4096,
                   help="O_PATH fds kept open (others are reopened by file handle; default 4096)")
    p.add_argument("--stats", help="on SIGUSR1, write the requests served so far, by kind, "
                                   "to this file (JSON)")
    p.add_argument("--pidfile", help="the daemon writes its pid here once the mount is ready")
    p.add_argument("--foreground", action="store_true", help="stay attached; Ctrl-C unmounts")
    p.add_argument("--log", help="append the daemon's log here (default: stderr, then nothing)")
    p.add_argument("--debug", action="store_true")
    a = p.parse_args(argv)
    if a.actimeo is not None:
        a.acregmin = a.acregmax = a.acdirmin = a.acdirmax = a.actimeo
    if a.noac:
        a.acregmin = a.acregmax = a.acdirmin = a.acdirmax = 0.0
    return a


def options_from(a):
    from .fs import Options
    return Options(
        timeouts=Timeouts(a.acregmin, a.acregmax, a.acdirmin, a.acdirmax),
        lookupcache=a.lookupcache,
        cto=not a.nocto,
        writeback=a.writeback,
        root_squash=not a.no_root_squash,
        anonuid=a.anonuid,
        anongid=a.anongid,
        fd_cache=max(2, a.fd_cache),
    )


def check_setup(a):
    """Clear errors for what would otherwise fail obscurely. Returns a message or None."""
    if os.geteuid() != 0:
        return "must run as root (it mounts with allow_other and acts as each caller)"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse here"
    if not os.path.isdir(a.export):
        return f"the export {a.export} is not a directory"
    if not os.path.isdir(a.mountpoint):
        return f"the mountpoint {a.mountpoint} is not a directory"
    if os.path.realpath(a.export) == os.path.realpath(a.mountpoint):
        return "the export and the mountpoint must differ"
    try:
        if os.readlink("/proc/self") != str(os.getpid()):
            raise OSError
    except OSError:
        return ("/proc is not this PID namespace's: enter the worker's PID namespace too "
                "(nsenter -t PID -m -p), or the daemon cannot read its callers' groups")
    return None


def raise_fd_limit():
    """As many fds as allowed: the fd pool (--fd-cache) plus every file the
    callers hold open. Above the hard limit needs CAP_SYS_RESOURCE, which a
    container may lack; then the soft limit goes up to the hard one."""
    import resource
    try:
        with open("/proc/sys/fs/nr_open") as f:
            ceiling = int(f.read())
    except (OSError, ValueError):
        ceiling = 1 << 20
    want = min(ceiling, 1 << 20)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), max(hard, want)))
    except (OSError, ValueError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _unescape(field):
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def our_mount(mountpoint):
    """The "major:minor" of the simnfs mount at `mountpoint` in this mount namespace, or None."""
    target = os.path.abspath(mountpoint)
    found = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields = left.split()
            if len(fields) >= 5 and _unescape(fields[4]) == target and right.startswith("fuse.simnfs "):
                found = fields[2]  # the newest mount on that path wins
    return found


async def watch_mount(mountpoint, device, pyfuse3, trio):
    """Exits when our mount is gone from this namespace.

    umount ends a FUSE connection only when the last copy of the mount goes,
    and a worker namespace made while this mount existed holds a copy. Then
    the daemon would linger; instead it exits, and stray copies answer ENOTCONN.
    """
    while True:
        await trio.sleep(2)
        if our_mount(mountpoint) != device:
            pyfuse3.terminate()
            return


def serve(a, ready_fd=None):
    import pyfuse3
    import trio

    from .fs import NfsClient

    raise_fd_limit()

    ops = NfsClient(a.export, options_from(a))
    opts = set(pyfuse3.default_options)  # default_permissions: see fs.py
    opts |= {"allow_other", "fsname=" + os.path.abspath(a.export), "subtype=simnfs"}
    os.umask(0)  # modes arrive with the caller's umask already applied
    pyfuse3.init(ops, a.mountpoint, opts)
    device = our_mount(a.mountpoint)
    if a.pidfile:
        with open(os.open(a.pidfile + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), "w") as f:
            f.write("%d\n" % os.getpid())
        os.replace(a.pidfile + ".tmp", a.pidfile)
    if ready_fd is not None:
        os.write(ready_fd, b"ok")
        os.close(ready_fd)
        # Let go of the caller's stdio: whoever waits for its EOF (a pipe in a
        # test, ssh) must not wait for this daemon.
        sink = os.open(a.log or os.devnull, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(sink, 1)
        os.dup2(sink, 2)
        os.close(null)
        os.close(sink)

    async def main():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ops.writeback_loop)
            if device is not None:
                nursery.start_soon(watch_mount, a.mountpoint, device, pyfuse3, trio)
            await pyfuse3.main(min_tasks=2, max_tasks=16)
            nursery.cancel_scope.cancel()

    def stop(signum, frame):
        pyfuse3.terminate()

    def dump_stats(signum, frame):
        if not a.stats:
            return
        from .creds import ROOT
        saved = ops.ident.current
        ops.ident.become(ROOT)
        try:
            with open(a.stats + ".tmp", "w") as f:
                json.dump(dict(ops.counts), f, sort_keys=True)
            os.replace(a.stats + ".tmp", a.stats)
        finally:
            if saved is not None:
                from .creds import Creds
                ops.ident.become(Creds(*saved))

    signal.signal(signal.SIGUSR1, dump_stats)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        trio.run(main)
    finally:
        from .creds import ROOT
        ops.ident.become(ROOT)  # the daemon's own files, from here on, as itself
        for node in list(ops.nodes.values()):
            try:
                ops._flush_dirty(node)
            except OSError:
                pass
        pyfuse3.close(unmount=device is not None and our_mount(a.mountpoint) == device)


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    problem = check_setup(a)
    if problem:
        print(f"sim.nfs.mount: {problem}", file=sys.stderr)
        return 2
    level = logging.DEBUG if a.debug else logging.INFO
    fmt = "%(asctime)s sim.nfs[%(process)d] %(levelname)s %(message)s"
    if a.foreground:
        logging.basicConfig(level=level, format=fmt, filename=a.log)
        serve(a)
        return 0
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid > 0:
        os.close(write_end)
        answer = os.read(read_end, 2)
        if answer == b"ok":
            return 0
        _, status = os.waitpid(pid, 0)
        print(f"sim.nfs.mount: mounting {a.mountpoint} failed (see above)", file=sys.stderr)
        return 1
    os.close(read_end)
    os.setsid()
    logging.basicConfig(level=level, format=fmt, filename=a.log or os.devnull)
    try:
        serve(a, ready_fd=write_end)
    except BaseException as e:  # noqa: BLE001 - reported to the waiting parent via stderr
        print(f"sim.nfs.mount: {e}", file=sys.stderr)
        os._exit(1)
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
