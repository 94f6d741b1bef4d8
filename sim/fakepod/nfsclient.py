"""mount.simnfs: one NFS-like client of a pod in NFS mode (FAKEPOD_NFS_MODE=fuse).

Inside a worker, /sbin/mount.fakenfs runs it (FAKENFS_CLIENT in the image's
/etc/fakepod.env) for `mount -t fakenfs fakenfs:/ DIR [-o OPTIONS]`, so the
worker's client lives in the worker's mount and PID namespaces and dies with
them. `fakepod up` runs it with --host for the dev VM's client. It mounts
sim/nfs (copied to $STATE/lib/simnfs) over the pod's export, with the pod's
FAKEPOD_NFS_OPTIONS and the NFS options of -o that the client models; it
returns once the mount is ready and leaves the daemon behind.

Logs, stats (SIGUSR1) and the daemon's pid: $STATE/nfs-host.{log,stats.json,pid}
for the dev VM, $STATE/w<slot>/nfs.{log,stats.json,pid} for a worker (that pid
is the worker's PID namespace's).
"""
import os
import shlex
import socket
import sys

from . import nfsmode

# nfs(5) options that change what the client does; the rest (vers=3, hard,
# proto=tcp, rw, defaults, _netdev, nolock, ...) do not change the model.
VALUED = ("acregmin", "acregmax", "acdirmin", "acdirmax", "actimeo", "lookupcache")
FLAGS = ("noac", "nocto")


def parse(argv):
    """mount(8)'s helper conventions: SPEC DIR [-sfnv] [-N NS] [-o OPTIONS] [-t TYPE]."""
    host, pos, opts = False, [], []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--host":
            host = True
        elif a == "-o" and i + 1 < len(argv):
            i += 1
            opts += [o for o in argv[i].split(",") if o]
        elif a.startswith("-o") and len(a) > 2:
            opts += [o for o in a[2:].split(",") if o]
        elif a in ("-N", "-t"):
            i += 1
        elif a.startswith("-"):
            pass  # -s -f -n -v
        else:
            pos.append(a)
        i += 1
    return host, pos, opts


def flags_for(opts):
    out = []
    for o in opts:
        key, eq, value = o.partition("=")
        if key in VALUED and eq:
            out += ["--" + key, value]
        elif key in FLAGS and not eq:
            out.append("--" + key)
    return out


def slot_here(state):
    """This worker's slot: the one whose boot.env names our hostname (init
    set it from there, in our own UTS namespace)."""
    name = socket.gethostname()
    for entry in os.listdir(state):
        if entry.startswith("w") and entry[1:].isdigit():
            try:
                with open(os.path.join(state, entry, "boot.env")) as f:
                    if ("FP_HOSTNAME=%s\n" % name) in f.read():
                        return int(entry[1:])
            except OSError:
                continue
    return None


def main(argv):
    lib = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    state = os.path.dirname(lib)
    host, pos, opts = parse(argv)
    if len(pos) != 2:
        sys.stderr.write("usage: mount.simnfs SOURCE DIR [-o OPTIONS]\n")
        return 1
    src, mountpoint = pos[0], os.path.abspath(pos[1])
    if ":/" not in src:
        sys.stderr.write("mount.simnfs: bad source '%s' (want HOST:/PATH)\n" % src)
        return 32
    s = nfsmode.read_settings(state, mountpoint)
    if s["mode"] != "fuse":
        sys.stderr.write("mount.simnfs: the pod at %s is not in NFS mode (FAKEPOD_NFS_MODE=fuse at up)\n" % state)
        return 32
    if host:
        base = os.path.join(state, "nfs-host")
    else:
        slot = slot_here(state)
        if slot is None:
            sys.stderr.write("mount.simnfs: not on a worker of the pod at %s (hostname %s)\n"
                             % (state, socket.gethostname()))
            return 32
        base = os.path.join(state, "w%d" % slot, "nfs")
    sys.path.insert(0, lib)
    from simnfs import mount  # noqa: E402 - the copy of sim/nfs beside us
    os.chdir("/")  # the daemon must not hold the caller's cwd
    args = ["--export", s["export"], "--mountpoint", mountpoint, "--log", base + ".log",
            "--stats", base + ".stats.json", "--pidfile", base + ".pid"]
    return mount.main(args + shlex.split(s["options"]) + flags_for(opts))
