"""The hypervisor: worker slots as namespaces on this machine.

A worker slot s is one TPU VM host. It is a namespace set (mount, PID, UTS and,
unless FAKEPOD_NETNS=0, network) whose PID 1 is $STATE/init.sh. Inside it:
  - /proc, a hostname, a private /tmp (tmpfs 1777) and /dev (tmpfs with the fake
    TPU device files, a devpts instance, /dev/shm);
  - its own "boot disk": /etc is an overlay (the image layer over the host's /etc,
    writes go to $STATE/w<s>/disk/etc), /home, /root and /var/lib/google are
    binds of dirs on that disk. A deleted and created VM gets a fresh disk; a
    stopped and started one keeps it.
  - its own network namespace (netns.py has the forwarder that makes its sshd
    reachable at the slot's address from the host);
  - the guest agent (agent.py, which also serves /dev/log) and sshd.
Everything else (/usr, /var, /srv, ...) is the host's, at the same paths.
"""
import os
import shutil
import signal
import socket
import subprocess
import time

from . import procs

INIT_SH = r"""# fakepod worker init, run as: unshare ... bash $STATE/init.sh SLOT
set -u
slot=$1
STATE=${0%/init.sh}
W=$STATE/w$slot
. "$W/boot.env"
read -r hostpid _ </proc/self/stat # still the host's /proc: our host PID
# No traps: ignored signals would be inherited by sshd and by every job. As PID 1
# of its namespace, init only gets the signals it handles (and SIGKILL).
fail() { echo "init w$slot: $*" >&2; exit 1; }
mount -t proc -o nosuid,nodev,noexec proc /proc || fail "mount /proc"
echo "$FP_HOSTNAME" >/proc/sys/kernel/hostname
if [ "$FP_NETNS" = 1 ]; then
  # Our own loopback: 127.0.0.1 and this VM's address only (no other 127/8
  # address is local here, so another worker's address is unreachable).
  ip -batch - <<EOF || fail "netns setup"
link set lo up
route del local 127.0.0.0/8 dev lo table local
addr add $FP_IP/32 dev lo
EOF
fi
if [ "$FP_DISK" = 1 ]; then
  # The VM's boot disk: /etc as an overlay (image layer, then the host's /etc),
  # /home, /root and /var/lib/google from $W/disk.
  mount -t overlay overlay -o "lowerdir=$STATE/image/etc:/etc,upperdir=$W/disk/etc,workdir=$W/disk/.etc-work" /etc \
    || fail "overlay /etc"
  mount --bind "$W/disk/home" /home || fail "bind /home"
  mount --bind "$W/disk/root" /root || fail "bind /root"
  mount --bind "$W/disk/google" /var/lib/google || fail "bind /var/lib/google"
fi
# The pod's hosts file (every worker's name), so sudo resolves its own host.
mount --bind "$STATE/hosts" /etc/hosts || fail "bind /etc/hosts"
mount -t tmpfs -o mode=1777,nosuid,nodev,size=1g tmpfs /tmp || fail "mount /tmp"
# A private /dev from the template: null, zero, full, random, urandom, tty, ptmx,
# fd, std*, and the fake TPU chips. The host's /dev is never touched.
mount -t tmpfs -o mode=755,nosuid,size=1m tmpfs /dev || fail "mount /dev"
cp -a "$STATE/dev.$FP_DEVICE/." /dev/ || fail "populate /dev"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts /dev/pts || fail "mount devpts"
mount -t tmpfs -o mode=1777,nosuid,nodev,size=64m tmpfs /dev/shm || fail "mount /dev/shm"
if [ "$FP_DISK" = 1 ]; then
  # The shared "NFS" dir: hidden (an empty read-only dir, like an unmounted
  # mount point) until something mounts it; $STATE/nfs-export keeps what
  # mount.fakenfs binds (this namespace only). Boot mounts the fakenfs lines
  # of the VM's /etc/fstab, as systemd would. In NFS mode ($STATE/nfs.env,
  # nfsmode.py) the host's $FP_NFS is the dev VM's own client: this namespace
  # got a copy of it, which goes (this VM mounts its own client).
  FP_NFS_MODE=bind FP_NFS_EXPORT=$FP_NFS
  [ -r "$STATE/nfs.env" ] && . "$STATE/nfs.env"
  if [ "$FP_NFS_MODE" = fuse ]; then
    while awk -v m="$FP_NFS" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo; do
      umount -l "$FP_NFS" || fail "drop the dev VM's client at $FP_NFS"
    done
  fi
  mount --bind "$FP_NFS_EXPORT" "$STATE/nfs-export" || fail "bind export"
  mount -t tmpfs -o ro,mode=755,size=4k tmpfs "$FP_NFS" || fail "hide $FP_NFS"
  rm -f "$W/nfs.pid"
  case $(</etc/fstab) in
    *fakenfs*) mount -a -t fakenfs >>"$W/console.log" 2>&1 || echo "init w$slot: mount -a -t fakenfs failed" >&2 ;;
  esac
fi
cd /
echo "$hostpid" >"$W/init.pid"
# The guest agent (users from metadata ssh-keys, host key guest attribute) and
# the /dev/log sink (a stand-in for journald).
/usr/bin/python3 -E -s -S "$STATE/lib/agent_main.py" "$STATE" "$slot" </dev/null >>"$W/agent.log" 2>&1 &
# sshd -r: no re-exec per connection. The protocol is the same; each
# connection costs a fork instead of an exec that loads sshd and its host key
# again (about 15 ms of CPU, thousands of times a test suite). A new host key
# or config takes effect when sshd starts again, as restart_sshd does.
while :; do
  /usr/sbin/sshd -D -r -f "$W/sshd_config" -E "$W/sshd.log" </dev/null &
  wait $!
  echo "init w$slot: sshd exited ($?), restarting" >&2
  sleep 0.2
done
"""

