"""The Cloud TPU model: nodes, their states, operations, project metadata and
OS Login profiles -- pure data and rules, no I/O (server.py does the I/O).

Where each rule comes from:
  - field names and enums: gcloud 528's generated client
    (googlecloudsdk/generated_clients/apis/tpu/v2/tpu_v2_messages.py: Node,
    NetworkEndpoint, AccessConfig, SchedulingConfig, GuestAttributes...);
  - error bodies: Google's JSON error format ({"error": {code, message,
    status, details}}), NOT_FOUND naming the resource as the real API does
    ("Resource 'projects/P/locations/Z/nodes/N' was not found", seen in
    marin-community/marin#3404 and #1735 through gcloud);
  - operations: google.longrunning.Operation with the TPU OperationMetadata
    (createTime, target, verb, apiVersion) and a Node (or Empty) response;
  - hosts per accelerator type: v2/v3/v4/v5p count TensorCores (2 per chip,
    4 chips per host: 8 per host), v5litepod/v6e count chips (4 per host in
    pods; the 1-, 4- and 8-chip types are one host).
"""
import base64
import hashlib
import json
import random
import time

from . import config

HOST_STATES = ("READY",)   # states in which the workers run
STATES = ("CREATING", "READY", "RESTARTING", "REIMAGING", "DELETING", "REPAIRING", "STOPPED", "STOPPING",
          "STARTING", "PREEMPTED", "TERMINATED", "HIDING", "HIDDEN", "UNHIDING", "UNKNOWN")
HEALTHS = ("HEALTHY", "TIMEOUT", "UNHEALTHY_TENSORFLOW", "UNHEALTHY_MAINTENANCE")


class ApiError(Exception):
    """An error the API answers with: HTTP code, google.rpc status, message."""

    def __init__(self, code, status, message, resource=None):
        super().__init__(message)
        self.code = code
        self.status = status
        self.message = message
        self.resource = resource

    def body(self):
        err = {"code": self.code, "message": self.message, "status": self.status}
        if self.resource:
            err["details"] = [{"@type": "type.googleapis.com/google.rpc.ResourceInfo",
                               "resourceName": self.resource}]
        return {"error": err}


def not_found(resource):
    return ApiError(404, "NOT_FOUND", "Resource '%s' was not found" % resource, resource)


# google.rpc.Code numbers, as an operation's `error.code` carries them
# (google/rpc/code.proto): gcloud prints an operation's error as that JSON.
RPC_CODES = {"CANCELLED": 1, "UNKNOWN": 2, "INVALID_ARGUMENT": 3, "DEADLINE_EXCEEDED": 4, "NOT_FOUND": 5,
             "ALREADY_EXISTS": 6, "PERMISSION_DENIED": 7, "RESOURCE_EXHAUSTED": 8, "FAILED_PRECONDITION": 9,
             "ABORTED": 10, "OUT_OF_RANGE": 11, "UNIMPLEMENTED": 12, "INTERNAL": 13, "UNAVAILABLE": 14}
RPC_STATUS = {v: k for k, v in RPC_CODES.items()}
HTTP_FOR = {3: 400, 4: 504, 5: 404, 6: 409, 7: 403, 8: 429, 9: 400, 10: 409, 13: 500, 14: 503}


def rpc_error(e):
    """An ApiError as an operation's (or a failedData's) google.rpc.Status."""
    return {"code": RPC_CODES.get(e.status, 13), "message": e.message}


def eid(rng=random):
    """Cloud TPU ends its error messages with an error id, e.g.
    "... [EID: 0x1bc8f9d790be9142]" (seen in SkyPilot's and PerfKitBenchmarker's
    logs): clients must match a message by a part of it, never the whole."""
    return "[EID: 0x%x]" % rng.randrange(16 ** 15, 16 ** 16)


