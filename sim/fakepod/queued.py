"""Queued resources: Cloud TPU v2 projects.locations.queuedResources.

A queued resource (QR) asks for TPU node(s) and waits in a queue until the
zone has the capacity (capacity.py); it then makes the node(s) through the
simulator's own nodes.create (server.Cloud.op_create: real workers, as for a
plain create), with `queuedResource` set on each node. Where each rule comes
from:
  - fields, enums, methods, query parameters: gcloud 528's generated client
    (generated_clients/apis/tpu/v2/tpu_v2_messages.py QueuedResource,
    QueuedResourceState, QueueingPolicy, NodeSpec, MultisliceParams;
    tpu_v2_client.py: create POSTs ?queuedResourceId=, delete sends
    ?force=true) and the v2alpha1 one (bestEffort, provisioningModel,
    multiNodeParams); what gcloud sends: command_lib/compute/tpus/
    queued_resources/util.py and surface/compute/tpus/queued_resources/*.yaml;
  - states: QueuedResourceState.StateValueValuesEnum's docs. CREATING, then
    WAITING_FOR_RESOURCES ("WAITING_FOR_RESOURCES replaced the ACCEPTED
    state", cloud.google.com/tpu/docs/queued-resources; ACCEPTED only when a
    test holds a QR there), PROVISIONING, ACTIVE once every node is READY;
    FAILED stays until deleted (failedData.error); SUSPENDING -> SUSPENDED when
    its node is preempted (stateInitiator SERVICE) or deleted by the user
    (USER): the QR is then "no longer eligible for allocation" and its node
    stays PREEMPTED ("QR SUSPENDED + VM PREEMPTED" in users' field notes);
  - a PROVISIONING QR may have no node yet (a user's log: "still
    PROVISIONING; ... still has no node");
  - validUntil*/validInterval.endTime passed while waiting: FAILED, with the
    zone's capacity error (code 8, or 9 for a reservation) -- the "capacity"
    kind of FAILED QR users describe; the exact text for an expiry is not
    public;
  - delete without force: only in ACCEPTED, WAITING_FOR_RESOURCES, SUSPENDED
    or FAILED (DeleteQueuedResourceRequest.force's docs); otherwise the
    operation fails with code 9 "DeleteQueuedResource is not supported when
    state is ACTIVE (must be one of [ACCEPTED WAITING_FOR_RESOURCES SUSPENDED
    FAILED])" (the wording users quote; that it comes through the operation
    follows "The delete operation failed with ..."). force deletes the nodes
    first, then the QR;
  - v2alpha1 with provisioningModel STANDARD and a spot or best-effort tier:
    INVALID_ARGUMENT "STANDARD provisioning model is incompatible with spot
    requests" (users hit it with gcloud's alpha --spot, whose
    SetProvisioningModel hook in 528 always sends STANDARD).
The QR's node spec is echoed as it was sent. All specs of one QR must have the
same accelerator type here (the capacity it waits for).
"""
import datetime
import re
import time

from . import cloud, qrsched
from .cloud import ApiError

QR_RE = re.compile(r"^/(v2|v2alpha1)/projects/([^/]+)/locations/([^/]+)/queuedResources(?:/([^/:]+))?(?::(\w+))?$")
ID_RE = re.compile(r"^[A-Za-z0-9_.~+%-]+$")
DELETABLE = ("ACCEPTED", "WAITING_FOR_RESOURCES", "SUSPENDED", "FAILED")
HOLDABLE = ("CREATING", "ACCEPTED", "WAITING_FOR_RESOURCES", "PROVISIONING", "SUSPENDING", "DELETING")


def invalid(msg):
    return ApiError(400, "INVALID_ARGUMENT", msg)


def parse_duration(s):
    if not isinstance(s, str) or not s.endswith("s"):
        raise invalid("Invalid duration %r (google.protobuf.Duration: e.g. \"600s\")" % (s,))
    try:
        return float(s[:-1])
    except ValueError:
        raise invalid("Invalid duration %r" % s)


def parse_time(s):
    try:
        return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
    except (AttributeError, ValueError):
        raise invalid("Invalid timestamp %r (RFC 3339)" % (s,))


