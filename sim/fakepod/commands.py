"""The fakepod CLI's commands (all but exec). Most talk to the pod's server
over $STATE/control.sock; up and down also start and stop the daemons."""
import fcntl
import json
import os
import pwd
import resource
import shlex
import socket
import subprocess
import sys
import time

from . import config, host, nfsmode, procs, workers

LIB_SRC = os.path.dirname(os.path.abspath(__file__))


def die(msg, code=1):
    sys.stderr.write("fakepod: %s\n" % msg)
    sys.exit(code)


def need_root():
    if os.getuid() != 0:
        die("must run as root")


def env_or_die():
    try:
        return config.Env.load()
    except ValueError as e:
        die(str(e), 2)


class Lock:
    """$STATE/.lock: one up/down at a time."""

    def __init__(self, env):
        os.makedirs(env.state, exist_ok=True)
        self.fd = os.open(env.path(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + 600
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    die("could not lock %s" % env.path(".lock"))
                time.sleep(0.05)

    def release(self):
        os.close(self.fd)


def _post_unix(path, url, body, timeout):
    """One HTTP/1.1 POST over the control socket; (status, body bytes).
    Written out rather than through http.client, whose import (email
    parsing, ssl) was about half of a fakepod command's CPU, and the tests
    run fakepod about a thousand times a suite."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
        head = ("POST %s HTTP/1.1\r\nHost: fakepod\r\nContent-Type: application/json\r\n"
                "Content-Length: %d\r\nConnection: close\r\n\r\n" % (url, len(body)))
        sock.sendall(head.encode() + body)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        sock.close()
    raw = b"".join(chunks)
    head, sep, rest = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    parts = lines[0].split(None, 2) if sep else []
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        raise ValueError("not an HTTP answer: %r" % raw[:80])
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            rest = rest[:int(value.strip())]
    return int(parts[1]), rest


def control(env, cmd, body=None, timeout=900):
    try:
        status, raw = _post_unix(env.path("control.sock"), "/fakepod/" + cmd,
                                 json.dumps(body or {}).encode(), timeout)
        data = json.loads(raw or b"{}")
    except (OSError, ValueError) as e:
        die("the pod's server does not answer (%s); is the pod up? (fakepod up N)" % e)
    if status != 200:
        die(data.get("error", {}).get("message", "error %d" % status))
    return data


def server_alive(env):
    pid = procs.read_pid(env.path("api.pid"))
    return pid if pid and procs.alive(pid) and "server_main.py" in (procs.cmdline(pid) or "") else None


def fwd_alive(env):
    pid = procs.read_pid(env.path("netfwd.pid"))
    return pid if pid and procs.alive(pid) and "netns_main.py" in (procs.cmdline(pid) or "") else None


def start_daemon(env, script, args, pidfile, log):
    """Starts a daemon from $STATE/lib in its own session; returns its pid."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.setsid()
            p2 = os.fork()
            if p2:
                os.write(w, str(p2).encode())
                os._exit(0)
            os.close(w)
            fd = os.open(env.path(log), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            null = os.open("/dev/null", os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.closerange(3, 65536)
            os.chdir("/")
            os.execv("/usr/bin/python3", ["/usr/bin/python3", "-E", "-s", env.path("lib", script)] + args)
        finally:
            os._exit(127)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 64)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    child = int(data)
    procs.write_file(env.path(pidfile), "%d\n" % child, 0o600)
    return child


def wait_socket(path, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return True
        except OSError:
            time.sleep(0.02)
        finally:
            s.close()
    return False


def raise_limits():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 65536:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (65536, 65536))
            return
        except (ValueError, OSError):
            pass
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError):
        pass


def sim_users(env):
    try:
        with open(env.path("cloud.json")) as f:
            return list(config.SIM_USERS) + json.load(f).get("settings", {}).get("extra_users", [])
    except (OSError, ValueError):
        return list(config.SIM_USERS)


# ------------------------------------------------------------ up / down

def cmd_up(args):
    if len(args) != 1 or not args[0].isdigit():
        die("up: N must be 1..%d" % config.MAX_SLOTS)
    env = env_or_die()
    n = int(args[0])
    if not 1 <= n <= env.max_slots:
        die("up: N must be 1..%d" % env.max_slots)
    need_root()
    t0 = time.monotonic()
    lock = Lock(env)
    raise_limits()
    os.chmod(env.state, 0o755)
    os.makedirs(env.path("bin"), mode=0o755, exist_ok=True)
    nfs_mode, nfs_options, nfs_client = nfs_request()
    if nfs_mode != "fuse" and (nfsmode.host_mounts(env) or nfsmode.host_daemon(env)):
        nfsmode.unmount_host(env)  # it was in NFS mode
    nfsmode.write_settings(env, nfs_mode, nfs_options, nfs_client)
    nfsmode.make_roots(env, nfs_mode)
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    users = sim_users(env)
    host.setup_users([u for u in users if u not in config.SIM_USERS])
    host.build_image(env, [u for u in users if u not in config.SIM_USERS])
    new_keys = [s for s in range(n) if not os.path.exists(os.path.join(env.wdir(s), "ssh_host_ed25519_key"))]
    netns_on = os.environ.get("FAKEPOD_NETNS", "1") != "0"
    want_hash = lib_hash(netns_on, nfsmode.settings(env))
    restarted = False
    if not server_alive(env) or (netns_on and not fwd_alive(env)) or want_hash != installed_hash(env):
        restarted = True
        stop_daemons(env)
        workers.write_static(env, LIB_SRC)
        procs.write_file(env.path("lib", ".hash"), want_hash + "\n")
        if netns_on:
            start_daemon(env, "netns_main.py", [env.state], "netfwd.pid", "netfwd.log")
            if not wait_socket(env.path("netfwd.sock")):
                die("the forwarder did not start (see %s)" % env.path("netfwd.log"))
        # Workers left from before the server restart are adopted only if the
        # forwarder knows them: start from a clean slate instead.
        kill_all_workers(env)
        start_daemon(env, "server_main.py", [env.state, env.nfs, env.net], "api.pid", "server.log")
        # The server writes api.port once every socket listens.
        deadline = time.monotonic() + 20
        while not os.path.exists(env.path("api.port")) and time.monotonic() < deadline:
            time.sleep(0.02)
        if not os.path.exists(env.path("api.port")) or not wait_socket(env.path("control.sock")):
            die("the API server did not start (see %s)" % env.path("server.log"))
    if nfs_mode == "fuse" and (restarted or not nfsmode.host_ok(env)):
        try:
            nfsmode.mount_host(env)  # the dev VM's client (the workers mount theirs at boot)
        except RuntimeError as e:
            die(str(e))
    port = int(open(env.path("api.port")).read())
    for u in ["root"] + users:
        try:
            pwd.getpwnam(u)
        except KeyError:
            continue
        host.write_gcloud_config(env, u, port)
    host.forget_host_keys(env, [env.ip(s) for s in new_keys])
    r = control(env, "up", {"n": n, "device": env.device})
    if nfs_mode == "fuse":
        # Each worker's boot mounted its client (its fstab line); nfs.pid is
        # written once a client is ready.
        bad = [s for s in range(n) if not os.path.exists(os.path.join(env.wdir(s), "nfs.pid"))]
        if bad:
            die("the NFS client of worker(s) %s did not mount at boot: see %s"
                % (" ".join(map(str, bad)), " ".join(os.path.join(env.wdir(s), f) for s in bad[:2]
                                                     for f in ("console.log", "nfs.log"))))
    keys = {}
    for s in range(n):
        try:
            with open(os.path.join(env.wdir(s), "ssh_host_ed25519_key.pub")) as f:
                keys[env.ip(s)] = f.read().split()[1]
        except (OSError, IndexError):
            pass
    host.settle_known_hosts(env, keys, ["root"] + users)
    lock.release()
    if r["started"] == 0:
        print("fakepod: already up: %d workers (%s .. %s), config %s; API http://127.0.0.1:%d/"
              % (n, env.ip(0), env.ip(n - 1), env.path("tpurun.json"), port))
        return
    print("fakepod: up: %d workers (%s .. %s, device %s, started %d) in %.1fs; config %s; API http://127.0.0.1:%d/%s"
          % (n, env.ip(0), env.ip(n - 1), env.device, r["started"], time.monotonic() - t0,
             env.path("tpurun.json"), port,
             "; %s: NFS-like client mounts of %s" % (env.nfs, nfsmode.export_dir(env, nfs_mode))
             if nfs_mode == "fuse" else ""))


def nfs_request():
    """FAKEPOD_NFS_MODE, FAKEPOD_NFS_OPTIONS and FAKENFS_CLIENT, as `up` reads them."""
    mode = os.environ.get("FAKEPOD_NFS_MODE") or "bind"
    if mode not in nfsmode.MODES:
        die("FAKEPOD_NFS_MODE must be bind (a plain shared dir), fuse (NFS-like client mounts) or none (no shared "
            "mount: each VM only its own disk), not %r" % mode, 2)
    if mode == "fuse":
        if not os.path.exists("/dev/fuse"):
            die("FAKEPOD_NFS_MODE=fuse needs /dev/fuse", 2)
        if subprocess.run(["/usr/bin/python3", "-c", "import pyfuse3, trio"], capture_output=True).returncode != 0:
            die("FAKEPOD_NFS_MODE=fuse needs Debian's python3-pyfuse3 (scripts/install-deps)", 2)
    return mode, os.environ.get("FAKEPOD_NFS_OPTIONS", ""), os.environ.get("FAKENFS_CLIENT", "")


def lib_hash(netns_on=True, nfs=None):
    """A hash of this package's and sim/nfs's sources and of the shared
    mount's settings: when they change, `up` restarts the daemons (and so the
    workers) on the new code, with the new mount."""
    import hashlib
    h = hashlib.sha256(b"netns=%d\n" % netns_on)
    h.update(json.dumps(nfs or {}, sort_keys=True).encode() + b"\n")
    for src in (LIB_SRC, os.path.join(os.path.dirname(LIB_SRC), "nfs")):
        for name in sorted(os.listdir(src)):
            if name.endswith(".py"):
                with open(os.path.join(src, name), "rb") as f:
                    h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()


def installed_hash(env):
    try:
        with open(env.path("lib", ".hash")) as f:
            return f.read().strip()
    except OSError:
        return None


def kill_all_workers(env):
    slots = sorted(int(x[1:]) for x in os.listdir(env.state) if x.startswith("w") and x[1:].isdigit())
    workers.kill(env, slots)


def stop_daemons(env):
    pairs = []
    for pidfile, name in (("api.pid", "server_main.py"), ("netfwd.pid", "netns_main.py")):
        pid = procs.read_pid(env.path(pidfile))
        if pid and name in (procs.cmdline(pid) or ""):
            pairs.append((pid, procs.cmdline(pid)))
    procs.kill_and_wait(pairs)
    for f in ("api.pid", "api.port", "netfwd.pid", "control.sock", "mds.sock", "netfwd.sock"):
        try:
            os.unlink(env.path(f))
        except FileNotFoundError:
            pass


def cmd_down(args):
    env = env_or_die()
    need_root()
    if not os.path.isdir(env.state):
        print("fakepod: down (nothing was up)")
        return
    lock = Lock(env)
    n = nworkers(env)
    kill_all_workers(env)  # the workers' NFS clients die with their namespaces
    stop_daemons(env)
    nfsmode.unmount_host(env)
    lib = env.path("lib")
    extra = ("/usr/bin/python3 -E -s %s/" % lib,)
    left = procs.kill_until_gone(lambda: workers.leftover_pids(env, extra), 5.0, 0.1)
    if left:
        die("processes left after down: %s" % " ".join(map(str, left)))
    for f in ("workers",):
        try:
            os.unlink(env.path(f))
        except FileNotFoundError:
            pass
    lock.release()
    print("fakepod: down (%d workers stopped)" % n)


def nworkers(env):
    try:
        with open(env.path("workers")) as f:
            return int(f.read().strip() or 0)
    except (OSError, ValueError):
        return 0


# ------------------------------------------------------------ status / env

def cmd_status(args):
    env = env_or_die()
    if not server_alive(env):
        print("pod down")
        return
    st = control(env, "status")
    slots = {}
    for nd in st["nodes"]:
        if not nd["view"]:
            for i, s in enumerate(nd["slots"]):
                slots[s] = (nd, i)
    for s in sorted(slots):
        nd, i = slots[s]
        ip = env.ip(s)
        mode = ""
        try:
            with open(os.path.join(env.wdir(s), "net.mode")) as f:
                mode = f.read().strip()
        except OSError:
            pass
        pid = workers.init_pid(env, s)
        where = "%s/%d" % (nd["name"].rsplit("/", 1)[1], i)
        if mode == "blackhole":
            print("w%d blackhole %s:22 %s" % (s, ip, where))
        elif pid:
            sp = workers.sshd_pid(env, s, pid)
            print("w%d up %s:22 sshd_pid=%s init_pid=%d %s%s" % (s, ip, sp or "-", pid, where,
                                                                  " partitioned" if mode == "partition" else ""))
        else:
            print("w%d down %s:22 %s" % (s, ip, where))
    for nd in st["nodes"]:
        print("node %s %s %s%s workers=%d%s" % (nd["name"], nd["state"], nd["acceleratorType"],
                                                " " + nd["health"] if nd.get("health") else "", len(nd["slots"]),
                                                " (view)" if nd["view"] else ""))
    for q in st.get("queuedResources", []):
        print(qr_line(q))
    if st["faults"]:
        print("faults %s" % json.dumps(st["faults"], sort_keys=True))
    nfs = nfsmode.settings(env)
    if nfs["mode"] == "fuse":
        pid = nfsmode.host_daemon(env)
        print("nfs fuse %s export %s: dev VM client %s%s" % (env.nfs, nfs["export"],
                                                            "pid %d" % pid if pid else "NOT MOUNTED",
                                                            " options " + nfs["options"] if nfs["options"] else ""))


def cmd_env(args):
    env = env_or_die()
    user = None
    if args[:1] == ["--user"] and len(args) > 1:
        user = args[1]
    if user is None:
        user = pwd.getpwuid(os.getuid()).pw_name
    port = ""
    try:
        with open(env.path("api.port")) as f:
            port = f.read().strip()
    except OSError:
        pass
    print("FAKEPOD_STATE=%s" % env.state)
    print("FAKEPOD_NFS=%s" % env.nfs)
    nfs = nfsmode.settings(env)
    print("FAKEPOD_NFS_MODE=%s" % nfs["mode"])
    print("FAKEPOD_NFS_EXPORT=%s" % nfs["export"])
    print("FAKEPOD_NFS_OPTIONS=%s" % shlex.quote(nfs["options"]))
    print("FAKEPOD_NET=%s" % env.net)
    print("FAKEPOD_WORKERS=%d" % nworkers(env))
    print("FAKEPOD_CONFIG=%s" % env.path("tpurun.json"))
    print("FAKEPOD_API=%s" % ("http://127.0.0.1:%s/" % port if port else ""))
    print("FAKEPOD_GCLOUD_CONFIGS=%s" % env.path("gcloud"))
    print("CLOUDSDK_CONFIG=%s" % host.gcloud_dir(env, user))


def cmd_gcloud_config(args):
    env = env_or_die()
    need_root()
    if len(args) != 1:
        die("usage: fakepod gcloud-config USER")
    port = int(open(env.path("api.port")).read())
    print(host.write_gcloud_config(env, args[0], port))


# ------------------------------------------------------------ workers

def slot_arg(env, args):
    if not args or not args[0].isdigit():
        die("bad worker index '%s'" % (args[0] if args else ""))
    s = int(args[0])
    n = nworkers(env)
    if n == 0 or not server_alive(env):
        die("the pod is down (run: fakepod up N)")
    if not os.path.exists(os.path.join(env.wdir(s), "boot.env")):
        die("worker %d does not exist (the pod has %d workers: 0..%d)" % (s, n, n - 1))
    return s


def worker_cmd(name, done):
    def run(args):
        env = env_or_die()
        need_root()
        s = slot_arg(env, args)
        r = control(env, name, {"slot": s})
        mode_file = os.path.join(env.wdir(s), "net.mode")
        if name in ("blackhole", "partition"):
            procs.write_file(mode_file, name + "\n")
        elif name in ("heal", "start-worker", "stop-worker"):
            try:
                os.unlink(mode_file)
            except FileNotFoundError:
                pass
        if name == "start-worker" and r.get("already"):
            print("fakepod: worker %d (%s) already up" % (s, env.ip(s)))
            return
        if name == "rekey":
            fp = subprocess.run(["ssh-keygen", "-lf", os.path.join(env.wdir(s), "ssh_host_ed25519_key.pub")],
                                capture_output=True, text=True).stdout.split()
            print("fakepod: worker %d (%s) has a new host key: %s" % (s, env.ip(s), fp[1] if len(fp) > 1 else "?"))
            return
        print("fakepod: worker %d (%s) %s" % (s, env.ip(s), done))
    return run


# ------------------------------------------------------------ the cloud

def parse_opts(args, flags, values, multi=()):
    pos, opts = [], {}
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--"):
            k, eq, v = a[2:].partition("=")
            if k in flags:
                opts[k] = True
            elif k in values:
                if not eq:
                    i += 1
                    if i >= len(args):
                        die("--%s needs a value" % k, 2)
                    v = args[i]
                if k in multi:
                    opts.setdefault(k, []).append(v)
                else:
                    opts[k] = v
            else:
                die("unknown option --%s" % k, 2)
        else:
            pos.append(a)
        i += 1
    return pos, opts


def node_cmd(name):
    def run(args):
        env = env_or_die()
        need_root()
        pos, o = parse_opts(args, {"terminated", "spot", "preemptible", "internal-ips", "new-ips", "no-wait"},
                            {"zone", "project", "accelerator", "version", "metadata", "labels", "network",
                             "subnetwork", "queued-resource", "notice"}, {"metadata"})
        if len(pos) != 1:
            die("usage: fakepod %s NAME [options]" % name, 2)
        body = {"name": pos[0], "zone": o.get("zone"), "project": o.get("project"), "terminated": o.get("terminated"),
                "accelerator": o.get("accelerator"), "version": o.get("version"), "spot": o.get("spot"),
                "internal_ips": o.get("internal-ips"), "new_ips": o.get("new-ips"), "wait": not o.get("no-wait"),
                "metadata": dict(m.split("=", 1) for m in o.get("metadata", [])),
                "preemptible": o.get("preemptible"), "network": o.get("network"), "subnetwork": o.get("subnetwork"),
                "labels": dict(kv.split("=", 1) for kv in o["labels"].split(",")) if o.get("labels") else None,
                "queued_resource": o.get("queued-resource"), "notice": o.get("notice")}
        r = control(env, name, body)
        state = r.get("state") or ("done" if r.get("done") else "started")
        print("fakepod: %s %s: %s" % (name, pos[0], state))
    return run


def expand_slots(spec):
    out = []
    for part in spec.split(","):
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


def cmd_node_add(args):
    env = env_or_die()
    need_root()
    pos, o = parse_opts(args, set(), {"zone", "slots", "state", "id", "accelerator", "project"})
    if len(pos) != 1 or "zone" not in o:
        die("usage: fakepod node-add NAME --zone Z --slots A-B [--state S] [--id ID] [--accelerator T]", 2)
    slots = expand_slots(o["slots"]) if o.get("slots") else []
    r = control(env, "node-add", {"name": pos[0], "zone": o["zone"], "slots": slots, "state": o.get("state"),
                                  "id": o.get("id"), "accelerator": o.get("accelerator"), "project": o.get("project")})
    print("fakepod: node %s (%s, %d workers)" % (r["name"], r["state"], len(r.get("networkEndpoints", []))))


def cmd_fault(args):
    env = env_or_die()
    need_root()
    pos, o = parse_opts(args, {"reads"}, {"code", "status", "message", "for", "after"})
    if not pos:
        die("usage: fakepod fault zone-down Z [--reads] [--after qr-create] [--for S] | zone-up Z | latency S | delay VERB S | new-ips on|off | "
            "agent-order random|metadata | clear", 2)
    what = pos[0]
    body = {"what": what}
    if what in ("zone-down", "zone-up"):
        body.update(zone=pos[1], code=o.get("code"), status=o.get("status"), message=o.get("message"),
                    reads=bool(o.get("reads")), after=o.get("after"), **{"for": o.get("for")})
    elif what == "latency":
        body["seconds"] = pos[1]
    elif what == "delay":
        body.update(verb=pos[1], seconds=pos[2])
    elif what == "new-ips":
        body["on"] = pos[1] == "on"
    elif what == "agent-order":
        body["order"] = pos[1]
    r = control(env, "fault", body)
    print("fakepod: faults %s settings %s" % (json.dumps(r["faults"], sort_keys=True),
                                              json.dumps(r["settings"], sort_keys=True)))


def cmd_scrub(args):
    env = env_or_die()
    need_root()
    users = []
    if args[:1] == ["--users"] and len(args) == 2:
        users = [u for u in args[1].split(",") if u]
    elif args:
        die("usage: fakepod scrub [--users U,U...]", 2)
    from . import scrub
    slots = sorted(int(n[1:]) for n in os.listdir(env.state) if n[:1] == "w" and n[1:].isdigit())
    killed = scrub.scrub(env, slots, users)
    print("fakepod: scrubbed %d workers (%d processes killed)" % (len(slots), killed))


def cmd_clock_skew(args):
    """fakepod clock-skew I SECONDS: worker I's clock is off by SECONDS (0 heals)."""
    env = env_or_die()
    need_root()
    if len(args) != 2:
        die("usage: fakepod clock-skew I SECONDS   (0: the right time again)")
    s = slot_arg(env, args[:1])
    try:
        seconds = int(args[1])
    except ValueError:
        die("clock-skew: SECONDS must be a whole number, e.g. 7 or -30")
    control(env, "clock-skew", {"slot": s, "seconds": seconds})
    print("fakepod: worker %d (%s) clock %s" % (s, env.ip(s), "%+ds" % seconds if seconds else "right again"))


def cmd_metadata(args):
    env = env_or_die()
    need_root()
    pos, o = parse_opts(args, set(), {"node", "zone", "project"})
    if len(pos) < 2 or pos[0] not in ("set", "unset") or (pos[0] == "set" and len(pos) != 3):
        die("usage: fakepod metadata set KEY VALUE [--node NAME] | unset KEY [--node NAME]", 2)
    control(env, "metadata", {"scope": o.get("node", "project"), "key": pos[1],
                              "value": pos[2] if pos[0] == "set" else None, "zone": o.get("zone"),
                              "project": o.get("project")})
    print("fakepod: metadata %s %s (%s)" % (pos[0], pos[1], o.get("node", "project")))


def cmd_oslogin(args):
    env = env_or_die()
    need_root()
    if args not in (["on"], ["off"]):
        die("usage: fakepod oslogin on|off", 2)
    control(env, "metadata", {"scope": "project", "key": "enable-oslogin",
                              "value": "TRUE" if args[0] == "on" else None})
    print("fakepod: OS Login %s (project metadata enable-oslogin)" % args[0])


def cmd_user(args):
    env = env_or_die()
    need_root()
    pos, o = parse_opts(args, {"sudo", "no-key"}, set())
    if len(pos) != 2 or pos[0] != "add":
        die("usage: fakepod user add NAME [--sudo] [--no-key]", 2)
    name = pos[1]
    host.setup_users([name])
    if o.get("sudo"):
        with open("/etc/sudoers.d/tpurun-fakepod-%s" % name, "w") as f:
            f.write("%s ALL=(ALL) NOPASSWD: ALL\n" % name)
        os.chmod("/etc/sudoers.d/tpurun-fakepod-%s" % name, 0o440)
    lock = Lock(env)
    users = sim_users(env) + [name]
    host.build_image(env, [u for u in users if u not in config.SIM_USERS])
    host.write_gcloud_config(env, name, int(open(env.path("api.port")).read()))
    lock.release()
    control(env, "user", {"name": name, "sudo": bool(o.get("sudo")), "key": not o.get("no-key")})
    print("fakepod: user %s (uid %d on the dev VM)" % (name, pwd.getpwnam(name).pw_uid))


def qr_line(q):
    """qr NAME STATE TYPE zone=Z nodes=A,B [tier] [error]"""
    specs = q.get("tpu", {}).get("nodeSpec", [])
    nodes = ",".join(s.get("nodeId") or "%s-*" % ((s.get("multisliceParams") or s.get("multiNodeParams") or {})
                                                  .get("nodeIdPrefix") or q["name"].rsplit("/", 1)[1]) for s in specs)
    tier = [k for k in ("spot", "guaranteed", "bestEffort") if k in q] + (["reserved"] if q.get("reservationName")
                                                                          else [])
    err = q["state"].get("failedData", {}).get("error")
    return "qr %s %s %s zone=%s nodes=%s%s%s%s" % (
        q["name"].rsplit("/", 1)[1], q["state"]["state"], specs[0]["node"].get("acceleratorType", "?") if specs else "?",
        q["name"].split("/")[3], nodes, " " + ",".join(tier) if tier else "",
        " by=" + q["state"]["stateInitiator"] if q["state"].get("stateInitiator") else "",
        " error=%d:%s" % (err.get("code", 0), err.get("message", "")) if err else "")


def cmd_capacity(args):
    """fakepod capacity set ZONE TYPE N [--spot|--reserved] | stockout ZONE | restock ZONE | clear | show"""
    env = env_or_die()
    need_root()
    pos, o = parse_opts(args, {"spot", "reserved"}, set())
    usage = "usage: fakepod capacity set ZONE TYPE N [--spot | --reserved] | stockout ZONE | restock ZONE | clear | show"
    if not pos or pos[0] not in ("set", "stockout", "restock", "clear", "show"):
        die(usage, 2)
    what = pos[0]
    body = {"what": what}
    if what == "set":
        if len(pos) != 4 or not pos[3].isdigit() or (o.get("spot") and o.get("reserved")):
            die(usage, 2)
        body.update(zone=pos[1], type=pos[2], count=int(pos[3]),
                    pool="spot" if o.get("spot") else "reserved" if o.get("reserved") else "standard")
    elif what in ("stockout", "restock"):
        if len(pos) != 2:
            die(usage, 2)
        body["zone"] = pos[1]
    r = control(env, "capacity", body)
    print("fakepod: capacity %s (unset: no limit on demand or spot, no reservation); in use %s"
          % (json.dumps(r["capacity"], sort_keys=True), json.dumps(r["used"], sort_keys=True)))


def cmd_qr(args):
    """fakepod qr fail-next [...] | hold STATE SECONDS [--name QR] | list"""
    env = env_or_die()
    need_root()
    pos, o = parse_opts(args, set(), {"zone", "code", "message", "at", "name"})
    usage = ("usage: fakepod qr fail-next [--zone Z] [--code N] [--message M] [--at waiting|provisioning]\n"
             "       fakepod qr hold STATE SECONDS [--name QR] [--zone Z] | list")
    if not pos or pos[0] not in ("fail-next", "hold", "list"):
        die(usage, 2)
    body = {"what": pos[0], "zone": o.get("zone")}
    if pos[0] == "fail-next":
        if o.get("code") is not None and not o["code"].isdigit():
            die(usage, 2)
        body.update(code=int(o["code"]) if o.get("code") else None, message=o.get("message"), at=o.get("at"))
    elif pos[0] == "hold":
        if len(pos) != 3:
            die(usage, 2)
        try:
            float(pos[2])
        except ValueError:
            die(usage, 2)
        body.update(state=pos[1], seconds=pos[2], name=o.get("name"))
    r = control(env, "qr", body)
    for q in r["queuedResources"]:
        print(qr_line(q) + (" hold=%s" % json.dumps(q["hold"], sort_keys=True) if q.get("hold") else ""))
    if pos[0] != "list":
        print("fakepod: queued-resource faults %s" % json.dumps(r["faults"], sort_keys=True))


COMMANDS = {
    "up": cmd_up,
    "down": cmd_down,
    "status": cmd_status,
    "env": cmd_env,
    "gcloud-config": cmd_gcloud_config,
    "stop-worker": worker_cmd("stop-worker", "stopped"),
    "start-worker": worker_cmd("start-worker", "started"),
    "blackhole": worker_cmd("blackhole", "is a blackhole (accepts TCP, never answers)"),
    "partition": worker_cmd("partition", "is partitioned (SYNs dropped, open connections stall)"),
    "heal": worker_cmd("heal", "is reachable again"),
    "rekey": worker_cmd("rekey", "rekeyed"),
    "preempt": node_cmd("preempt"),
    "delete": node_cmd("delete"),
    "stop": node_cmd("stop"),
    "start": node_cmd("start"),
    "create": node_cmd("create"),
    "node-add": cmd_node_add,
    "capacity": cmd_capacity,
    "qr": cmd_qr,
    "fault": cmd_fault,
    "clock-skew": cmd_clock_skew,
    "metadata": cmd_metadata,
    "oslogin": cmd_oslogin,
    "user": cmd_user,
    "scrub": cmd_scrub,
}
