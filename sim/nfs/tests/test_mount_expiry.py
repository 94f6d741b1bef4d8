"""Caches run out: with short timeouts, the other client's change shows up
without any forced revalidation, and unclosed data is written back after the
writeback delay. (Each test first shows the stale answer, so it cannot pass
if nothing is cached.)"""
import os
import unittest

from sim.nfs.tests.harness import TwoClients, eventually

SHORT = ("--actimeo", "1", "--writeback", "1")
LONG = ("--actimeo", "600", "--writeback", "600")


class ExpiryTest(TwoClients):
    options_a = SHORT
    options_b = LONG

    def test_a_cached_miss_ends_when_the_directory_attributes_expire(self):
        n = self.name()
        self.assertFalse(os.path.exists(f"{self.B}/{n}"))  # B caches the miss for long
        self.assertFalse(os.path.exists(f"{self.A}/{n}"))
        open(f"{self.A}/{n}", "w").close()
        self.assertFalse(os.path.exists(f"{self.B}/{n}"))
        # A (actimeo=1) sees B's files by itself once its directory attributes expire.
        m = self.name()
        self.assertFalse(os.path.exists(f"{self.A}/{m}"))
        open(f"{self.B}/{m}", "w").close()
        self.assertTrue(eventually(lambda: os.path.exists(f"{self.A}/{m}")))

    def test_attributes_expire(self):
        n = self.name()
        with open(f"{self.B}/{n}", "w") as f:
            f.write("1")
        self.assertEqual(os.stat(f"{self.A}/{n}").st_size, 1)
        self.assertEqual(os.stat(f"{self.B}/{n}").st_size, 1)
        with open(f"{self.A}/{n}", "a") as f:
            f.write("22")
        self.assertEqual(os.stat(f"{self.B}/{n}").st_size, 1)  # B: actimeo=600
        with open(f"{self.B}/{n}", "a") as f:
            f.write("333")
        self.assertTrue(eventually(lambda: os.stat(f"{self.A}/{n}").st_size == 6))

    def test_unclosed_data_is_written_back_after_the_delay(self):
        held, sent = self.name() + "-b", self.name() + "-a"
        with open(f"{self.B}/{held}", "w") as bw, open(f"{self.A}/{sent}", "w") as aw:
            bw.write("B's line\n")
            bw.flush()
            aw.write("A's line\n")
            aw.flush()
            # A writes back after 1 s, B after 600 s; neither has closed.
            self.assertTrue(eventually(lambda: open(f"{self.B}/{sent}").read() == "A's line\n"))
            with open(f"{self.A}/{held}") as r:
                self.assertEqual(r.read(), "")
        with open(f"{self.A}/{held}") as r:
            self.assertEqual(r.read(), "B's line\n")  # B's close wrote it back


if __name__ == "__main__":
    unittest.main()
