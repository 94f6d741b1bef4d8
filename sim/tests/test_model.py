"""Unit tests of the simulator's pure parts: addresses, the Cloud TPU model,
metadata parsing and the guest agent's account rules."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from fakepod import agent, cloud, config, host  # noqa: E402


class EnvTest(unittest.TestCase):
    def test_default_addresses_match_the_old_simulator(self):
        env = config.Env.load({})
        self.assertEqual(env.ip(0), "127.0.1.1")
        self.assertEqual(env.ip(249), "127.0.1.250")
        self.assertEqual(env.ip(250), "127.0.2.1")
        self.assertEqual(env.slot_of("127.0.2.1"), 250)
        self.assertIsNone(env.slot_of("127.0.0.1"))
        self.assertEqual(env.node_id, config.NODE_ID)

    def test_second_pod_beside_the_default(self):
        env = config.Env.load({"FAKEPOD_NET": "127.9", "FAKEPOD_STATE": "/var/lib/other"})
        self.assertEqual(env.ip(3), "127.9.1.4")
        self.assertNotEqual(env.node_id, config.NODE_ID)
        three = config.Env.load({"FAKEPOD_NET": "127.0.9"})
        self.assertEqual(three.ip(0), "127.0.9.1")
        self.assertEqual(three.max_slots, 250)
        self.assertEqual(three.slot_of("127.0.9.250"), 249)
        with self.assertRaises(ValueError):
            three.ip(250)

    def test_only_loopback_bases(self):
        for bad in ("10.0", "127", "127.0.0.0.1", "127.x"):
            with self.assertRaises(ValueError):
                config.Env.load({"FAKEPOD_NET": bad})


class KnownHostsTest(unittest.TestCase):
    def test_plain_and_hashed_entries(self):
        import base64
        import hashlib
        import hmac
        self.assertTrue(host._known_host_matches("127.0.1.4", "127.0.1.4"))
        self.assertTrue(host._known_host_matches("a,127.0.1.4", "127.0.1.4"))
        self.assertFalse(host._known_host_matches("127.0.1.40", "127.0.1.4"))
        salt = b"0123456789abcdefghij"
        mac = base64.b64encode(hmac.new(salt, b"127.0.1.4", hashlib.sha1).digest()).decode()
        field = "|1|%s|%s" % (base64.b64encode(salt).decode(), mac)
        self.assertTrue(host._known_host_matches(field, "127.0.1.4"))
        self.assertFalse(host._known_host_matches(field, "127.0.1.5"))


class ModelTest(unittest.TestCase):
    def test_hosts_per_accelerator_type(self):
        self.assertEqual(cloud.hosts_for("v4-8"), 1)
        self.assertEqual(cloud.hosts_for("v4-32"), 4)
        self.assertEqual(cloud.hosts_for("v5p-64"), 8)
        self.assertEqual(cloud.hosts_for("v5litepod-8"), 1)
        self.assertEqual(cloud.hosts_for("v5litepod-16"), 4)
        self.assertEqual(cloud.hosts_for("v6e-256"), 64)
        with self.assertRaises(cloud.ApiError) as e:
            cloud.hosts_for("v9-8")
        self.assertEqual(e.exception.status, "INVALID_ARGUMENT")
        self.assertEqual(cloud.device_for("v4-8"), "accel")
        self.assertEqual(cloud.device_for("v5litepod-4"), "vfio")

    def test_not_found_names_the_resource_as_google_does(self):
        body = cloud.not_found("projects/p/locations/z/nodes/n").body()["error"]
        self.assertEqual(body["code"], 404)
        self.assertEqual(body["status"], "NOT_FOUND")
        self.assertEqual(body["message"], "Resource 'projects/p/locations/z/nodes/n' was not found")
        self.assertEqual(body["details"][0]["@type"], "type.googleapis.com/google.rpc.ResourceInfo")

    def test_node_json_omits_unset_fields_and_lists_endpoints_in_worker_order(self):
        env = config.Env.load({"FAKEPOD_NET": "127.9"})
        n = cloud.Node("p", "us-central2-b", "t", "123", "v4-16", "rt", [5, 2])
        d = n.to_api(env)
        self.assertEqual([e["ipAddress"] for e in d["networkEndpoints"]], ["127.9.1.6", "127.9.1.3"])
        self.assertEqual(d["networkEndpoints"][0]["accessConfig"]["externalIp"], "127.9.1.6")
        self.assertNotIn("metadata", d)
        self.assertNotIn("labels", d)
        self.assertEqual((d["state"], d["health"], d["id"]), ("READY", "HEALTHY", "123"))
        n.external_ips = False
        n.state, n.health = "PREEMPTED", None
        d = n.to_api(env)
        self.assertNotIn("accessConfig", d["networkEndpoints"][0])
        self.assertNotIn("health", d)
        n.state = "CREATING"
        self.assertNotIn("networkEndpoints", n.to_api(env))

    def test_ssh_keys_lines(self):
        v = "alice:ssh-ed25519 AAAA alice\n\nbad line\nbob:ssh-rsa BBBB bob@x\n:ssh-rsa CCCC\ncarol:notakey"
        self.assertEqual(cloud.parse_ssh_keys(v), [("alice", "ssh-ed25519 AAAA alice"), ("bob", "ssh-rsa BBBB bob@x")])

    def test_operations(self):
        op = cloud.new_operation("p", "z", "update", "projects/p/locations/z/nodes/n")
        self.assertTrue(op["name"].startswith("projects/p/locations/z/operations/operation-"))
        self.assertFalse(op["done"])
        cloud.finish_operation(op, {"name": "x"})
        self.assertTrue(op["done"])
        self.assertEqual(op["response"], {"name": "x"})
        op2 = cloud.finish_operation(cloud.new_operation("p", "z", "delete", "t"))
        self.assertEqual(op2["response"]["@type"], "type.googleapis.com/google.protobuf.Empty")


@unittest.skipUnless(os.getuid() == 0, "makes home dirs owned by other uids: needs root")
class AccountsTest(unittest.TestCase):
    """The agent's useradd/groupadd/gpasswd rules on a scratch /etc."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.home = tempfile.mkdtemp()
        with open(os.path.join(self.dir, "passwd"), "w") as f:
            f.write("root:x:0:0:root:/root:/bin/bash\nimage:x:1000:1000::/home/image:/bin/bash\n"
                    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
        with open(os.path.join(self.dir, "group"), "w") as f:
            f.write("root:x:0:\nadm:x:4:\nimage:x:1000:\nnogroup:x:65534:\n")
        for n in ("shadow", "gshadow"):
            open(os.path.join(self.dir, n), "w").close()
        self.acc = agent.Accounts(self.dir)
        self.acc.defs = {"UID_MIN": 1000, "UID_MAX": 60000, "GID_MIN": 1000, "GID_MAX": 60000}

    def test_uids_follow_arrival_order(self):
        uid, gid = self.acc.useradd("bob", home=os.path.join(self.home, "bob"))
        self.assertEqual((uid, gid), (1001, 1001))
        uid, gid = self.acc.useradd("alice", home=os.path.join(self.home, "alice"))
        self.assertEqual((uid, gid), (1002, 1002))
        self.assertEqual(self.acc.user("alice")[2:4], ["1002", "1002"])

    def test_google_sudoers_made_first_shifts_the_gids(self):
        # As on GCE: the agent makes google-sudoers before the first user, so
        # the first user's gid is one more than its uid.
        self.assertTrue(self.acc.groupadd("google-sudoers"))
        self.assertFalse(self.acc.groupadd("google-sudoers"))
        uid, gid = self.acc.useradd("alice", home=os.path.join(self.home, "alice"))
        self.assertEqual((uid, gid), (1001, 1002))

    def test_gpasswd_adds_and_removes_members(self):
        self.acc.useradd("alice", home=os.path.join(self.home, "alice"))
        self.assertTrue(self.acc.gpasswd("alice", "adm"))
        self.assertFalse(self.acc.gpasswd("alice", "adm"))
        with open(os.path.join(self.dir, "group")) as f:
            self.assertIn("adm:x:4:alice\n", f.read())
        self.assertTrue(self.acc.gpasswd("alice", "adm", add=False))

    def test_oslogin_accounts_keep_their_uid(self):
        uid, gid = self.acc.useradd("carol", uid=4242, gid=4243, home=os.path.join(self.home, "carol"))
        self.assertEqual((uid, gid), (4242, 4243))

    def test_authorized_keys_keep_the_users_own_lines(self):
        self.acc.useradd("alice", home=os.path.join(self.home, "alice"))
        pw = self.acc.user("alice")
        pw[2] = pw[3] = str(os.getuid())  # chown to ourselves in the test
        ak = os.path.join(self.home, "alice", ".ssh", "authorized_keys")
        os.makedirs(os.path.dirname(ak), exist_ok=True)
        with open(ak, "w") as f:
            f.write("ssh-ed25519 OWN mine\n")
        agent.update_authorized_keys(pw, ["ssh-rsa K1 alice", "ssh-rsa K2 alice"])
        with open(ak) as f:
            self.assertEqual(f.read(), "ssh-ed25519 OWN mine\n# Added by Google\nssh-rsa K1 alice\n"
                                       "# Added by Google\nssh-rsa K2 alice\n")
        agent.update_authorized_keys(pw, ["ssh-rsa K2 alice"])
        with open(ak) as f:
            self.assertEqual(f.read(), "ssh-ed25519 OWN mine\n# Added by Google\nssh-rsa K2 alice\n")
        agent.update_authorized_keys(pw, [])  # no keys: the file goes, own lines too
        self.assertFalse(os.path.exists(ak))


if __name__ == "__main__":
    unittest.main()


class ClockSkewTest(unittest.TestCase):
    """A worker whose clock is off: its login sessions run under libfaketime."""

    def test_the_skew_goes_into_sshds_setenv_and_back_out(self):
        from fakepod import workers
        with tempfile.TemporaryDirectory() as d:
            env = config.Env(d, d + "/nfs", "127.9", "accel")
            workers.write_slot(env, 3, hostname="h", worker=3, hostnames="127.9.1.4", device="accel", netns=True,
                               disk=True)
            cfg = os.path.join(env.wdir(3), "sshd_config")
            if not os.path.exists(workers.FAKETIME_LIB):
                self.skipTest("libfaketime is not installed")
            workers.set_clock_skew(env, 3, -30)
            with open(cfg) as f:
                text = f.read()
            self.assertIn("SetEnv TPU_WORKER_ID=3 TPU_WORKER_HOSTNAMES=127.9.1.4 LD_PRELOAD=", text)
            self.assertIn("FAKETIME=-30s", text)
            self.assertEqual(workers.clock_skew(env, 3), -30)
            # a reboot keeps it (the config is written again from the slot's files)
            workers.write_slot(env, 3, hostname="h", worker=3, hostnames="127.9.1.4", device="accel", netns=True,
                               disk=True)
            with open(cfg) as f:
                self.assertIn("FAKETIME=-30s", f.read())
            workers.set_clock_skew(env, 3, 0)
            with open(cfg) as f:
                self.assertNotIn("FAKETIME", f.read())
