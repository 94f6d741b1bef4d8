"""The simulated Cloud TPU API over HTTP, as gcloud calls it (no workers are
started: the nodes here are listing-only views or have no running slots)."""
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

from fakepod import cloud, config, server  # noqa: E402

P, Z = config.PROJECT, config.ZONE
BASE = "/v2/projects/%s/locations/%s" % (P, Z)


class ApiTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.env = config.Env(self.dir, self.dir + "/nfs", "127.9", "accel")
        self.c = server.Cloud(self.env, self.dir)
        self.c.faults["delays"] = {"update": 0.0, "delete": 0.0, "stop": 0.3, "start": 0.0}
        n = cloud.Node(P, Z, "t", "77", "v4-16", "rt", [0, 1], view=True)
        self.c.nodes[n.full_name] = n
        self.c.guest[0] = {"hostkeys/ssh-ed25519": "AAAAC3Nza0000abcdef"}
        self.srv = server.TCPServer(("127.0.0.1", 0), server.make_handler(self.c, "api"))
        self.c.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        threading.Thread(target=self.c.timer_loop, daemon=True).start()

    def tearDown(self):
        self.srv.shutdown()
        self.srv.server_close()
        shutil.rmtree(self.dir)

    def call(self, method, path, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.c.port, timeout=10)
        c.request(method, path, body=json.dumps(body) if body is not None else None)
        r = c.getresponse()
        data = json.loads(r.read() or b"{}")
        c.close()
        return r.status, data

    def wait_op(self, op):
        for _ in range(200):
            st, op = self.call("GET", "/v2/" + op["name"])
            self.assertEqual(st, 200)
            if op.get("done"):
                return op
            time.sleep(0.02)
        self.fail("operation never finished")

    def test_get_and_not_found(self):
        st, n = self.call("GET", BASE + "/nodes/t?alt=json")
        self.assertEqual(st, 200)
        self.assertEqual(n["name"], "projects/%s/locations/%s/nodes/t" % (P, Z))
        self.assertEqual(n["id"], "77")
        self.assertEqual(len(n["networkEndpoints"]), 2)
        st, e = self.call("GET", BASE + "/nodes/nope")
        self.assertEqual((st, e["error"]["status"]), (404, "NOT_FOUND"))
        self.assertIn("Resource 'projects/%s/locations/%s/nodes/nope' was not found" % (P, Z), e["error"]["message"])
        st, e = self.call("GET", "/v2/projects/other/locations/%s/nodes/t" % Z)
        self.assertEqual((st, e["error"]["status"]), (403, "PERMISSION_DENIED"))

    def test_list_by_zone_and_zone_fault(self):
        st, l = self.call("GET", BASE + "/nodes")
        self.assertEqual([n["name"].rsplit("/", 1)[1] for n in l["nodes"]], ["t"])
        st, l = self.call("GET", "/v2/projects/%s/locations/europe-west4-a/nodes" % P)
        self.assertEqual((st, l), (200, {}))
        self.c.faults["zones"] = {Z: {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "Quota exceeded"}}
        st, e = self.call("GET", BASE + "/nodes")
        self.assertEqual((st, e["error"]["message"]), (429, "Quota exceeded"))
        st, e = self.call("GET", BASE + "/nodes/t")
        self.assertEqual(st, 429)

    def test_guest_attributes_per_worker(self):
        st, g = self.call("POST", BASE + "/nodes/t:getGuestAttributes", {"workerIds": [""]})
        self.assertEqual(st, 200)
        self.assertEqual(len(g["guestAttributes"]), 2)
        self.assertEqual(g["guestAttributes"][0]["queryValue"]["items"],
                         [{"namespace": "hostkeys", "key": "ssh-ed25519", "value": "AAAAC3Nza0000abcdef"}])
        self.assertEqual(g["guestAttributes"][1]["queryValue"], {"items": []})
        st, g = self.call("POST", BASE + "/nodes/t:getGuestAttributes", {"workerIds": ["1"]})
        self.assertEqual(len(g["guestAttributes"]), 1)
        st, e = self.call("POST", BASE + "/nodes/t:getGuestAttributes", {"workerIds": ["7"]})
        self.assertEqual(st, 400)

    def test_patch_metadata_is_an_operation(self):
        st, op = self.call("PATCH", BASE + "/nodes/t?updateMask=metadata",
                           {"metadata": {"ssh-keys": "\nalice:ssh-rsa AAAA alice"}})
        self.assertEqual(st, 200)
        self.assertFalse(op["done"])
        self.assertEqual(op["metadata"]["verb"], "update")
        op = self.wait_op(op)
        self.assertEqual(op["response"]["metadata"]["ssh-keys"], "\nalice:ssh-rsa AAAA alice")
        st, n = self.call("GET", BASE + "/nodes/t")
        self.assertEqual(n["metadata"], {"ssh-keys": "\nalice:ssh-rsa AAAA alice"})
        st, e = self.call("PATCH", BASE + "/nodes/t?updateMask=acceleratorType", {})
        self.assertEqual(st, 400)

    def test_stop_start_delete_states(self):
        st, op = self.call("POST", BASE + "/nodes/t:stop", {})
        self.assertEqual(self.call("GET", BASE + "/nodes/t")[1]["state"], "STOPPING")
        self.wait_op(op)
        n = self.call("GET", BASE + "/nodes/t")[1]
        self.assertEqual(n["state"], "STOPPED")
        self.assertNotIn("health", n)
        st, e = self.call("POST", BASE + "/nodes/t:stop", {})
        self.assertEqual((st, e["error"]["status"]), (400, "FAILED_PRECONDITION"))
        self.wait_op(self.call("POST", BASE + "/nodes/t:start", {})[1])
        self.assertEqual(self.call("GET", BASE + "/nodes/t")[1]["state"], "READY")
        self.c.preempt(self.c.node(P, Z, "t"))
        self.assertEqual(self.call("GET", BASE + "/nodes/t")[1]["state"], "PREEMPTED")
        st, e = self.call("POST", BASE + "/nodes/t:start", {})
        self.assertEqual(st, 400)
        op = self.wait_op(self.call("DELETE", BASE + "/nodes/t")[1])
        self.assertEqual(op["response"]["@type"], "type.googleapis.com/google.protobuf.Empty")
        self.assertEqual(self.call("GET", BASE + "/nodes/t")[0], 404)

    def test_preempt_with_notice_says_preempted_before_the_workers_die(self):
        halted = []
        self.c.halt = halted.append  # no workers run here: record what would be powered off
        n = cloud.Node(P, Z, "spot", "88", "v4-8", "rt", [5])
        self.c.nodes[n.full_name] = n
        self.c.preempt(n, notice=0.3)
        self.assertEqual(self.call("GET", BASE + "/nodes/spot")[1]["state"], "PREEMPTED")
        self.assertEqual(halted, [])  # still answering: the guest's shutdown time
        time.sleep(0.6)
        self.assertEqual(halted, [[5]])
        # a VM created again under the name before the notice ends is not touched
        m = cloud.Node(P, Z, "spot2", "89", "v4-8", "rt", [6])
        self.c.nodes[m.full_name] = m
        self.c.preempt(m, notice=0.3)
        self.c.nodes[m.full_name] = cloud.Node(P, Z, "spot2", "90", "v4-8", "rt", [6])
        time.sleep(0.6)
        self.assertEqual(halted, [[5]])
        self.c.preempt(self.c.nodes[m.full_name])  # no notice: at once
        self.assertEqual(halted, [[5], [6]])

    def test_create_validates(self):
        st, e = self.call("POST", BASE + "/nodes?nodeId=t", {"acceleratorType": "v4-8", "runtimeVersion": "x"})
        self.assertEqual((st, e["error"]["status"]), (409, "ALREADY_EXISTS"))
        st, e = self.call("POST", BASE + "/nodes?nodeId=Bad_Name", {"acceleratorType": "v4-8", "runtimeVersion": "x"})
        self.assertEqual(st, 400)
        st, e = self.call("POST", BASE + "/nodes?nodeId=new", {"acceleratorType": "v4-8"})
        self.assertEqual((st, e["error"]["status"]), (400, "INVALID_ARGUMENT"))

    def test_create_keeps_what_a_recreate_copies(self):
        # What `gcloud compute tpus tpu-vm create` sends (tpu_vm/flags.yaml's
        # api_fields) comes back from describe, as on the real API.
        self.c.faults["delays"]["create"] = 60  # the workers never boot here
        body = {"acceleratorType": "v4-16", "runtimeVersion": "rt",
                "networkConfig": {"network": "tpu-net", "subnetwork": "tpu-sub", "enableExternalIps": False},
                "schedulingConfig": {"spot": True}, "labels": {"team": "kmh"},
                "metadata": {"startup-script": "echo a,b\nmount x"}, "tags": ["tpu"],
                "serviceAccount": {"email": "sa@p.iam", "scope": ["s1"]},
                "shieldedInstanceConfig": {"enableSecureBoot": True},
                "dataDisks": [{"sourceDisk": "projects/p/zones/z/disks/d", "mode": "READ_ONLY"}]}
        st, op = self.call("POST", BASE + "/nodes?nodeId=new", body)
        self.assertEqual(st, 200)
        st, n = self.call("GET", BASE + "/nodes/new")
        self.assertEqual(n["state"], "CREATING")
        self.assertEqual(n["networkConfig"], {"network": "projects/%s/global/networks/tpu-net" % P,
                                              "subnetwork": "projects/%s/regions/us-central2/subnetworks/tpu-sub" % P,
                                              "enableExternalIps": False})
        for key in ("schedulingConfig", "labels", "metadata", "tags", "serviceAccount", "shieldedInstanceConfig",
                    "dataDisks"):
            self.assertEqual(n[key], body[key], key)
        self.assertNotIn("queuedResource", n)
        # gcloud's defaults: network "default", the API fills in its subnetwork
        self.call("POST", BASE + "/nodes?nodeId=plain", {"acceleratorType": "v4-8", "runtimeVersion": "rt",
                                                          "networkConfig": {"network": "default"}})
        n = self.call("GET", BASE + "/nodes/plain")[1]
        self.assertEqual(n["networkConfig"]["subnetwork"], "projects/%s/regions/us-central2/subnetworks/default" % P)
        self.assertEqual(n["shieldedInstanceConfig"], {})

    def test_a_node_from_a_queued_resource_says_so(self):
        self.c.faults["delays"]["create"] = 60
        self.c.op_create(P, Z, "qr", {"acceleratorType": "v4-8", "runtimeVersion": "rt"},
                         queued_resource="projects/%s/locations/%s/queuedResources/q1" % (P, Z))
        n = self.call("GET", BASE + "/nodes/qr")[1]
        self.assertEqual(n["queuedResource"], "projects/%s/locations/%s/queuedResources/q1" % (P, Z))
        # and a node saved by an older simulator has the defaults
        old = cloud.Node.from_json({k: v for k, v in self.c.node(P, Z, "t").to_json().items()
                                    if k not in ("network", "subnetwork", "queued_resource", "data_disks")})
        self.assertEqual(old.to_api(self.env)["networkConfig"]["network"], "projects/%s/global/networks/default" % P)

    def test_compute_project_and_oslogin(self):
        self.c.project_md = [{"key": "enable-oslogin", "value": "TRUE"}]
        st, p = self.call("GET", "/compute/v1/projects/%s?alt=json" % P)
        self.assertEqual(st, 200)
        self.assertEqual(p["commonInstanceMetadata"]["items"], [{"key": "enable-oslogin", "value": "TRUE"}])
        self.assertIn("fingerprint", p["commonInstanceMetadata"])
        fp = p["commonInstanceMetadata"]["fingerprint"]
        st, e = self.call("POST", "/compute/v1/projects/%s/setCommonInstanceMetadata" % P,
                          {"items": [], "fingerprint": "stale"})
        self.assertEqual(st, 412)
        st, op = self.call("POST", "/compute/v1/projects/%s/setCommonInstanceMetadata" % P,
                           {"items": [{"key": "enable-oslogin", "value": "FALSE"}], "fingerprint": fp})
        self.assertEqual((st, op["status"]), (200, "DONE"))
        self.assertEqual(self.call("GET", "/compute/v1/projects/%s/global/operations/%s" % (P, op["name"]))[1]["name"],
                         op["name"])
        self.assertEqual(self.c.project_md, [{"key": "enable-oslogin", "value": "FALSE"}])
        st, prof = self.call("GET", "/v1/users/eve@example.com/loginProfile?projectId=%s" % P)
        self.assertEqual(prof, {"name": "eve@example.com"})
        st, r = self.call("POST", "/v1/users/eve@example.com:importSshPublicKey?projectId=%s" % P,
                          {"key": "ssh-rsa AAAAeve eve"})
        acct = r["loginProfile"]["posixAccounts"][0]
        self.assertEqual(acct["username"], "eve_example_com")
        self.assertTrue(acct["primary"])
        self.assertEqual(list(r["loginProfile"]["sshPublicKeys"].values())[0]["key"], "ssh-rsa AAAAeve eve")


if __name__ == "__main__":
    unittest.main()
