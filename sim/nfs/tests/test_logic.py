"""The caching rules on their own, without a mount."""
import unittest

from sim.nfs.attrcache import AttrTimeo, Timeouts
from sim.nfs.creds import wire_creds
from sim.nfs.dirty import Dirty


class AttrTimeoTest(unittest.TestCase):
    def test_unchanged_attributes_double_the_timeout_up_to_the_maximum(self):
        t = AttrTimeo(3, now=0, seen="a")
        self.assertEqual(t.refresh("a", 3, 60, now=1), (False, 3))  # window not over yet
        self.assertEqual(t.refresh("a", 3, 60, now=3), (False, 6))
        self.assertEqual(t.refresh("a", 3, 60, now=9), (False, 12))
        self.assertEqual(t.refresh("a", 3, 60, now=21), (False, 24))
        self.assertEqual(t.refresh("a", 3, 60, now=45), (False, 48))
        self.assertEqual(t.refresh("a", 3, 60, now=93), (False, 60))

    def test_a_change_drops_the_timeout_back_to_the_minimum(self):
        t = AttrTimeo(3, now=0, seen="a")
        t.refresh("a", 3, 60, now=3)
        t.refresh("a", 3, 60, now=9)
        self.assertEqual(t.refresh("b", 3, 60, now=10), (True, 3))

    def test_noac_stays_zero(self):
        t = AttrTimeo(0, now=0, seen="a")
        self.assertEqual(t.refresh("a", 0, 0, now=5), (False, 0))

    def test_defaults_are_nfs5s(self):
        t = Timeouts()
        self.assertEqual(t.bounds(False), (3, 60))
        self.assertEqual(t.bounds(True), (30, 60))


class DirtyTest(unittest.TestCase):
    def test_appends_merge_and_reads_see_them_past_the_servers_eof(self):
        d = Dirty()
        d.add(3, b"def", fd=7, now=1)
        d.add(6, b"gh", fd=7, now=2)
        self.assertEqual(len(d.extents), 1)
        self.assertEqual(d.since, 1)
        self.assertEqual(d.end, 8)
        self.assertEqual(d.overlay(0, b"abc", 100), b"abcdefgh")
        self.assertEqual(d.overlay(4, b"", 2), b"ef")

    def test_later_writes_win_and_holes_read_as_zeros(self):
        d = Dirty()
        d.add(0, b"xxxx", fd=1, now=0)
        d.add(1, b"yy", fd=2, now=0)
        d.add(6, b"z", fd=1, now=0)
        self.assertEqual(d.overlay(0, b"", 10), b"xyyx\0\0z")

    def test_take_empties_it(self):
        d = Dirty()
        d.add(0, b"a", fd=1, now=0)
        self.assertTrue(d.drop_fd(1))
        self.assertFalse(d.drop_fd(2))
        self.assertEqual(len(d.take()), 1)
        self.assertFalse(d)
        self.assertIsNone(d.since)


class WireCredsTest(unittest.TestCase):
    def test_root_is_squashed_uid_gid_and_groups(self):
        c = wire_creds(0, 0, [0, 5, 1001])
        self.assertEqual((c.uid, c.gid, c.groups), (65534, 65534, (65534, 5, 1001)))

    def test_no_root_squash_keeps_root(self):
        c = wire_creds(0, 0, [0], root_squash=False)
        self.assertEqual((c.uid, c.gid, c.groups), (0, 0, (0,)))

    def test_users_pass_unchanged_and_auth_sys_carries_16_groups(self):
        c = wire_creds(1001, 1001, range(100, 120))
        self.assertEqual((c.uid, c.gid), (1001, 1001))
        self.assertEqual(c.groups, tuple(range(100, 116)))


if __name__ == "__main__":
    unittest.main()