def window(policy, created):
    """(not before, not after) in wall-clock seconds from a QueueingPolicy."""
    p = policy or {}
    after = until = None
    if p.get("validAfterDuration"):
        after = created + parse_duration(p["validAfterDuration"])
    if p.get("validAfterTime"):
        after = parse_time(p["validAfterTime"])
    if p.get("validUntilDuration"):
        until = created + parse_duration(p["validUntilDuration"])
    if p.get("validUntilTime"):
        until = parse_time(p["validUntilTime"])
    iv = p.get("validInterval") or {}
    if iv.get("startTime"):
        after = parse_time(iv["startTime"])
    if iv.get("endTime"):
        until = parse_time(iv["endTime"])
    return after, until


def pool_of(body):
    pm = body.get("provisioningModel")
    if "spot" in body or "bestEffort" in body or pm == "SPOT":
        return "spot"
    if body.get("reservationName") or (body.get("guaranteed") or {}).get("reserved") or pm == "RESERVATION_BOUND":
        return "reserved"
    return "standard"


def node_ids(qid, parent, specs):
    """[(node id, node body)] the specs ask for; validates them."""
    out = []
    for spec in specs:
        if spec.get("parent") and spec["parent"] != parent:
            raise invalid("NodeSpec.parent %r must be %r" % (spec["parent"], parent))
        node = spec.get("node") or {}
        accel = node.get("acceleratorType")
        if not accel and node.get("acceleratorConfig"):
            accel = "%s-8" % {"V2": "v2", "V3": "v3", "V4": "v4", "V5LITE_POD": "v5litepod", "V5P": "v5p",
                              "V6E": "v6e"}.get(node["acceleratorConfig"].get("type"), "v4")
        if not accel:
            raise invalid("Node.accelerator_type or Node.accelerator_config is required")
        cloud.hosts_for(accel)
        if not node.get("runtimeVersion"):
            raise invalid("Node.runtime_version is required")
        multi = spec.get("multisliceParams") or spec.get("multiNodeParams")
        if spec.get("nodeId"):
            ids = [spec["nodeId"]]
        elif multi:
            n = int(multi.get("nodeCount") or 0)
            if n <= 1:
                raise invalid("MultisliceParams.node_count must be greater than 1")
            prefix = multi.get("nodeIdPrefix") or qid
            ids = ["%s-%d" % (prefix, i) for i in range(n)]
        else:
            raise invalid("NodeSpec.node_id or NodeSpec.multislice_params is required")
        out += [(i, dict(node, acceleratorType=accel)) for i in ids]
    if not out:
        raise invalid("QueuedResource.tpu.node_spec is required")
    if len({b["acceleratorType"] for _, b in out}) > 1:
        raise invalid("the simulator wants one accelerator type per queued resource")
    return out


# ------------------------------------------------------------ the API

def create(c, project, zone, qid, body, version):
    parent = "projects/%s/locations/%s" % (project, zone)
    full = "%s/queuedResources/%s" % (parent, qid)
    if not ID_RE.fullmatch(qid or ""):
        raise invalid("Invalid queued_resource_id %r: must match ^[A-Za-z0-9_.~+%%-]+$" % qid)
    tiers = [k for k in ("spot", "guaranteed", "bestEffort") if k in body]
    if len(tiers) > 1:
        raise invalid("Invalid value at 'queued_resource' (oneof), oneof field 'tier' is already set. "
                      "Cannot set '%s'" % tiers[1])
    if version == "v2alpha1" and body.get("provisioningModel") == "STANDARD" and (
            "spot" in body or "bestEffort" in body):
        raise invalid("STANDARD provisioning model is incompatible with spot requests")
    nodes = node_ids(qid, parent, (body.get("tpu") or {}).get("nodeSpec") or [])
    created = time.time()
    after, until = window(body.get("queueingPolicy"), created)
    op = cloud.new_operation(project, zone, "create", full)
    q = {"name": full, "project": project, "zone": zone, "id": qid, "createTime": cloud.now_rfc3339(created),
         "created": created, "body": body, "version": version, "nodes_wanted": nodes, "nodes": [], "ops": [],
         "accel": nodes[0][1]["acceleratorType"], "pool": pool_of(body), "after": after, "until": until,
         "granted": 0, "started": False, "op": op["name"], "delete_ops": [], "hold": {}, "fail": None}
    with c.lock:
        if full in c.qrs:
            raise ApiError(409, "ALREADY_EXISTS", "Resource '%s' already exists" % full, full)
        qf = c.faults.get("qr", {})
        q["hold"] = dict(qf.get("holds", {}))
        for i, f in enumerate(qf.get("fail_next", [])):
            if not f.get("zone") or f["zone"] == zone:
                q["fail"] = qf["fail_next"].pop(i)
                break
        qrsched.set_state(q, "CREATING")
        c.qrs[full] = q
        c.ops[op["name"]] = op
        # A zone fault armed by a create (`fault zone-down Z --after qr-create`)
        # starts now: the create is accepted, what follows it is refused.
        zf = c.faults.get("zones", {}).get(zone)
        if zf and zf.get("after") == "qr-create" and not zf.get("since"):
            zf["since"] = time.time()
    c.changed()
    qrsched.kick(c)
    return op


