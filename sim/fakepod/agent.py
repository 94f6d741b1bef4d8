"""The guest agent of one worker, run inside the worker's namespaces.

It does what GoogleCloudPlatform/guest-agent does on a TPU VM host, as far as
logins go, reading the simulated metadata server ($STATE/mds.sock) the way the
real agent long-polls 169.254.169.254 (?recursive=true&wait_for_change=true):

  - publishes the host key as guest attribute hostkeys/ssh-ed25519 (the key's
    base64 only, instance_setup.go generateSSHKeys); gcloud's tpu-vm ssh reads
    it for its HostKeyAlias (tpu.<id>-<worker>-<last 6 chars>);
  - metadata mode (non_windows_accounts.go accountsMgr.set): the keys are
    instance ssh-keys plus project ssh-keys (unless block-project-ssh-keys);
    a user that does not exist is created ("useradd -m -s /bin/bash -p *":
    the next uid after the highest in UID_MIN..UID_MAX, a same-named group
    whose gid is the uid when free) and added to adm,dip,docker,lxd,plugdev,
    video (those that exist) and google-sudoers; an existing user not yet
    managed is added to google-sudoers; keys go to ~/.ssh/authorized_keys
    after a "# Added by Google" line each; users that left the metadata lose
    their keys and google-sudoers (not their account). /etc/sudoers.d/
    google_sudoers and the group are created if missing. The real agent walks
    a Go map, so users that arrive in one update are created in random order
    and get different uids on different VMs (guest-agent#108); the simulator
    keeps metadata order unless `fakepod fault agent-order random`.
  - OS Login mode (enable-oslogin TRUE in node or project metadata): the
    accounts daemon is off (accountsMgr.disabled); logins come from the OS
    Login directory. The real VM resolves users through NSS and keys through
    sshd's AuthorizedKeysCommand; the simulator writes the same answers into
    /etc/passwd (the account's uid and gid, the same on every VM) and
    authorized_keys, and gives sudo to users with the admin role.
  - after each change it reports the metadata generation it applied
    (guest attribute fakepod/applied), so the API can finish an update
    operation when the workers have it.

It also serves /dev/log (a stand-in for journald): each datagram is appended
to $STATE/w<slot>/syslog as "uid=UID MESSAGE", with the sender's uid as the
kernel reports it.
"""
import http.client
import json
import os
import random
import shutil
import socket
import struct
import sys
import threading
import time

GOOGLE_COMMENT = "# Added by Google"
OSLOGIN_COMMENT = "# Added by OS Login (fakepod)"
GROUPS = "adm,dip,docker,lxd,plugdev,video"


# ------------------------------------------------------------ /etc files

def read_db(path):
    try:
        with open(path) as f:
            return [l.rstrip("\n").split(":") for l in f if l.strip() and not l.startswith("#")]
    except FileNotFoundError:
        return []


def write_db(path, rows, mode):
    tmp = path + ".fakepod-agent"
    with open(tmp, "w") as f:
        for r in rows:
            f.write(":".join(r) + "\n")
    os.chmod(tmp, mode)
    if mode == 0o640:
        try:
            os.chown(tmp, 0, _gid_of_shadow())
        except OSError:
            pass
    os.replace(tmp, path)


def _gid_of_shadow():
    for r in read_db("/etc/group"):
        if r[0] == "shadow":
            return int(r[2])
    return 0


def login_defs():
    d = {"UID_MIN": 1000, "UID_MAX": 60000, "GID_MIN": 1000, "GID_MAX": 60000}
    try:
        with open("/etc/login.defs") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 2 and parts[0] in d and parts[1].isdigit():
                    d[parts[0]] = int(parts[1])
    except OSError:
        pass
    return d


