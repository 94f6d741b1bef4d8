"""Unit tests of the known_hosts upkeep (fakepod/host.py): what `up` settles
and what a restored VM's new keys drop reach the private homes an e2e test
registers in $STATE/homes.d as well as the real ones."""
import os
import pwd
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from fakepod import config, host  # noqa: E402

# An address no pod of the suite uses, so the real homes' files never match.
IP = "127.250.250.7"


class PrivateHomesTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.env = config.Env(self.dir, self.dir + "/nfs", "127.9", "accel")
        self.user = pwd.getpwuid(os.getuid()).pw_name
        self.pw = pwd.getpwnam(self.user)
        homes = os.path.join(self.dir, "scratch", ".home")
        self.ssh = os.path.join(homes, self.user, ".ssh")
        os.makedirs(self.ssh)
        os.makedirs(os.path.join(self.dir, "homes.d"))
        os.symlink(homes, os.path.join(self.dir, "homes.d", "test_x"))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write(self, name, text):
        with open(os.path.join(self.ssh, name), "w") as f:
            f.write(text)

    def read(self, name):
        with open(os.path.join(self.ssh, name)) as f:
            return f.read()

    def test_the_real_home_first_then_the_registered_ones(self):
        homes = list(host.user_homes(self.env, self.user, self.pw))
        self.assertEqual(homes[0], self.pw.pw_dir)
        self.assertEqual(homes[1:], [os.path.join(self.dir, "homes.d", "test_x", self.user)])

    def test_no_registry_means_the_real_home_alone(self):
        shutil.rmtree(os.path.join(self.dir, "homes.d"))
        self.assertEqual(list(host.user_homes(self.env, self.user, self.pw)), [self.pw.pw_dir])

    def test_a_home_without_ssh_dir_is_skipped(self):
        shutil.rmtree(self.ssh)
        self.assertEqual(list(host.user_homes(self.env, self.user, self.pw)), [self.pw.pw_dir])

    def test_settle_drops_another_key_for_the_address_in_a_private_home(self):
        self.write("known_hosts", "%s ssh-ed25519 OLDKEY\n127.0.0.9 ssh-ed25519 OTHER\n%s ssh-ed25519 NEWKEY\n" % (IP, IP))
        host.settle_known_hosts(self.env, {IP: "NEWKEY"}, [self.user])
        self.assertEqual(self.read("known_hosts"), "127.0.0.9 ssh-ed25519 OTHER\n%s ssh-ed25519 NEWKEY\n" % IP)

    def test_forget_drops_the_address_from_both_files_of_a_private_home(self):
        if self.user not in ("root",) + config.SIM_USERS:
            self.skipTest("forget_host_keys looks at root and the simulated users only")
        self.write("known_hosts", "%s ssh-ed25519 K1\n127.0.0.9 ssh-ed25519 K2\n" % IP)
        self.write("google_compute_known_hosts", "tpu.1-0,%s ssh-ed25519 K1\n" % IP)
        host.forget_host_keys(self.env, [IP])
        self.assertEqual(self.read("known_hosts"), "127.0.0.9 ssh-ed25519 K2\n")
        self.assertEqual(self.read("google_compute_known_hosts"), "")

    def test_a_known_hosts_that_is_a_symlink_is_neither_read_nor_written(self):
        # As root in a home the user owns: a link to a file the user may not
        # read (here a stand-in for /etc/shadow) must not be copied into it.
        secret = os.path.join(self.dir, "secret")
        with open(secret, "w") as f:
            f.write("%s ssh-ed25519 OLDKEY\nroot:$6$hash:19000::::::\n" % IP)
        os.symlink(secret, os.path.join(self.ssh, "known_hosts"))
        host.settle_known_hosts(self.env, {IP: "NEWKEY"}, [self.user])
        self.assertTrue(os.path.islink(os.path.join(self.ssh, "known_hosts")))
        with open(secret) as f:
            self.assertIn("OLDKEY", f.read())
        self.assertEqual([n for n in os.listdir(self.ssh) if "fakepod" in n], [])

    def test_a_known_hosts_of_another_owner_is_left_alone(self):
        if os.getuid() != 0:
            self.skipTest("needs root to give the file another owner")
        self.write("known_hosts", "%s ssh-ed25519 OLDKEY\n" % IP)
        os.chown(os.path.join(self.ssh, "known_hosts"), 12345, 12345)
        host.settle_known_hosts(self.env, {IP: "NEWKEY"}, [self.user])
        self.assertEqual(self.read("known_hosts"), "%s ssh-ed25519 OLDKEY\n" % IP)

    def test_the_rewritten_file_keeps_its_mode_and_owner(self):
        self.write("known_hosts", "%s ssh-ed25519 OLDKEY\n127.0.0.9 ssh-ed25519 K\n" % IP)
        kh = os.path.join(self.ssh, "known_hosts")
        os.chmod(kh, 0o600)
        host.settle_known_hosts(self.env, {IP: "NEWKEY"}, [self.user])
        st = os.stat(kh)
        self.assertEqual((st.st_mode & 0o777, st.st_uid), (0o600, self.pw.pw_uid))
        self.assertEqual(self.read("known_hosts"), "127.0.0.9 ssh-ed25519 K\n")


if __name__ == "__main__":
    unittest.main()
