"""The fakepod CLI's requests ($STATE/control.sock, root only): each command
that changes the pod is done here, by the server, so worker-lifecycle
changes happen one at a time."""
import threading
import os
import time

from . import capacity, cloud, config, netns, queued, workers
from .cloud import ApiError, Node


def now():
    return time.monotonic()


def route(c, method, path, query, h):
    req = h.body() if method == "POST" else {}
    cmd = path.strip("/").split("/")[-1]
    if cmd == "up":
        return 200, c.up(int(req["n"]), req.get("device", "accel"))
    if cmd == "status":
        with c.lock:
            return 200, {"nodes": [dict(n.to_api(c.env), slots=n.slots, view=n.view) for n in c.nodes.values()],
                         "faults": c.faults, "settings": c.settings, "api_port": c.port,
                         "applied": c.applied, "gen": c.gen,
                         "queuedResources": [queued.to_api(q) for q in sorted(c.qrs.values(),
                                                                              key=lambda q: q["created"])]}
    if cmd == "shutdown":
        threading.Thread(target=lambda: (time.sleep(0.05), os._exit(0)), daemon=True).start()
        return 200, {"ok": True}
    if cmd in ("stop-worker", "start-worker", "blackhole", "partition", "heal", "rekey"):
        return 200, worker_fault(c, cmd, int(req["slot"]))
    if cmd == "clock-skew":
        slot = int(req["slot"])
        try:
            workers.set_clock_skew(c.env, slot, int(req.get("seconds", 0)))
        except (RuntimeError, ValueError) as e:
            raise ApiError(400, "FAILED_PRECONDITION", str(e))
        workers.restart_sshd(c.env, slot)
        return 200, {"ok": True}
    if cmd in ("preempt", "delete", "stop", "start", "create"):
        project = req.get("project") or config.PROJECT
        zone = req.get("zone") or config.ZONE
        if cmd == "create":
            body = {"acceleratorType": req.get("accelerator") or "v4-8",
                    "runtimeVersion": req.get("version") or "tpu-ubuntu2204-base",
                    "networkConfig": {"enableExternalIps": not req.get("internal_ips"),
                                      "network": req.get("network") or "default"}}
            if req.get("subnetwork"):
                body["networkConfig"]["subnetwork"] = req["subnetwork"]
            if req.get("spot"):
                body["schedulingConfig"] = {"spot": True}
            elif req.get("preemptible"):
                body["schedulingConfig"] = {"preemptible": True}
            if req.get("metadata"):
                body["metadata"] = req["metadata"]
            if req.get("labels"):
                body["labels"] = req["labels"]
            # A node as if a queued resource had made it (nodes.create never
            # sets this; the queued resources API does, see queued.py).
            qr = req.get("queued_resource") and "projects/%s/locations/%s/queuedResources/%s" % (
                project, zone, req["queued_resource"])
            if req.get("new_ips"):
                c.settings["new_ips"] = True
            op = c.op_create(project, zone, req["name"], body, queued_resource=qr)
        else:
            node = c.node(project, zone, req["name"])
            if cmd == "preempt":
                c.preempt(node, "TERMINATED" if req.get("terminated") else "PREEMPTED",
                          float(req.get("notice") or 0))
                return 200, {"state": node.state}
            if cmd == "start" and req.get("new_ips"):
                c.settings["new_ips"] = True
            op = {"delete": c.op_delete, "stop": c.op_stop, "start": c.op_start}[cmd](node)
        if req.get("wait", True):
            deadline = now() + 600
            while not op.get("done") and now() < deadline:
                time.sleep(0.05)
            if req.get("new_ips"):
                c.settings.pop("new_ips", None)
            if op.get("error"):
                raise ApiError(500, "INTERNAL", op["error"]["message"])
        return 200, op
    if cmd == "capacity":
        return 200, capacity.control(c, req)
    if cmd == "qr":
        return 200, queued.control(c, req)
    if cmd == "node-add":
        slots = [int(s) for s in req["slots"]]
        full = "projects/%s/locations/%s/nodes/%s" % (req.get("project") or config.PROJECT, req["zone"], req["name"])
        n = Node(req.get("project") or config.PROJECT, req["zone"], req["name"], req.get("id") or cloud.new_node_id(),
                 req.get("accelerator") or "v4-%d" % (8 * max(1, len(slots))), "tpu-ubuntu2204-base", slots,
                 state=req.get("state") or "READY", view=True)
        if n.state != "READY":
            n.health = None
        with c.lock:
            c.nodes[full] = n
        c.changed()
        return 200, n.to_api(c.env)
    if cmd == "fault":
        what = req["what"]
        with c.lock:
            if what == "zone-down":
                z = {"code": int(req.get("code") or 503), "status": req.get("status") or "UNAVAILABLE",
                     "message": req.get("message") or "The service is currently unavailable."}
                if req.get("reads"):
                    z["reads"] = True
                if req.get("after"):
                    if req["after"] != "qr-create":
                        raise ApiError(400, "INVALID_ARGUMENT", "--after takes qr-create, not %r" % req["after"])
                    z["after"] = req["after"]
                else:
                    z["since"] = time.time()
                if req.get("for") is not None:
                    z["for"] = float(req["for"])
                c.faults.setdefault("zones", {})[req["zone"]] = z
            elif what == "zone-up":
                c.faults.get("zones", {}).pop(req["zone"], None)
            elif what == "latency":
                c.faults["latency"] = float(req["seconds"])
            elif what == "delay":
                c.faults.setdefault("delays", {})[req["verb"]] = float(req["seconds"])
            elif what == "clear":
                c.faults = {}
            elif what == "new-ips":
                c.settings["new_ips"] = bool(req["on"])
            elif what == "agent-order":
                c.settings["agent_order"] = req["order"]
            else:
                raise ApiError(400, "INVALID_ARGUMENT", "unknown fault %r" % what)
        c.changed()
        return 200, {"faults": c.faults, "settings": c.settings}
    if cmd == "metadata":
        scope = req.get("scope", "project")
        if scope == "project":
            c.set_project_md(req["key"], req.get("value"))
        else:
            node = c.node(req.get("project") or config.PROJECT, req.get("zone") or config.ZONE, scope)
            with c.lock:
                if req.get("value") is None:
                    node.metadata.pop(req["key"], None)
                else:
                    node.metadata[req["key"]] = req["value"]
            c.changed()
        gen = c.gen
        with c.lock:
            running = [s for n in c.nodes.values() if not n.view and n.state == "READY" for s in n.slots]
        c.wait_applied(running, gen, timeout=30)
        return 200, {"ok": True}
    if cmd == "user":
        with c.lock:
            extra = c.settings.setdefault("extra_users", [])
            if req["name"] not in extra:
                extra.append(req["name"])
            if req.get("sudo"):
                c.settings.setdefault("extra_sudo", []).append(req["name"])
        if req.get("key", True):
            c.seed_keys()
        c.seed_oslogin()
        c.changed()
        with c.lock:
            running = [s for n in c.nodes.values() if not n.view and n.state == "READY" for s in n.slots]
        c.wait_applied(running, c.gen, timeout=30)
        return 200, {"ok": True}
    raise ApiError(404, "NOT_FOUND", "unknown control request %r" % cmd)


