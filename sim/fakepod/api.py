"""The HTTP API gcloud talks to: request routing for the Cloud TPU v2 (and
v2alpha1) nodes, queued resources and operations, compute projects.get and
setCommonInstanceMetadata, and OS Login. The state and its rules live in
server.Cloud (nodes), queued.py (queued resources) and capacity.py.

Paths, methods and query parameters are gcloud 528's generated clients'
(generated_clients/apis/tpu/v2/tpu_v2_client.py, oslogin/v1, compute/v1).
"""
import json
import random
import re
import time

from . import cloud, config, queued
from .cloud import ApiError

NODE_RE = re.compile(r"^/(v2|v2alpha1)/projects/([^/]+)/locations/([^/]+)/(nodes|operations)(?:/([^/:]+))?(?::(\w+))?$")


def check_project(c, project, perm, resource):
    if project not in (config.PROJECT, config.PROJECT_NUMBER):
        raise ApiError(403, "PERMISSION_DENIED", "Permission '%s' denied on '%s'" % (perm, resource))


def check_zone(c, zone, method="GET"):
    """A zone-down fault answers every request in the zone with its error;
    `reads` only GETs (a read-rate 429: creates and deletes go through, the
    poll of their operation and the describes do not); `after` (qr-create)
    starts it at the next queued resource created there; `for` ends it
    after that many seconds, as a burst of 429s or an outage does."""
    z = c.faults.get("zones", {}).get(zone)
    if not z:
        return
    if z.get("after") and not z.get("since"):
        return
    if z.get("for") is not None and time.time() >= (z.get("since") or 0) + float(z["for"]):
        with c.lock:
            c.faults.get("zones", {}).pop(zone, None)
        return
    if z.get("reads") and method != "GET":
        return
    raise ApiError(int(z.get("code", 503)), z.get("status", "UNAVAILABLE"),
                   z.get("message", "The service is currently unavailable."))