MOUNT_HELPER = r"""#!/bin/sh
# mount.fakenfs SOURCE TARGET [-o OPTIONS]: what mount(8) runs for
# `mount -t fakenfs fakenfs:/ DIR` on a fakepod worker (see docs/simulator.md).
# The simulator's shared dir stands in for an NFS export: it is bound onto
# DIR. A real NFS-like client can take over: an executable $FAKENFS_CLIENT
# (set in /etc/fakepod.env, the workers' image, from FAKENFS_CLIENT at
# `fakepod up`) is run with the same arguments instead; the export it serves
# is $FAKEPOD_EXPORT (the host's shared dir, seen from inside the worker).
set -e
[ -r /etc/fakepod.env ] && . /etc/fakepod.env
if [ -n "${FAKENFS_CLIENT:-}" ] && [ -x "$FAKENFS_CLIENT" ]; then exec "$FAKENFS_CLIENT" "$@"; fi
if [ -z "${FAKEPOD_STATE:-}" ] || ! mountpoint -q "$FAKEPOD_STATE/nfs-export"; then
  echo "mount.fakenfs: not on a fakepod worker (no $FAKEPOD_STATE/nfs-export)" >&2; exit 32
fi
[ $# -ge 2 ] || { echo "usage: mount.fakenfs SOURCE DIR [-o OPTIONS]" >&2; exit 1; }
src=$1 dir=$2
case $src in *:/*) ;; *) echo "mount.fakenfs: bad source '$src' (want HOST:/PATH)" >&2; exit 32;; esac
exec mount --bind "$FAKEPOD_STATE/nfs-export" "$dir"
"""


def init_cmdline(env, slot):
    return "bash %s %d" % (env.path("init.sh"), slot)


def write_static(env, lib_src):
    """init.sh, the device templates, the mount helper and a copy of this
    package in $STATE/lib (what workers and daemons run)."""
    procs.write_file(env.path("init.sh"), INIT_SH)
    for device in ("accel", "vfio"):
        _dev_template(env, device)
    lib = env.path("lib")
    tmp = lib + ".new"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    shutil.copytree(lib_src, os.path.join(tmp, "fakepod"),
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "tests"))
    # The NFS-like client (sim/nfs) for NFS mode (nfsmode.py, nfsclient.py).
    shutil.copytree(os.path.join(os.path.dirname(lib_src), "nfs"), os.path.join(tmp, "simnfs"),
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "tests"))
    for name in ("agent", "server", "netns"):
        procs.write_file(os.path.join(tmp, "%s_main.py" % name),
                         "import sys\nsys.path.insert(0, %r)\nfrom fakepod import %s\n%s.main(sys.argv[1:])\n"
                         % (lib, name, name))
    procs.write_file(os.path.join(tmp, "simnfs_main.py"),
                     "import sys\nsys.path.insert(0, %r)\nfrom fakepod import nfsclient\n"
                     "sys.exit(nfsclient.main(sys.argv[1:]))\n" % lib)
    # What mount.fakenfs runs in NFS mode ($FAKENFS_CLIENT): site packages on
    # (-s only), for Debian's pyfuse3.
    procs.write_file(os.path.join(tmp, "mount.simnfs"),
                     '#!/bin/sh\nexec /usr/bin/python3 -E -s %s "$@"\n' % os.path.join(lib, "simnfs_main.py"),
                     0o755)
    old = lib + ".old"
    shutil.rmtree(old, ignore_errors=True)
    if os.path.exists(lib):
        os.rename(lib, old)
    os.rename(tmp, lib)
    shutil.rmtree(old, ignore_errors=True)
    os.makedirs(env.path("nfs-export"), mode=0o755, exist_ok=True)
    os.makedirs("/var/lib/google", exist_ok=True)
    helper = "/sbin/mount.fakenfs"
    try:
        with open(helper) as f:
            same = f.read() == MOUNT_HELPER
    except OSError:
        same = False
    if not same:
        procs.write_file(helper, MOUNT_HELPER, 0o755)


