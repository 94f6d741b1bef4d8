"""The forwarder: makes each worker's sshd reachable at its address.

Every worker has its own network namespace (only 127.0.0.1 and its own address
are local there), so a service on one worker's localhost is not reachable from
another worker, and two workers can both bind 127.0.0.1:8431 -- as on real TPU
VMs. The host reaches worker s at <addr s>:22: this one process listens on
every worker address in the host's namespace and, per connection, opens a
socket inside the worker's namespace (setns on a thread-local basis, then
socket(): a socket belongs to the namespace it was created in) to
127.0.0.1:22 there, and relays bytes.

The same listener gives the network faults:
  down       no listener: connections are refused (a crashed host);
  blackhole  accepts TCP and never sends a byte (ssh hangs until ConnectTimeout);
  partition  SYNs are dropped (the accept queue is kept full, so the kernel
             drops new SYNs: connect times out) and open connections stall in
             both directions until `heal`.

Control: a Unix socket $STATE/netfwd.sock, one line per request:
  up SLOT IP NETNS_PATH | down SLOT | blackhole SLOT IP | partition SLOT | heal SLOT | ping
answered with "ok" or "error: ...".
"""
import ctypes
import errno
import os
import selectors
import signal
import socket
import sys

CLONE_NEWNET = 0x40000000
BUF = 1 << 16
HIGH_WATER = 1 << 20

_libc = ctypes.CDLL(None, use_errno=True)


def setns(fd):
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


class Side:
    """One socket of a relayed pair, with what is waiting to be written to it."""

    def __init__(self, sock):
        self.sock = sock
        self.out = bytearray()
        self.eof_in = False      # the peer sent EOF: shut our write side once out is flushed
        self.shut = False
        self.connecting = False
        self.eof_seen = False    # we read EOF from this socket


class Pair:
    def __init__(self, slot, client, upstream):
        self.slot = slot
        self.a = Side(client)
        self.b = Side(upstream)
        self.b.connecting = True
        self.closed = False

    def other(self, side):
        return self.b if side is self.a else self.a


class Slot:
    def __init__(self, n):
        self.n = n
        self.mode = "down"      # up | blackhole | partition
        self.listener = None
        self.ip = None
        self.nsfd = None
        self.held = []          # blackhole: accepted, never answered
        self.pairs = set()
        self.filler = None      # partition: the connection that keeps the accept queue full
        self.ns_ino = None