class Accounts:
    """Edits passwd, group, shadow and gshadow the way useradd, groupadd and
    gpasswd do (same id rules), without a process per call."""

    def __init__(self, root="/etc"):
        self.root = root
        self.defs = login_defs()

    def p(self, name):
        return os.path.join(self.root, name)

    def user(self, name):
        for r in read_db(self.p("passwd")):
            if r[0] == name:
                return r
        return None

    def groupadd(self, name, gid=None):
        groups = read_db(self.p("group"))
        if any(g[0] == name for g in groups):
            return False  # groupadd exits 9: it exists
        used = {int(g[2]) for g in groups if g[2].isdigit()}
        if gid is None or gid in used:
            lo, hi = self.defs["GID_MIN"], self.defs["GID_MAX"]
            in_range = [g for g in used if lo <= g <= hi]
            gid = max(in_range) + 1 if in_range else lo
        groups.append([name, "x", str(gid), ""])
        write_db(self.p("group"), groups, 0o644)
        gs = read_db(self.p("gshadow"))
        gs.append([name, "!", "", ""])
        write_db(self.p("gshadow"), gs, 0o640)
        return True

    def useradd(self, name, uid=None, gid=None, home=None):
        """useradd -m -s /bin/bash -p '*' NAME (USERGROUPS_ENAB: a same-named
        group, gid = uid when that gid is free)."""
        users = read_db(self.p("passwd"))
        if uid is None:
            lo, hi = self.defs["UID_MIN"], self.defs["UID_MAX"]
            in_range = [int(u[2]) for u in users if u[2].isdigit() and lo <= int(u[2]) <= hi]
            uid = max(in_range) + 1 if in_range else lo
        groups = read_db(self.p("group"))
        gids = {int(g[2]) for g in groups if g[2].isdigit()}
        if gid is None:
            gid = uid if uid not in gids else None
        existing = [g for g in groups if g[0] == name]
        if existing:
            gid = int(existing[0][2])
        else:
            self.groupadd(name, gid)
            gid = int([g for g in read_db(self.p("group")) if g[0] == name][0][2])
        home = home or "/home/%s" % name
        users.append([name, "x", str(uid), str(gid), "", home, "/bin/bash"])
        write_db(self.p("passwd"), users, 0o644)
        sh = read_db(self.p("shadow"))
        sh.append([name, "*", str(int(time.time() // 86400)), "0", "99999", "7", "", "", ""])
        write_db(self.p("shadow"), sh, 0o640)
        if not os.path.exists(home):
            os.makedirs(os.path.dirname(home), exist_ok=True)
            if os.path.isdir("/etc/skel"):
                shutil.copytree("/etc/skel", home, symlinks=True)
            else:
                os.mkdir(home)
            os.chmod(home, 0o755)
            for dirpath, dirnames, filenames in os.walk(home):
                for n in [dirpath] + [os.path.join(dirpath, x) for x in dirnames + filenames]:
                    os.lchown(n, uid, gid)
        return uid, gid

    def gpasswd(self, user, group, add=True):
        groups = read_db(self.p("group"))
        changed = False
        for g in groups:
            if g[0] == group:
                members = [m for m in g[3].split(",") if m] if len(g) > 3 else []
                if add and user not in members:
                    members.append(user)
                    changed = True
                elif not add and user in members:
                    members.remove(user)
                    changed = True
                while len(g) < 4:
                    g.append("")
                g[3] = ",".join(members)
        if changed:
            write_db(self.p("group"), groups, 0o644)
            gs = read_db(self.p("gshadow"))
            for g in gs:
                if g[0] == group:
                    while len(g) < 4:
                        g.append("")
                    members = [m for m in g[3].split(",") if m]
                    if add and user not in members:
                        members.append(user)
                    elif not add and user in members:
                        members.remove(user)
                    g[3] = ",".join(members)
            write_db(self.p("gshadow"), gs, 0o640)
        return changed

    def group_exists(self, name):
        return any(g[0] == name for g in read_db(self.p("group")))


def update_authorized_keys(pw, keys, comment=GOOGLE_COMMENT):
    """updateAuthorizedKeysFile: keep the user's own lines, replace the ones
    after our comment; no keys at all removes the file (own lines too, as the
    real agent does)."""
    home, uid, gid = pw[5], int(pw[2]), int(pw[3])
    if not home or pw[6] == "/sbin/nologin":
        return
    ssh = os.path.join(home, ".ssh")
    if not os.path.isdir(ssh):
        os.makedirs(ssh, mode=0o700)
        os.chown(ssh, uid, gid)
    ak = os.path.join(ssh, "authorized_keys")
    if not keys:
        try:
            os.unlink(ak)
        except FileNotFoundError:
            pass
        return
    try:
        with open(ak) as f:
            lines = f.read().split("\n")
    except FileNotFoundError:
        lines = []
    own, skip = [], False
    for line in lines:
        if not line:
            continue
        if skip:
            skip = False
            continue
        if line == comment:
            skip = True
            continue
        own.append(line)
    tmp = ak + ".google"
    with open(tmp, "w") as f:
        for line in own:
            f.write(line + "\n")
        for k in keys:
            f.write("%s\n%s\n" % (comment, k))
    os.chmod(tmp, 0o600)
    os.chown(tmp, uid, gid)
    os.replace(tmp, ak)


# ------------------------------------------------------------ the metadata server

class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("metadata.google.internal", timeout=timeout)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


class Agent:
    def __init__(self, state, slot):
        self.state = state
        self.slot = slot
        self.mds = os.path.join(state, "mds.sock")
        self.acc = Accounts()
        self.google_users_file = "/var/lib/google/google_users"
        self.ssh_keys = {}          # user -> keys written (sshKeys cache)
        self.oslogin_users = set()
        self.published = None

    def call(self, method, path, body=None, timeout=90):
        c = UnixHTTP(self.mds, timeout)
        try:
            c.request(method, "/computeMetadata/v1/" + path, body=body, headers={"Metadata-Flavor": "Google"})
            r = c.getresponse()
            data = r.read()
            if r.status != 200:
                raise OSError("metadata server: %d %s" % (r.status, data[:200]))
            return data, r.getheader("ETag")
        finally:
            c.close()

    def publish_host_key(self):
        try:
            with open(os.path.join(self.state, "w%d" % self.slot, "ssh_host_ed25519_key.pub")) as f:
                b64 = f.read().split()[1]
        except (OSError, IndexError):
            return
        if b64 != self.published:
            self.call("PUT", "instance/guest-attributes/hostkeys/ssh-ed25519", b64.encode())
            self.published = b64

    def google_users(self):
        try:
            with open(self.google_users_file) as f:
                return [u for u in f.read().split("\n") if u]
        except FileNotFoundError:
            return []

    def write_google_users(self, users):
        os.makedirs(os.path.dirname(self.google_users_file), exist_ok=True)
        with open(self.google_users_file, "w") as f:
            for u in users:
                f.write(u + "\n")
        os.chmod(self.google_users_file, 0o600)

    def apply_metadata_keys(self, doc):
        """accountsMgr.set (see the module doc)."""
        inst = doc["instance"]["attributes"]
        proj = doc["project"]["attributes"]
        lines = (inst.get("ssh-keys") or "").split("\n")
        if (inst.get("block-project-ssh-keys") or "").lower() != "true":
            lines += (proj.get("ssh-keys") or "").split("\n")
        md = {}
        for line in lines:
            line = line.strip()
            if ":" not in line:
                continue
            user, key = line.split(":", 1)
            if not user or len(key.split()) < 2:
                continue
            md.setdefault(user, []).append(key.strip())
        if not os.path.exists("/etc/sudoers.d/google_sudoers"):
            os.makedirs("/etc/sudoers.d", exist_ok=True)
            fd = os.open("/etc/sudoers.d/google_sudoers", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o440)
            os.write(fd, b"%google-sudoers ALL=(ALL:ALL) NOPASSWD:ALL\n")
            os.close(fd)
        self.acc.groupadd("google-sudoers")
        gusers = self.google_users()
        order = list(md)
        if doc.get("fakepod", {}).get("agent_order") == "random":
            random.shuffle(order)  # a Go map's iteration order
        for user in order:
            keys = md[user]
            if self.acc.user(user) is None:
                self.acc.useradd(user)
                for g in GROUPS.split(","):
                    if self.acc.group_exists(g):
                        self.acc.gpasswd(user, g)
                self.acc.gpasswd(user, "google-sudoers")
                gusers.append(user)
            if user not in gusers:
                self.acc.gpasswd(user, "google-sudoers")
                gusers.append(user)
            if self.ssh_keys.get(user) != keys:
                update_authorized_keys(self.acc.user(user), keys)
                self.ssh_keys[user] = keys
        for user in list(gusers):
            if user not in md:
                pw = self.acc.user(user)
                if pw:
                    update_authorized_keys(pw, [])
                    self.acc.gpasswd(user, "google-sudoers", add=False)
                gusers.remove(user)
                self.ssh_keys.pop(user, None)
        self.write_google_users(gusers)

    def apply_oslogin(self):
        data, _ = self.call("GET", "oslogin/users?pagesize=1000")
        profiles = json.loads(data).get("loginProfiles", [])
        seen = set()
        for p in profiles:
            for a in p.get("posixAccounts", []):
                name, uid, gid = a["username"], int(a["uid"]), int(a["gid"])
                seen.add(name)
                if self.acc.user(name) is None:
                    self.acc.useradd(name, uid=uid, gid=gid, home=a.get("homeDirectory"))
                keys = [k["key"] for k in (p.get("sshPublicKeys") or {}).values()]
                update_authorized_keys(self.acc.user(name), keys, OSLOGIN_COMMENT)
                auth, _ = self.call("GET", "oslogin/authorize?email=%s&policy=adminLogin" % p["name"])
                sudo = "/etc/sudoers.d/google-oslogin-%s" % name
                if json.loads(auth).get("success"):
                    if not os.path.exists(sudo):
                        with open(sudo, "w") as f:
                            f.write("%s ALL=(ALL:ALL) NOPASSWD: ALL\n" % name)
                        os.chmod(sudo, 0o440)
                elif os.path.exists(sudo):
                    os.unlink(sudo)
        for name in self.oslogin_users - seen:
            pw = self.acc.user(name)
            if pw:
                update_authorized_keys(pw, [], OSLOGIN_COMMENT)
            try:
                os.unlink("/etc/sudoers.d/google-oslogin-%s" % name)
            except FileNotFoundError:
                pass
        self.oslogin_users = seen

    def drop_oslogin(self):
        for name in self.oslogin_users:
            pw = self.acc.user(name)
            if pw:
                update_authorized_keys(pw, [], OSLOGIN_COMMENT)
            try:
                os.unlink("/etc/sudoers.d/google-oslogin-%s" % name)
            except FileNotFoundError:
                pass
        self.oslogin_users = set()

    def run(self):
        etag = "0"
        while True:
            try:
                data, etag2 = self.call("GET", "?recursive=true&alt=json&wait_for_change=true&timeout_sec=60"
                                        "&last_etag=" + etag)
                doc = json.loads(data)
                if etag2 == etag:
                    continue
                self.publish_host_key()
                if doc["fakepod"]["oslogin"]:
                    self.apply_oslogin()
                else:
                    if self.oslogin_users:
                        self.drop_oslogin()
                    self.apply_metadata_keys(doc)
                self.call("PUT", "instance/guest-attributes/fakepod/applied", str(doc["fakepod"]["gen"]).encode())
                etag = etag2 or "0"
            except (OSError, ValueError, KeyError) as e:
                print("agent w%d: %s" % (self.slot, e), file=sys.stderr, flush=True)
                time.sleep(1)


def syslog_sink(path):
    out = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        os.unlink("/dev/log")
    except FileNotFoundError:
        pass
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    s.bind("/dev/log")
    os.chmod("/dev/log", 0o666)
    while True:
        data, anc, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(12))
        uid = "?"
        for level, kind, c in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                uid = str(struct.unpack("iII", c[:12])[1])
        os.write(out, b"uid=" + uid.encode() + b" " + data.replace(b"\n", b" ").rstrip() + b"\n")


def main(argv):
    state, slot = argv[0], int(argv[1])
    os.umask(0o022)
    t = threading.Thread(target=syslog_sink, args=(os.path.join(state, "w%d" % slot, "syslog"),), daemon=True)
    t.start()
    Agent(state, slot).run()


if __name__ == "__main__":
    main(sys.argv[1:])
