"""The simulated cloud: one daemon per pod, started by `fakepod up`.

It serves three sockets:
  - HTTP on 127.0.0.1:<port> ($STATE/api.port) for gcloud: the Cloud TPU v2
    (and v2alpha1) nodes and operations, compute projects.get, and OS Login
    users (see docs/simulator.md for the exact subset);
  - $STATE/mds.sock, the metadata server the guest agents (and jobs) on the
    workers read: who asks is known from the peer's PID namespace, as the real
    metadata server knows the VM a request comes from;
  - $STATE/control.sock (root only) for the fakepod CLI.
It owns the cloud's state ($STATE/cloud.json) and drives the workers
(workers.py) and the forwarder (netns.py) when nodes change state. The HTTP
API's routing is api.py's, the CLI's control.py's.
"""
import concurrent.futures
import heapq
import http.server
import json
import os
import pwd
import re
import shutil
import signal
import socket
import socketserver
import struct
import sys
import threading
import time
import traceback
import urllib.parse

from . import api, capacity, cloud, config, control, host, netns, nfsmode, procs, queued, workers
from .cloud import ApiError, Node

DEFAULT_DELAYS = {"create": 0.3, "delete": 0.2, "stop": 0.2, "start": 0.2, "update": 0.1}
EMAIL_DOMAIN = "fakepod.test"


def now():
    return time.monotonic()


