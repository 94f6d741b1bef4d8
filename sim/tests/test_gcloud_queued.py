"""The real gcloud (Google Cloud SDK, /usr/bin/gcloud) against the in-process
simulated cloud: queued resources and a stocked-out create, as tpurun will
drive them. Skipped where gcloud is not installed."""
import json
import os
import shutil
import subprocess
import unittest

from fakepod import capacity

from .qrfixture import P, Z, CloudTest

GCLOUD = shutil.which("gcloud") or "/usr/bin/gcloud"
HAVE_GCLOUD = os.access(GCLOUD, os.X_OK)
ZONE2 = "us-east1-d"


@unittest.skipUnless(HAVE_GCLOUD, "gcloud (Google Cloud SDK) is not installed")
class GcloudQueuedTest(CloudTest):
    def setUp(self):
        super().setUp()
        # A private config as `fakepod up` writes one (host.write_gcloud_config).
        self.cfg = os.path.join(self.dir, "gcloud")
        os.makedirs(os.path.join(self.cfg, "configurations"))
        with open(os.path.join(self.cfg, "configurations", "config_default"), "w") as f:
            f.write("[core]\nproject = %s\naccount = alice@fakepod.test\ndisable_usage_reporting = true\n"
                    "disable_file_logging = true\n[auth]\ndisable_credentials = true\n"
                    "[api_endpoint_overrides]\ntpu = http://127.0.0.1:%d/\n"
                    "compute = http://127.0.0.1:%d/compute/v1/\n[component_manager]\n"
                    "disable_update_check = true\n[survey]\ndisable_prompts = true\n" % (P, self.c.port, self.c.port))
        with open(os.path.join(self.cfg, "active_config"), "w") as f:
            f.write("default")
        with open(os.path.join(self.cfg, "gce"), "w") as f:
            f.write("False")

    def gcloud(self, *args):
        env = dict(os.environ, CLOUDSDK_CONFIG=self.cfg, CLOUDSDK_CORE_DISABLE_PROMPTS="1")
        p = subprocess.run([GCLOUD] + list(args), env=env, capture_output=True, text=True, timeout=120,
                           stdin=subprocess.DEVNULL)
        return p.returncode, p.stdout, p.stderr

    def api_log(self):
        with open(self.env.path("api.log")) as f:
            return f.read()

    def test_create_describe_list_and_delete_with_force(self):
        rc, out, err = self.gcloud("compute", "tpus", "queued-resources", "create", "q1", "--node-id", "n1",
                                   "--zone", Z, "--accelerator-type", "v4-8", "--runtime-version",
                                   "tpu-ubuntu2204-base", "--spot", "--valid-until-duration", "10m",
                                   "--labels", "team=kmh", "--metadata", "startup-script=echo hi")
        self.assertEqual(rc, 0, err)
        self.assertIn("Create request issued for: [q1]", err)
        self.assertIn("Created queued_resource [q1].", err)
        self.assertIn("POST /v2/projects/%s/locations/%s/queuedResources?alt=json&queuedResourceId=q1 " % (P, Z),
                      self.api_log())
        body = self.c.qrs["projects/%s/locations/%s/queuedResources/q1" % (P, Z)]["body"]
        self.assertEqual(body["spot"], {})
        self.assertEqual(body["queueingPolicy"], {"validUntilDuration": "600s"})
        spec = body["tpu"]["nodeSpec"][0]
        self.assertEqual((spec["parent"], spec["nodeId"]), ("projects/%s/locations/%s" % (P, Z), "n1"))
        self.assertEqual(spec["node"]["labels"], {"team": "kmh"})
        self.assertEqual(spec["node"]["metadata"], {"startup-script": "echo hi"})
        self.until_state("q1", "ACTIVE")

        rc, out, err = self.gcloud("compute", "tpus", "queued-resources", "describe", "q1", "--zone", Z,
                                   "--format", "json")
        self.assertEqual(rc, 0, err)
        q = json.loads(out)
        self.assertEqual((q["name"], q["state"]["state"]), ("projects/%s/locations/%s/queuedResources/q1" % (P, Z),
                                                            "ACTIVE"))
        rc, out, err = self.gcloud("compute", "tpus", "queued-resources", "list", "--zone", Z, "--format",
                                   "value(name.basename(),state.state)")
        self.assertEqual((rc, out.split()), (0, ["q1", "ACTIVE"]), err)

        rc, out, err = self.gcloud("compute", "tpus", "queued-resources", "delete", "q1", "--zone", Z, "--quiet")
        self.assertNotEqual(rc, 0)
        self.assertIn('"code": 9', err)
        self.assertIn("DeleteQueuedResource is not supported when state is ACTIVE", err)
        self.assertEqual(self.node("n1")["state"], "READY")

        rc, out, err = self.gcloud("compute", "tpus", "queued-resources", "delete", "q1", "--zone", Z, "--quiet",
                                   "--force")
        self.assertEqual(rc, 0, err)
        self.assertIn("Deleted queued_resource [q1].", err)
        self.assertIn("DELETE /v2/projects/%s/locations/%s/queuedResources/q1?alt=json&force=True " % (P, Z),
                      self.api_log())
        self.assertIsNone(self.qr("q1"))
        self.assertIsNone(self.node("n1"))

    def test_a_stocked_out_zone(self):
        capacity.control(self.c, {"what": "stockout", "zone": ZONE2})
        rc, out, err = self.gcloud("compute", "tpus", "tpu-vm", "create", "n2", "--zone", ZONE2, "--accelerator-type",
                                   "v4-8", "--version", "tpu-ubuntu2204-base")
        self.assertEqual(rc, 1, err)
        self.assertIn("Create request issued for: [n2]", err)
        self.assertIn("ERROR: (gcloud.compute.tpus.tpu-vm.create) {", err)
        self.assertIn('"code": 8', err)
        self.assertIn('There is no more capacity in the zone \\"%s\\"; you can try in another zone' % ZONE2, err)
        self.assertIsNone(self.node("n2", ZONE2))

        # A reserved queued resource there waits (--async: gcloud does not wait)
        rc, out, err = self.gcloud("compute", "tpus", "queued-resources", "create", "q2", "--node-id", "n2",
                                   "--zone", ZONE2, "--accelerator-type", "v4-8", "--runtime-version",
                                   "tpu-ubuntu2204-base", "--reserved", "--async")
        self.assertEqual(rc, 0, err)
        self.assertIn("Check operation [projects/%s/locations/%s/operations/" % (P, ZONE2), err)
        q = self.until_state("q2", "WAITING_FOR_RESOURCES", ZONE2)
        self.assertEqual(q["reservationName"], "projects/%s/locations/%s/reservations/-" % (P, ZONE2))
        rc, out, err = self.gcloud("compute", "tpus", "queued-resources", "delete", "q2", "--zone", ZONE2, "--quiet")
        self.assertEqual(rc, 0, err)
        self.assertIsNone(self.qr("q2", ZONE2))

        # gcloud 528's alpha track sends provisioningModel STANDARD with --spot
        rc, out, err = self.gcloud("alpha", "compute", "tpus", "queued-resources", "create", "q3", "--node-id", "n3",
                                   "--zone", Z, "--accelerator-type", "v4-8", "--runtime-version",
                                   "tpu-ubuntu2204-base", "--spot")
        self.assertNotEqual(rc, 0)
        self.assertIn("INVALID_ARGUMENT: STANDARD provisioning model is incompatible with spot requests", err)


if __name__ == "__main__":
    unittest.main()