def route(c, method, path, query, h):
    if path.startswith("/compute/v1/projects/"):
        project = path[len("/compute/v1/projects/"):].strip("/")
        if method == "GET" and "/" not in project:
            if project != config.PROJECT:
                raise ApiError(403, "PERMISSION_DENIED", "Required 'compute.projects.get' permission for "
                               "'projects/%s'" % project)
            items = c.project_md
            return 200, {"kind": "compute#project", "id": config.PROJECT_NUMBER, "name": config.PROJECT,
                         "creationTimestamp": "2024-01-01T00:00:00.000-08:00",
                         "commonInstanceMetadata": {"kind": "compute#metadata", "fingerprint": cloud.fingerprint(items),
                                                    "items": items},
                         "selfLink": "https://www.googleapis.com/compute/v1/projects/%s" % config.PROJECT,
                         "defaultServiceAccount": "%s-compute@developer.gserviceaccount.com" % config.PROJECT_NUMBER,
                         "xpnProjectStatus": "UNSPECIFIED_XPN_PROJECT_STATUS",
                         "defaultNetworkTier": "PREMIUM"}
        m = re.match(r"^([^/]+)/(setCommonInstanceMetadata|global/operations/([^/]+?)(/wait)?)$", project)
        if m and m.group(1) == config.PROJECT:
            if m.group(2) == "setCommonInstanceMetadata" and method == "POST":
                # What `gcloud compute project-info add-metadata` sends: the
                # whole list, with the fingerprint it read (412 if stale).
                req = h.body()
                with c.lock:
                    if req.get("fingerprint") != cloud.fingerprint(c.project_md):
                        raise ApiError(412, "FAILED_PRECONDITION", "Supplied fingerprint does not match current "
                                       "metadata fingerprint.")
                    c.project_md = [{"key": i["key"], "value": i.get("value", "")} for i in req.get("items", [])]
                c.changed()
                name = "operation-%d-%012x" % (int(time.time() * 1000), random.randrange(16 ** 12))
                c.compute_ops[name] = {"kind": "compute#operation", "id": str(random.randrange(10 ** 18)),
                                       "name": name, "operationType": "compute.projects.setCommonInstanceMetadata",
                                       "targetLink": "https://www.googleapis.com/compute/v1/projects/%s" % config.PROJECT,
                                       "status": "DONE", "progress": 100, "user": "fakepod",
                                       "insertTime": cloud.now_rfc3339(), "startTime": cloud.now_rfc3339(),
                                       "endTime": cloud.now_rfc3339(),
                                       "selfLink": "https://www.googleapis.com/compute/v1/projects/%s/global/"
                                                   "operations/%s" % (config.PROJECT, name)}
                return 200, c.compute_ops[name]
            if m.group(3) and m.group(3) in c.compute_ops:
                return 200, c.compute_ops[m.group(3)]
        raise ApiError(404, "NOT_FOUND", "The simulated compute API serves only projects.get, "
                       "projects.setCommonInstanceMetadata and global operations (%s %s)" % (method, path))
    m = re.match(r"^/v1/users/([^/:]+)(/loginProfile|:importSshPublicKey|/sshPublicKeys/([^/]+))$", path)
    if m:
        return oslogin_route(c, method, m, query, h)
    m = queued.QR_RE.match(path)
    if m:
        return queued_route(c, method, m, query, h)
    m = NODE_RE.match(path)
    if not m:
        raise ApiError(404, "NOT_FOUND", "Not found: %s %s (not part of the simulated Cloud TPU API)" % (method, path))
    version, project, zone, coll, name, verb = m.groups()
    parent = "projects/%s/locations/%s" % (project, zone)
    if coll == "operations":
        check_project(c, project, "tpu.operations.get", parent)
        check_zone(c, zone, method)
        op = c.ops.get("%s/operations/%s" % (parent, name))
        if op is None or method != "GET":
            raise cloud.not_found("%s/operations/%s" % (parent, name))
        with c.lock:
            return 200, json.loads(json.dumps(op))
    if name is None:
        check_project(c, project, "tpu.nodes.list", parent)
        if zone != "-":
            check_zone(c, zone, method)
        if method == "GET":
            with c.lock:
                nodes = [n.to_api(c.env) for n in c.nodes.values()
                         if n.project == project and (zone == "-" or n.zone == zone)]
            return 200, ({"nodes": nodes} if nodes else {})
        if method == "POST":
            check_project(c, project, "tpu.nodes.create", parent)
            node_id = (query.get("nodeId") or [""])[0]
            return 200, c.op_create(project, zone, node_id, h.body())
        raise ApiError(405, "INVALID_ARGUMENT", "method %s not allowed" % method)
    full = "%s/nodes/%s" % (parent, name)
    check_project(c, project, "tpu.nodes.get", full)
    check_zone(c, zone, method)
    with c.lock:
        node = c.node(project, zone, name)
    if verb is None and method == "GET":
        with c.lock:
            return 200, node.to_api(c.env)
    if verb is None and method == "PATCH":
        mask = (query.get("updateMask") or [""])[0]
        return 200, c.op_patch(node, mask, h.body())
    if verb is None and method == "DELETE":
        return 200, c.op_delete(node)
    if verb == "getGuestAttributes" and method == "POST":
        req = h.body()
        ids = [w for w in (req.get("workerIds") or [""])]
        idx = list(range(len(node.slots))) if ids in ([], [""]) else []
        for w in ids:
            if w == "":
                continue
            if not w.isdigit() or int(w) >= len(node.slots):
                raise ApiError(400, "INVALID_ARGUMENT", "Invalid worker id %r" % w)
            idx.append(int(w))
        out = []
        with c.lock:
            for i in idx:
                items = []
                for k, v in sorted(c.guest.get(node.slots[i], {}).items()):
                    ns, key = k.split("/", 1)
                    if req.get("queryPath") and not k.startswith(req["queryPath"]):
                        continue
                    items.append({"namespace": ns, "key": key, "value": v})
                out.append({"queryPath": req.get("queryPath", ""), "queryValue": {"items": items}})
        return 200, {"guestAttributes": out}
    if verb == "stop" and method == "POST":
        return 200, c.op_stop(node)
    if verb == "start" and method == "POST":
        return 200, c.op_start(node)
    raise ApiError(400, "INVALID_ARGUMENT", "unsupported: %s %s" % (method, path))


