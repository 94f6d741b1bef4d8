"""The dev VM side: its users, the workers' image layer, per-user gcloud configs."""
import contextlib
import fcntl
import grp
import os
import pwd
import stat
import subprocess

from . import config, nfsmode, procs

SITE_SUDOERS = """# fakepod's site policy (the image's /etc/sudoers.d/zz-fakepod-site): carol
# may log in but may not use sudo, as an admin would do with `deluser carol
# google-sudoers` in a startup script. (With OS Login, her account simply
# lacks the admin role.)
carol ALL=(ALL:ALL) !ALL
"""


# The GECOS field of every dev VM user the simulator makes. Each pod's image
# leaves them all out, not only its own: a user that another pod beside this
# one added (`fakepod user add`) would otherwise be an account of this pod's
# image and push the next users' uids up on its workers.
MARK = "fakepod user"


def run(*argv, **kw):
    return subprocess.run(list(argv), check=True, **kw)


@contextlib.contextmanager
def _host_lock():
    """The dev VM's users are the host's, not one pod's: two pods' `up` at once
    (ctest starts the default and the NFS-like pod together) would both run
    useradd and ssh-keygen for the same users. One at a time, host-wide."""
    os.makedirs("/run/lock", mode=0o755, exist_ok=True)
    fd = os.open("/run/lock/tpurun-fakepod-users.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def setup_users(extra=()):
    """alice and bob (sudo) and carol (no sudo) on the dev VM, each with a
    passphrase-less ~/.ssh/id_ed25519 in their own authorized_keys; root's key."""
    with _host_lock():
        _setup_users(extra)


def _setup_users(extra):
    if not os.path.exists("/root/.ssh/id_ed25519"):
        os.makedirs("/root/.ssh", mode=0o700, exist_ok=True)
        run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "root@fakepod", "-f", "/root/.ssh/id_ed25519")
    _authorize("root", "/root")
    for u in config.SIM_USERS + tuple(extra):
        try:
            if pwd.getpwnam(u).pw_gecos != MARK:
                run("usermod", "-c", MARK, u)
        except KeyError:
            run("useradd", "-m", "-s", "/bin/bash", "-U", "-c", MARK, u)
        # With UsePAM no, sshd refuses a locked ("!") account even for keys.
        sh = subprocess.run(["getent", "shadow", u], capture_output=True, text=True).stdout.split(":")
        if len(sh) > 1 and sh[1].startswith("!"):
            run("usermod", "-p", "*", u)
        home = pwd.getpwnam(u).pw_dir
        if not os.path.exists(os.path.join(home, ".ssh", "id_ed25519")):
            run("install", "-d", "-m", "700", "-o", u, "-g", u, os.path.join(home, ".ssh"))
            try:
                os.unlink(os.path.join(home, ".ssh", "id_ed25519.pub"))
            except FileNotFoundError:
                pass
            run("setpriv", "--reuid=" + u, "--regid=" + u, "--init-groups", "ssh-keygen", "-q", "-t", "ed25519",
                "-N", "", "-C", "%s@fakepod" % u, "-f", os.path.join(home, ".ssh", "id_ed25519"))
        _authorize(u, home)
    want = "".join("%s ALL=(ALL) NOPASSWD: ALL\n" % u for u in config.SUDO_USERS)
    path = "/etc/sudoers.d/tpurun-fakepod"
    try:
        with open(path) as f:
            same = f.read().strip() == want.strip()
    except OSError:
        same = False
    if not same:
        procs.write_file(path + ".tmp", want, 0o440)
        run("visudo", "-cqf", path + ".tmp", stdout=subprocess.DEVNULL)
        os.replace(path + ".tmp", path)
    # The dev VM looks like a GCE VM: it has the google-sudoers group (a system
    # group here, so it never takes a user's gid).
    try:
        grp.getgrnam("google-sudoers")
    except KeyError:
        run("groupadd", "-r", "google-sudoers")


def _authorize(user, home):
    pub = os.path.join(home, ".ssh", "id_ed25519.pub")
    with open(pub) as f:
        key = f.read().strip()
    ak = os.path.join(home, ".ssh", "authorized_keys")
    try:
        with open(ak) as f:
            have = f.read().splitlines()
    except FileNotFoundError:
        have = []
    if key not in have:
        with open(ak, "a") as f:
            f.write(key + "\n")
        pw = pwd.getpwnam(user)
        os.chown(ak, pw.pw_uid, pw.pw_gid)
        os.chmod(ak, 0o600)