def _dev_template(env, device):
    t = env.path("dev.%s.new" % device)
    shutil.rmtree(t, ignore_errors=True)
    for d in ("", "pts", "shm"):
        os.makedirs(os.path.join(t, d), mode=0o755)
    # /dev/fuse as on a real VM's image (Ubuntu has it): NFS mode mounts the
    # worker's own client through it.
    subprocess.run(["cp", "-a", "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
                    "/dev/tty"] + (["/dev/fuse"] if os.path.exists("/dev/fuse") else []) + [t + "/"], check=True)
    os.symlink("pts/ptmx", os.path.join(t, "ptmx"))
    os.symlink("/proc/self/fd", os.path.join(t, "fd"))
    for i, n in enumerate(("stdin", "stdout", "stderr")):
        os.symlink("/proc/self/fd/%d" % i, os.path.join(t, n))
    old = os.umask(0)
    try:
        if device == "vfio":
            os.mkdir(os.path.join(t, "vfio"), 0o755)
            names = ["vfio/0", "vfio/1", "vfio/2", "vfio/3", "vfio/vfio"]
        else:
            names = ["accel0", "accel1", "accel2", "accel3"]
        for n in names:
            with open(os.path.join(t, n), "w"):
                pass
            os.chmod(os.path.join(t, n), 0o666)
    finally:
        os.umask(old)
    final = env.path("dev.%s" % device)
    shutil.rmtree(final, ignore_errors=True)
    os.rename(t, final)


# ------------------------------------------------------------ per slot files

SSHD_CONFIG = """# fakepod worker {slot}
{listen}
HostKey {w}/ssh_host_ed25519_key
PidFile {w}/sshd.pid
UsePAM no
UseDNS no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
AuthorizedKeysFile .ssh/authorized_keys
StrictModes no
MaxStartups 1024
MaxSessions 64
LogLevel ERROR
PrintMotd no
PrintLastLog no
X11Forwarding no
AcceptEnv LANG LC_*
SetEnv TPU_WORKER_ID={worker} TPU_WORKER_HOSTNAMES={hostnames}
Subsystem sftp /usr/lib/openssh/sftp-server
"""


# A worker whose clock is off (NTP broken on one host): every login session
# runs with libfaketime's offset, so `date` and the jobs see the skew; the
# host's clock is untouched. Kept in the slot's clock.skew (seconds).
FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def clock_skew(env, slot):
    try:
        with open(os.path.join(env.wdir(slot), "clock.skew")) as f:
            return int(f.read().strip() or 0)
    except (OSError, ValueError):
        return 0


def skew_env(seconds):
    if not seconds:
        return ""
    return " LD_PRELOAD=%s FAKETIME=%+ds FAKETIME_DONT_FAKE_MONOTONIC=1" % (FAKETIME_LIB, seconds)


def set_clock_skew(env, slot, seconds):
    """Records the skew and rewrites the SetEnv line of the slot's sshd_config
    (the caller restarts sshd)."""
    if seconds and not os.path.exists(FAKETIME_LIB):
        raise RuntimeError("libfaketime is not installed (Debian package faketime)")
    w = env.wdir(slot)
    procs.write_file(os.path.join(w, "clock.skew"), "%d\n" % seconds)
    path = os.path.join(w, "sshd_config")
    with open(path) as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("SetEnv TPU_WORKER_ID="):
            lines[i] = line.split(" LD_PRELOAD=")[0] + skew_env(seconds)
    procs.write_file(path, "\n".join(lines) + "\n")