def to_api(q):
    out = {"name": q["name"], "createTime": q["createTime"], "tpu": q["body"].get("tpu", {})}
    for k in ("spot", "guaranteed", "bestEffort", "queueingPolicy", "reservationName", "provisioningModel",
              "runDuration"):
        if k in q["body"]:
            out[k] = q["body"][k]
    st = {"state": q["state"]}
    if q.get("initiator"):
        st["stateInitiator"] = q["initiator"]
    if q["state"] == "FAILED" and q.get("error"):
        st["failedData"] = {"error": dict(q["error"])}
    out["state"] = st
    return out


def get(c, full):
    q = c.qrs.get(full)
    if q is None:
        raise cloud.not_found(full)
    return q


def list_api(c, project, zone):
    with c.lock:
        qs = sorted((q for q in c.qrs.values() if q["project"] == project and zone in ("-", q["zone"])),
                    key=lambda q: q["created"])
        items = [to_api(q) for q in qs]
    return {"queuedResources": items} if items else {}


def delete(c, q, force):
    op = cloud.new_operation(q["project"], q["zone"], "delete", q["name"])
    with c.lock:
        c.ops[op["name"]] = op
    with qrsched.sched(c)["tick"]:   # not while a tick is making its nodes
        st = q["state"]
        if not force and st not in DELETABLE:
            err = {"code": 9, "message": "DeleteQueuedResource is not supported when state is %s (must be one of "
                   "[%s])" % (st, " ".join(DELETABLE))}
            c.after(qrsched.delay(c, "qr-delete"), lambda: qrsched.finish(c, op, error=err))
            c.save()
            return op
        with c.lock:
            q["delete_ops"].append(op["name"])
            if st != "DELETING":
                qrsched.set_state(q, "DELETING", "USER")
                q["granted"] = 0
            doomed = [c.nodes[n] for n in q["nodes"] if n in c.nodes]
        for node in doomed:
            qrsched.drop_node(c, node)
    c.changed()
    qrsched.kick(c)
    return op


def reset(c):
    """`fakepod up`: no queued resources (their nodes went with the others)."""
    with c.lock:
        c.qrs.clear()


def load(c, saved):
    c.qrs = dict(saved or {})
    if any(q["state"] not in ("FAILED", "SUSPENDED") for q in c.qrs.values()):
        qrsched.kick(c)


# ------------------------------------------------------------ controls

def control(c, req):
    """fakepod qr fail-next [--zone Z] [--code N] [--message M] [--at waiting|provisioning]
    | hold STATE SECONDS [--name QR] | list."""
    what = req.get("what")
    with c.lock:
        qf = c.faults.setdefault("qr", {})
        if what == "fail-next":
            at = req.get("at") or "waiting"
            if at not in ("waiting", "provisioning"):
                raise invalid("--at must be waiting or provisioning")
            qf.setdefault("fail_next", []).append({"zone": req.get("zone"), "code": req.get("code"),
                                                   "message": req.get("message"), "at": at})
        elif what == "hold":
            state, secs = req["state"], float(req["seconds"])
            if state not in HOLDABLE:
                raise invalid("a queued resource can be held in %s" % ", ".join(HOLDABLE))
            if req.get("name"):
                qs = [q for q in c.qrs.values() if q["id"] == req["name"] and req.get("zone") in (None, q["zone"])]
                if not qs:
                    raise cloud.not_found("queuedResources/%s" % req["name"])
                for q in qs:
                    q["hold"][state] = secs
                    if q["state"] == state:
                        q["entered"] = time.time()
            elif secs > 0:
                qf.setdefault("holds", {})[state] = secs
            else:
                qf.get("holds", {}).pop(state, None)
        elif what != "list":
            raise invalid("unknown qr request %r" % what)
        out = {"queuedResources": [dict(to_api(q), granted=q["granted"], hold=q["hold"])
                                   for q in sorted(c.qrs.values(), key=lambda q: q["created"])],
               "faults": qf}
    if what != "list":
        c.changed()
        qrsched.kick(c)
    return out
