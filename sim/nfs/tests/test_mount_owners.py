"""AUTH_SYS: the server sees numbers and checks permissions with them; root
is squashed to nobody (65534) unless the export says no_root_squash."""
import errno
import os
import unittest

from sim.nfs.tests.harness import TwoClients, as_user

NOBODY = 65534
U1, U2, G = 4101, 4102, 4150  # numbers no account here needs to have


def read(path):
    with open(path) as f:
        return f.read()


def write(path, text, mode=0o600):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    os.write(fd, text.encode())
    os.close(fd)
    return os.stat(path).st_uid, os.stat(path).st_gid


class RootSquashTest(TwoClients):
    """A squashes root (the default); B is mounted with --no-root-squash."""

    options_b = ("--no-root-squash",)

    def test_root_creates_files_as_nobody(self):
        n = self.name()
        open(f"{self.A}/{n}", "w").close()
        st = os.stat(f"{self.export}/{n}")
        self.assertEqual((st.st_uid, st.st_gid), (NOBODY, NOBODY))
        open(f"{self.B}/{n}-b", "w").close()
        st = os.stat(f"{self.export}/{n}-b")
        self.assertEqual((st.st_uid, st.st_gid), (0, 0))

    def test_root_cannot_read_a_users_private_file_or_chown(self):
        n = self.name()
        self.assertEqual(as_user(U1, U1, [], write, f"{self.A}/{n}", "secret"), (U1, U1))
        with self.assertRaises(PermissionError):
            read(f"{self.A}/{n}")
        with self.assertRaises(PermissionError):
            os.chown(f"{self.A}/{n}", 0, 0)
        self.assertEqual(read(f"{self.B}/{n}"), "secret")  # no_root_squash

    def test_root_cannot_write_into_a_root_owned_directory(self):
        d = self.name()
        os.mkdir(f"{self.export}/{d}", 0o755)  # made on the server: owned by root
        with self.assertRaises(PermissionError):
            open(f"{self.A}/{d}/x", "w").close()
        open(f"{self.B}/{d}/x", "w").close()


class NumericOwnersTest(TwoClients):
    def test_permissions_are_checked_by_number(self):
        n = self.name()
        as_user(U1, U1, [], write, f"{self.A}/{n}", "mine")
        # The same number through the other client: the same owner.
        self.assertEqual(as_user(U1, U1, [], read, f"{self.B}/{n}"), "mine")
        with self.assertRaises(OSError) as e:
            as_user(U2, U2, [], read, f"{self.B}/{n}")
        self.assertEqual(e.exception.errno, errno.EACCES)

    def test_supplementary_groups_travel_with_the_call(self):
        n = self.name()
        as_user(U1, G, [], write, f"{self.A}/{n}", "group", 0o640)
        self.assertEqual(os.stat(f"{self.export}/{n}").st_gid, G)
        self.assertEqual(as_user(U2, U2, [G], read, f"{self.B}/{n}"), "group")
        with self.assertRaises(PermissionError):
            as_user(U2, U2, [], read, f"{self.B}/{n}")

    def test_a_private_directory_of_one_uid_is_closed_to_another(self):
        d = self.name()
        as_user(U1, U1, [], os.mkdir, f"{self.A}/{d}", 0o700)
        as_user(U1, U1, [], write, f"{self.A}/{d}/f", "x")
        with self.assertRaises(PermissionError):
            as_user(U2, U2, [], os.listdir, f"{self.B}/{d}")
        self.assertEqual(as_user(U1, U1, [], os.listdir, f"{self.B}/{d}"), ["f"])


if __name__ == "__main__":
    unittest.main()
