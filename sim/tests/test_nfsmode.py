"""Unit tests of the NFS mode's pure parts: the recorded settings and how the
client adapter reads mount(8)'s arguments."""
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from fakepod import config, nfsclient, nfsmode  # noqa: E402


class SettingsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.env = config.Env(self.dir, self.dir + "/nfs", "127.9", "accel")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_bind_before_the_first_up(self):
        s = nfsmode.settings(self.env)
        self.assertEqual((s["mode"], s["export"]), ("bind", self.dir + "/nfs"))

    def test_fuse_settings_round_trip_through_the_shell_file(self):
        nfsmode.write_settings(self.env, "fuse", "--acdirmin 3 --no-root-squash", "")
        s = nfsmode.settings(self.env)
        self.assertEqual(s["mode"], "fuse")
        self.assertEqual(s["export"], self.dir + "/nfs-server")
        self.assertEqual(s["options"], "--acdirmin 3 --no-root-squash")
        self.assertEqual(nfsmode.client_program(self.env, "fuse", ""), self.dir + "/lib/mount.simnfs")
        self.assertEqual(nfsmode.client_program(self.env, "bind", ""), "")
        self.assertEqual(nfsmode.client_program(self.env, "bind", "/x/y"), "/x/y")

    def test_make_roots_on_the_export_as_root(self):
        if os.getuid() != 0:
            self.skipTest("chown needs root")
        nfsmode.make_roots(self.env, "fuse")
        for d in ("staging", "logs"):
            st = os.stat(os.path.join(self.dir, "nfs-server", d))
            self.assertEqual((st.st_uid, st.st_mode & 0o7777), (0, 0o1777))
        self.assertTrue(os.path.isdir(self.dir + "/nfs"))


class MountArgsTest(unittest.TestCase):
    def test_mount_helper_conventions(self):
        host, pos, opts = nfsclient.parse(["fakenfs:/", "/srv/x", "-n", "-o", "rw,vers=3,acregmin=1", "-t", "fakenfs"])
        self.assertEqual((host, pos, opts), (False, ["fakenfs:/", "/srv/x"], ["rw", "vers=3", "acregmin=1"]))
        self.assertTrue(nfsclient.parse(["--host", "a:/", "/b"])[0])

    def test_only_the_modelled_nfs_options_become_flags(self):
        self.assertEqual(nfsclient.flags_for(["rw", "vers=3", "hard", "acregmin=1", "actimeo=5", "noac",
                                              "lookupcache=positive", "nocto", "noac=1"]),
                         ["--acregmin", "1", "--actimeo", "5", "--noac", "--lookupcache", "positive", "--nocto"])


if __name__ == "__main__":
    unittest.main()
