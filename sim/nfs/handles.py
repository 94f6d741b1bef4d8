"""File handles: what an NFS client holds for every inode it knows.

knfsd hands out exportfs file handles (name_to_handle_at(2) gives the same
kind); a handle outlives renames, and once its file is gone, opening it fails
with ESTALE. The client keeps one per inode it remembers, which for a staged
tree is tens of thousands: far more fds than a process may hold (RLIMIT_NOFILE,
and raising it needs CAP_SYS_RESOURCE). So each node keeps its handle, and a
bounded pool keeps O_PATH fds for the recently used ones, reopening the others
by handle (open_by_handle_at needs CAP_DAC_READ_SEARCH: done as root).
"""
import collections
import ctypes
import errno
import os

MAX_HANDLE_SZ = 128
AT_EMPTY_PATH = 0x1000

_libc = ctypes.CDLL(None, use_errno=True)


class _FileHandle(ctypes.Structure):
    _fields_ = [("handle_bytes", ctypes.c_uint), ("handle_type", ctypes.c_int),
                ("f_handle", ctypes.c_ubyte * MAX_HANDLE_SZ)]


def handle_of(fd):
    """The file handle of what `fd` (O_PATH is fine) refers to, or None if the
    file system has none."""
    fh = _FileHandle()
    fh.handle_bytes = MAX_HANDLE_SZ
    mount_id = ctypes.c_int()
    if _libc.name_to_handle_at(fd, b"", ctypes.byref(fh), ctypes.byref(mount_id), AT_EMPTY_PATH) != 0:
        return None
    return (fh.handle_type, bytes(fh.f_handle[:fh.handle_bytes]))


def open_handle(mount_fd, handle, flags=os.O_PATH | os.O_CLOEXEC):
    htype, data = handle
    fh = _FileHandle()
    fh.handle_bytes = len(data)
    fh.handle_type = htype
    ctypes.memmove(fh.f_handle, data, len(data))
    fd = _libc.open_by_handle_at(mount_fd, ctypes.byref(fh), flags)
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return fd


class FdPool:
    """O_PATH fds of the most recently used nodes; the rest are reopened by handle."""

    def __init__(self, mount_fd, as_root, limit):
        self.mount_fd = mount_fd  # an O_RDONLY fd of the export (open_by_handle_at wants one)
        self.as_root = as_root  # context manager: CAP_DAC_READ_SEARCH for the reopen
        self.limit = limit
        self.lru = collections.OrderedDict()  # node -> fd
        self.reopened = 0

    def adopt(self, node, fd):
        """Takes `fd` as the node's fd; keeps the handle to reopen it later."""
        node.handle = handle_of(fd)
        if node.handle is None:
            node.pinned = fd  # no handles here: this fd stays for the node's life
            return
        self.lru[node] = fd
        self._trim()

    def get(self, node):
        if node.pinned is not None:
            return node.pinned
        fd = self.lru.get(node)
        if fd is not None:
            self.lru.move_to_end(node)
            return fd
        if node.handle is None:
            raise OSError(errno.ESTALE, os.strerror(errno.ESTALE))
        with self.as_root():
            fd = open_handle(self.mount_fd, node.handle)  # ESTALE once the file is gone
        self.reopened += 1
        self.lru[node] = fd
        self._trim()
        return fd

    def release(self, node):
        fd = self.lru.pop(node, None)
        if fd is not None:
            os.close(fd)
        if node.pinned is not None:
            os.close(node.pinned)
            node.pinned = None

    def _trim(self):
        # The fds just used are the newest: a handler's own fds are never the ones closed.
        while len(self.lru) > self.limit:
            _, fd = self.lru.popitem(last=False)
            os.close(fd)
