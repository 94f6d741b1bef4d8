"""The pod's shared "NFS" dir ($FAKEPOD_NFS), in one of two modes chosen by
FAKEPOD_NFS_MODE at `fakepod up` (docs/simulator.md, "The shared mount"):

  bind  (default) $FAKEPOD_NFS is a plain directory of the host; a worker's
        `mount -t fakenfs` binds it. One dentry cache, one page cache and
        inotify for every "host": none of NFS's inconvenient parts.
  fuse  NFS-like: the server's export is $STATE/nfs-server; the dev VM (the
        host) mounts its own client of it at $FAKEPOD_NFS, and each worker's
        `mount -t fakenfs` mounts the worker's own client at the same path
        (sim/nfs, docs/simulator-nfs.md): per-client attribute and lookup
        caches, close-to-open, delayed writeback, AUTH_SYS, root_squash.

The mode, the export and the clients' options (FAKEPOD_NFS_OPTIONS, flags of
`python3 -m sim.nfs.mount`, e.g. "--no-root-squash") are recorded in
$STATE/nfs.env, which worker init (workers.INIT_SH) and the client adapter
(nfsclient.py) read.
"""
import os
import shlex
import signal
import subprocess
import time

from . import procs

# none: no shared mount at all (the workers keep their own disks; tpurun
# copies code to each and mirrors logs back): the pod config has no roots.
MODES = ("bind", "fuse", "none")
FSTYPE = "fuse.simnfs"


def export_dir(env, mode):
    """Where the files are, as the NFS server has them."""
    return env.nfs if mode == "bind" else env.path("nfs-server")


def settings(env):
    """The recorded {"mode", "export", "options", "client"} (bind mode before the first up)."""
    return read_settings(env.state, env.nfs)


def read_settings(state, nfs):
    out = {}
    try:
        with open(os.path.join(state, "nfs.env")) as f:
            for line in f:
                key, eq, value = line.strip().partition("=")
                if eq and not key.startswith("#"):
                    words = shlex.split(value)
                    out[key] = words[0] if words else ""
    except OSError:
        pass
    return {"mode": out.get("FP_NFS_MODE", "bind"), "export": out.get("FP_NFS_EXPORT", nfs),
            "options": out.get("FP_NFS_OPTIONS", ""), "client": out.get("FP_NFS_CLIENT", "")}


def recorded_mode(env):
    return settings(env)["mode"]


def write_settings(env, mode, options, client):
    """$STATE/nfs.env (sourced by init.sh, so shell-quoted)."""
    text = ("# fakepod: the shared mount's mode (FAKEPOD_NFS_MODE at up; see sim/fakepod/nfsmode.py)\n"
            "FP_NFS_MODE=%s\nFP_NFS_EXPORT=%s\nFP_NFS_OPTIONS=%s\nFP_NFS_CLIENT=%s\n"
            % (mode, shlex.quote(export_dir(env, mode)), shlex.quote(options), shlex.quote(client)))
    try:
        with open(env.path("nfs.env")) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    procs.write_file(env.path("nfs.env"), text, 0o644)


def client_program(env, mode, client):
    """What mount.fakenfs runs instead of a bind ("" for a bind)."""
    if client:
        return client
    return env.path("lib", "mount.simnfs") if mode == "fuse" else ""


def make_roots(env, mode):
    """The shared roots, made on the export as root: what an admin does on the
    NFS server (or through a no_root_squash client). Under root_squash root
    cannot make root-owned dirs through a client; users then see staging/ and
    logs/ owned by root, mode 1777, like /tmp."""
    top = export_dir(env, mode)
    os.makedirs(top, exist_ok=True)
    for d in ("staging", "logs"):
        p = os.path.join(top, d)
        if not os.path.isdir(p):
            os.makedirs(p, exist_ok=True)
        st = os.lstat(p)
        if st.st_mode & 0o7777 != 0o1777 or st.st_uid != 0:
            os.chown(p, 0, 0)
            os.chmod(p, 0o1777)
    os.chmod(top, 0o755)
    if not host_mounts(env):
        os.makedirs(env.nfs, exist_ok=True)  # the dev VM's mount point


# ------------------------------------------------------------ the dev VM's client

def _unescape(field):
    import re
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def host_mounts(env):
    """The fuse.simnfs mounts at $FAKEPOD_NFS in this mount namespace (their mount ids)."""
    out = []
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                fields = left.split()
                if len(fields) >= 5 and _unescape(fields[4]) == env.nfs and right.startswith(FSTYPE + " "):
                    out.append(fields[0])
    except OSError:
        pass
    return out


def host_daemon(env):
    pid = procs.read_pid(env.path("nfs-host.pid"))
    if pid and procs.alive(pid) and "simnfs_main.py" in (procs.cmdline(pid) or ""):
        return pid
    return None


def host_ok(env):
    return bool(host_mounts(env)) and host_daemon(env) is not None


def mount_host(env):
    """Mounts the dev VM's client at $FAKEPOD_NFS (replacing a broken one)."""
    if host_mounts(env) or host_daemon(env):
        unmount_host(env)
    r = subprocess.run(["/usr/bin/python3", "-E", "-s", env.path("lib", "simnfs_main.py"), "--host",
                        "fakenfs:/", env.nfs], stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if r.returncode != 0 or not host_ok(env):
        raise RuntimeError("the dev VM's NFS client did not mount at %s: %s (see %s)"
                           % (env.nfs, (r.stderr or r.stdout).strip() or "exit %d" % r.returncode,
                              env.path("nfs-host.log")))


def unmount_host(env, timeout=10.0):
    """Unmounts the dev VM's client (lazily if it is busy) and waits for its
    daemon to exit (it exits when its mount is gone; SIGTERM, then SIGKILL,
    if it does not). Copies of the mount in namespaces made while it was
    mounted then answer ENOTCONN."""
    for _ in range(len(host_mounts(env)) + 1):
        if not host_mounts(env):
            break
        if subprocess.run(["umount", env.nfs], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", env.nfs], capture_output=True)
    pid = host_daemon(env)
    if pid:
        was = procs.cmdline(pid)
        t0 = time.monotonic()
        termed = False
        while procs.alive(pid, was):
            waited = time.monotonic() - t0
            if waited > 3 and not termed:  # it checks its mount every 2 s
                try:
                    os.kill(pid, signal.SIGTERM)
                except OSError:
                    pass
                termed = True
            if waited > timeout:
                procs.kill_and_wait([(pid, was)])
                break
            time.sleep(0.05)
    try:
        os.unlink(env.path("nfs-host.pid"))
    except FileNotFoundError:
        pass
