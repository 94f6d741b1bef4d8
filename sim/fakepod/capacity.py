"""Capacity: how many TPU VMs of an accelerator type a zone can give.

A zone has three pools per accelerator type, as Cloud TPU sells them:
on-demand ("standard"), spot (spot, preemptible and v2alpha1 best-effort
requests) and reserved (a node created with `schedulingConfig.reserved`, a
queued resource with a `reservationName`). A pool's capacity counts TPU VMs
(nodes, i.e. slices) of that exact accelerator type; `*` stands for every type
of the zone. Unset, the standard and spot pools are unlimited and the reserved
pool is empty: a project has no reservation until it buys one.

A node holds capacity while it exists, unless it is PREEMPTED, TERMINATED or
STOPPED (its hardware went back); a queued resource holds it from PROVISIONING
on, before its node exists. A deleted or preempted node frees it at once, and
the oldest queued resource waiting for it gets it.

The errors, as Cloud TPU reports them when the pool is empty:
  - code 8 (RESOURCE_EXHAUSTED): 'There is no more capacity in the zone "Z";
    you can try in another zone where Cloud TPU Nodes are offered (see
    https://cloud.google.com/tpu/docs/regions) [EID: 0x...]' -- the failed
    create operation's error, as gcloud prints it (PerfKitBenchmarker's
    gcp_tpu test, tpu-vm start in a user's notes, terraform-provider-google
    via GoogleCloudPlatform/magic-modules#7297), and what SkyPilot fails over
    on (sky/provision/gcp: codes 3, 8 and 9);
  - code 9 (FAILED_PRECONDITION): 'Insufficient reserved capacity. Contact
    customer support to increase your reservation. [EID: 0x...]' (SkyPilot's
    comment on code 9; skypilot-org/skypilot#4579 saw the same text).
Controls (fakepod capacity ...) live in the pod's faults: `fault clear` and
`up` restore the default.
"""
from . import cloud
from .cloud import ApiError

POOLS = ("standard", "spot", "reserved")
# States in which a node's hardware is not held.
FREE_STATES = ("PREEMPTED", "TERMINATED", "STOPPED")


def pool_of_scheduling(scheduling):
    """The pool a node's schedulingConfig draws from."""
    sc = scheduling or {}
    if sc.get("reserved"):
        return "reserved"
    if sc.get("spot") or sc.get("preemptible"):
        return "spot"
    return "standard"


def table(c):
    return c.faults.setdefault("capacity", {})


def limit(c, zone, accel, pool):
    """How many nodes of accel the zone's pool can hold (None: no limit)."""
    caps = c.faults.get("capacity", {}).get(zone, {}).get(pool, {})
    if accel in caps:
        return caps[accel]
    if "*" in caps:
        return caps["*"]
    return 0 if pool == "reserved" else None


def used(c, zone, accel, pool, skip_qr=None):
    n = 0
    for node in list(c.nodes.values()):
        if (node.view or node.zone != zone or node.accelerator_type != accel or node.state in FREE_STATES
                or pool_of_scheduling(node.scheduling) != pool):
            continue
        n += 1
    # A queued resource PROVISIONING holds its capacity before its nodes exist.
    for q in list(getattr(c, "qrs", {}).values()):
        if q["name"] != skip_qr and q["zone"] == zone and q["accel"] == accel and q["pool"] == pool:
            n += q.get("granted", 0)
    return n


def free(c, zone, accel, pool):
    lim = limit(c, zone, accel, pool)
    if lim is None:
        return float("inf")
    return max(0, lim - used(c, zone, accel, pool))


def exhausted(zone, pool):
    """The error Cloud TPU gives when the pool is empty (see above)."""
    if pool == "reserved":
        return ApiError(400, "FAILED_PRECONDITION", "Insufficient reserved capacity. Contact customer support to "
                        "increase your reservation. %s" % cloud.eid())
    return ApiError(429, "RESOURCE_EXHAUSTED", 'There is no more capacity in the zone "%s"; you can try in another '
                    "zone where Cloud TPU Nodes are offered (see https://cloud.google.com/tpu/docs/regions) %s"
                    % (zone, cloud.eid()))


def check_create(c, zone, accel, scheduling):
    """A plain nodes.create: the error its operation ends with if the zone
    cannot give one more node of accel, else None. Called with c.lock held,
    before the node is added (it then holds the capacity while CREATING)."""
    pool = pool_of_scheduling(scheduling)
    if free(c, zone, accel, pool) >= 1:
        return None
    return exhausted(zone, pool)


# ------------------------------------------------------------ controls

def control(c, req):
    """fakepod capacity set ZONE TYPE N [--spot|--reserved] | stockout ZONE |
    restock ZONE | clear | show."""
    what = req.get("what")
    with c.lock:
        t = table(c)
        if what == "set":
            pool = req.get("pool") or "standard"
            if pool not in POOLS:
                raise ApiError(400, "INVALID_ARGUMENT", "pool must be one of %s" % ", ".join(POOLS))
            n = int(req["count"])
            if n < 0:
                raise ApiError(400, "INVALID_ARGUMENT", "capacity must be 0 or more")
            t.setdefault(req["zone"], {}).setdefault(pool, {})[req["type"]] = n
        elif what == "stockout":
            # Nothing on demand or spot in the zone, whatever type; a
            # reservation stays the project's own.
            z = t.setdefault(req["zone"], {})
            for pool in ("standard", "spot"):
                z[pool] = {"*": 0}
        elif what == "restock":
            t.pop(req["zone"], None)
        elif what == "clear":
            t.clear()
        elif what != "show":
            raise ApiError(400, "INVALID_ARGUMENT", "unknown capacity request %r" % what)
        out = {"capacity": json_copy(t), "used": usage(c)}
    if what != "show":
        c.changed()
        from . import qrsched
        qrsched.kick(c)   # a waiting queued resource may fit now
    return out


def usage(c):
    """{zone: {pool: {type: n}}} of what the nodes and queued resources hold."""
    out = {}
    keys = set()
    for node in list(c.nodes.values()):
        if not node.view:
            keys.add((node.zone, node.accelerator_type, pool_of_scheduling(node.scheduling)))
    for q in list(getattr(c, "qrs", {}).values()):
        keys.add((q["zone"], q["accel"], q["pool"]))
    for zone, accel, pool in sorted(keys):
        n = used(c, zone, accel, pool)
        if n:
            out.setdefault(zone, {}).setdefault(pool, {})[accel] = n
    return out


def json_copy(d):
    return {k: json_copy(v) if isinstance(v, dict) else v for k, v in d.items()}