class Cloud:
    def __init__(self, env, lib_dir):
        self.env = env
        self.lib_dir = lib_dir
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.hv = threading.RLock()          # one worker-lifecycle change at a time
        self.gen = 1                         # bumped on every metadata-visible change
        self.nodes = {}                      # full name -> Node
        self.qrs = {}                        # full name -> queued resource (queued.py)
        self.ops = {}
        self.compute_ops = {}
        self.project_md = []                 # [{"key", "value"}]
        self.oslogin = {}                    # email -> profile
        self.faults = {}
        self.settings = {}
        self.guest = {}                      # slot -> {"ns/key": value}
        self.applied = {}                    # slot -> gen the agent has applied
        self.instance = {}                   # slot -> instance id (a new one: a new VM)
        self.next_fresh = 0
        self.pidns_slot = {}
        self.timers = []
        self.timer_cv = threading.Condition()
        self.log_lock = threading.Lock()
        self.load()

    # ------------------------------------------------------------ persistence
    def load(self):
        try:
            with open(self.env.path("cloud.json")) as f:
                d = json.load(f)
        except (OSError, ValueError):
            d = {}
        self.nodes = {k: Node.from_json(v) for k, v in d.get("nodes", {}).items()}
        self.ops = d.get("ops", {})
        self.project_md = d.get("project_md", [])
        self.oslogin = d.get("oslogin", {})
        self.settings = d.get("settings", {})
        self.guest = {int(k): v for k, v in d.get("guest", {}).items()}
        self.instance = {int(k): v for k, v in d.get("instance", {}).items()}
        self.next_fresh = d.get("next_fresh", 0)
        self.gen = d.get("gen", 1) + 1
        queued.load(self, d.get("qrs"))
        # Operations that were running when the server stopped never finish.
        for op in self.ops.values():
            if not op.get("done"):
                cloud.finish_operation(op, error=RuntimeError("the simulated cloud restarted"))

    def save(self):
        with self.lock:
            d = {"nodes": {k: n.to_json() for k, n in self.nodes.items()}, "ops": self.ops,
                 "project_md": self.project_md, "oslogin": self.oslogin, "settings": self.settings,
                 "guest": self.guest, "instance": self.instance, "next_fresh": self.next_fresh,
                 "gen": self.gen, "qrs": self.qrs}
            # Keep the last 200 operations.
            if len(self.ops) > 200:
                for k in sorted(self.ops, key=lambda k: self.ops[k]["metadata"]["createTime"])[:-200]:
                    del self.ops[k]
            procs.write_file(self.env.path("cloud.json"), json.dumps(d, indent=1), 0o600)

    def changed(self):
        """Something agents may care about changed: wake the long polls."""
        with self.cond:
            self.gen += 1
            self.cond.notify_all()
        self.save()

    def log(self, line):
        with self.log_lock:
            with open(self.env.path("api.log"), "a") as f:
                f.write("%s %s\n" % (time.strftime("%H:%M:%S"), line))

    # ------------------------------------------------------------ timers
    def after(self, seconds, fn):
        with self.timer_cv:
            heapq.heappush(self.timers, (now() + seconds, id(fn), fn))
            self.timer_cv.notify()

    def timer_loop(self):
        while True:
            with self.timer_cv:
                while not self.timers or self.timers[0][0] > now():
                    self.timer_cv.wait(None if not self.timers else max(0.0, self.timers[0][0] - now()))
                _, _, fn = heapq.heappop(self.timers)
            threading.Thread(target=self._run_timer, args=(fn,), daemon=True).start()

    def _run_timer(self, fn):
        try:
            fn()
        except Exception:  # noqa: BLE001 - a background transition must not kill the server
            self.log("transition failed: %s" % traceback.format_exc().replace("\n", " | "))

    def delay(self, verb):
        return float(self.faults.get("delays", {}).get(verb, DEFAULT_DELAYS.get(verb, 0.5)))

    # ------------------------------------------------------------ lookups
    def node(self, project, zone, name):
        n = self.nodes.get("projects/%s/locations/%s/nodes/%s" % (project, zone, name))
        if n is None:
            raise cloud.not_found("projects/%s/locations/%s/nodes/%s" % (project, zone, name))
        return n

    def owner_of(self, slot):
        for n in self.nodes.values():
            if not n.view and slot in n.slots:
                return n
        return None

    def default_node(self):
        return self.nodes.get("projects/%s/locations/%s/nodes/%s" % (config.PROJECT, config.ZONE, config.NODE))

    def project_md_dict(self):
        return {i["key"]: i["value"] for i in self.project_md}

    def set_project_md(self, key, value):
        with self.lock:
            items = [i for i in self.project_md if i["key"] != key]
            if value is not None:
                items.append({"key": key, "value": value})
            self.project_md = items
        self.changed()

    def oslogin_enabled(self, node):
        v = node.metadata.get("enable-oslogin") if node else None
        if v is None:
            v = self.project_md_dict().get("enable-oslogin")
        return (v or "").upper() == "TRUE"

    # ------------------------------------------------------------ hypervisor
    def hostname(self, node, worker):
        if node.name == config.NODE and node.project == config.PROJECT and node.zone == config.ZONE:
            return "t1v-n-fakepod-w-%d" % worker
        return "t1v-n-%08x-w-%d" % (int(node.id) & 0xffffffff, worker)

    def write_hosts(self):
        """$STATE/hosts: the host's /etc/hosts plus every worker's name. Written
        in place: workers bind-mount this very inode over /etc/hosts."""
        try:
            with open("/etc/hosts") as f:
                base = [l for l in f.read().splitlines() if "t1v-n-" not in l and l != "# fakepod workers"]
        except OSError:
            base = ["127.0.0.1 localhost"]
        lines = base + ["# fakepod workers"]
        for n in self.nodes.values():
            if n.view:
                continue
            for i, s in enumerate(n.slots):
                lines.append("%s %s" % (self.env.ip(s), self.hostname(n, i)))
        text = "\n".join(lines) + "\n"
        path = self.env.path("hosts")
        if not os.path.exists(path):
            procs.write_file(path, text)
            return
        with open(path, "r+") as f:
            if f.read() != text:
                f.seek(0)
                f.truncate()
                f.write(text)

    def netns_on(self):
        return os.environ.get("FAKEPOD_NETNS", "1") != "0"

    def boot(self, node, slots=None, *, new_vm=False, setup_done=False):
        """Starts the node's workers (all, or the given slots). new_vm: fresh
        disks, new host keys and instance ids. setup_done: the disk's fstab
        mounts the shared dir at boot (the default node's long-lived VMs)."""
        env = self.env
        slots = list(node.slots if slots is None else slots)
        hostnames = ",".join(env.ip(s) for s in node.slots)
        device = cloud.device_for(node.accelerator_type)
        self.write_hosts()
        keygen = []
        for s in slots:
            worker = node.slots.index(s)
            workers.write_slot(env, s, hostname=self.hostname(node, worker), worker=worker, hostnames=hostnames,
                               device=device, netns=self.netns_on(), disk=True)
            key = os.path.join(env.wdir(s), "ssh_host_ed25519_key")
            if new_vm:
                workers.fresh_disk(env, s)
                keygen.append(s)
                self.instance[s] = cloud.new_node_id()
                self.guest.pop(s, None)
            else:
                workers.ensure_disk(env, s)
                if not os.path.exists(key):
                    keygen.append(s)
                self.instance.setdefault(s, cloud.new_node_id())
            if setup_done:
                self.seed_fstab(s)
            self.applied.pop(s, None)
        # ssh-keygen and unshare are processes: run a few at a time.
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda s: workers.new_host_key(env, s), keygen))
            list(pool.map(lambda s: workers.spawn(env, s), [s for s in slots if not workers.init_pid(env, s)]))
        pids = workers.wait_inits(env, slots)
        for s, pid in pids.items():
            ns = procs.pidns(pid)
            if ns:
                self.pidns_slot[ns] = s
            if self.netns_on():
                netns.request(env.state, "up %d %s /proc/%d/ns/net" % (s, env.ip(s), pid))
        workers.wait_ports([env.ip(s) for s in slots], True, 60)
        self.save()

    def halt(self, slots):
        env = self.env
        for s in slots:
            if self.netns_on():
                try:
                    netns.request(env.state, "down %d" % s)
                except (OSError, RuntimeError):
                    pass
        workers.kill(env, slots)
        for ns, s in list(self.pidns_slot.items()):
            if s in slots:
                del self.pidns_slot[ns]
        for s in slots:
            self.applied.pop(s, None)

    def seed_fstab(self, slot):
        """The shared dir in the VM's /etc/fstab, as a setup script leaves it."""
        path = os.path.join(self.env.wdir(slot), "disk", "etc", "fstab")
        line = "fakenfs:/ %s fakenfs defaults 0 0" % self.env.nfs
        try:
            with open(path) as f:
                text = f.read()
        except FileNotFoundError:
            try:
                with open("/etc/fstab") as f:
                    text = f.read()
            except OSError:
                text = ""
        if line not in text.splitlines():
            procs.write_file(path, text + ("" if text.endswith("\n") or not text else "\n") + line + "\n")

    def free_slots(self, count):
        used = set()
        for n in self.nodes.values():
            if not n.view:
                used.update(n.slots)
        if self.settings.get("new_ips"):
            start = max([self.next_fresh] + [s + 1 for s in used])
            out = list(range(start, start + count))
        else:
            out = []
            s = 0
            while len(out) < count:
                if s not in used:
                    out.append(s)
                s += 1
        if out and out[-1] >= self.env.max_slots:
            raise ApiError(429, "RESOURCE_EXHAUSTED", "There is no more capacity in the zone (the simulator has "
                           "%d worker addresses)" % self.env.max_slots)
        self.next_fresh = max(self.next_fresh, (out[-1] + 1) if out else 0)
        return out

    def wait_applied(self, slots, gen, timeout=30.0):
        deadline = now() + timeout
        with self.cond:
            while True:
                missing = [s for s in slots if self.applied.get(s, 0) < gen]
                if not missing or now() > deadline:
                    return missing
                self.cond.wait(min(1.0, max(0.01, deadline - now())))

    # ------------------------------------------------------------ node operations
    def start_op(self, node, verb, work, delay_verb=None):
        op = cloud.new_operation(node.project, node.zone, verb, node.full_name)
        with self.lock:
            self.ops[op["name"]] = op
        self.save()

        def run():
            try:
                response = work()
                with self.lock:
                    cloud.finish_operation(op, response)
            except ApiError as e:
                with self.lock:
                    op["done"] = True
                    op["error"] = cloud.rpc_error(e)
            except Exception as e:  # noqa: BLE001
                self.log("operation %s failed: %s" % (op["name"], traceback.format_exc().replace("\n", " | ")))
                with self.lock:
                    op["done"] = True
                    op["error"] = {"code": 13, "message": "internal error: %s" % e}
            self.changed()

        self.after(self.delay(delay_verb or verb), run)
        return op

    def node_response(self, node):
        r = node.to_api(self.env)
        r["@type"] = "type.googleapis.com/google.cloud.tpu.v2.Node"
        return r

    def op_patch(self, node, mask, body):
        fields = [f.strip() for f in mask.split(",") if f.strip()]
        if not fields:
            raise ApiError(400, "INVALID_ARGUMENT", "update_mask is required")
        for f in fields:
            if f not in ("metadata", "labels", "description", "tags"):
                raise ApiError(400, "INVALID_ARGUMENT", "Field '%s' cannot be updated (supported here: metadata, "
                               "labels, description, tags)" % f)

        def work():
            with self.hv, self.lock:
                if node.full_name not in self.nodes:
                    raise cloud.not_found(node.full_name)
                if "metadata" in fields:
                    node.metadata = dict(body.get("metadata") or {})
                if "labels" in fields:
                    node.labels = dict(body.get("labels") or {})
                if "description" in fields:
                    node.description = body.get("description")
                if "tags" in fields:
                    node.tags = list(body.get("tags") or [])
            self.changed()
            gen = self.gen
            # The operation is done once the running workers' agents have
            # applied it (the real one takes about as long as propagation).
            running = [s for s in node.slots if workers.init_pid(self.env, s)] if node.state == "READY" else []
            self.wait_applied(running, gen)
            return self.node_response(node)

        return self.start_op(node, "update", work)

    def op_stop(self, node):
        if node.state != "READY":
            raise ApiError(400, "FAILED_PRECONDITION", "Cannot stop a node in state %s" % node.state)
        node.state, node.health = "STOPPING", None
        self.changed()

        def work():
            with self.hv:
                if not node.view:
                    self.halt(node.slots)
                node.state = "STOPPED"
            return self.node_response(node)

        return self.start_op(node, "stop", work)

    def op_start(self, node):
        if node.state in ("PREEMPTED", "TERMINATED"):
            raise ApiError(400, "FAILED_PRECONDITION", "The node is %s: it cannot be started; delete it and "
                           "create it again" % node.state)
        if node.state != "STOPPED":
            raise ApiError(400, "FAILED_PRECONDITION", "Cannot start a node in state %s" % node.state)
        node.state = "STARTING"
        self.changed()

        def work():
            with self.hv:
                if not node.view:
                    if self.settings.get("new_ips"):
                        self.move_to_new_slots(node)
                    self.boot(node)
                    self.wait_applied(node.slots, self.gen)
                node.state, node.health = "READY", "HEALTHY"
                self.write_pod_files()
            return self.node_response(node)

        return self.start_op(node, "start", work)

    def move_to_new_slots(self, node):
        """The VM keeps its disk and host keys but comes back on new addresses."""
        old = list(node.slots)
        node.slots = []
        new = self.free_slots(len(old))
        for o, n in zip(old, new):
            src, dst = self.env.wdir(o), self.env.wdir(n)
            os.makedirs(dst, exist_ok=True)
            for name in ("disk", "ssh_host_ed25519_key", "ssh_host_ed25519_key.pub", "syslog"):
                if os.path.exists(os.path.join(dst, name)):
                    if os.path.isdir(os.path.join(dst, name)):
                        shutil.rmtree(os.path.join(dst, name))
                    else:
                        os.unlink(os.path.join(dst, name))
                if os.path.exists(os.path.join(src, name)):
                    os.rename(os.path.join(src, name), os.path.join(dst, name))
            self.instance[n] = self.instance.pop(o, cloud.new_node_id())
            self.guest[n] = self.guest.pop(o, {})
        node.slots = new

    def op_delete(self, node):
        if node.state in ("DELETING",):
            raise ApiError(400, "FAILED_PRECONDITION", "The node is already being deleted")
        node.state, node.health = "DELETING", None
        self.changed()

        def work():
            with self.hv:
                if not node.view:
                    self.halt(node.slots)
                with self.lock:
                    self.nodes.pop(node.full_name, None)
                    if not node.view:
                        for s in node.slots:
                            self.guest.pop(s, None)
                            self.instance.pop(s, None)
                self.write_hosts()
                self.write_pod_files()
            return None

        return self.start_op(node, "delete", work)

    def op_create(self, project, zone, name, body, queued_resource=None):
        full = "projects/%s/locations/%s/nodes/%s" % (project, zone, name)
        if not re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", name or ""):
            raise ApiError(400, "INVALID_ARGUMENT", "Invalid node id %r: must match [a-z]([-a-z0-9]*[a-z0-9])?"
                           % name)
        if full in self.nodes:
            raise ApiError(409, "ALREADY_EXISTS", "Resource '%s' already exists" % full, full)
        accel = body.get("acceleratorType")
        if not accel and body.get("acceleratorConfig"):
            ac = body["acceleratorConfig"]
            accel = "%s-%d" % ({"V2": "v2", "V3": "v3", "V4": "v4", "V5LITE_POD": "v5litepod", "V5P": "v5p",
                                "V6E": "v6e"}.get(ac.get("type"), "v4"), 8)
        if not accel:
            raise ApiError(400, "INVALID_ARGUMENT", "Node.accelerator_type or Node.accelerator_config is required")
        if not body.get("runtimeVersion"):
            raise ApiError(400, "INVALID_ARGUMENT", "Node.runtime_version is required")
        count = cloud.hosts_for(accel)
        with self.hv, self.lock:
            # A plain create in a zone out of capacity fails through its
            # operation (capacity.py); a queued resource has its capacity.
            short = None if queued_resource else capacity.check_create(self, zone, accel,
                                                                        body.get("schedulingConfig"))
            slots = [] if short else self.free_slots(count)
            nc = body.get("networkConfig") or {}
            node = Node(project, zone, name, cloud.new_node_id(), accel, body["runtimeVersion"], slots,
                        state="CREATING", metadata=body.get("metadata"), labels=body.get("labels"),
                        scheduling=body.get("schedulingConfig"), external_ips=nc.get("enableExternalIps", True),
                        description=body.get("description"), tags=body.get("tags"), network=nc.get("network"),
                        subnetwork=nc.get("subnetwork"), data_disks=body.get("dataDisks"),
                        service_account=body.get("serviceAccount"),
                        secure_boot=(body.get("shieldedInstanceConfig") or {}).get("enableSecureBoot"),
                        queued_resource=queued_resource)
            node.health = None
            self.nodes[full] = node
        self.changed()

        def work():
            with self.hv:
                if full not in self.nodes:
                    raise cloud.not_found(full)
                if short:
                    with self.lock:
                        self.nodes.pop(full, None)
                    raise short
                self.halt(node.slots)
                self.boot(node, new_vm=True)
                self.wait_applied(node.slots, self.gen)
                node.state, node.health = "READY", "HEALTHY"
                self.write_pod_files()
            return self.node_response(node)

        return self.start_op(node, "create", work)

    def preempt(self, node, state="PREEMPTED", notice=0.0):
        """What Google does to a spot/preemptible VM: the workers die, at once
        or after `notice` seconds. Compute Engine's preemption process sends
        an ACPI G2 Soft Off and gives the guest up to 30 s to shut down before
        G3 Mechanical Off (cloud.google.com/compute/docs/instances/preemptible,
        "Preemption process"); the API may already say PREEMPTED while the
        workers still answer, so a tool must not assume they are gone."""
        with self.hv:
            if not node.view and notice <= 0:
                self.halt(node.slots)
            node.state, node.health = state, None
            node.health_description = ("The TPU was preempted." if state == "PREEMPTED"
                                       else "The TPU was terminated for maintenance.")
        if not node.view and notice > 0:
            def power_off():
                with self.hv:
                    # Only the VM that got the notice: not one created since under the name.
                    if self.nodes.get(node.full_name) is node and node.state == state:
                        self.halt(node.slots)
            self.after(notice, power_off)
        self.changed()

    # ------------------------------------------------------------ the default pod
    def seed_keys(self):
        """Project metadata ssh-keys holds the simulated users' keys, in the
        order of their uids on the dev VM (an admin added them as the users
        arrived): each worker's agent then makes them with the dev VM's uids."""
        users = []
        for u in config.SIM_USERS + tuple(self.settings.get("extra_users", [])):
            try:
                pw = pwd.getpwnam(u)
            except KeyError:
                continue
            try:
                with open(os.path.join(pw.pw_dir, ".ssh", "id_ed25519.pub")) as f:
                    key = " ".join(f.read().split()[:2])
            except OSError:
                continue
            users.append((pw.pw_uid, u, key))
        value = self.project_md_dict().get("ssh-keys", "")
        have = cloud.parse_ssh_keys(value)
        lines = value.splitlines()
        added = False
        for _, u, key in sorted(users):
            if not any(hu == u and hk.split()[:2] == key.split()[:2] for hu, hk in have):
                lines.append("%s:%s %s" % (u, key, u))
                added = True
        if added or "ssh-keys" not in self.project_md_dict():
            self.set_project_md("ssh-keys", "\n".join(l for l in lines if l.strip()))

    def seed_oslogin(self):
        """The OS Login directory: each simulated user's account has the dev
        VM's name and uid (as when the dev VM is itself an OS Login VM of the
        same organization); alice and bob may administer (sudo), carol may not."""
        for u in config.SIM_USERS + tuple(self.settings.get("extra_users", [])):
            email = "%s@%s" % (u, EMAIL_DOMAIN)
            try:
                pw = pwd.getpwnam(u)
            except KeyError:
                continue
            prof = self.oslogin.setdefault(email, {"keys": {}})
            prof.setdefault("username", u)
            prof.setdefault("uid", pw.pw_uid)
            prof.setdefault("gid", pw.pw_gid)
            prof.setdefault("home", "/home/%s" % u)
            prof.setdefault("admin", u in config.SUDO_USERS or u in self.settings.get("extra_sudo", []))
            # Their usual key is in the profile too (as in project metadata).
            try:
                with open(os.path.join(pw.pw_dir, ".ssh", "id_ed25519.pub")) as f:
                    key = " ".join(f.read().split()[:2])
                prof.setdefault("keys", {}).setdefault(cloud.key_fingerprint(key), {"key": key})
            except OSError:
                pass

    def up(self, n, device):
        env = self.env
        if not 1 <= n <= env.max_slots:
            raise ApiError(400, "INVALID_ARGUMENT", "up: N must be 1..%d" % env.max_slots)
        # The old fixture's names (v4: 8 TensorCores a host; v5e: 4 chips a
        # host). Clients must count networkEndpoints, not parse this.
        accel = "v5litepod-%d" % (4 * n) if device == "vfio" else "v4-%d" % (8 * n)
        with self.hv:
            self.faults = {}
            queued.reset(self)
            self.settings.pop("new_ips", None)
            self.settings.pop("agent_order", None)
            for slot in range(n):  # a clock set off by clock-skew is right again
                if workers.clock_skew(env, slot):
                    workers.set_clock_skew(env, slot, 0)
                    if workers.init_pid(env, slot):
                        workers.restart_sshd(env, slot)
            d = self.default_node()
            want = list(range(n))
            started = 0
            if d is not None and (d.slots != want or d.accelerator_type != accel or d.view):
                self.halt(d.slots)
                del self.nodes[d.full_name]
                d = None
            # Every other node goes: each test starts from the default pod.
            for k, other in list(self.nodes.items()):
                if other is d:
                    continue
                if not other.view:
                    self.halt([s for s in other.slots if s not in want])
                    for s in other.slots:
                        if s not in want:
                            self.guest.pop(s, None)
                            self.instance.pop(s, None)
                del self.nodes[k]
            stray = [int(x[1:]) for x in os.listdir(env.state) if x.startswith("w") and x[1:].isdigit()
                     and int(x[1:]) >= n]
            self.halt([s for s in stray if workers.init_pid(env, s)])
            for s in stray:
                if self.netns_on():
                    try:
                        netns.request(env.state, "down %d" % s)
                    except (OSError, RuntimeError):
                        pass
                # Addresses a created VM used: their next VM gets a key of its
                # own, and `up` then forgets the old one in known_hosts.
                if os.path.exists(os.path.join(env.wdir(s), "baseline_key.pub")):
                    continue
                for f in ("ssh_host_ed25519_key", "ssh_host_ed25519_key.pub"):
                    try:
                        os.unlink(os.path.join(env.wdir(s), f))
                    except FileNotFoundError:
                        pass
            if d is None:
                d = Node(config.PROJECT, config.ZONE, config.NODE, env.node_id, accel,
                         "v2-alpha-tpuv5-lite" if device == "vfio" else "tpu-ubuntu2204-base", want,
                         tags=["fakepod"], scheduling={})
                self.nodes[d.full_name] = d
            d.state, d.health, d.health_description = "READY", "HEALTHY", None
            self.seed_keys()
            self.seed_oslogin()
            todo = [s for s in want if not workers.init_pid(env, s)]
            for s in want:
                if self.netns_on() and not workers.init_pid(env, s):
                    try:
                        netns.request(env.state, "down %d" % s)
                    except (OSError, RuntimeError):
                        pass
            started = len(todo)
            restored = []
            for s in want:
                if self.baseline_key(s, restore=s in todo):
                    restored.append(s)
            # The users' known_hosts may hold the key the worker had before
            # (a rekey, a recreated VM): forget it, as for a new key.
            host.forget_host_keys(env, [env.ip(s) for s in restored])
            for s in want:
                try:
                    os.unlink(os.path.join(env.wdir(s), "net.mode"))
                except FileNotFoundError:
                    pass
            for i in range(0, len(todo), 64):
                # No shared mount (FAKEPOD_NFS_MODE=none): nothing in fstab mounts it.
                self.boot(d, todo[i:i + 64], setup_done=nfsmode.recorded_mode(env) != "none")
            # A worker a fault left blackholed or partitioned: back to normal.
            for s in want:
                if s not in todo and self.netns_on():
                    pid = workers.init_pid(env, s)
                    netns.request(env.state, "up %d %s /proc/%d/ns/net" % (s, env.ip(s), pid))
            self.write_hosts()
            self.write_pod_files()
        self.changed()
        missing = self.wait_applied(want, self.gen, timeout=120)
        if missing:
            raise ApiError(500, "INTERNAL", "the guest agents of workers %s did not apply the metadata"
                           % " ".join(map(str, missing)))
        return {"workers": n, "started": started, "device": device, "accelerator": d.accelerator_type}

    def baseline_key(self, slot, restore):
        """The default node's host keys stay what they were at its first `up`:
        a worker `up` boots again gets its baseline key back, even if a test
        rekeyed or recreated it meanwhile. Returns True when it changed the key."""
        w = self.env.wdir(slot)
        key, base = os.path.join(w, "ssh_host_ed25519_key"), os.path.join(w, "baseline_key")
        if not os.path.exists(key):
            if not restore or not os.path.exists(base):
                return False
        elif not os.path.exists(base):
            shutil.copy2(key, base)
            shutil.copy2(key + ".pub", base + ".pub")
            return False
        if restore:
            with open(base + ".pub") as f:
                b = f.read()
            try:
                with open(key + ".pub") as f:
                    same = f.read() == b
            except OSError:
                same = False
            if not same:
                shutil.copy2(base, key + ".tmp")
                os.replace(key + ".tmp", key)
                shutil.copy2(base + ".pub", key + ".pub.tmp")
                os.replace(key + ".pub.tmp", key + ".pub")
                return True
        return False

    def write_pod_files(self):
        """tpurun.json (a static config for the default node) and
        gcloud-describe.json (what describe prints: the stub's fixture)."""
        env = self.env
        d = self.default_node()
        if d is None:
            return
        ips = ", ".join('"%s"' % env.ip(s) for s in d.slots)
        procs.write_file(env.path("tpurun.json"), """{ "default_pod": "sim",
  "pods": { "sim": { "workers": [%s],
                     "ssh": { "identity_file": "~/.ssh/id_ed25519", "known_hosts": "~/.ssh/known_hosts",
                              "host_key_policy": "accept-new", "connect_timeout_s": 5 },
                     %s } } }
""" % (ips, '"local_root": "~/.tpurun"' if nfsmode.recorded_mode(env) == "none"
       else '"staging_root": "%s/staging", "logs_root": "%s/logs"' % (env.nfs, env.nfs)))
        procs.write_file(env.path("gcloud-describe.json"), json.dumps(d.to_api(env), indent=2) + "\n")
        procs.write_file(env.path("hostnames"), ",".join(env.ip(s) for s in d.slots) + "\n")
        procs.write_file(env.path("workers"), "%d\n" % len(d.slots))

    # ------------------------------------------------------------ metadata server
    def md_doc(self, slot):
        node = self.owner_of(slot)
        inst = {"id": self.instance.get(slot, "0"), "attributes": {}, "guestAttributes": {}}
        if node is not None:
            worker = node.slots.index(slot)
            attrs = dict(node.metadata)
            attrs.update({
                "agent-worker-number": str(worker),
                "accelerator-type": node.accelerator_type,
                "tpu-env": "ACCELERATOR_TYPE: '%s'\nWORKER_ID: '%d'\n" % (node.accelerator_type, worker),
                "worker-network-endpoints": ",".join("%s:%s:%s" % (self.hostname(node, i), self.instance.get(s, ""),
                                                                   self.env.ip(s))
                                                     for i, s in enumerate(node.slots)),
            })
            inst.update({"attributes": attrs, "hostname": self.hostname(node, worker),
                         "name": self.hostname(node, worker),
                         "zone": "projects/%s/zones/%s" % (config.PROJECT_NUMBER, node.zone)})
        doc = {"instance": inst,
               "project": {"projectId": config.PROJECT, "numericProjectId": int(config.PROJECT_NUMBER),
                           "attributes": self.project_md_dict()},
               "fakepod": {"gen": self.gen, "oslogin": self.oslogin_enabled(node),
                           "agent_order": self.settings.get("agent_order", "metadata"),
                           "slot": slot}}
        return doc

    def oslogin_profiles(self):
        out = []
        for email, p in sorted(self.oslogin.items()):
            out.append(self.login_profile(email))
        return out

    def login_profile(self, email):
        p = self.oslogin.get(email)
        prof = {"name": email}
        if p is None:
            return prof
        if p.get("username"):
            prof["posixAccounts"] = [{"primary": True, "username": p["username"], "uid": str(p["uid"]),
                                      "gid": str(p["gid"]), "homeDirectory": p["home"], "shell": "/bin/bash",
                                      "gecos": "", "systemId": "", "accountId": config.PROJECT,
                                      "operatingSystemType": "LINUX", "name": "users/%s/projects/%s" % (
                                          email, config.PROJECT)}]
        if p.get("keys"):
            prof["sshPublicKeys"] = {fp: dict(k, fingerprint=fp, name="users/%s/sshPublicKeys/%s" % (email, fp))
                                     for fp, k in p["keys"].items()}
        return prof


