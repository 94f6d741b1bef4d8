"""The queue of queued resources (queued.py has the API and says where each
rule comes from): one pass at a time moves each QR on, oldest first, from the
clock, the capacity (capacity.py) and its nodes' states. A QR waiting for
capacity blocks the later ones that want the same zone, type and pool (first
come, first served). `fakepod fault delay qr-create|qr-delete|qr-suspend S`
changes how long those steps take; a test can hold a QR in a state
(`fakepod qr hold`) or fail the next one (`fakepod qr fail-next`).
"""
import threading
import time

from . import capacity, cloud, queued
from .cloud import ApiError, Node

DELAYS = {"qr-create": 0.2, "qr-delete": 0.2, "qr-suspend": 0.3}
TICK, WATCH = 0.1, 0.25
QR_TYPE = "type.googleapis.com/google.cloud.tpu.v2.QueuedResource"

def delay(c, verb):
    return float(c.faults.get("delays", {}).get(verb, DELAYS.get(verb, c.delay(verb))))



def finish(c, op, response=None, error=None):
    with c.lock:
        op["done"] = True
        op["metadata"]["endTime"] = cloud.now_rfc3339()
        if error is not None:
            op["error"] = error
        else:
            op["response"] = response or {"@type": "type.googleapis.com/google.protobuf.Empty"}
    c.changed()


def drop_node(c, node):
    """The service deletes one of the QR's nodes (a node made up by a failing
    provision has no workers: it just goes)."""
    if getattr(node, "doomed", False):
        with c.lock:
            c.nodes.pop(node.full_name, None)
        return
    if node.state != "DELETING":
        try:
            c.op_delete(node)
        except ApiError:
            pass


# ------------------------------------------------------------ the queue

def set_state(q, state, initiator=None, error=None):
    q["state"] = state
    q["entered"] = time.time()
    q["initiator"] = initiator
    if error is not None:
        q["error"] = error


def fail(c, q, error):
    with c.lock:
        set_state(q, "FAILED", "SERVICE", error)
        q["granted"] = 0


def sched(c):
    s = c.__dict__.get("qr_sched")
    if s is None:
        s = c.__dict__.setdefault("qr_sched", {"mu": threading.Lock(), "tick": threading.RLock(), "pending": False})
    return s


def kick(c, after=0.0):
    """Runs the queue soon (once, however often it is kicked meanwhile)."""
    s = sched(c)
    with s["mu"]:
        if s["pending"]:
            return
        s["pending"] = True
    c.after(after, lambda: run(c))


def run(c):
    s = sched(c)
    with s["mu"]:
        s["pending"] = False
    with s["tick"]:
        nxt = tick(c)
    if nxt is not None:
        kick(c, nxt)


def tick(c):
    """One pass over the queue, oldest first. Returns when to look again."""
    t = time.time()
    with c.lock:
        order = sorted(c.qrs.values(), key=lambda q: q["created"])
    changed, nxt, blocked = False, None, set()
    for q in order:
        if c.qrs.get(q["name"]) is not q:
            continue
        ch, again = step(c, q, t, blocked)
        changed |= ch
        if again is not None:
            nxt = again if nxt is None else min(nxt, again)
    if changed:
        c.changed()
    return nxt


def held(q, t):
    h = q.get("hold", {}).get(q["state"])
    return bool(h) and t < q["entered"] + float(h)


def step(c, q, t, blocked):
    """Moves one QR on; returns (changed, when to look again or None)."""
    s = q["state"]
    if held(q, t):
        return False, TICK
    if s == "CREATING":
        if t < q["entered"] + delay(c, "qr-create"):
            return False, TICK
        with c.lock:
            set_state(q, "ACCEPTED" if "ACCEPTED" in q.get("hold", {}) else "WAITING_FOR_RESOURCES")
            op = c.ops.get(q["op"])
        if op is not None:
            finish(c, op, response=dict(queued.to_api(q), **{"@type": QR_TYPE}))
        return True, TICK
    if s == "ACCEPTED":
        with c.lock:
            set_state(q, "WAITING_FOR_RESOURCES")
        return True, TICK
    if s == "WAITING_FOR_RESOURCES":
        return wait_step(c, q, t, blocked)
    if s == "PROVISIONING":
        return provision_step(c, q, t)
    if s == "ACTIVE":
        return watch_step(c, q)
    if s == "SUSPENDING":
        if t < q["entered"] + delay(c, "qr-suspend") or any(
                n in c.nodes and c.nodes[n].state == "DELETING" for n in q["nodes"]):
            return False, TICK
        with c.lock:
            set_state(q, "SUSPENDED", q.get("initiator"))
        return True, None
    if s == "DELETING":
        if any(n in c.nodes for n in q["nodes"]) or t < q["entered"] + delay(c, "qr-delete"):
            return False, TICK
        with c.lock:
            c.qrs.pop(q["name"], None)
            ops = [c.ops[o] for o in q["delete_ops"] if o in c.ops]
        for op in ops:
            finish(c, op)
        return True, None
    return False, None   # FAILED, SUSPENDED: until deleted


