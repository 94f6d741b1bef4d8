"""The forwarder relays, refuses when down, hangs when blackholed, and drops
SYNs and stalls open connections when partitioned. Runs in this process's own
network namespace (a worker's namespace is just another netns path), on
127.77.0.x addresses with unprivileged ports."""
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from fakepod import netns  # noqa: E402


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class ForwarderTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.echo_port = free_port()
        self.listen_port = free_port()
        self.echo = socket.socket()
        self.echo.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.echo.bind(("127.0.0.1", self.echo_port))
        self.echo.listen(16)
        threading.Thread(target=self.serve_echo, daemon=True).start()
        self.fwd = netns.Forwarder(self.dir, listen_port=self.listen_port, upstream_port=self.echo_port)
        threading.Thread(target=self.fwd.serve, daemon=True).start()
        self.ip = "127.77.0.%d" % (1 + os.getpid() % 200)

    def tearDown(self):
        self.echo.close()
        shutil.rmtree(self.dir)

    def serve_echo(self):
        while True:
            try:
                c, _ = self.echo.accept()
            except OSError:
                return
            threading.Thread(target=self.echo_one, args=(c,), daemon=True).start()

    @staticmethod
    def echo_one(c):
        with c:
            while True:
                d = c.recv(65536)
                if not d:
                    return
                c.sendall(d)

    def ctl(self, line):
        return netns.request(self.dir, line)

    def connect(self, timeout=2.0):
        return socket.create_connection((self.ip, self.listen_port), timeout)

    def test_relay_down_blackhole_partition(self):
        self.ctl("up 0 %s /proc/self/ns/net" % self.ip)
        c = self.connect()
        payload = os.urandom(300000)
        c.sendall(payload)
        got = b""
        while len(got) < len(payload):
            got += c.recv(65536)
        self.assertEqual(got, payload)
        # up again for the same worker keeps the open connection
        self.ctl("up 0 %s /proc/self/ns/net" % self.ip)
        c.sendall(b"still")
        self.assertEqual(c.recv(5), b"still")
        # partition: the open connection stalls, new ones time out
        self.ctl("partition 0")
        c.sendall(b"stalled")
        c.settimeout(0.5)
        with self.assertRaises(socket.timeout):
            c.recv(7)
        with self.assertRaises(OSError):
            self.connect(timeout=1.0)
        self.ctl("heal 0")
        c.settimeout(5)
        self.assertEqual(c.recv(7), b"stalled")
        c.close()
        # down: refused
        self.ctl("down 0")
        with self.assertRaises(ConnectionRefusedError):
            self.connect()
        # blackhole: accepted, never answered
        self.ctl("blackhole 0 %s" % self.ip)
        b = self.connect()
        b.sendall(b"hello")
        b.settimeout(0.5)
        with self.assertRaises(socket.timeout):
            b.recv(5)
        b.close()

    def test_relay_is_transparent_to_segments(self):
        # Both of a pair's sockets without Nagle: a relay that coalesced the
        # endpoints' small writes would hold each behind the peer's delayed
        # ACK, a stall no real network path adds (and that made a kept SSH
        # session slower than a new one).
        self.ctl("up 0 %s /proc/self/ns/net" % self.ip)
        c = self.connect()
        c.sendall(b"x")
        self.assertEqual(c.recv(1), b"x")
        slot = self.fwd.slots[0]
        deadline = time.monotonic() + 10
        while not slot.pairs and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertEqual(len(slot.pairs), 1)
        pair = next(iter(slot.pairs))
        for side in (pair.a, pair.b):
            self.assertEqual(side.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY), 1)
        c.close()

    def test_bad_requests(self):
        with self.assertRaises(RuntimeError):
            self.ctl("partition 3")
        with self.assertRaises(RuntimeError):
            self.ctl("frobnicate 1")


if __name__ == "__main__":
    unittest.main()