def forget_host_keys(env, ips):
    """Drops stale known_hosts entries for addresses that got brand-new host
    keys at `up` (rekey and create do NOT: that is their point). In this
    process (no ssh-keygen -R per address and file: `up 256` would run
    thousands), and tolerant of a file that another pod's tests remove or
    rewrite meanwhile: the homes are the host's, shared by every pod."""
    if not ips:
        return
    for u in ("root",) + config.SIM_USERS:
        try:
            pw = pwd.getpwnam(u)
        except KeyError:
            continue
        for home in user_homes(env, u, pw):
            for name in ("known_hosts", "google_compute_known_hosts"):
                _drop_known_hosts(os.path.join(home, ".ssh", name), ips, pw)


def user_homes(env, user, pw):
    """The user's home, then the private homes that the e2e tests which run
    gcloud give the user (tests/e2e/lib.sh, E2E_PRIVATE_HOMES): each such test
    links $STATE/homes.d/<test> to a dir of <user>/ homes, so that what `up`
    and a restored VM settle reaches the known_hosts that test's tpurun and
    gcloud read."""
    yield pw.pw_dir
    reg = os.path.join(env.state, "homes.d")
    try:
        names = sorted(os.listdir(reg))
    except OSError:
        return
    for name in names:
        home = os.path.join(reg, name, user)
        if os.path.isdir(os.path.join(home, ".ssh")):
            yield home


