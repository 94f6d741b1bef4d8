"""Where a simulated pod lives: its state dir, shared "NFS" dir, address base.

Everything is read from the environment once (Env.load) so that a second pod
can run beside the default one:

  FAKEPOD_STATE  state dir           (default /var/lib/tpurun-fakepod)
  FAKEPOD_NFS    shared mount's dir  (default /srv/tpurun-nfs)
  FAKEPOD_NET    worker address base (default 127.0: workers 127.0.1.1, 127.0.1.2 ...;
                 127.9 gives 127.9.1.1 ...; a three-part base such as 127.0.9 gives
                 127.0.9.1 .. 127.0.9.250)
  FAKEPOD_DEVICE accel|vfio, the default node's TPU device files (read by `up`)
"""
import os
import re

DEFAULT_STATE = "/var/lib/tpurun-fakepod"
DEFAULT_NFS = "/srv/tpurun-nfs"
DEFAULT_NET = "127.0"

# The default node, as the old fixture had it (tests and docs name these).
PROJECT = "sim-proj"
PROJECT_NUMBER = "424242424242"
ZONE = "us-central2-b"
NODE = "sim-tpu"
NODE_ID = "4242424242424242424"

# Every user the simulator makes on the dev VM (the host); alice and bob have
# sudo there, carol has not.
SUDO_USERS = ("alice", "bob")
PLAIN_USERS = ("carol",)
SIM_USERS = SUDO_USERS + PLAIN_USERS

MAX_SLOTS = 1000


class Env:
    def __init__(self, state, nfs, net, device):
        self.state = state.rstrip("/") or "/"
        self.nfs = nfs.rstrip("/") or "/"
        self.net = net
        self.device = device
        parts = net.split(".")
        if parts[0] != "127" or not 2 <= len(parts) <= 3 or not all(p.isdigit() and int(p) < 256 for p in parts):
            raise ValueError("FAKEPOD_NET must be 127.X or 127.X.Y (loopback only), not %r" % net)
        if device not in ("accel", "vfio"):
            raise ValueError("FAKEPOD_DEVICE must be accel or vfio, not %r" % device)
        self._parts = parts

    @classmethod
    def load(cls, environ=None):
        e = os.environ if environ is None else environ
        return cls(e.get("FAKEPOD_STATE") or DEFAULT_STATE, e.get("FAKEPOD_NFS") or DEFAULT_NFS,
                   e.get("FAKEPOD_NET") or DEFAULT_NET, e.get("FAKEPOD_DEVICE") or "accel")

    @property
    def max_slots(self):
        return 250 if len(self._parts) == 3 else MAX_SLOTS

    def ip(self, slot):
        """Worker slot s listens on <net>.<1+s/250>.<1+s%250> (or <net>.<1+s>)."""
        if not 0 <= slot < self.max_slots:
            raise ValueError("slot %d out of range" % slot)
        if len(self._parts) == 3:
            return "%s.%d" % (self.net, 1 + slot)
        return "%s.%d.%d" % (self.net, 1 + slot // 250, 1 + slot % 250)

    def slot_of(self, ip):
        """The slot whose address is ip, or None."""
        if len(self._parts) == 3:
            m = re.fullmatch(re.escape(self.net) + r"\.(\d+)", ip)
            return int(m.group(1)) - 1 if m and 1 <= int(m.group(1)) <= 250 else None
        m = re.fullmatch(re.escape(self.net) + r"\.(\d+)\.(\d+)", ip)
        if not m or not 1 <= int(m.group(2)) <= 250 or int(m.group(1)) < 1:
            return None
        return (int(m.group(1)) - 1) * 250 + int(m.group(2)) - 1

    # ------------------------------------------------------------ paths
    def path(self, *parts):
        return os.path.join(self.state, *parts)

    def wdir(self, slot):
        return self.path("w%d" % slot)

    @property
    def node_id(self):
        """The default node's id: 4242424242424242424 for the default state dir;
        another pod's differs, so gcloud's host key aliases never mix them."""
        if self.state == DEFAULT_STATE:
            return NODE_ID
        import hashlib
        return str(10 ** 18 + int(hashlib.sha256(self.state.encode()).hexdigest()[:15], 16) % (8 * 10 ** 18))

    @property
    def is_default(self):
        return self.state == DEFAULT_STATE
