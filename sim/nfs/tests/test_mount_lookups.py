"""A file another client made, in a directory where this client cached
"no such file": which calls see it at once, which wait for the cache.

Real Linux NFS (fs/nfs/dir.c, inode.c, nfs3proc.c; docs/simulator-nfs.md,
"Seeing another host's new file"):
- open(dir) without O_PATH carries LOOKUP_OPEN into the directory's
  d_revalidate, and nfs_lookup_verify_inode then forces a GETATTR
  (close-to-open) whatever the attribute cache says. A changed directory gets
  nfs_force_lookup_revalidate (nfs_update_inode): every dentry cached in it,
  negative ones too, fails nfs_check_verifier from then on and is looked up
  again. So open(dir) then openat(fd, name) finds the new file.
- O_PATH opens carry no LOOKUP_OPEN (build_open_flags): nothing is
  revalidated. A dir fd opened earlier, a stat by path, AT_STATX_FORCE_SYNC
  and an open of the file by its path all trust the negative dentry
  (nfs_neg_need_reval) until the directory's attributes expire
  (acdirmin..acdirmax) or something else shows the change.
- Any LOOKUP RPC in the directory brings its attributes back too
  (nfs3_proc_lookup: nfs_refresh_inode(dir, res.dir_attr)), so a lookup of
  another name shows the change just as well.
- An unchanged directory keeps its cached names, found or not, and a change
  in its parent does not touch them: the parent's change only makes the
  directory's own dentry be looked up again (same file handle: kept).

Timeouts are long (60 s) so nothing here expires on its own."""
import fcntl
import os
import threading
import time
import unittest

from sim.nfs.tests.harness import TwoClients, requests, statx_size

LONG = ("--acregmin", "60", "--acregmax", "60", "--acdirmin", "60", "--acdirmax", "60",
        "--writeback", "600")


def put(path, text):
    """What tpurun's job wrapper does for workerN.exit: a temp file, then rename."""
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)