def worker_fault(c, cmd, slot):
    env = c.env
    owner = c.owner_of(slot)
    if owner is None:
        raise ApiError(400, "FAILED_PRECONDITION", "worker %d belongs to no running node" % slot)
    with c.hv:
        pid = workers.init_pid(env, slot)
        if cmd == "stop-worker":
            c.halt([slot])
            workers.wait_ports([env.ip(slot)], False, 10)
        elif cmd == "start-worker":
            if pid:
                if c.netns_on():
                    netns.request(env.state, "up %d %s /proc/%d/ns/net" % (slot, env.ip(slot), pid))
                return {"already": True}
            c.boot(owner, [slot])
        elif cmd == "blackhole":
            c.halt([slot])
            if c.netns_on():
                netns.request(env.state, "blackhole %d %s" % (slot, env.ip(slot)))
            else:
                raise ApiError(400, "FAILED_PRECONDITION", "blackhole needs the forwarder (FAKEPOD_NETNS=1)")
        elif cmd in ("partition", "heal"):
            if not pid:
                raise ApiError(400, "FAILED_PRECONDITION", "worker %d is down" % slot)
            netns.request(env.state, "%s %d" % (cmd, slot))
        elif cmd == "rekey":
            workers.new_host_key(env, slot)
            workers.restart_sshd(env, slot)
            c.changed()  # the agent publishes the new key
    return {"ok": True}