# ================================================================ HTTP

class Handler(http.server.BaseHTTPRequestHandler):
    server_version = "ESF"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    cloudref = None   # set per server
    kind = "api"      # api | mds | control

    def log_message(self, fmt, *args):
        pass

    def address_string(self):
        return "local"

    def reply(self, code, body, headers=None):
        data = (json.dumps(body, indent=2) + "\n").encode() if not isinstance(body, (bytes, str)) else (
            body.encode() if isinstance(body, str) else body)
        self.send_response(code)
        self.send_header("Content-Type", "application/json; charset=UTF-8"
                         if not isinstance(body, (bytes, str)) else "application/text")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if not raw:
            return {}
        try:
            return json.loads(raw)
        except ValueError:
            raise ApiError(400, "INVALID_ARGUMENT", "Invalid JSON payload received.")

    def handle_any(self, method):
        c = self.cloudref
        t0 = time.monotonic()
        code = 500
        try:
            url = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qs(url.query)
            if self.kind == "api":
                lat = float(c.faults.get("latency", 0) or 0)
                if lat:
                    time.sleep(lat)
                code, body = api.route(c, method, urllib.parse.unquote(url.path), query, self)
            elif self.kind == "mds":
                code, body = mds_route(c, method, url.path, query, self)
            else:
                code, body = control.route(c, method, url.path, query, self)
        except ApiError as e:
            code, body = e.code, e.body()
        except Exception as e:  # noqa: BLE001 - answer 500, log the trace
            c.log("error: %s" % traceback.format_exc().replace("\n", " | "))
            code, body = 500, ApiError(500, "INTERNAL", "internal error: %s" % e).body()
        headers = {}
        if isinstance(body, tuple):
            body, headers = body
        try:
            self.reply(code, body, headers)
        except OSError:
            pass
        if self.kind != "mds" or method != "GET":
            c.log("%s %s %s %s %d %.0fms" % (self.kind, method, self.path, getattr(self, "peer", ""), code,
                                             (time.monotonic() - t0) * 1000))

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_PATCH(self):
        self.handle_any("PATCH")

    def do_DELETE(self):
        self.handle_any("DELETE")

    def do_PUT(self):
        self.handle_any("PUT")