def read_at(dir_fd, name):
    """tpurun's read_small_file_at: openat(dir_fd, name, O_RDONLY|O_NOFOLLOW)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    try:
        return os.read(fd, 4096).decode()
    finally:
        os.close(fd)


class LookupCacheTest(TwoClients):
    options_a = LONG
    options_b = LONG

    def cached_miss(self):
        """A directory d (made through A) where B has cached a miss of d/x,
        and A has since written d/x. Returns d's name."""
        d = self.name()
        os.mkdir(f"{self.A}/{d}")
        self.assertFalse(os.path.exists(f"{self.B}/{d}/x"))
        put(f"{self.A}/{d}/x", "0\n")
        self.assertFalse(os.path.exists(f"{self.B}/{d}/x"), "B should still have its miss cached")
        return d

    def test_opening_the_directory_then_reading_relative_to_it_finds_the_new_file(self):
        # tpurun's read_worker_jobs: one open() of the log dir per poll, then
        # openat() of each workerN.pid/.exit relative to it.
        d = self.cached_miss()
        fd = os.open(f"{self.B}/{d}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            self.assertEqual(read_at(fd, "x"), "0\n")
        finally:
            os.close(fd)

    def test_fstatat_relative_to_a_freshly_opened_directory_finds_it_too(self):
        d = self.cached_miss()
        fd = os.open(f"{self.B}/{d}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.stat("x", dir_fd=fd, follow_symlinks=False)
        finally:
            os.close(fd)

    def test_an_o_path_open_of_the_directory_does_not_revalidate_it(self):
        d = self.cached_miss()
        fd = os.open(f"{self.B}/{d}", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            self.assertIsNone(read_at(fd, "x"))
            with self.assertRaises(FileNotFoundError):
                os.stat("x", dir_fd=fd, follow_symlinks=False)
        finally:
            os.close(fd)
        # The real open still works afterwards.
        fd = os.open(f"{self.B}/{d}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            self.assertEqual(read_at(fd, "x"), "0\n")
        finally:
            os.close(fd)

    def test_a_directory_fd_opened_before_the_change_does_not_help(self):
        d = self.name()
        os.mkdir(f"{self.A}/{d}")
        self.assertFalse(os.path.exists(f"{self.B}/{d}/x"))
        held = os.open(f"{self.B}/{d}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            put(f"{self.A}/{d}/x", "0\n")
            # The revalidation happened at open(), before the change.
            self.assertIsNone(read_at(held, "x"))
            fresh = os.open(f"{self.B}/{d}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                self.assertEqual(read_at(fresh, "x"), "0\n")
            finally:
                os.close(fresh)
        finally:
            os.close(held)

    def test_opening_the_file_by_its_path_or_forcing_a_sync_does_not_help(self):
        d = self.cached_miss()
        with self.assertRaises(FileNotFoundError):
            open(f"{self.B}/{d}/x").close()  # close-to-open needs an inode: a miss has none
        with self.assertRaises(FileNotFoundError):
            statx_size(f"{self.B}/{d}/x", force_sync=True)
        self.assertFalse(os.path.exists(f"{self.B}/{d}/x"))

    def test_a_lookup_of_another_name_in_the_changed_directory_drops_the_miss(self):
        # nfs3_proc_lookup takes in the directory's attributes from the
        # LOOKUP reply (nfs_refresh_inode(dir, res.dir_attr)): they show the
        # change, and nfs_update_inode drops every name cached in the directory.
        d = self.cached_miss()
        self.assertFalse(os.path.exists(f"{self.B}/{d}/never-looked-up"))  # one LOOKUP
        self.assertTrue(os.path.exists(f"{self.B}/{d}/x"))

    def test_a_chmod_of_the_changed_directory_drops_the_miss(self):
        # SETATTR's reply carries wcc_data: the attributes before it were not
        # what B had cached, so the change is someone else's (nfs_update_inode).
        d = self.cached_miss()
        os.chmod(f"{self.B}/{d}", 0o755)
        self.assertTrue(os.path.exists(f"{self.B}/{d}/x"))

    def test_an_unchanged_directory_keeps_its_misses_when_opened(self):
        d = self.name()
        os.mkdir(f"{self.A}/{d}")
        self.assertFalse(os.path.exists(f"{self.B}/{d}/x"))
        before = requests(self.B, "lookup")
        os.close(os.open(f"{self.B}/{d}", os.O_RDONLY | os.O_DIRECTORY))  # revalidated: unchanged
        self.assertFalse(os.path.exists(f"{self.B}/{d}/x"))
        self.assertEqual(requests(self.B, "lookup") - before, 0, "the miss was looked up again")

    def test_a_change_in_the_parent_keeps_the_misses_of_an_unchanged_subdirectory(self):
        # p changes (a sibling of d appears); d does not. NFS looks d itself
        # up again (its verifier in p is outdated): same file handle, so d's
        # dentry stays, with every name cached under it.
        p = self.name()
        os.makedirs(f"{self.A}/{p}/d")
        self.assertFalse(os.path.exists(f"{self.B}/{p}/d/x"))
        os.mkdir(f"{self.A}/{p}/sibling")
        os.close(os.open(f"{self.B}/{p}", os.O_RDONLY | os.O_DIRECTORY))  # p: changed
        before = requests(self.B, "lookup")
        self.assertFalse(os.path.exists(f"{self.B}/{p}/d/x"))
        # d is looked up again (1); its miss of x is not.
        self.assertEqual(requests(self.B, "lookup") - before, 1)

    def test_a_changed_subdirectory_looked_up_again_drops_its_misses_before_the_walk_goes_on(self):
        # p and d both change. d's dentry, outdated by p's change, is looked
        # up again on the way to d/x; that LOOKUP shows d changed, and x's
        # miss must be gone before the walk reaches it.
        p = self.name()
        os.makedirs(f"{self.A}/{p}/d")
        self.assertFalse(os.path.exists(f"{self.B}/{p}/d/x"))
        put(f"{self.A}/{p}/d/x", "0\n")
        os.mkdir(f"{self.A}/{p}/sibling")
        os.close(os.open(f"{self.B}/{p}", os.O_RDONLY | os.O_DIRECTORY))
        self.assertTrue(os.path.exists(f"{self.B}/{p}/d/x"))

    def test_a_change_in_the_parent_keeps_the_attributes_cached_below_it(self):
        p = self.name()
        os.makedirs(f"{self.A}/{p}/d")
        with open(f"{self.A}/{p}/d/f", "w") as f:
            f.write("1")
        self.assertEqual(os.stat(f"{self.B}/{p}/d/f").st_size, 1)
        with open(f"{self.A}/{p}/d/f", "a") as f:  # d does not change
            f.write("2345")
        os.mkdir(f"{self.A}/{p}/sibling")  # p does
        os.close(os.open(f"{self.B}/{p}", os.O_RDONLY | os.O_DIRECTORY))
        # f's attributes are B's cached ones until acregmin (60 s here).
        self.assertEqual(os.stat(f"{self.B}/{p}/d/f").st_size, 1)
        self.assertEqual(statx_size(f"{self.B}/{p}/d/f", force_sync=True), 5)



class ServerSerializesDirectoryChangesTest(TwoClients):
    """knfsd holds a directory's lock from the pre-operation attributes to the
    post-operation ones (fh_lock / fh_fill_pre_attrs, fh_fill_post_attrs), so
    another client's change is never inside the bracket of ours: the client
    can take "before matches my cache" to mean "the change is mine"
    (nfs_wcc_update_inode). The clients' daemons take the same lock on the
    export's directory (flock), and so does this test, as "another client"."""

    options_a = LONG
    options_b = LONG

    def test_a_change_waits_for_one_in_progress_and_is_not_mistaken_for_it(self):
        d = self.name()
        os.mkdir(f"{self.A}/{d}")
        self.assertFalse(os.path.exists(f"{self.B}/{d}/x"))  # B caches the miss
        lock = os.open(f"{self.export}/{d}", os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another client's operation in d has begun
            done = threading.Event()

            def create_on_b():
                open(f"{self.B}/{d}/y", "w").close()
                done.set()

            t = threading.Thread(target=create_on_b)
            t.start()
            time.sleep(0.5)
            self.assertFalse(done.is_set(), "B's create did not wait for the directory")
            self.assertFalse(os.path.exists(f"{self.export}/{d}/y"))
            put(f"{self.export}/{d}/x", "0\n")  # ... and changes d
        finally:
            os.close(lock)  # ... and ends
        t.join(10)
        self.assertTrue(done.is_set())
        # B's create saw d changed before it (pre-op attributes): not its own.
        self.assertTrue(os.path.exists(f"{self.B}/{d}/x"))

if __name__ == "__main__":
    unittest.main()
