"""Queued resources and capacity, over HTTP as gcloud calls them (in-process
cloud, no workers: see qrfixture)."""
import time
import unittest

from fakepod import capacity, queued, server

from .qrfixture import P, Z, CloudTest, base, qr_body

ZONE2 = "us-east1-d"
CAPACITY_TEXT = 'There is no more capacity in the zone "%s"; you can try in another zone'


class QueuedResourceTest(CloudTest):
    def test_create_goes_active_with_a_node_of_its_own(self):
        # Held in CREATING until the test has seen it there: with the fast
        # 0.05 s step, a busy machine could let the queue move it on before
        # the GET (asserting that would be asserting on a race).
        queued.control(self.c, {"what": "hold", "state": "CREATING", "seconds": 600})
        op = self.create_qr("q1", qr_body("n1", spot={}))
        self.assertFalse(op["done"])
        self.assertEqual(op["metadata"]["verb"], "create")
        self.assertEqual(op["metadata"]["target"], "projects/%s/locations/%s/queuedResources/q1" % (P, Z))
        self.assertEqual(self.qr_state("q1"), "CREATING")
        queued.control(self.c, {"what": "hold", "state": "CREATING", "seconds": 0})
        queued.control(self.c, {"what": "hold", "state": "CREATING", "seconds": 0, "name": "q1"})
        op = self.wait_op(op)
        self.assertEqual(op["response"]["@type"], "type.googleapis.com/google.cloud.tpu.v2.QueuedResource")
        self.assertIn(op["response"]["state"]["state"], ("WAITING_FOR_RESOURCES", "PROVISIONING"))
        q = self.until_state("q1", "ACTIVE")
        self.assertEqual(q["spot"], {})
        self.assertEqual(q["tpu"]["nodeSpec"][0]["nodeId"], "n1")
        self.assertNotIn("failedData", q["state"])
        n = self.node("n1")
        self.assertEqual(n["state"], "READY")
        self.assertEqual(n["queuedResource"], "projects/%s/locations/%s/queuedResources/q1" % (P, Z))
        self.assertEqual(n["schedulingConfig"], {"spot": True})
        self.assertEqual(self.booted, ["n1"])   # workers boot as for a plain create
        st, l = self.call("GET", base() + "/queuedResources")
        self.assertEqual([x["name"].rsplit("/", 1)[1] for x in l["queuedResources"]], ["q1"])
        st, l = self.call("GET", "/v2/projects/%s/locations/-/queuedResources" % P)
        self.assertEqual(len(l["queuedResources"]), 1)
        self.assertEqual(self.call("GET", base(ZONE2) + "/queuedResources"), (200, {}))

    def test_delete_needs_force_while_it_has_its_node(self):
        self.wait_op(self.create_qr("q1"))
        self.until_state("q1", "ACTIVE")
        st, op = self.call("DELETE", base() + "/queuedResources/q1?alt=json")
        self.assertEqual(st, 200)
        op = self.wait_op(op)
        self.assertEqual(op["error"]["code"], 9)
        self.assertEqual(op["error"]["message"], "DeleteQueuedResource is not supported when state is ACTIVE (must "
                         "be one of [ACCEPTED WAITING_FOR_RESOURCES SUSPENDED FAILED])")
        self.assertEqual(self.qr_state("q1"), "ACTIVE")
        self.assertEqual(self.node("n1")["state"], "READY")
        # gcloud --force sends force=True (a Python bool in the query). Held
        # in DELETING until the test has seen it there (as CREATING above).
        queued.control(self.c, {"what": "hold", "state": "DELETING", "seconds": 600, "name": "q1"})
        st, op = self.call("DELETE", base() + "/queuedResources/q1?alt=json&force=True")
        self.assertEqual(self.qr_state("q1"), "DELETING")
        queued.control(self.c, {"what": "hold", "state": "DELETING", "seconds": 0, "name": "q1"})
        op = self.wait_op(op)
        self.assertNotIn("error", op)
        self.assertEqual(op["response"]["@type"], "type.googleapis.com/google.protobuf.Empty")
        self.assertIsNone(self.qr("q1"))
        self.assertIsNone(self.node("n1"))
        st, e = self.call("GET", base() + "/queuedResources/q1")
        self.assertEqual((st, e["error"]["status"]), (404, "NOT_FOUND"))
        self.assertIn("Resource 'projects/%s/locations/%s/queuedResources/q1' was not found" % (P, Z),
                      e["error"]["message"])

    def test_waits_for_capacity_and_gets_it_when_a_node_goes(self):
        capacity.control(self.c, {"what": "set", "zone": Z, "type": "v4-8", "count": 1})
        st, op = self.call("POST", base() + "/nodes?nodeId=plain", {"acceleratorType": "v4-8", "runtimeVersion": "r"})
        self.assertNotIn("error", self.wait_op(op))
        self.wait_op(self.create_qr("q1"))
        time.sleep(0.4)   # many passes of the queue: still nothing free
        self.assertEqual(self.qr_state("q1"), "WAITING_FOR_RESOURCES")
        self.assertIsNone(self.node("n1"))
        self.wait_op(self.call("DELETE", base() + "/nodes/plain")[1])
        self.until_state("q1", "ACTIVE")
        # a plain create now finds the zone full
        st, op = self.call("POST", base() + "/nodes?nodeId=late", {"acceleratorType": "v4-8", "runtimeVersion": "r"})
        self.assertEqual(self.wait_op(op)["error"]["code"], 8)

    def test_capacity_added_is_taken_first_come_first_served(self):
        capacity.control(self.c, {"what": "stockout", "zone": Z})
        self.wait_op(self.create_qr("q1", qr_body("n1")))
        self.wait_op(self.create_qr("q2", qr_body("n2")))
        capacity.control(self.c, {"what": "set", "zone": Z, "type": "v4-8", "count": 1})
        self.until_state("q1", "ACTIVE")
        time.sleep(0.3)
        self.assertEqual(self.qr_state("q2"), "WAITING_FOR_RESOURCES")
        capacity.control(self.c, {"what": "restock", "zone": Z})
        self.until_state("q2", "ACTIVE")

    def test_valid_until_fails_it_and_it_stays_failed(self):
        capacity.control(self.c, {"what": "stockout", "zone": ZONE2})
        self.wait_op(self.create_qr("q1", qr_body("n1", zone=ZONE2, queueingPolicy={"validUntilDuration": "0.3s"}),
                                    zone=ZONE2))
        q = self.until_state("q1", "FAILED", ZONE2)
        err = q["state"]["failedData"]["error"]
        self.assertEqual(err["code"], 8)
        self.assertIn(CAPACITY_TEXT % ZONE2, err["message"])
        self.assertEqual(q["state"]["stateInitiator"], "SERVICE")
        capacity.control(self.c, {"what": "restock", "zone": ZONE2})
        time.sleep(0.3)
        self.assertEqual(self.qr_state("q1", ZONE2), "FAILED")   # never retried
        self.assertIsNone(self.node("n1", ZONE2))
        op = self.wait_op(self.call("DELETE", base(ZONE2) + "/queuedResources/q1")[1])
        self.assertNotIn("error", op)
        self.assertIsNone(self.qr("q1", ZONE2))

    def test_spot_preemption_suspends_it(self):
        self.wait_op(self.create_qr("q1", qr_body("n1", spot={})))
        self.until_state("q1", "ACTIVE")
        self.c.preempt(self.c.node(P, Z, "n1"))
        q = self.until_state("q1", "SUSPENDED")
        self.assertEqual(q["state"]["stateInitiator"], "SERVICE")
        self.assertEqual(self.node("n1")["state"], "PREEMPTED")
        # SUSPENDED may be deleted without force; its node goes too
        self.assertNotIn("error", self.wait_op(self.call("DELETE", base() + "/queuedResources/q1")[1]))
        self.until("node gone", lambda: self.node("n1") is None)

    def test_deleting_its_node_suspends_it_by_the_user(self):
        self.wait_op(self.create_qr("q1"))
        self.until_state("q1", "ACTIVE")
        self.wait_op(self.call("DELETE", base() + "/nodes/n1")[1])
        q = self.until_state("q1", "SUSPENDED")
        self.assertEqual(q["state"]["stateInitiator"], "USER")

    def test_fail_next_and_hold(self):
        queued.control(self.c, {"what": "fail-next", "code": 3, "message": "Cloud TPU received a bad request."})
        self.wait_op(self.create_qr("q1", qr_body("n1")))
        q = self.until_state("q1", "FAILED")
        self.assertEqual(q["state"]["failedData"]["error"], {"code": 3, "message": "Cloud TPU received a bad request."})
        # only the next one
        queued.control(self.c, {"what": "hold", "state": "PROVISIONING", "seconds": 30})
        self.wait_op(self.create_qr("q2", qr_body("n2")))
        self.until_state("q2", "PROVISIONING")
        time.sleep(0.3)
        self.assertEqual(self.qr_state("q2"), "PROVISIONING")
        self.assertIsNone(self.node("n2"))   # PROVISIONING, no node yet
        st, op = self.call("DELETE", base() + "/queuedResources/q2")
        self.assertIn("state is PROVISIONING", self.wait_op(op)["error"]["message"])
        queued.control(self.c, {"what": "hold", "state": "PROVISIONING", "seconds": 0, "name": "q2"})
        self.until_state("q2", "ACTIVE")

    def test_failing_provision_shows_its_node_creating_then_none(self):
        queued.control(self.c, {"what": "fail-next", "zone": Z, "at": "provisioning"})
        queued.control(self.c, {"what": "hold", "state": "ACCEPTED", "seconds": 0.2})
        self.c.faults["delays"]["create"] = 0.5
        self.wait_op(self.create_qr("q1", qr_body("n1")))
        self.until_state("q1", "PROVISIONING")
        n = self.until("node n1 CREATING", lambda: self.node("n1"))
        self.assertEqual(n["state"], "CREATING")
        self.assertEqual(n["queuedResource"], "projects/%s/locations/%s/queuedResources/q1" % (P, Z))
        q = self.until_state("q1", "FAILED")
        self.assertEqual(q["state"]["failedData"]["error"]["code"], 8)
        self.assertIsNone(self.node("n1"))
        self.assertEqual(self.booted, [])

    def test_multislice_waits_for_all_its_slices(self):
        capacity.control(self.c, {"what": "set", "zone": Z, "type": "v4-16", "count": 1})
        body = qr_body(accel="v4-16")
        spec = body["tpu"]["nodeSpec"][0]
        del spec["nodeId"]
        spec["multisliceParams"] = {"nodeCount": 2}
        self.wait_op(self.create_qr("ms", body))
        time.sleep(0.3)
        self.assertEqual(self.qr_state("ms"), "WAITING_FOR_RESOURCES")
        capacity.control(self.c, {"what": "set", "zone": Z, "type": "v4-16", "count": 2})
        self.until_state("ms", "ACTIVE")
        self.assertEqual(sorted(self.booted), ["ms-0", "ms-1"])

    def test_create_validates(self):
        self.wait_op(self.create_qr("q1"))
        st, e = self.call("POST", base() + "/queuedResources?queuedResourceId=q1", qr_body())
        self.assertEqual((st, e["error"]["status"]), (409, "ALREADY_EXISTS"))
        bad = qr_body()
        del bad["tpu"]["nodeSpec"][0]["node"]["runtimeVersion"]
        for body in (bad, qr_body(spot={}, guaranteed={}), qr_body(zone=ZONE2), {}):
            st, e = self.call("POST", base() + "/queuedResources?queuedResourceId=q9", body)
            self.assertEqual((st, e["error"]["status"]), (400, "INVALID_ARGUMENT"), body)
        # gcloud 528's alpha --spot: spot{} and provisioningModel STANDARD
        st, e = self.call("POST", base(version="v2alpha1") + "/queuedResources?queuedResourceId=q9",
                          qr_body(spot={}, provisioningModel="STANDARD"))
        self.assertEqual((st, e["error"]["message"]), (400, "STANDARD provisioning model is incompatible with spot "
                                                            "requests"))
        st, e = self.call("GET", "/v2/projects/other/locations/%s/queuedResources/q1" % Z)
        self.assertEqual(st, 403)

    def test_queued_resources_survive_a_restart(self):
        self.wait_op(self.create_qr("q1", qr_body("n1", zone=ZONE2, queueingPolicy={"validUntilDuration": "600s"}),
                                    zone=ZONE2))
        self.c.save()
        c2 = server.Cloud(self.env, self.dir)
        self.assertEqual(queued.to_api(c2.qrs["projects/%s/locations/%s/queuedResources/q1" % (P, ZONE2)])["name"],
                         "projects/%s/locations/%s/queuedResources/q1" % (P, ZONE2))


