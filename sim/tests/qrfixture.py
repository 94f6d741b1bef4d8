"""An in-process simulated cloud for the queued-resource tests: the real API
server (server.Cloud behind a TCPServer on 127.0.0.1:0), whose nodes go
through the real nodes.create and delete code, but no worker boots (boot,
halt and the agents' acknowledgement are stubbed out)."""
import http.client
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from fakepod import config, server  # noqa: E402

P, Z = config.PROJECT, config.ZONE
FAST = {"create": 0.05, "delete": 0.05, "update": 0.0, "stop": 0.05, "start": 0.05,
        "qr-create": 0.05, "qr-delete": 0.05, "qr-suspend": 0.05}


def base(zone=Z, version="v2"):
    return "/%s/projects/%s/locations/%s" % (version, P, zone)


def qr_body(node_id="n1", zone=Z, accel="v4-8", **extra):
    """What `gcloud compute tpus queued-resources create` sends (util.py's
    CreateNodeSpec: parent, nodeId, node with networkConfig, serviceAccount
    and metadata always set)."""
    body = {"tpu": {"nodeSpec": [{"parent": "projects/%s/locations/%s" % (P, zone), "nodeId": node_id,
                                  "node": {"acceleratorType": accel, "runtimeVersion": "tpu-ubuntu2204-base",
                                           "networkConfig": {"network": "default", "enableExternalIps": True},
                                           "serviceAccount": {}, "metadata": {}}}]}}
    body.update(extra)
    return body


class CloudTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.env = config.Env(self.dir, self.dir + "/nfs", "127.9", "accel")
        self.c = server.Cloud(self.env, self.dir)
        self.c.faults["delays"] = dict(FAST)
        self.booted, self.halted = [], []
        self.c.boot = lambda node, slots=None, **kw: self.booted.append(node.name)
        self.c.halt = lambda slots: self.halted.append(list(slots))
        self.c.wait_applied = lambda slots, gen, timeout=30.0: []
        self.srv = server.TCPServer(("127.0.0.1", 0), server.make_handler(self.c, "api"))
        self.c.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, args=(0.05,), daemon=True).start()
        threading.Thread(target=self.c.timer_loop, daemon=True).start()

    def tearDown(self):
        self.srv.shutdown()
        self.srv.server_close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def call(self, method, path, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.c.port, timeout=10)
        c.request(method, path, body=json.dumps(body) if body is not None else None)
        r = c.getresponse()
        data = json.loads(r.read() or b"{}")
        c.close()
        return r.status, data

    def until(self, what, fn, timeout=20.0):
        """Polls fn() until it is true; fails (naming what) if it never is."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            v = fn()
            if v:
                return v
            time.sleep(0.02)
        self.fail("never: %s" % what)

    def wait_op(self, op):
        name = op["name"]
        return self.until("operation %s done" % name,
                          lambda: (lambda r: r[1] if r[1].get("done") else None)(self.call("GET", "/v2/" + name)))

    def qr(self, name, zone=Z):
        st, q = self.call("GET", base(zone) + "/queuedResources/" + name)
        return q if st == 200 else None

    def qr_state(self, name, zone=Z):
        q = self.qr(name, zone)
        return q["state"]["state"] if q else None

    def until_state(self, name, state, zone=Z):
        self.until("%s %s" % (name, state), lambda: self.qr_state(name, zone) == state)
        return self.qr(name, zone)

    def create_qr(self, name, body=None, zone=Z, version="v2"):
        st, op = self.call("POST", base(zone, version) + "/queuedResources?queuedResourceId=%s" % name,
                           body if body is not None else qr_body(zone=zone))
        self.assertEqual(st, 200, op)
        return op

    def node(self, name, zone=Z):
        st, n = self.call("GET", base(zone) + "/nodes/" + name)
        return n if st == 200 else None