def _rewrite_known_hosts(kh, pw, keep):
    """Keeps the lines of the user's known_hosts file kh for which keep(line)
    is true. This runs as root in a home the user owns: kh must be a regular
    file of the user's own, never followed through a symlink (a user's
    known_hosts pointing at /etc/shadow is neither read nor written), and the
    new file is made beside it (O_EXCL, no symlink followed) and renamed
    over it. Tolerates a file that another pod's tests remove or rewrite
    meanwhile: the homes are the host's, shared by every pod."""
    try:
        fd = os.open(kh, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    with os.fdopen(fd) as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != pw.pw_uid:
            return
        try:
            lines = f.read().splitlines(True)
        except (OSError, UnicodeDecodeError):
            return
    kept = [l for l in lines if keep(l)]
    if len(kept) == len(lines):
        return
    tmp = "%s.fakepod.%d" % (kh, os.getpid())
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("".join(kept))
            os.fchown(f.fileno(), pw.pw_uid, pw.pw_gid)
            os.fchmod(f.fileno(), st.st_mode & 0o777)
        os.replace(tmp, kh)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _drop_known_hosts(kh, ips, pw):
    _rewrite_known_hosts(kh, pw, lambda l: l.startswith(("#", "@")) or not l.split()
                         or not any(_known_host_matches(l.split()[0], ip) for ip in ips))


def _known_host_matches(field, ip):
    """known_hosts host field (patterns, or |1|salt|hash) names ip (port 22)?"""
    import base64
    import hashlib
    import hmac
    if field.startswith("|1|"):
        try:
            _, _, salt, digest = field.split("|", 3)
            mac = hmac.new(base64.b64decode(salt), ip.encode(), hashlib.sha1).digest()
            return base64.b64encode(mac).decode() == digest
        except (ValueError, TypeError):
            return False
    return ip in field.split(",")


def settle_known_hosts(env, keys, users):
    """The pod `up` restores is trusted: drop the users' known_hosts lines that
    name one of its addresses with another key (left by a rekey, a recreated
    VM, or another simulator on this state dir). keys: {ip: base64 key}."""
    for u in users:
        try:
            pw = pwd.getpwnam(u)
        except KeyError:
            continue
        for home in user_homes(env, u, pw):
            _settle_known_hosts(os.path.join(home, ".ssh", "known_hosts"), keys, pw)


def _settle_known_hosts(kh, keys, pw):
    def keep(line):
        parts = line.split()
        if len(parts) < 3 or line.startswith(("#", "@")):
            return True
        return not [ip for ip, key in keys.items() if _known_host_matches(parts[0], ip) and parts[2] != key]
    _rewrite_known_hosts(kh, pw, keep)


def build_image(env, extra_users=()):
    """$STATE/image/etc: the image layer of every worker's /etc. It is the dev
    VM's /etc without the simulated users (they arrive through metadata or OS
    Login), without the dev VM's sudoers grant (a whiteout), and with the
    site's sudo policy."""
    managed = set(config.SIM_USERS) | set(extra_users) | {p.pw_name for p in pwd.getpwall() if p.pw_gecos == MARK}
    img = env.path("image", "etc")
    os.makedirs(os.path.join(img, "sudoers.d"), exist_ok=True)
    for name, mode in (("passwd", 0o644), ("shadow", 0o640), ("group", 0o644), ("gshadow", 0o640)):
        with open("/etc/" + name) as f:
            rows = [l.rstrip("\n").split(":") for l in f if l.strip()]
        out = []
        for r in rows:
            if r[0] in managed:
                continue
            if name in ("group", "gshadow") and len(r) > 3:
                r[3] = ",".join(m for m in r[3].split(",") if m and m not in managed)
            out.append(":".join(r))
        text = "\n".join(out) + "\n"
        try:
            with open(os.path.join(img, name)) as f:
                if f.read() == text:
                    continue  # a lower layer of running workers: touch it only when it changes
        except OSError:
            pass
        procs.write_file(os.path.join(img, name), text, mode)
        if mode == 0o640:
            try:
                os.chown(os.path.join(img, name), 0, grp.getgrnam("shadow").gr_gid)
            except KeyError:
                pass
    wh = os.path.join(img, "sudoers.d", "tpurun-fakepod")
    if not os.path.exists(wh):
        os.mknod(wh, 0o600 | 0o020000, os.makedev(0, 0))  # an overlayfs whiteout
    envfile = os.path.join(img, "fakepod.env")
    want = ("# fakepod: this worker's simulator (read by /sbin/mount.fakenfs)\nFAKEPOD_STATE=%s\n"
            "FAKEPOD_EXPORT=%s\n" % (env.state, env.path("nfs-export")))
    nfs = nfsmode.settings(env)
    client = nfsmode.client_program(env, nfs["mode"], nfs["client"])
    if client:
        # An NFS-like client that mount.fakenfs runs instead of a bind: the
        # pod's own in NFS mode (nfsclient.py), or FAKENFS_CLIENT from `up`.
        want += "FAKENFS_CLIENT=%s\n" % client
    if not os.path.exists(envfile) or open(envfile).read() != want:
        procs.write_file(envfile, want, 0o644)
    site = os.path.join(img, "sudoers.d", "zz-fakepod-site")
    if not os.path.exists(site):
        procs.write_file(site, SITE_SUDOERS, 0o440)


# ------------------------------------------------------------ gcloud

def gcloud_dir(env, user):
    return env.path("gcloud", user)


def write_gcloud_config(env, user, port):
    """A private CLOUDSDK_CONFIG for user that points real gcloud at the
    simulated APIs. gcloud writes into it (logs, caches), so each user has
    their own, owned by them."""
    pw = pwd.getpwnam(user)
    d = gcloud_dir(env, user)
    os.makedirs(env.path("gcloud"), mode=0o755, exist_ok=True)
    os.makedirs(os.path.join(d, "configurations"), exist_ok=True)
    props = """[core]
project = %(project)s
account = %(user)s@fakepod.test
disable_usage_reporting = true
disable_file_logging = true
[auth]
disable_credentials = true
[api_endpoint_overrides]
tpu = http://127.0.0.1:%(port)d/
compute = http://127.0.0.1:%(port)d/compute/v1/
oslogin = http://127.0.0.1:%(port)d/
[component_manager]
disable_update_check = true
[survey]
disable_prompts = true
""" % {"project": config.PROJECT, "user": user, "port": port}
    procs.write_file(os.path.join(d, "configurations", "config_default"), props, 0o644)
    procs.write_file(os.path.join(d, "active_config"), "default", 0o644)
    # gcloud asks the metadata server whether it runs on GCE and caches the
    # answer here; say no, so it never waits for 169.254.169.254.
    procs.write_file(os.path.join(d, "gce"), "False", 0o600)
    for n in (d, os.path.join(d, "configurations"), os.path.join(d, "configurations", "config_default"),
              os.path.join(d, "active_config"), os.path.join(d, "gce")):
        os.lchown(n, pw.pw_uid, pw.pw_gid)
    os.chmod(d, 0o700)
    return d