class CapacityTest(CloudTest):
    def create(self, name, zone=Z, **sched):
        body = {"acceleratorType": "v4-8", "runtimeVersion": "r"}
        if sched:
            body["schedulingConfig"] = sched
        st, op = self.call("POST", base(zone) + "/nodes?nodeId=%s" % name, body)
        self.assertEqual(st, 200, op)
        return self.wait_op(op)

    def test_a_stocked_out_zone_fails_the_create_operation_with_code_8(self):
        capacity.control(self.c, {"what": "stockout", "zone": ZONE2})
        op = self.create("n1", ZONE2)
        self.assertEqual(op["error"]["code"], 8)
        self.assertIn(CAPACITY_TEXT % ZONE2, op["error"]["message"])
        self.assertRegex(op["error"]["message"], r"\[EID: 0x[0-9a-f]+\]$")
        self.assertIsNone(self.node("n1", ZONE2))
        self.assertEqual(self.booted, [])
        self.assertNotIn("error", self.create("n1", Z))   # the next zone has some
        self.assertEqual(self.node("n1", Z)["state"], "READY")

    def test_pools_spot_and_reserved(self):
        capacity.control(self.c, {"what": "set", "zone": Z, "type": "*", "count": 0, "pool": "spot"})
        self.assertEqual(self.create("s1", spot=True)["error"]["code"], 8)
        self.assertNotIn("error", self.create("d1"))
        op = self.create("r1", reserved=True)   # no reservation bought
        self.assertEqual(op["error"]["code"], 9)
        self.assertTrue(op["error"]["message"].startswith("Insufficient reserved capacity. Contact customer support "
                                                          "to increase your reservation. [EID: 0x"))
        capacity.control(self.c, {"what": "set", "zone": Z, "type": "v4-8", "count": 1, "pool": "reserved"})
        self.assertNotIn("error", self.create("r1", reserved=True))
        self.assertEqual(self.create("r2", reserved=True)["error"]["code"], 9)

    def test_preempted_and_stopped_nodes_free_their_capacity(self):
        capacity.control(self.c, {"what": "set", "zone": Z, "type": "v4-8", "count": 1})
        self.assertNotIn("error", self.create("a"))
        self.assertEqual(self.create("b")["error"]["code"], 8)
        self.c.preempt(self.c.node(P, Z, "a"))
        self.assertNotIn("error", self.create("b"))
        self.assertEqual(capacity.usage(self.c), {Z: {"standard": {"v4-8": 1}}})


