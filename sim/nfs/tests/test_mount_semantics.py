"""What NFSv3 does not have or does its own way: renameat2 flags, O_TMPFILE,
xattrs, inotify across clients; and what it does have: O_EXCL, hard links,
symlinks, fsync, silly rename, ESTALE."""
import errno
import os
import unittest

from sim.nfs.tests.harness import (RENAME_EXCHANGE, RENAME_NOREPLACE, Inotify, TwoClients,
                                   eventually, renameat2)

FUSE_SUPER_MAGIC = 0x65735546
LONG = ("--actimeo", "600", "--writeback", "600")
# Client B keeps only 4 fds: everything it touches is reopened by file handle.
TINY_FD_CACHE = ("--fd-cache", "4")


class SemanticsTest(TwoClients):
    options_a = LONG
    options_b = LONG + TINY_FD_CACHE

    def test_renameat2_flags_are_einval_and_plain_rename_works(self):
        a, b, c = (f"{self.A}/{self.name()}-{i}" for i in (1, 2, 3))
        open(a, "w").close()
        open(b, "w").close()
        # The VFS itself answers NOREPLACE onto an existing name (EEXIST);
        # everything that reaches NFS's rename with a flag is EINVAL.
        with self.assertRaises(FileExistsError):
            renameat2(a, b, RENAME_NOREPLACE)
        for target, flags in ((c, RENAME_NOREPLACE), (b, RENAME_EXCHANGE)):
            with self.assertRaises(OSError) as e:
                renameat2(a, target, flags)
            self.assertEqual(e.exception.errno, errno.EINVAL)
        renameat2(a, b, 0)
        self.assertFalse(os.path.exists(a))

    def test_no_o_tmpfile(self):
        with self.assertRaises(OSError) as e:
            os.open(self.A, os.O_TMPFILE | os.O_WRONLY, 0o600)
        self.assertEqual(e.exception.errno, errno.EOPNOTSUPP)

    def test_no_xattrs(self):
        p = f"{self.A}/{self.name()}"
        open(p, "w").close()
        for call in (lambda: os.setxattr(p, "user.k", b"v"), lambda: os.getxattr(p, "user.k"),
                     lambda: os.removexattr(p, "user.k")):
            with self.assertRaises(OSError) as e:
                call()
            self.assertEqual(e.exception.errno, errno.EOPNOTSUPP)
        self.assertEqual(os.listxattr(p), [])

    def test_no_inotify_across_clients(self):
        d = self.name()
        os.mkdir(f"{self.A}/{d}")
        watch = Inotify(f"{self.A}/{d}")
        try:
            with open(f"{self.B}/{d}/from-b", "w") as f:
                f.write("x")
            self.assertEqual(watch.events(1.0), [])
            open(f"{self.A}/{d}/from-a", "w").close()
            self.assertIn("from-a", watch.events(5.0))  # the watch itself works
        finally:
            watch.close()

    def test_o_excl_is_decided_by_the_server_even_over_a_cached_miss(self):
        n = self.name()
        self.assertFalse(os.path.exists(f"{self.A}/{n}"))
        open(f"{self.B}/{n}", "w").close()
        with self.assertRaises(FileExistsError):
            os.open(f"{self.A}/{n}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)

    def test_hard_links_symlinks_and_fsync(self):
        n = self.name()
        fd = os.open(f"{self.A}/{n}", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        os.write(fd, b"data")
        os.fsync(fd)
        os.close(fd)
        os.link(f"{self.A}/{n}", f"{self.A}/{n}.link")
        self.assertEqual(os.stat(f"{self.A}/{n}").st_nlink, 2)
        with self.assertRaises(FileExistsError):
            os.link(f"{self.A}/{n}", f"{self.A}/{n}.link")
        os.symlink(n, f"{self.A}/{n}.sym")
        self.assertEqual(os.readlink(f"{self.B}/{n}.sym"), n)
        with self.assertRaises(OSError) as e:
            os.open(f"{self.B}/{n}.sym", os.O_RDONLY | os.O_NOFOLLOW)
        self.assertEqual(e.exception.errno, errno.ELOOP)
        self.assertEqual(open(f"{self.B}/{n}.link").read(), "data")

    def test_removing_a_file_open_here_renames_it_to_dot_nfs(self):
        n = self.name()
        f = open(f"{self.A}/{n}", "w")
        f.write("still open")
        f.flush()
        os.unlink(f"{self.A}/{n}")
        silly = [x for x in os.listdir(self.export) if x.startswith(".nfs")]
        self.assertEqual(len(silly), 1)
        f.close()  # the kernel releases the file after close() returns
        self.assertTrue(eventually(
            lambda: not [x for x in os.listdir(self.export) if x.startswith(".nfs")]))

    def test_a_file_removed_by_another_client_is_stale_even_by_handle(self):
        n = self.name()
        with open(f"{self.B}/{n}", "w") as f:
            f.write("x")
        fd = os.open(f"{self.B}/{n}", os.O_RDONLY)
        try:
            for i in range(10):  # push its O_PATH fd out of B's pool
                open(f"{self.B}/{n}-{i}", "w").close()
            os.unlink(f"{self.A}/{n}")
            with self.assertRaises(OSError) as e:
                os.pread(fd, 1, 0)
            self.assertEqual(e.exception.errno, errno.ESTALE)
        finally:
            os.close(fd)

    def test_many_files_through_a_small_fd_pool(self):
        d = self.name()
        os.mkdir(f"{self.B}/{d}")
        for i in range(50):
            with open(f"{self.B}/{d}/{i}", "w") as f:
                f.write(str(i))
        self.assertEqual(sorted(os.listdir(f"{self.B}/{d}"), key=int), [str(i) for i in range(50)])
        self.assertEqual([open(f"{self.B}/{d}/{i}").read() for i in range(50)], [str(i) for i in range(50)])
        os.rename(f"{self.B}/{d}/7", f"{self.B}/{d}/seven")
        self.assertEqual(open(f"{self.A}/{d}/seven").read(), "7")

    def test_a_file_removed_by_another_client_is_stale(self):
        n = self.name()
        with open(f"{self.A}/{n}", "w") as f:
            f.write("x")
        r = open(f"{self.A}/{n}")
        try:
            os.unlink(f"{self.B}/{n}")
            with self.assertRaises(OSError) as e:
                r.read()
            self.assertEqual(e.exception.errno, errno.ESTALE)
        finally:
            r.close()

    def test_statfs_says_fuse(self):
        # What tpurun's is_network_filesystem() sees: FUSE, which it also polls.
        out = os.popen(f"stat -f -c %t {self.A}").read().strip()
        self.assertEqual(int(out, 16), FUSE_SUPER_MAGIC)


if __name__ == "__main__":
    unittest.main()