def queued_route(c, method, m, query, h):
    """projects.locations.queuedResources: create (POST ?queuedResourceId=Q),
    list, get, delete (?force=true), as tpu_v2_client.py calls them."""
    version, project, zone, qid, verb = m.groups()
    parent = "projects/%s/locations/%s" % (project, zone)
    if qid is None:
        if method == "GET":
            check_project(c, project, "tpu.queuedResources.list", parent)
            if zone != "-":
                check_zone(c, zone)
            return 200, queued.list_api(c, project, zone)
        if method == "POST":
            check_project(c, project, "tpu.queuedResources.create", parent)
            check_zone(c, zone, method)
            return 200, queued.create(c, project, zone, (query.get("queuedResourceId") or [""])[0], h.body(),
                                      version)
        raise ApiError(405, "INVALID_ARGUMENT", "method %s not allowed" % method)
    full = "%s/queuedResources/%s" % (parent, qid)
    check_project(c, project, "tpu.queuedResources.get", full)
    check_zone(c, zone, method)
    with c.lock:
        q = queued.get(c, full)
        if verb is None and method == "GET":
            return 200, queued.to_api(q)
    if verb is None and method == "DELETE":
        force = (query.get("force") or ["false"])[0].lower() == "true"
        return 200, queued.delete(c, q, force)
    raise ApiError(400, "INVALID_ARGUMENT", "unsupported by the simulator: %s %s" % (method, h.path))


def oslogin_route(c, method, m, query, h):
    email, what, fp = m.group(1), m.group(2), m.group(3)
    with c.lock:
        if what == "/loginProfile" and method == "GET":
            return 200, c.login_profile(email)
        if what == ":importSshPublicKey" and method == "POST":
            req = h.body()
            key = (req.get("key") or "").strip()
            if not key:
                raise ApiError(400, "INVALID_ARGUMENT", "Invalid SSH key")
            prof = c.oslogin.setdefault(email, {"keys": {}})
            if not prof.get("username"):
                # A new POSIX account, named from the email as OS Login does
                # (user@example.com -> user_example_com), with a large uid.
                prof["username"] = re.sub(r"[^a-z0-9_]", "_", email.lower())[:32]
                prof["uid"] = prof["gid"] = 1000000000 + int(cloud.key_fingerprint(email)[:6], 16)
                prof["home"] = "/home/%s" % prof["username"]
                prof["admin"] = False
            fpr = cloud.key_fingerprint(key)
            prof.setdefault("keys", {})[fpr] = {"key": key}
            if req.get("expirationTimeUsec"):
                prof["keys"][fpr]["expirationTimeUsec"] = str(req["expirationTimeUsec"])
        elif fp and method == "GET":
            k = c.oslogin.get(email, {}).get("keys", {}).get(fp)
            if not k:
                raise cloud.not_found("users/%s/sshPublicKeys/%s" % (email, fp))
            return 200, dict(k, fingerprint=fp, name="users/%s/sshPublicKeys/%s" % (email, fp))
        elif fp and method in ("DELETE", "PATCH"):
            keys = c.oslogin.get(email, {}).get("keys", {})
            if fp not in keys:
                raise cloud.not_found("users/%s/sshPublicKeys/%s" % (email, fp))
            if method == "DELETE":
                del keys[fp]
            else:
                keys[fp].update({k: v for k, v in h.body().items() if k in ("expirationTimeUsec",)})
        else:
            raise ApiError(400, "INVALID_ARGUMENT", "unsupported OS Login call")
    c.changed()
    if what == ":importSshPublicKey":
        return 200, {"loginProfile": c.login_profile(email)}
    return 200, {}

