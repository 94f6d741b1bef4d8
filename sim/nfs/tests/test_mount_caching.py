"""Two clients of one export: each has its own caches, as NFS clients do.

Timeouts are set long (30 s and more) so that "still stale" holds however
slowly the machine runs; each test also shows the cache being refreshed, so
none can pass without caching and revalidation both working."""
import os
import unittest

from sim.nfs.tests.harness import TwoClients, statx_size

LONG = ("--acregmin", "30", "--acregmax", "60", "--acdirmin", "60", "--acdirmax", "60",
        "--writeback", "600")


class CachingTest(TwoClients):
    options_a = LONG
    options_b = LONG

    def test_a_cached_miss_stays_until_the_directory_is_revalidated(self):
        n = self.name()
        self.assertFalse(os.path.exists(f"{self.A}/{n}"))  # A caches the miss
        with open(f"{self.B}/{n}", "w") as f:
            f.write("exit 0\n")
        self.assertTrue(os.path.exists(f"{self.B}/{n}"))
        self.assertFalse(os.path.exists(f"{self.A}/{n}"))
        # Forcing a sync does not help: it applies to an inode, a miss has none.
        with self.assertRaises(FileNotFoundError):
            statx_size(f"{self.A}/{n}", force_sync=True)
        # Opening the directory revalidates it (close-to-open), and it changed.
        os.close(os.open(self.A, os.O_RDONLY | os.O_DIRECTORY))
        self.assertTrue(os.path.exists(f"{self.A}/{n}"))

    def test_a_cached_miss_in_a_subdirectory_goes_when_that_directory_is_opened(self):
        d = self.name()
        os.mkdir(f"{self.A}/{d}")
        self.assertFalse(os.path.exists(f"{self.A}/{d}/x"))
        open(f"{self.B}/{d}/x", "w").close()
        self.assertFalse(os.path.exists(f"{self.A}/{d}/x"))
        self.assertIn("x", os.listdir(f"{self.A}/{d}"))  # opendir + readdir
        self.assertTrue(os.path.exists(f"{self.A}/{d}/x"))

    def test_a_directory_change_seen_in_a_listing_of_its_parent_still_drops_its_misses(self):
        # Any refresh of a directory's attributes that shows a change (here the
        # READDIRPLUS of its parent, as `ls` of the parent does) makes every
        # cached name in it be looked up again (nfs_update_inode:
        # nfs_force_lookup_revalidate). Taking the new attributes in without
        # that would leave the misses cached for good.
        d = self.name()
        os.mkdir(f"{self.A}/{d}")
        self.assertFalse(os.path.exists(f"{self.A}/{d}/x"))
        open(f"{self.B}/{d}/x", "w").close()
        self.assertIn(d, os.listdir(self.A))  # primes d's attributes: changed
        os.stat(f"{self.A}/{d}/.")  # and a lookup of "." does too
        os.close(os.open(f"{self.A}/{d}", os.O_RDONLY | os.O_DIRECTORY))
        self.assertTrue(os.path.exists(f"{self.A}/{d}/x"))

    def test_attributes_are_stale_within_acregmin_until_forced(self):
        n = self.name()
        with open(f"{self.A}/{n}", "w") as f:
            f.write("1")
        self.assertEqual(os.stat(f"{self.A}/{n}").st_size, 1)
        self.assertEqual(os.stat(f"{self.B}/{n}").st_size, 1)
        with open(f"{self.B}/{n}", "a") as f:
            f.write("2345")
        self.assertEqual(os.stat(f"{self.B}/{n}").st_size, 5)
        self.assertEqual(os.stat(f"{self.A}/{n}").st_size, 1)  # A's cache
        self.assertEqual(statx_size(f"{self.A}/{n}"), 1)
        self.assertEqual(statx_size(f"{self.A}/{n}", force_sync=True), 5)
        self.assertEqual(os.stat(f"{self.A}/{n}").st_size, 5)

    def test_open_revalidates_close_to_open(self):
        n = self.name()
        with open(f"{self.A}/{n}", "w") as f:
            f.write("old")
        self.assertEqual(os.stat(f"{self.A}/{n}").st_size, 3)
        with open(f"{self.B}/{n}", "w") as f:
            f.write("new and longer")
        self.assertEqual(os.stat(f"{self.A}/{n}").st_size, 3)  # attributes still cached
        with open(f"{self.A}/{n}") as f:
            self.assertEqual(f.read(), "new and longer")
        self.assertEqual(os.stat(f"{self.A}/{n}").st_size, len("new and longer"))

    def test_written_data_reaches_the_other_client_at_fsync_and_close(self):
        n = self.name()
        w = open(f"{self.A}/{n}", "w")
        try:
            w.write("line 1\n")
            w.flush()  # write(2): into A's cache only
            self.assertEqual(os.stat(f"{self.A}/{n}").st_size, 7)  # the writer sees it
            with open(f"{self.A}/{n}") as r:
                self.assertEqual(r.read(), "line 1\n")  # so do its other readers
            with open(f"{self.B}/{n}") as r:
                self.assertEqual(r.read(), "")
            os.fsync(w.fileno())
            with open(f"{self.B}/{n}") as r:
                self.assertEqual(r.read(), "line 1\n")
            w.write("line 2\n")
            w.flush()
            with open(f"{self.B}/{n}") as r:
                self.assertEqual(r.read(), "line 1\n")
        finally:
            w.close()
        with open(f"{self.B}/{n}") as r:
            self.assertEqual(r.read(), "line 1\nline 2\n")

    def test_a_file_replaced_by_rename_is_seen_after_the_directory_changes(self):
        n = self.name()
        with open(f"{self.A}/{n}", "w") as f:
            f.write("v1")
        os.stat(f"{self.A}/{n}")  # (no read here: see docs/simulator-nfs.md on atime)
        with open(f"{self.B}/{n}.tmp", "w") as f:
            f.write("v2")
        os.rename(f"{self.B}/{n}.tmp", f"{self.B}/{n}")
        ino_b = os.stat(f"{self.B}/{n}").st_ino
        self.assertNotEqual(os.stat(f"{self.A}/{n}").st_ino, ino_b)  # A's dentry is stale
        os.close(os.open(self.A, os.O_RDONLY | os.O_DIRECTORY))
        self.assertEqual(os.stat(f"{self.A}/{n}").st_ino, ino_b)
        self.assertEqual(open(f"{self.A}/{n}").read(), "v2")


if __name__ == "__main__":
    unittest.main()