def write_slot(env, slot, *, hostname, worker, hostnames, device, netns, disk):
    """The slot's boot.env and sshd_config (worker = index in its node,
    hostnames = the node's worker addresses, comma-separated)."""
    w = env.wdir(slot)
    os.makedirs(w, mode=0o755, exist_ok=True)
    ip = env.ip(slot)
    procs.write_file(os.path.join(w, "boot.env"),
                     "FP_HOSTNAME=%s\nFP_IP=%s\nFP_DEVICE=%s\nFP_NETNS=%d\nFP_DISK=%d\nFP_NFS=%s\nFP_WORKER=%d\n"
                     % (hostname, ip, device, int(netns), int(disk), env.nfs, worker))
    listen = "ListenAddress 127.0.0.1:22\nListenAddress %s:22" % ip if netns else "ListenAddress %s:22" % ip
    procs.write_file(os.path.join(w, "sshd_config"),
                     SSHD_CONFIG.format(slot=slot, listen=listen, w=w, worker=worker,
                                        hostnames=hostnames + skew_env(clock_skew(env, slot))))


def new_host_key(env, slot):
    """A fresh ed25519 host key for the slot (a new VM: the real agent makes
    new host keys on an instance's first boot, instance_setup.go)."""
    w = env.wdir(slot)
    key = os.path.join(w, "ssh_host_ed25519_key")
    for p in (key + ".new", key + ".new.pub"):
        if os.path.exists(p):
            os.unlink(p)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "fakepod-w%d" % slot, "-f", key + ".new"],
                   check=True)
    os.replace(key + ".new.pub", key + ".pub")
    os.replace(key + ".new", key)


def host_key_b64(env, slot):
    try:
        with open(os.path.join(env.wdir(slot), "ssh_host_ed25519_key.pub")) as f:
            return f.read().split()[1]
    except (OSError, IndexError):
        return None


def fresh_disk(env, slot):
    """Wipes the slot's boot disk (a new VM)."""
    d = os.path.join(env.wdir(slot), "disk")
    if os.path.exists(d):
        shutil.rmtree(d)
    for sub, mode in (("etc", 0o755), (".etc-work", 0o700), ("home", 0o755), ("root", 0o700), ("google", 0o755)):
        os.makedirs(os.path.join(d, sub), mode=mode)
        os.chmod(os.path.join(d, sub), mode)


def ensure_disk(env, slot):
    d = os.path.join(env.wdir(slot), "disk")
    if not os.path.isdir(os.path.join(d, "etc")):
        fresh_disk(env, slot)


# ------------------------------------------------------------ running slots

def init_pid(env, slot):
    """The host pid of the slot's namespace init, if it is alive."""
    pid = procs.read_pid(os.path.join(env.wdir(slot), "init.pid"))
    if pid and procs.alive(pid, init_cmdline(env, slot)):
        return pid
    return None


def sshd_pid(env, slot, init=None):
    init = init or init_pid(env, slot)
    if not init:
        return None
    try:
        with open("/proc/%d/task/%d/children" % (init, init)) as f:
            kids = f.read().split()
    except OSError:
        return None
    for k in kids:
        cmd = procs.cmdline(int(k)) or ""
        if cmd.startswith(("sshd: /usr/sbin/sshd -D -r -f ", "/usr/sbin/sshd -D -r -f ")):
            return int(k)
    return None


def spawn(env, slot):
    """Starts the slot's namespaces, detached (setsid -f: the unshare process is
    reparented to the host's init, so nobody here has to reap it)."""
    w = env.wdir(slot)
    for f in ("init.pid", "sshd.pid"):
        try:
            os.unlink(os.path.join(w, f))
        except FileNotFoundError:
            pass
    with open(os.path.join(w, "boot.env")) as f:
        netns = "FP_NETNS=1" in f.read()
    flags = ["--mount", "--pid", "--uts"] + (["--net"] if netns else []) + ["--fork", "--propagation", "private"]
    log = open(os.path.join(w, "console.log"), "ab")
    try:
        subprocess.run(["setsid", "-f", "unshare"] + flags + ["bash", env.path("init.sh"), str(slot)],
                       stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd="/", close_fds=True, check=True)
    finally:
        log.close()