class Forwarder:
    def __init__(self, state, listen_port=22, upstream_port=22):
        self.state = state
        self.listen_port = listen_port
        self.upstream_port = upstream_port
        self.sel = selectors.DefaultSelector()
        self.slots = {}
        self.host_ns = os.open("/proc/self/ns/net", os.O_RDONLY)
        path = os.path.join(state, "netfwd.sock")
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        self.ctl = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.ctl.bind(path)
        os.chmod(path, 0o600)
        self.ctl.listen(64)
        self.ctl.setblocking(False)
        self.sel.register(self.ctl, selectors.EVENT_READ, ("ctl", None))

    # ------------------------------------------------------------ control
    def slot(self, n):
        if n not in self.slots:
            self.slots[n] = Slot(n)
        return self.slots[n]

    def command(self, line):
        words = line.split()
        if not words:
            return "error: empty request"
        cmd, args = words[0], words[1:]
        if cmd == "ping":
            return "ok"
        s = self.slot(int(args[0]))
        if cmd == "up":
            ino = os.stat(args[2]).st_ino
            if s.mode in ("up", "partition") and s.ip == args[1] and s.ns_ino == ino:
                # The same worker: keep its open connections (heal a partition).
                if s.mode == "partition":
                    self.command("heal %d" % s.n)
                return "ok"
            self.set_down(s)
            s.ip = args[1]
            s.nsfd = os.open(args[2], os.O_RDONLY)
            s.ns_ino = ino
            self.listen(s)
            s.mode = "up"
        elif cmd == "down":
            self.set_down(s)
        elif cmd == "blackhole":
            self.set_down(s)
            s.ip = args[1]
            self.listen(s)
            s.mode = "blackhole"
        elif cmd == "partition":
            if s.mode != "up":
                return "error: worker %d is %s" % (s.n, s.mode)
            s.mode = "partition"
            self.sel.unregister(s.listener)
            s.listener.listen(0)
            # Fill the accept queue: from now on the kernel drops new SYNs.
            f = socket.socket()
            f.setblocking(False)
            f.connect_ex((s.ip, self.listen_port))
            s.filler = f
            for p in s.pairs:
                for side in (p.a, p.b):
                    self._unwatch(side.sock)
        elif cmd == "heal":
            if s.mode == "partition":
                s.mode = "up"
                s.listener.listen(1024)
                if s.filler:
                    s.filler.close()
                    s.filler = None
                self.sel.register(s.listener, selectors.EVENT_READ, ("listen", s))
                for p in list(s.pairs):
                    self._rewatch(p)
        else:
            return "error: unknown request %r" % cmd
        return "ok"

    def listen(self, s):
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((s.ip, self.listen_port))
        ls.listen(1024)
        ls.setblocking(False)
        s.listener = ls
        self.sel.register(ls, selectors.EVENT_READ, ("listen", s))

    def set_down(self, s):
        if s.listener is not None:
            self._unwatch(s.listener)
            s.listener.close()
            s.listener = None
        for c in s.held:
            c.close()
        s.held = []
        if s.filler:
            s.filler.close()
            s.filler = None
        for p in list(s.pairs):
            self.close_pair(p)
        if s.nsfd is not None:
            os.close(s.nsfd)
            s.nsfd = None
        s.mode = "down"

    # ------------------------------------------------------------ relaying
    def _unwatch(self, sock):
        try:
            self.sel.unregister(sock)
        except (KeyError, ValueError):
            pass

    def _want(self, pair, side):
        """Registers side's socket for what it needs now."""
        if pair.closed or self.slots[pair.slot].mode == "partition":
            return
        ev = 0
        other = pair.other(side)
        if side.connecting or side.out:
            ev |= selectors.EVENT_WRITE
        if not side.connecting and not other.connecting and len(other.out) < HIGH_WATER and not side.eof_seen:
            ev |= selectors.EVENT_READ
        key = None
        try:
            key = self.sel.get_key(side.sock)
        except (KeyError, ValueError):
            pass
        if ev == 0:
            if key:
                self.sel.unregister(side.sock)
        elif key is None:
            self.sel.register(side.sock, ev, ("pair", (pair, side)))
        elif key.events != ev:
            self.sel.modify(side.sock, ev, ("pair", (pair, side)))

    def _rewatch(self, pair):
        self._want(pair, pair.a)
        self._want(pair, pair.b)

    def accept(self, s):
        try:
            c, _ = s.listener.accept()
        except OSError:
            return
        if s.mode == "blackhole":
            s.held.append(c)  # never read, never write
            if len(s.held) > 4000:
                s.held.pop(0).close()
            return
        c.setblocking(False)
        try:
            if s.ns_ino == os.fstat(self.host_ns).st_ino:
                up = socket.socket()  # our own namespace (the unit tests): no setns, no privilege needed
            else:
                setns(s.nsfd)
                try:
                    up = socket.socket()
                finally:
                    setns(self.host_ns)
        except OSError:
            c.close()
            return
        up.setblocking(False)
        rc = up.connect_ex(("127.0.0.1", self.upstream_port))
        if rc not in (0, errno.EINPROGRESS):
            c.close()
            up.close()
            return
        # A relay must not change how the endpoints' bytes travel: with Nagle
        # on its own sockets, a small segment it passes on while an earlier
        # one is unacknowledged waits for the peer's delayed ACK (Linux's
        # TCP_DELACK_MIN, 40 ms: include/net/tcp.h; Nagle's rule: RFC 896,
        # RFC 1122 4.2.3.4), a stall no real network path adds: routers
        # forward segments, they do not coalesce them. The endpoints keep
        # their own choice (sshd sets TCP_NODELAY only for interactive
        # sessions: OpenSSH packet.c, ssh_packet_set_interactive).
        for sock in (c, up):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        p = Pair(s.n, c, up)
        s.pairs.add(p)
        self._rewatch(p)

    def close_pair(self, p):
        if p.closed:
            return
        p.closed = True
        for side in (p.a, p.b):
            self._unwatch(side.sock)
            side.sock.close()
        self.slots[p.slot].pairs.discard(p)

    def on_pair(self, p, side, mask):
        other = p.other(side)
        if side.connecting and mask & selectors.EVENT_WRITE:
            err = side.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                self.close_pair(p)
                return
            side.connecting = False
        if mask & selectors.EVENT_READ:
            try:
                data = side.sock.recv(BUF)
            except BlockingIOError:
                data = None
            except OSError:
                self.close_pair(p)
                return
            if data == b"":
                side.eof_seen = True
                other.eof_in = True
            elif data:
                other.out += data
        for s2 in (side, other):
            if s2.out and not s2.connecting:
                try:
                    n = s2.sock.send(s2.out)
                    del s2.out[:n]
                except BlockingIOError:
                    pass
                except OSError:
                    self.close_pair(p)
                    return
            if s2.eof_in and not s2.out and not s2.shut:
                try:
                    s2.sock.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                s2.shut = True
        if p.a.shut and p.b.shut:
            self.close_pair(p)
            return
        self._rewatch(p)

    # ------------------------------------------------------------ main loop
    def serve(self):
        clients = {}
        while True:
            for key, mask in self.sel.select():
                kind, obj = key.data
                if kind == "pair":
                    pair, side = obj
                    if not pair.closed:
                        self.on_pair(pair, side, mask)
                elif kind == "listen":
                    self.accept(obj)
                elif kind == "ctl":
                    try:
                        c, _ = self.ctl.accept()
                    except OSError:
                        continue
                    c.setblocking(False)
                    clients[c] = bytearray()
                    self.sel.register(c, selectors.EVENT_READ, ("client", c))
                elif kind == "client":
                    c = obj
                    try:
                        data = c.recv(4096)
                    except OSError:
                        data = b""
                    if not data:
                        self._unwatch(c)
                        c.close()
                        clients.pop(c, None)
                        continue
                    clients[c] += data
                    while b"\n" in clients[c]:
                        line, _, rest = bytes(clients[c]).partition(b"\n")
                        clients[c] = bytearray(rest)
                        try:
                            reply = self.command(line.decode())
                        except Exception as e:  # noqa: BLE001 - the reply carries it
                            reply = "error: %s" % e
                        c.setblocking(True)
                        try:
                            c.sendall((reply + "\n").encode())
                        except OSError:
                            pass
                        c.setblocking(False)


def request(state, line, timeout=10.0):
    """Sends one control line to the forwarder of state; returns its reply."""
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.settimeout(timeout)
    try:
        c.connect(os.path.join(state, "netfwd.sock"))
        c.sendall((line + "\n").encode())
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = c.recv(4096)
            if not chunk:
                break
            buf += chunk
    finally:
        c.close()
    reply = buf.decode().strip()
    if reply != "ok":
        raise RuntimeError("forwarder: %s (request: %s)" % (reply or "no reply", line))
    return reply


def main(argv):
    state = argv[0]
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    os.chdir("/")
    Forwarder(state).serve()


if __name__ == "__main__":
    main(sys.argv[1:])