def wait_step(c, q, t, blocked):
    key = (q["zone"], q["accel"], q["pool"])
    f = q.get("fail")
    if f and f.get("at", "waiting") == "waiting":
        fail(c, q, failure(f, q))
        return True, None
    if q["until"] is not None and t >= q["until"]:
        fail(c, q, cloud.rpc_error(capacity.exhausted(q["zone"], q["pool"])))
        return True, None
    if (q["after"] is not None and t < q["after"]) or key in blocked:
        return False, TICK
    with c.lock:
        need = len(q["nodes_wanted"])
        if capacity.free(c, *key) >= need:
            q["granted"] = need
            set_state(q, "PROVISIONING")
            return True, TICK
    blocked.add(key)   # first come, first served: no later QR jumps ahead
    return False, TICK


def failure(f, q):
    if f.get("code") is not None and f.get("message"):
        return {"code": int(f["code"]), "message": f["message"]}
    e = cloud.rpc_error(capacity.exhausted(q["zone"], q["pool"]))
    if f.get("code") is not None:
        e["code"] = int(f["code"])
    if f.get("message"):
        e["message"] = f["message"]
    return e


def provision_step(c, q, t):
    if not q["started"]:
        start_nodes(c, q, t)
        return True, TICK
    if q.get("doom_at") is not None:
        if t < q["doom_at"]:
            return False, TICK
        with c.lock:
            for n in q["nodes"]:
                c.nodes.pop(n, None)
        fail(c, q, failure(q["fail"], q))
        return True, None
    with c.lock:
        ops = [c.ops.get(o) for o in q["ops"]]
    if any(op is not None and not op.get("done") for op in ops):
        return False, TICK
    errs = [op["error"] for op in ops if op is not None and op.get("error")]
    if errs:
        for n in q["nodes"]:
            if n in c.nodes:
                drop_node(c, c.nodes[n])
        fail(c, q, dict(errs[0]))
        return True, None
    with c.lock:
        if all(n in c.nodes and c.nodes[n].state == "READY" for n in q["nodes"]):
            set_state(q, "ACTIVE")
            return True, WATCH
    return watch_step(c, q)


def start_nodes(c, q, t):
    """PROVISIONING: the nodes are created, as nodes.create does, with the
    tier's schedulingConfig and queuedResource set."""
    f = q.get("fail") if (q.get("fail") or {}).get("at") == "provisioning" else None
    for nid, nbody in q["nodes_wanted"]:
        body = dict(nbody)
        sc = dict(body.get("schedulingConfig") or {})
        if q["pool"] == "spot":
            sc["spot"] = True
        elif q["pool"] == "reserved":
            sc["reserved"] = True
        body["schedulingConfig"] = sc
        full = "projects/%s/locations/%s/nodes/%s" % (q["project"], q["zone"], nid)
        if f:
            # The node shows up CREATING and goes with the error, as a
            # provision the cloud could not finish; no workers boot.
            node = Node(q["project"], q["zone"], nid, cloud.new_node_id(), body["acceleratorType"],
                        body["runtimeVersion"], [], state="CREATING", scheduling=sc, queued_resource=q["name"])
            node.health = None
            node.doomed = True
            with c.lock:
                if full not in c.nodes:
                    c.nodes[full] = node
                    q["nodes"].append(full)
                q["granted"] = max(0, q["granted"] - 1)
                q["doom_at"] = t + c.delay("create")
            continue
        try:
            op = c.op_create(q["project"], q["zone"], nid, body, queued_resource=q["name"])
        except ApiError as e:
            for n in q["nodes"]:
                if n in c.nodes:
                    drop_node(c, c.nodes[n])
            fail(c, q, cloud.rpc_error(e))
            break
        with c.lock:
            q["ops"].append(op["name"])
            q["nodes"].append(full)
            q["granted"] = max(0, q["granted"] - 1)
    with c.lock:
        q["started"] = True


def watch_step(c, q):
    """ACTIVE: a preempted node suspends the QR (the service did it); a node
    the user deleted too (the user did). The QR's other nodes go."""
    with c.lock:
        nodes = [c.nodes.get(n) for n in q["nodes"]]
    if any(n is not None and n.state in ("PREEMPTED", "TERMINATED") for n in nodes):
        who = "SERVICE"
    elif any(n is None or n.state == "DELETING" for n in nodes):
        who = "USER"
    else:
        return False, WATCH
    with c.lock:
        set_state(q, "SUSPENDING", who)
    for n in nodes:
        if n is not None and n.state not in ("PREEMPTED", "TERMINATED", "DELETING"):
            drop_node(c, n)
    return True, TICK