def wait_inits(env, slots, timeout=60.0):
    pending = list(slots)
    deadline = time.monotonic() + timeout
    got = {}
    while pending:
        left = []
        for s in pending:
            pid = init_pid(env, s)
            if pid:
                got[s] = pid
                ns = procs.pidns(pid)
                if ns:
                    procs.write_file(os.path.join(env.wdir(s), "pidns"), ns + "\n")
            else:
                left.append(s)
        pending = left
        if not pending:
            break
        if time.monotonic() > deadline:
            tails = []
            for s in pending:
                try:
                    with open(os.path.join(env.wdir(s), "console.log"), errors="replace") as f:
                        tails.append("w%d: %s" % (s, "".join(f.readlines()[-5:])))
                except OSError:
                    pass
            raise RuntimeError("workers did not start: %s\n%s" % (" ".join(map(str, pending)), "\n".join(tails)))
        time.sleep(0.02)
    return got


def kill(env, slots):
    """SIGKILLs the slots' namespace inits: the kernel then kills every process
    inside (sshd, sessions, detached jobs, the agent). Waits until they are gone."""
    pairs = []
    for s in slots:
        pid = init_pid(env, s)
        if pid:
            pairs.append((pid, init_cmdline(env, s)))
    procs.kill_and_wait(pairs)
    # The namespace's other processes die with their init, asynchronously:
    # wait until none is left, so that the slot's address and files are free.
    nss = set()
    for s in slots:
        try:
            with open(os.path.join(env.wdir(s), "pidns")) as f:
                nss.add(f.read().strip())
        except OSError:
            pass
    if nss:
        procs.kill_until_gone(
            lambda: [p for p in procs.all_pids() if procs.pidns(p) in nss and not procs.is_zombie(p)], 30.0, 0.02)
    for s in slots:
        for f in ("init.pid", "sshd.pid", "pidns"):
            try:
                os.unlink(os.path.join(env.wdir(s), f))
            except FileNotFoundError:
                pass


def leftover_pids(env, extra_cmd_prefixes=()):
    """Host pids left from this state dir: processes in a recorded worker PID
    namespace, and inits started from it."""
    nss = set()
    try:
        names = os.listdir(env.state)
    except OSError:
        names = []
    for name in names:
        if name.startswith("w") and name[1:].isdigit():
            try:
                with open(os.path.join(env.state, name, "pidns")) as f:
                    nss.add(f.read().strip())
            except OSError:
                pass
    me = os.getpid()
    prefixes = ("bash %s " % env.path("init.sh"),) + tuple(extra_cmd_prefixes)
    out = []
    for p in procs.all_pids():
        if p == me:
            continue
        if procs.pidns(p) in nss:
            out.append(p)
            continue
        cmd = procs.cmdline(p) or ""
        if cmd.startswith(prefixes) or (cmd.startswith("unshare ") and (" %s " % env.path("init.sh")) in cmd):
            out.append(p)
    return out


def port_open(ip, port=22, timeout=0.5):
    s = socket.socket()
    s.settimeout(timeout)
    try:
        s.connect((ip, port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def ssh_ready(ip, timeout=1.0):
    """sshd answers at ip:22 (its banner arrives; through the forwarder a
    TCP connect alone proves nothing)."""
    s = socket.socket()
    s.settimeout(timeout)
    try:
        s.connect((ip, 22))
        return s.recv(4) == b"SSH-"
    except OSError:
        return False
    finally:
        s.close()


def wait_ports(ips, want_open, timeout):
    """Waits until sshd answers on every address (want_open), or until every
    address refuses connections."""
    deadline = time.monotonic() + timeout
    pending = list(ips)
    while pending and time.monotonic() < deadline:
        pending = [ip for ip in pending if (ssh_ready(ip) if want_open else port_open(ip)) != want_open]
        if pending:
            time.sleep(0.05)
    if pending:
        raise RuntimeError("timed out after %gs waiting for port 22 to be %s on: %s"
                           % (timeout, "open" if want_open else "closed", " ".join(pending)))


def restart_sshd(env, slot):
    """The worker's init starts sshd again with its (new) config and key;
    open sessions carry on."""
    sp = sshd_pid(env, slot)
    if sp:
        os.kill(sp, signal.SIGTERM)
        while procs.alive(sp):
            time.sleep(0.02)
        wait_ports([env.ip(slot)], True, 30)