# ------------------------------------------------------------ metadata server

def peer_slot(c, h):
    """The worker a metadata request comes from: the peer's PID namespace."""
    try:
        cred = h.connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid, _, _ = struct.unpack("3i", cred)
    except OSError:
        return None
    ns = procs.pidns(pid)
    s = c.pidns_slot.get(ns)
    if s is None:
        # Not learnt yet (a server restart): look at the recorded namespaces.
        for name in os.listdir(c.env.state):
            if name.startswith("w") and name[1:].isdigit():
                pid = procs.read_pid(os.path.join(c.env.state, name, "init.pid"))
                if pid and procs.pidns(pid) == ns:
                    s = int(name[1:])
                    c.pidns_slot[ns] = s
                    break
    return s


def mds_route(c, method, path, query, h):
    if h.headers.get("Metadata-Flavor") != "Google":
        raise ApiError(403, "PERMISSION_DENIED", "Missing Metadata-Flavor:Google header.")
    slot = peer_slot(c, h)
    if slot is None:
        raise ApiError(403, "PERMISSION_DENIED", "not a fakepod worker")
    h.peer = "w%d" % slot
    prefix = "/computeMetadata/v1/"
    if not path.startswith(prefix):
        raise ApiError(404, "NOT_FOUND", "Not found")
    rest = path[len(prefix):]
    if rest.startswith("instance/guest-attributes/") and method == "PUT":
        key = rest[len("instance/guest-attributes/"):]
        n = int(h.headers.get("Content-Length") or 0)
        value = h.rfile.read(n).decode() if n else ""
        if key.count("/") != 1:
            raise ApiError(400, "INVALID_ARGUMENT", "guest attribute keys are NAMESPACE/KEY")
        with c.cond:
            if key == "fakepod/applied":
                c.applied[slot] = int(value or 0)
            else:
                c.guest.setdefault(slot, {})[key] = value
            c.cond.notify_all()
        if key != "fakepod/applied":
            c.save()
        return 200, ""
    if rest.startswith("oslogin/users"):
        with c.lock:
            profiles = c.oslogin_profiles()
        name = (query.get("username") or [None])[0]
        uid = (query.get("uid") or [None])[0]
        if name or uid:
            profiles = [p for p in profiles if any(a["username"] == name or a["uid"] == uid
                                                   for a in p.get("posixAccounts", []))]
            if not profiles:
                raise ApiError(404, "NOT_FOUND", "Not found")
        return 200, {"loginProfiles": profiles}
    if rest.startswith("oslogin/authorize"):
        email = (query.get("email") or [""])[0]
        policy = (query.get("policy") or ["login"])[0]
        p = c.oslogin.get(email, {})
        ok = bool(p.get("username")) and (policy == "login" or p.get("admin"))
        return 200, {"success": ok}
    if method != "GET":
        raise ApiError(405, "INVALID_ARGUMENT", "method not allowed")
    wait = (query.get("wait_for_change") or ["false"])[0] == "true"
    last = (query.get("last_etag") or ["0"])[0]
    timeout = float((query.get("timeout_sec") or ["60"])[0])
    with c.cond:
        if wait:
            deadline = now() + timeout
            while str(c.gen) == last and now() < deadline:
                c.cond.wait(max(0.01, deadline - now()))
        doc = c.md_doc(slot)
        etag = str(c.gen)
    if rest in ("", "/"):
        return 200, (doc, {"ETag": etag})
    node = doc
    for part in rest.strip("/").split("/"):
        if isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise ApiError(404, "NOT_FOUND", "Not found")
    if isinstance(node, (dict, list)):
        return 200, (node, {"ETag": etag})
    return 200, (str(node), {"ETag": etag})


# ------------------------------------------------------------ control (the CLI)


# ================================================================ main

class TCPServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 1024


class UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    request_queue_size = 1024


def make_handler(c, kind):
    return type("H_" + kind, (Handler,), {"cloudref": c, "kind": kind})


def main(argv):
    state = argv[0]
    env = config.Env(state, argv[1], argv[2], "accel")
    os.chdir("/")
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    c = Cloud(env, os.path.dirname(os.path.abspath(__file__)))
    tcp = TCPServer(("127.0.0.1", 0), make_handler(c, "api"))
    c.port = tcp.server_address[1]
    servers = [tcp]
    for name, kind, mode in (("mds.sock", "mds", 0o666), ("control.sock", "control", 0o600)):
        path = env.path(name)
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        s = UnixServer(path, make_handler(c, kind))
        os.chmod(path, mode)
        servers.append(s)
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    threading.Thread(target=c.timer_loop, daemon=True).start()
    procs.write_file(env.path("api.port"), "%d\n" % c.port)
    c.log("server up on 127.0.0.1:%d" % c.port)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main(sys.argv[1:])
