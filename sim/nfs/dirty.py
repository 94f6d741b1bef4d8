"""Dirty data a client holds before it writes it back to the server.

The NFS client keeps written pages dirty in its page cache. They reach the
server when the file is closed or fsync'ed (close-to-open: nfs_file_flush
calls nfs_wb_all), when the flusher writes back pages older than
vm.dirty_expire_centisecs (30 s by default), or under memory pressure. Until
then only this client sees them. One Dirty per inode per client.
"""


class Extent:
    __slots__ = ("offset", "data", "fd")

    def __init__(self, offset, data, fd):
        self.offset = offset
        self.data = bytearray(data)
        self.fd = fd

    @property
    def end(self):
        return self.offset + len(self.data)


class Dirty:
    __slots__ = ("extents", "nbytes", "end", "since")

    def __init__(self):
        self.extents = []  # in write order: later ones win where they overlap
        self.nbytes = 0
        self.end = 0
        self.since = None  # when the oldest dirty byte was written

    def __bool__(self):
        return bool(self.extents)

    def add(self, offset, data, fd, now):
        last = self.extents[-1] if self.extents else None
        if last is not None and last.fd == fd and last.end == offset:
            last.data += data  # the common case: appending to a log
        else:
            self.extents.append(Extent(offset, data, fd))
        self.nbytes += len(data)
        self.end = max(self.end, offset + len(data))
        if self.since is None:
            self.since = now

    def overlay(self, offset, buf, size_limit):
        """Lays the dirty bytes over `buf` (what the server has at `offset`).

        `size_limit` is how many bytes the reader asked for. Returns the
        merged bytes: this client reads its own unwritten data.
        """
        want = min(size_limit, max(len(buf), self.end - offset))
        if want <= 0:
            return bytes(buf)
        out = bytearray(buf[:want])
        if len(out) < want:
            out.extend(b"\0" * (want - len(out)))
        stop = offset + want
        for e in self.extents:
            lo, hi = max(e.offset, offset), min(e.end, stop)
            if lo < hi:
                out[lo - offset:hi - offset] = e.data[lo - e.offset:hi - e.offset]
        return bytes(out)

    def drop_fd(self, fd):
        """Whether any extent still needs `fd` to be written."""
        return any(e.fd == fd for e in self.extents)

    def take(self):
        """Removes and returns the extents, in write order."""
        extents, self.extents = self.extents, []
        self.nbytes = 0
        self.end = 0
        self.since = None
        return extents
