"""AUTH_SYS credentials, squashing, and acting as the caller on the export.

An NFSv3 client sends, with every call, the caller's numeric uid, gid and up
to 16 supplementary gids (AUTH_SYS, RFC 5531 appendix A: `gids<16>`). The
server trusts the numbers and checks permissions with them; names never
cross the wire. knfsd (fs/nfsd/auth.c, nfsd_setuser) maps uid 0 and gid 0
(also inside the group list) to anonuid/anongid (65534) unless the export
says no_root_squash; Filestore exports with root squash by default.

The daemon runs as root and, per request, switches its filesystem identity
(setfsuid/setfsgid/setgroups, per thread, as knfsd does) before touching the
export, so the export's own kernel enforces permissions by number. Dropping
fsuid 0 also drops the filesystem capabilities (CAP_DAC_OVERRIDE, ...).
"""
import ctypes
import os
import platform

AUTH_SYS_MAX_GIDS = 16
NOBODY = 65534

_libc = ctypes.CDLL(None, use_errno=True)
_SYS_SETGROUPS = {"x86_64": 116, "aarch64": 159}.get(platform.machine())


class Creds:
    __slots__ = ("uid", "gid", "groups")

    def __init__(self, uid, gid, groups=()):
        self.uid = uid
        self.gid = gid
        self.groups = tuple(groups)

    def key(self):
        return (self.uid, self.gid, self.groups)

    def __repr__(self):
        return f"Creds(uid={self.uid}, gid={self.gid}, groups={list(self.groups)})"


ROOT = Creds(0, 0, ())


def caller_groups(pid, uid, proc="/proc"):
    """The caller's supplementary groups, read from /proc/PID/status as libfuse's
    fuse_req_getgroups does; () if the process is gone or is not the caller."""
    if pid <= 0:
        return ()
    try:
        with open(f"{proc}/{pid}/status", "rb") as f:
            text = f.read().decode("ascii", "replace")
    except OSError:
        return ()
    groups, uids = (), None
    for line in text.splitlines():
        if line.startswith("Uid:"):
            uids = [int(x) for x in line.split()[1:]]
        elif line.startswith("Groups:"):
            groups = tuple(int(x) for x in line.split()[1:])
    # The fsuid (4th field) is what the request carries; a pid reused by
    # another user's process must not lend us its groups.
    if uids is None or len(uids) < 4 or uids[3] != uid:
        return ()
    return groups


def wire_creds(uid, gid, groups, root_squash=True, anonuid=NOBODY, anongid=NOBODY):
    """What the server acts as: AUTH_SYS (16 groups at most), then squashing."""
    groups = tuple(groups)[:AUTH_SYS_MAX_GIDS]
    if root_squash:
        uid = anonuid if uid == 0 else uid
        gid = anongid if gid == 0 else gid
        groups = tuple(anongid if g == 0 else g for g in groups)
    return Creds(uid, gid, groups)


class Identity:
    """Switches this thread's filesystem identity, remembering the current one."""

    def __init__(self):
        self.current = None

    def become(self, creds):
        key = creds.key()
        if key == self.current:
            return
        # Back to root first: setfsgid and setgroups need CAP_SETGID, which
        # the kernel keeps (only CAP_FS_MASK goes with fsuid != 0).
        _libc.setfsuid(0)
        _set_groups(creds.groups)
        _libc.setfsgid(creds.gid)
        _libc.setfsuid(creds.uid)
        self.current = key


def _set_groups(groups):
    arr = (ctypes.c_uint * max(1, len(groups)))(*groups)
    if _SYS_SETGROUPS is not None:
        # The raw syscall changes this thread only; glibc's setgroups() would
        # signal every thread of the process.
        rc = _libc.syscall(_SYS_SETGROUPS, len(groups), arr)
    else:
        rc = _libc.setgroups(len(groups), arr)
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