class ZoneFaultTest(CloudTest):
    """`fault zone-down` as a rate limit or an outage: the API's answers, not tpurun's."""

    class Body:
        def __init__(self, req):
            self.req = req

        def body(self):
            return self.req

    def fault(self, **req):
        from fakepod import control
        return control.route(self.c, "POST", "/fault", {}, self.Body(dict(req, what="zone-down")))

    def test_a_read_429_armed_by_a_create_refuses_the_poll_but_the_resource_is_made(self):
        self.fault(zone=Z, code=429, status="RESOURCE_EXHAUSTED", message="Quota exceeded for quota metric "
                   "'Read requests'", reads=True, after="qr-create", **{"for": 0.5})
        self.assertEqual(self.call("GET", base() + "/queuedResources/q0")[0], 404)  # not armed yet
        op = self.create_qr("q1")                                                  # the POST goes through
        st, e = self.call("GET", "/v2/" + op["name"])                              # gcloud's poll does not
        self.assertEqual((st, e["error"]["status"]), (429, "RESOURCE_EXHAUSTED"))
        self.assertEqual(self.call("GET", base() + "/queuedResources/q1")[0], 429)
        self.assertIn(Z, self.c.faults["zones"])
        # it ends by itself, and what the create made is there
        self.until("the 429s to end", lambda: self.call("GET", base() + "/queuedResources/q1")[0] == 200)
        self.assertNotIn(Z, self.c.faults.get("zones", {}))
        self.assertIsNotNone(self.qr("q1"))

    def test_an_outage_for_some_seconds_then_answers_again(self):
        self.fault(zone=ZONE2, code=503, **{"for": 0.3})
        self.create_qr("q1")
        self.assertEqual(self.call("GET", base(ZONE2) + "/queuedResources/q1")[0], 503)
        st, _ = self.call("POST", base(ZONE2) + "/queuedResources?queuedResourceId=q2", qr_body(zone=ZONE2))
        self.assertEqual(st, 503)  # not only reads
        self.assertIsNotNone(self.qr_state("q1"))  # the other zone answers
        self.until("the outage to end", lambda: self.call("GET", base(ZONE2) + "/queuedResources/q1")[0] == 404)


if __name__ == "__main__":
    unittest.main()