def hosts_for(accelerator_type):
    """How many TPU VM hosts (workers) an accelerator type has."""
    try:
        family, size = accelerator_type.rsplit("-", 1)
        n = int(size)
    except ValueError:
        raise ApiError(400, "INVALID_ARGUMENT", "Invalid accelerator type: %r" % accelerator_type)
    if n <= 0:
        raise ApiError(400, "INVALID_ARGUMENT", "Invalid accelerator type: %r" % accelerator_type)
    if family in ("v5litepod", "v5e", "v6e"):
        return 1 if n <= 8 else n // 4
    if family in ("v2", "v3", "v4", "v5p"):
        return max(1, n // 8)
    raise ApiError(400, "INVALID_ARGUMENT", "Invalid accelerator type: %r" % accelerator_type)


def device_for(accelerator_type):
    """Device files: v2-v4 expose /dev/accel*, v5e/v5p/v6e /dev/vfio/*."""
    family = accelerator_type.rsplit("-", 1)[0]
    return "accel" if family in ("v2", "v3", "v4") else "vfio"


def accel_config_type(accelerator_type):
    family = accelerator_type.rsplit("-", 1)[0]
    return {"v2": "V2", "v3": "V3", "v4": "V4", "v5litepod": "V5LITE_POD", "v5e": "V5LITE_POD",
            "v5p": "V5P", "v6e": "V6E"}.get(family, "TYPE_UNSPECIFIED")


def now_rfc3339(t=None):
    t = time.time() if t is None else t
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%06dZ" % int((t % 1) * 1e6)


def fingerprint(items):
    return base64.b64encode(hashlib.sha256(json.dumps(items, sort_keys=True).encode()).digest()[:8]).decode()


def parse_ssh_keys(value):
    """Metadata ssh-keys lines -> [(user, key)], in order; bad lines skipped
    (the guest agent's getUserKeys: "user:ssh-rsa KEY [comment]")."""
    out = []
    for line in (value or "").splitlines():
        line = line.strip()
        if not line or ":" not in line:
            continue
        user, key = line.split(":", 1)
        parts = key.split()
        if not user or len(parts) < 2 or not parts[0].startswith(("ssh-", "ecdsa-", "sk-")):
            continue
        out.append((user, key.strip()))
    return out


def key_fingerprint(key):
    """OS Login's fingerprint of a public key: sha256 hex of the key line's blob."""
    parts = key.split()
    blob = parts[1] if len(parts) > 1 else key
    return hashlib.sha256(blob.encode()).hexdigest()


class Node:
    """A TPU VM as the API knows it, plus the simulator's bookkeeping: slots
    (the worker addresses), whether it is a listing-only view over another
    node's workers, and its instance ids (a new id means a new VM: new disk,
    new host keys)."""

    def __init__(self, project, zone, name, node_id, accelerator_type, runtime_version, slots, *,
                 state="READY", view=False, metadata=None, labels=None, scheduling=None,
                 external_ips=True, description=None, create_time=None, tags=None, network=None,
                 subnetwork=None, data_disks=None, service_account=None, secure_boot=False, queued_resource=None):
        self.project = project
        self.zone = zone
        self.name = name
        self.id = node_id
        self.accelerator_type = accelerator_type
        self.runtime_version = runtime_version
        self.slots = list(slots)
        self.state = state
        self.health = "HEALTHY" if state == "READY" else None
        self.health_description = None
        self.view = view
        self.metadata = dict(metadata or {})
        self.labels = dict(labels or {})
        self.scheduling = dict(scheduling or {})
        self.external_ips = external_ips
        self.description = description
        self.create_time = create_time or now_rfc3339()
        self.tags = list(tags or [])
        self.symptoms = []
        # As created (gcloud sends "default" unless --network): the API answers
        # with full resource paths, filling in the default network's subnetwork.
        self.network = network_path(project, network or "default")
        self.subnetwork = subnetwork_path(project, zone, subnetwork or "default")
        self.data_disks = list(data_disks or [])
        self.service_account = dict(service_account or {})
        self.secure_boot = bool(secure_boot)
        # Output only: "projects/P/locations/Z/queuedResources/Q" when a queued
        # resource made the node (tpu_v2_messages.py, Node.queuedResource).
        self.queued_resource = queued_resource

    @property
    def full_name(self):
        return "projects/%s/locations/%s/nodes/%s" % (self.project, self.zone, self.name)

    def to_api(self, env):
        """The node as the v2 API returns it (proto3 JSON: unset fields omitted)."""
        n = {
            "name": self.full_name,
            "acceleratorType": self.accelerator_type,
            "state": self.state,
            "runtimeVersion": self.runtime_version,
            "networkConfig": {"network": self.network, "subnetwork": self.subnetwork,
                              "enableExternalIps": self.external_ips},
            "serviceAccount": {"email": self.service_account.get(
                                   "email", "%s-compute@developer.gserviceaccount.com" % config.PROJECT_NUMBER),
                               "scope": self.service_account.get(
                                   "scope", ["https://www.googleapis.com/auth/cloud-platform"])},
            "createTime": self.create_time,
            "schedulingConfig": dict(self.scheduling),
            "id": self.id,
            "apiVersion": "V2",
            "acceleratorConfig": {"type": accel_config_type(self.accelerator_type),
                                  "topology": "fake-%dhost" % max(1, len(self.slots))},
            "shieldedInstanceConfig": {"enableSecureBoot": True} if self.secure_boot else {},
        }
        if self.state not in ("CREATING", "DELETING") and self.slots:
            eps = []
            for s in self.slots:
                ep = {"ipAddress": env.ip(s), "port": 8470}
                if self.external_ips:
                    ep["accessConfig"] = {"externalIp": env.ip(s)}
                eps.append(ep)
            n["networkEndpoints"] = eps
        if self.health:
            n["health"] = self.health
        if self.health_description:
            n["healthDescription"] = self.health_description
        if self.metadata:
            n["metadata"] = dict(self.metadata)
        if self.labels:
            n["labels"] = dict(self.labels)
        if self.description:
            n["description"] = self.description
        if self.tags:
            n["tags"] = list(self.tags)
        if self.symptoms:
            n["symptoms"] = list(self.symptoms)
        if self.data_disks:
            n["dataDisks"] = [dict(d) for d in self.data_disks]
        if self.queued_resource:
            n["queuedResource"] = self.queued_resource
        return n

    def to_json(self):
        return {k: v for k, v in self.__dict__.items()}

    @classmethod
    def from_json(cls, d):
        n = cls.__new__(cls)
        n.__dict__.update(d)
        n.__dict__.setdefault("symptoms", [])
        n.__dict__.setdefault("network", network_path(n.project, "default"))
        n.__dict__.setdefault("subnetwork", subnetwork_path(n.project, n.zone, "default"))
        for key, default in (("data_disks", []), ("service_account", {}), ("secure_boot", False),
                             ("queued_resource", None)):
            n.__dict__.setdefault(key, default)
        return n


def network_path(project, network):
    """A network as the API returns it: a full path, whatever form was sent."""
    return network if "/" in network else "projects/%s/global/networks/%s" % (project, network)


def subnetwork_path(project, zone, subnetwork):
    if "/" in subnetwork:
        return subnetwork
    return "projects/%s/regions/%s/subnetworks/%s" % (project, zone.rsplit("-", 1)[0], subnetwork)


def new_node_id(rng=random):
    return str(rng.randrange(10 ** 18, 10 ** 19))


def new_operation(project, zone, verb, target, rng=random):
    name = "projects/%s/locations/%s/operations/operation-%d-%s" % (
        project, zone, int(time.time() * 1000), "%012x" % rng.randrange(16 ** 12))
    return {"name": name,
            "metadata": {"@type": "type.googleapis.com/google.cloud.tpu.v2.OperationMetadata",
                         "createTime": now_rfc3339(), "target": target, "verb": verb, "apiVersion": "v2"},
            "done": False}


def finish_operation(op, response=None, error=None):
    op["done"] = True
    op["metadata"]["endTime"] = now_rfc3339()
    if error is not None:
        op["error"] = {"code": error.code_number if hasattr(error, "code_number") else 13,
                       "message": str(error)}
    elif response is not None:
        op["response"] = response
    else:
        op["response"] = {"@type": "type.googleapis.com/google.protobuf.Empty"}
    return op
