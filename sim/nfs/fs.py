"""The FUSE operations of one NFSv3-like client mount.

The kernel's FUSE caches (dentries, attributes, pages) stand in for the NFS
client's caches; this daemon decides how long each answer may be cached and
when to drop it, following the Linux NFS client (fs/nfs/dir.c, inode.c,
file.c), and acts on the export as the server would (creds.py).

What comes from where:
- Attribute timeouts: attrcache.py (nfs_update_inode).
- Dentries, positive and negative, are trusted until the parent directory is
  revalidated and seen to have changed (nfs_lookup_revalidate,
  nfs_neg_need_reval: "We judge how long we want to trust negative dentries
  by looking at the parent inode mtime ... else we wait for a period
  corresponding to the parent's attribute cache timeout value"). The mount
  uses default_permissions, so every path walk checks each directory's
  permissions and the kernel refreshes a directory's expired attributes
  first; when this daemon then sees the directory changed (in whatever
  reply brings its attributes: GETATTR, OPENDIR, SETATTR, a LOOKUP of it or
  of any name in it, as nfs3_proc_lookup's dir_attr), it drops every name it
  handed out in it (misses are kept by this daemon, not the kernel, so they
  go before that reply; see lookup); a subdirectory's entry is only timed out, so what is
  cached below an unchanged subdirectory stays (_expire_entry). A stat(),
  even with AT_STATX_FORCE_SYNC, of a name cached as missing therefore stays
  ENOENT until that happens: the forced sync applies to the inode at the end
  of the walk, and a negative dentry has none.
- Weak cache consistency: our own change to a directory keeps our caches
  when the attributes before it are what we had cached; the daemons of one
  export serialize their changes per directory as knfsd does (_changing).
- Close-to-open: open() of a file or directory forces a GETATTR
  (nfs_lookup_verify_inode: LOOKUP_OPEN and not "nocto"); if the file
  changed, its cached pages and attributes go. close() (flush) and fsync()
  write the client's dirty data back (nfs_file_flush -> nfs_wb_all).
- Writeback otherwise after --writeback seconds (vm.dirty_expire_centisecs).
- renameat2 flags: nfs_rename returns -EINVAL for any flag.
- O_TMPFILE: NFS has no ->tmpfile, so the VFS answers EOPNOTSUPP; FUSE does
  the same when the daemon does not implement it (ENOSYS -> EOPNOTSUPP).
- xattrs: NFSv3 has none (only POSIX ACLs through the side protocol): get,
  set and remove fail with EOPNOTSUPP, list is empty.
- Silly rename: removing (or renaming over) a file this client still has
  open renames it to .nfsXXXX instead; it goes at the last close
  (nfs_sillyrename, fs/nfs/unlink.c).
- ESTALE: a file handle whose file another client removed is stale; every
  operation on it fails with ESTALE (knfsd answers NFS3ERR_STALE).
"""
import collections
import contextlib
import errno
import fcntl
import logging
import os
import stat
import struct
import threading
import time
from dataclasses import dataclass, field

import pyfuse3
import trio
from pyfuse3 import FUSEError

from .attrcache import AttrTimeo, Timeouts
from .creds import ROOT, Creds, Identity, caller_groups, wire_creds
from .handles import FdPool
from .dirty import Dirty

log = logging.getLogger("sim.nfs")

REQUESTS = ("lookup", "getattr", "setattr", "readlink", "access", "statfs", "opendir", "readdir",
            "releasedir", "mkdir", "mknod", "symlink", "link", "unlink", "rmdir", "rename",
            "open", "create", "read", "write", "flush", "fsync", "release", "getxattr",
            "setxattr", "removexattr", "listxattr")
FOREVER = 24 * 3600.0  # "until revalidated": the daemon invalidates explicitly
O_TMPFILE_BITS = getattr(os, "O_TMPFILE", 0o20200000) & ~os.O_DIRECTORY
FUSE_NOTIFY_INVAL_ENTRY = 3  # include/uapi/linux/fuse.h
FUSE_EXPIRE_ONLY = 1  # its flag (kernel 6.2+; older kernels ignore the field)


@dataclass
class Options:
    timeouts: Timeouts = field(default_factory=Timeouts)
    lookupcache: str = "all"  # all | positive | none (nfs(5) lookupcache=)
    cto: bool = True  # close-to-open (nfs(5) nocto turns it off)
    writeback: float = 30.0  # seconds dirty data waits (vm.dirty_expire_centisecs)
    dirty_limit: int = 16 << 20  # per file; more is written back at once
    root_squash: bool = True
    anonuid: int = 65534
    anongid: int = 65534
    proc: str = "/proc"
    fd_cache: int = 4096  # O_PATH fds kept open; other nodes are reopened by handle


class Node:
    """One inode this client knows, by its file handle (handles.py)."""

    __slots__ = ("ino", "pool", "handle", "pinned", "lookups", "opens", "is_dir", "attr", "given",
                 "misses", "dirty", "forgetting", "__weakref__")

    def __init__(self, ino, pool, fd, is_dir):
        self.ino = ino
        self.pool = pool
        self.handle = None
        self.pinned = None
        pool.adopt(self, fd)
        self.lookups = 0
        self.opens = 0
        self.is_dir = is_dir
        self.attr = None  # AttrTimeo once attributes were handed out
        # Names in this directory the kernel may have cached: True for a
        # directory (see _expire_entry), False for anything else.
        self.given = {}
        # Names in this directory looked up and not found: the client's
        # negative dentries. Kept here, not in the kernel (see lookup).
        self.misses = set()
        self.dirty = Dirty()
        self.forgetting = []  # threads dropping names handed out in this directory

    @property
    def fd(self):
        """An O_PATH fd of the inode, reopened by handle if need be (ESTALE when gone)."""
        return self.pool.get(self)

    def __hash__(self):
        return self.ino

    def __eq__(self, other):
        return self is other


class Handle:
    __slots__ = ("fd", "node", "sync", "writable")

    def __init__(self, fd, node, sync, writable=False):
        self.fd = fd
        self.node = node
        self.sync = sync
        self.writable = writable


def _seen(st):
    """The attributes whose change invalidates a client's caches."""
    return (st.st_ino, st.st_mode, st.st_nlink, st.st_uid, st.st_gid, st.st_size,
            st.st_mtime_ns, st.st_ctime_ns)


def _oserror(fn):
    async def wrapper(*args, **kwargs):
        try:
            return await fn(*args, **kwargs)
        except FUSEError:
            raise
        except OSError as e:
            raise FUSEError(e.errno or errno.EIO) from None
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


class NfsClient(pyfuse3.Operations):
    supports_dot_lookup = True
    enable_writeback_cache = False  # dirty data is held here, not in the kernel
    enable_acl = False

    def __init__(self, export, options):
        super().__init__()
        self.o = options
        self.ident = Identity()
        self.mount_fd = os.open(export, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self.pool = FdPool(self.mount_fd, self._as_root, options.fd_cache)
        fd = os.open(export, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        st = os.fstat(fd)
        self.root_backing_ino = st.st_ino
        root = Node(pyfuse3.ROOT_INODE, self.pool, fd, True)
        root.lookups = 1 << 40  # never forgotten
        self.nodes = {pyfuse3.ROOT_INODE: root}
        self.handles = {}
        self.next_fh = 1
        self.silly = {}  # ino -> (dir node, name) of silly-renamed files
        self.groups_cache = {}  # (pid, uid, gid) -> (when, groups)
        # Requests by kind: the round trips an NFS client would make (--stats).
        self.counts = collections.Counter()
        for name in REQUESTS:
            setattr(self, name, self._counted(name, getattr(self, name)))
        self.silly_count = 0
        self.devfd = None  # our /dev/fuse fd, found on first use (see _expire_entry)
        self.expire_only = True

    # ------------------------------------------------------------ helpers

    def _counted(self, name, method):
        async def counted(*args, **kwargs):
            self.counts[name] += 1
            return await method(*args, **kwargs)
        return counted

    def _as(self, ctx):
        """Acts as the caller, the way the server would see it over AUTH_SYS."""
        if ctx is None:
            self.ident.become(ROOT)
            return
        key = (ctx.pid, ctx.uid, ctx.gid)
        now = time.monotonic()
        cached = self.groups_cache.get(key)
        if cached is not None and now - cached[0] < 1.0:
            groups = cached[1]
        else:
            # Reading /proc/PID/status costs more than most requests; a process
            # changes its groups rarely, so its answer holds for a second.
            groups = caller_groups(ctx.pid, ctx.uid, self.o.proc)
            if len(self.groups_cache) > 4096:
                self.groups_cache.clear()
            self.groups_cache[key] = (now, groups)
        self.ident.become(wire_creds(ctx.uid, ctx.gid, groups, self.o.root_squash,
                                     self.o.anonuid, self.o.anongid))

    @contextlib.contextmanager
    def _as_root(self):
        saved = self.ident.current
        self.ident.become(ROOT)
        try:
            yield
        finally:
            if saved is not None:
                self.ident.become(Creds(*saved))

    def _ino_of(self, st):
        return pyfuse3.ROOT_INODE if st.st_ino == self.root_backing_ino else st.st_ino

    def _node(self, ino):
        node = self.nodes.get(ino)
        if node is None:
            raise FUSEError(errno.ESTALE)
        return node

    def _path(self, node):
        return f"{self.o.proc}/self/fd/{node.fd}"

    def _stat(self, node):
        """GETATTR on the server: a removed file's handle is stale."""
        st = os.fstat(node.fd)
        if st.st_nlink == 0 and node.ino not in self.silly:
            raise FUSEError(errno.ESTALE)
        return st

    def _timeout(self, node, st, now=None):
        """Takes fresh attributes in; returns (changed, attr_timeout).

        A directory seen changed, whichever request brought its attributes in
        (a GETATTR, an OPENDIR, a LOOKUP or READDIRPLUS entry of it), has every
        name cached in it looked up again: nfs_update_inode calls
        nfs_force_lookup_revalidate, which outdates the verifier of every
        dentry in it, negative ones too. (Only noticing the change, and taking
        the new attributes in, would hide it from the next revalidation.)"""
        now = time.monotonic() if now is None else now
        lo, hi = self.o.timeouts.bounds(node.is_dir)
        if node.attr is None:
            node.attr = AttrTimeo(lo, now, _seen(st))
            return False, lo
        changed, timeo = node.attr.refresh(_seen(st), lo, hi, now)
        if changed and node.is_dir:
            self._start_forgetting(node)
        return changed, timeo

    def _attrs(self, node, st, timeo):
        e = pyfuse3.EntryAttributes()
        e.st_ino = node.ino
        e.generation = 0
        e.entry_timeout = 0.0 if self.o.lookupcache == "none" else FOREVER
        e.attr_timeout = timeo
        e.st_mode = st.st_mode
        e.st_nlink = st.st_nlink
        e.st_uid = st.st_uid
        e.st_gid = st.st_gid
        e.st_rdev = st.st_rdev
        e.st_size = max(st.st_size, node.dirty.end) if node.dirty else st.st_size
        e.st_blksize = st.st_blksize
        e.st_blocks = st.st_blocks
        e.st_atime_ns = st.st_atime_ns
        e.st_mtime_ns = st.st_mtime_ns
        e.st_ctime_ns = st.st_ctime_ns
        return e

    def _remember(self, dir_node, name, st):
        """Finds or makes the node for `name` (looked up as `st`) and counts a lookup."""
        ino = self._ino_of(st)
        node = self.nodes.get(ino)
        if node is None:
            fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_node.fd)
            st2 = os.fstat(fd)
            if st2.st_ino != st.st_ino:  # replaced in between: take what we opened
                st = st2
                ino = self._ino_of(st)
                old = self.nodes.get(ino)
                if old is not None:
                    os.close(fd)
                    node = old
            if node is None:
                node = Node(ino, self.pool, fd, stat.S_ISDIR(st.st_mode))
                self.nodes[ino] = node
        node.lookups += 1
        dir_node.given[name] = node.is_dir
        dir_node.misses.discard(name)
        changed, timeo = self._timeout(node, st)
        if changed and not node.is_dir:
            self._drop_attrs(node)
        return self._attrs(node, st, timeo)

    def _drop_attrs(self, node):
        try:
            pyfuse3.invalidate_inode(node.ino, attr_only=True)
        except OSError:
            pass

    def _start_forgetting(self, dir_node):
        """The directory changed: every dentry we handed out in it must be
        looked up again. A thread drops them: the kernel takes the directory's
        lock to drop a dentry, and a caller may be holding it while it waits
        for the very reply that noticed the change."""
        names, dir_node.given = dir_node.given, {}
        dir_node.misses = set()
        log.debug("directory %d changed: forgetting %d names", dir_node.ino, len(names))
        if not names:
            return
        ino = dir_node.ino

        def work():
            for name, is_dir in names.items():
                if is_dir:
                    self._expire_entry(ino, name)
                else:
                    try:
                        pyfuse3.invalidate_entry(ino, name)
                    except OSError:
                        pass

        t = threading.Thread(target=work, name="forget-%d" % ino, daemon=True)
        t.start()
        dir_node.forgetting = [x for x in dir_node.forgetting if x.is_alive()] + [t]

    def _expire_entry(self, parent_ino, name):
        """For a subdirectory's entry: makes the kernel look the name up again
        at its next use, as an outdated verifier makes NFS do
        (nfs_check_verifier fails, nfs_lookup_revalidate_dentry sends a
        LOOKUP). The same directory comes back: its dentry stays, and with it
        every name cached below it; a LOOKUP showing the subdirectory itself
        changed drops those (_remember). invalidate_entry would d_invalidate()
        it at once, which prunes every unused dentry under it: a change in a
        directory would then drop the misses (and attributes) cached in its
        unchanged subdirectories, which NFS keeps.

        Files and misses are still invalidated outright: they have nothing
        below them, their next lookup is what NFS's would be, and a kept
        dentry of a file removed elsewhere would keep its inode number in use
        here (nodes are found by inode number, which the export reuses).

        FUSE_NOTIFY_INVAL_ENTRY with FUSE_EXPIRE_ONLY only times the entry
        out. libfuse 3.14 (Debian 12) has no call for it, so the notification
        is written to /dev/fuse here, as libfuse writes its own; a kernel
        before 6.2 ignores the flag and invalidates, as before."""
        if self.expire_only:
            fd = self._fuse_fd()
            if fd >= 0:
                body = struct.pack("<QII", parent_ino, len(name), FUSE_EXPIRE_ONLY) + name + b"\0"
                try:
                    os.write(fd, struct.pack("<IiQ", 16 + len(body), FUSE_NOTIFY_INVAL_ENTRY, 0) + body)
                    return
                except OSError as e:
                    if e.errno != errno.EINVAL:
                        return  # ENOENT: not cached (any more)
                    self.expire_only = False
                    log.warning("the kernel refused FUSE_EXPIRE_ONLY; invalidating entries instead")
        try:
            pyfuse3.invalidate_entry(parent_ino, name)
        except OSError:
            pass

    def _fuse_fd(self):
        if self.devfd is None:
            found = -1
            fds = f"{self.o.proc}/self/fd"
            for entry in os.listdir(fds):
                try:
                    if os.readlink(f"{fds}/{entry}") == "/dev/fuse":
                        found = int(entry)
                        break
                except OSError:
                    pass
            self.devfd = found
        return self.devfd

    async def _forgotten(self, dir_node, wait):
        """Waits until the names being dropped in the directory are gone: a
        little, not forever (see _start_forgetting); the rest then lands as
        soon as the lock is free."""
        threads = [t for t in dir_node.forgetting if t.is_alive()]
        dir_node.forgetting = threads
        if not threads:
            return

        def join():
            deadline = time.monotonic() + wait
            for t in threads:
                t.join(max(0.0, deadline - time.monotonic()))

        with trio.move_on_after(wait + 0.1):
            await trio.to_thread.run_sync(join, cancellable=True)

    def _wcc(self, dir_node, before):
        """Weak cache consistency: our own change to a directory is not news.

        knfsd returns pre- and post-operation attributes; when the "before"
        matches what the client had cached, the client takes the "after" as its
        own doing and keeps its caches (nfs_wcc_update_inode)."""
        if dir_node.attr is None or before is None:
            return
        if dir_node.attr.seen == _seen(before):
            try:
                dir_node.attr.seen = _seen(os.fstat(dir_node.fd))
            except OSError:
                pass

    def _before(self, dir_node):
        try:
            return os.fstat(dir_node.fd)
        except OSError:
            return None

    @contextlib.contextmanager
    def _changing(self, *dir_nodes):
        """Brackets a change to these directories on the server as knfsd does:
        it holds a directory's inode lock from the pre-operation attributes
        to the post-operation ones (fh_fill_pre_attrs ... fh_fill_post_attrs),
        so another client's change is either before the bracket (the
        "before" differs from this client's cache: news) or after it, never
        inside, where the client would take it for its own (_wcc). Every
        client daemon of the export takes an flock on the export's directory
        for the same span; without it a change landing between our two
        fstat()s was swallowed, and the misses cached here kept.
        Locks are taken in inode order (a rename takes two)."""
        dirs = sorted({id(d): d for d in dir_nodes}.values(), key=self._backing_ino)
        fds = []
        try:
            with self._as_root():
                for d in dirs:
                    fd = os.open(self._path(d), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                    fds.append(fd)
                    fcntl.flock(fd, fcntl.LOCK_EX)
            befores = [(d, self._before(d)) for d in dirs]
            yield
            for d, before in befores:
                self._wcc(d, before)
        finally:
            for fd in fds:
                os.close(fd)

    def _backing_ino(self, node):
        return self.root_backing_ino if node.ino == pyfuse3.ROOT_INODE else node.ino

    def _flush_dirty(self, node):
        """Writes the client's dirty data for `node` back to the server."""
        if not node.dirty:
            return
        try:
            before = os.fstat(node.fd)
        except OSError:
            before = None
        for e in node.dirty.take():
            done = 0
            while done < len(e.data):
                done += os.pwrite(e.fd, memoryview(e.data)[done:], e.offset + done)
        if node.attr is not None and before is not None and node.attr.seen == _seen(before):
            node.attr.seen = _seen(os.fstat(node.fd))  # our own write: keep caches

    async def writeback_loop(self):
        """The flusher: dirty data older than --writeback seconds goes to the server."""
        period = max(0.2, min(1.0, self.o.writeback / 4))
        while True:
            await trio.sleep(period)
            now = time.monotonic()
            for node in list(self.nodes.values()):
                if node.dirty and now - node.dirty.since >= self.o.writeback:
                    try:
                        self._flush_dirty(node)
                    except OSError as e:
                        log.warning("writeback of inode %d failed: %s", node.ino, e)

    # ------------------------------------------------------------ lookups

    @_oserror
    async def lookup(self, parent_inode, name, ctx=None):
        self._as(ctx)
        parent = self._node(parent_inode)
        if name == b".." and parent_inode == pyfuse3.ROOT_INODE:
            name = b"."  # nothing above the export
        if name == b".":
            st = self._stat(parent)
            parent.lookups += 1
            return self._attrs(parent, st, self._timeout(parent, st)[1])
        if name == b"..":
            fd = os.open("..", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=parent.fd)
            try:
                st = os.fstat(fd)
            finally:
                os.close(fd)
            node = self.nodes.get(self._ino_of(st))
            if node is None:
                raise FUSEError(errno.ESTALE)
            node.lookups += 1
            return self._attrs(node, st, self._timeout(node, st)[1])
        if name in parent.misses:
            # A negative dentry NFS still trusts: no LOOKUP goes out (so none
            # is counted). The misses live here rather than in the kernel's
            # dcache so that dropping them is synchronous: a kernel entry
            # can only be invalidated with the directory's lock, which the
            # kernel holds during the very LOOKUP that shows the change, so
            # the caller's next lookup could still find the old miss.
            self.counts["lookup"] -= 1
            raise FUSEError(errno.ENOENT)
        dir_st = self._stat(parent)
        log.debug("lookup %d %r", parent_inode, name)
        # A LOOKUP reply carries the directory's attributes as well, and the
        # client takes them in (nfs3_proc_lookup: nfs_refresh_inode(dir,
        # res.dir_attr)): a change they show drops every name cached in the
        # directory, as a GETATTR's would. Taken before the name is looked up,
        # so a change after them is noticed later, never hidden. No waiting
        # for the names to go: the kernel holds the directory's lock until
        # this reply (see _start_forgetting).
        if self._timeout(parent, dir_st)[0]:
            self._drop_attrs(parent)
        try:
            st = os.stat(name, dir_fd=parent.fd, follow_symlinks=False)
        except FileNotFoundError:
            if self.o.lookupcache != "all":
                raise FUSEError(errno.ENOENT) from None
            # A negative dentry: cached until the directory is seen changed.
            parent.misses.add(name)
            raise FUSEError(errno.ENOENT) from None
        attrs = self._remember(parent, name, st)
        await self._changed_dir_forgotten(attrs)
        return attrs

    async def _changed_dir_forgotten(self, attrs):
        """A LOOKUP (or READDIRPLUS entry) that showed a directory changed has
        started dropping the names cached in it (_remember, _timeout); the
        walk that asked goes on into it right after this reply, so they must
        be gone first, as nfs_force_lookup_revalidate has them before the
        LOOKUP returns. The kernel holds the parent's lock here, not this
        directory's, so the wait is short."""
        child = self.nodes.get(attrs.st_ino)
        if child is not None and child.is_dir:
            await self._forgotten(child, 0.5)

    async def forget(self, inode_list):
        for ino, n in inode_list:
            node = self.nodes.get(ino)
            if node is None:
                continue
            node.lookups -= n
            self._maybe_drop(node)

    def _maybe_drop(self, node):
        if node.lookups > 0 or node.opens > 0 or node.ino == pyfuse3.ROOT_INODE:
            return
        if node.dirty:
            try:
                self._flush_dirty(node)
            except OSError:
                pass
        del self.nodes[node.ino]
        self.pool.release(node)

    @_oserror
    async def getattr(self, inode, ctx=None):
        node = self._node(inode)
        st = self._stat(node)
        changed, timeo = self._timeout(node, st)
        log.debug("getattr %d changed=%s timeout=%s", inode, changed, timeo)
        if changed and node.is_dir:
            await self._forgotten(node, 0.5)
        return self._attrs(node, st, timeo)

    @_oserror
    async def setattr(self, inode, attr, fields, fh, ctx):
        self._as(ctx)
        node = self._node(inode)
        self._stat(node)
        path = self._path(node)
        handle = self.handles.get(fh) if fh is not None else None
        if node.is_dir:
            # SETATTR returns wcc_data too: another client's change to the
            # directory before this one is news (its cached names go), this
            # one is not.
            with self._changing(node):
                self._set(node, path, handle, attr, fields)
            st = self._stat(node)
            return self._attrs(node, st, self._timeout(node, st)[1])
        # nfs_setattr (fs/nfs/inode.c) writes all dirty data of a regular file
        # back before any SETATTR ("Write all dirty data"). Without that, the
        # data held here would reach the server after a utimensat, and bump
        # the mtime that `cp -a` or `rsync -a` had just set.
        self._flush_dirty(node)
        self._set(node, path, handle, attr, fields)
        st = self._stat(node)
        # The reply carries the new attributes (SETATTR returns them).
        node.attr = None
        return self._attrs(node, st, self._timeout(node, st)[1])

    def _set(self, node, path, handle, attr, fields):
        if fields.update_size:
            if handle is not None:
                os.ftruncate(handle.fd, attr.st_size)
            else:
                os.truncate(path, attr.st_size)
        if fields.update_mode:
            os.chmod(path, stat.S_IMODE(attr.st_mode))
        if fields.update_uid or fields.update_gid:
            uid = attr.st_uid if fields.update_uid else -1
            gid = attr.st_gid if fields.update_gid else -1
            os.chown(path, uid, gid)
        if fields.update_atime or fields.update_mtime:
            st = os.fstat(node.fd)
            atime = attr.st_atime_ns if fields.update_atime else st.st_atime_ns
            mtime = attr.st_mtime_ns if fields.update_mtime else st.st_mtime_ns
            os.utime(path, ns=(atime, mtime))

    @_oserror
    async def readlink(self, inode, ctx):
        self._as(ctx)
        node = self._node(inode)
        self._stat(node)
        # readlinkat(fd, "") reads the link an O_PATH|O_NOFOLLOW fd holds.
        return os.fsencode(os.readlink("", dir_fd=node.fd))

    @_oserror
    async def access(self, inode, mode, ctx):
        self._as(ctx)
        node = self._node(inode)
        if not os.access(self._path(node), mode, effective_ids=True):
            raise FUSEError(errno.EACCES)

    @_oserror
    async def statfs(self, ctx):
        s = os.statvfs(self._path(self.nodes[pyfuse3.ROOT_INODE]))
        out = pyfuse3.StatvfsData()
        for name in ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files",
                     "f_ffree", "f_favail", "f_namemax"):
            setattr(out, name, getattr(s, name))
        return out

    # ------------------------------------------------------------ directories

    @_oserror
    async def opendir(self, inode, ctx):
        self._as(ctx)
        node = self._node(inode)
        fd = os.open(self._path(node), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        if self.o.cto:
            # Close-to-open for directories: opening one revalidates it, and a
            # change drops the names (and misses) cached in it.
            st = os.fstat(fd)
            changed, _ = self._timeout(node, st)
            if changed:
                self._drop_attrs(node)
            # Also when another request noticed the change first: its names
            # must be gone before this open returns.
            await self._forgotten(node, 5.0)
        fh = self.next_fh
        self.next_fh += 1
        self.handles[fh] = Handle(fd, node, False)
        node.opens += 1
        return fh

    @_oserror
    async def readdir(self, fh, start_id, token):
        handle = self.handles[fh]
        node = handle.node
        # A READDIRPLUS: names with attributes, which prime the dentry cache.
        # The server lists "." and ".." too; the kernel does not keep dentries
        # for them (so their lookup counts are never given back: directories
        # stay known, which costs one fd each).
        with os.scandir(handle.fd) as it:
            names = [b".", b".."] + sorted(os.fsencode(e.name) for e in it)
        for i in range(start_id, len(names)):
            name = names[i]
            try:
                if name in (b".", b".."):
                    attrs = await self.lookup(node.ino, name, None)
                else:
                    st = os.stat(name, dir_fd=node.fd, follow_symlinks=False)
                    attrs = self._remember(node, name, st)
                    await self._changed_dir_forgotten(attrs)
            except (OSError, FUSEError):
                continue
            if not pyfuse3.readdir_reply(token, name, attrs, i + 1):
                # Not taken: give the lookup back.
                child = self.nodes.get(attrs.st_ino)
                if child is not None:
                    child.lookups -= 1
                    self._maybe_drop(child)
                return

    async def releasedir(self, fh):
        handle = self.handles.pop(fh)
        os.close(handle.fd)
        handle.node.opens -= 1
        self._maybe_drop(handle.node)

    async def fsyncdir(self, fh, datasync):
        return  # directory operations are synchronous on NFS (nfs_fsync_dir)

    @_oserror
    async def mkdir(self, parent_inode, name, mode, ctx):
        self._as(ctx)
        parent = self._node(parent_inode)
        with self._changing(parent):
            os.mkdir(name, stat.S_IMODE(mode) & ~ctx.umask, dir_fd=parent.fd)
        st = os.stat(name, dir_fd=parent.fd, follow_symlinks=False)
        return self._remember(parent, name, st)

    @_oserror
    async def mknod(self, parent_inode, name, mode, rdev, ctx):
        self._as(ctx)
        parent = self._node(parent_inode)
        with self._changing(parent):
            os.mknod(name, (mode & ~0o7777) | (stat.S_IMODE(mode) & ~ctx.umask), rdev, dir_fd=parent.fd)
        st = os.stat(name, dir_fd=parent.fd, follow_symlinks=False)
        return self._remember(parent, name, st)

    @_oserror
    async def symlink(self, parent_inode, name, target, ctx):
        self._as(ctx)
        parent = self._node(parent_inode)
        with self._changing(parent):
            os.symlink(target, name, dir_fd=parent.fd)
        st = os.stat(name, dir_fd=parent.fd, follow_symlinks=False)
        return self._remember(parent, name, st)

    @_oserror
    async def link(self, inode, new_parent_inode, new_name, ctx):
        self._as(ctx)
        node = self._node(inode)
        parent = self._node(new_parent_inode)
        self._stat(node)
        with self._changing(parent):
            os.link(self._path(node), new_name, dst_dir_fd=parent.fd, follow_symlinks=True)
        st = os.stat(new_name, dir_fd=parent.fd, follow_symlinks=False)
        return self._remember(parent, new_name, st)

    def _open_here(self, dir_node, name):
        """The node of dir/name if this client has it open (for silly rename)."""
        try:
            st = os.stat(name, dir_fd=dir_node.fd, follow_symlinks=False)
        except OSError:
            return None
        node = self.nodes.get(self._ino_of(st))
        if node is not None and node.opens > 0 and not node.is_dir:
            return node
        return None

    def _sillyrename(self, dir_node, name, node):
        self.silly_count += 1
        silly = f".nfs{node.ino:016x}{self.silly_count:08x}".encode()
        os.rename(name, silly, src_dir_fd=dir_node.fd, dst_dir_fd=dir_node.fd)
        self.silly[node.ino] = (dir_node, silly)
        dir_node.given[silly] = False

    @_oserror
    async def unlink(self, parent_inode, name, ctx):
        self._as(ctx)
        parent = self._node(parent_inode)
        with self._changing(parent):
            node = self._open_here(parent, name)
            if node is not None and node.ino not in self.silly:
                self._sillyrename(parent, name, node)
            else:
                os.unlink(name, dir_fd=parent.fd)
        parent.given.pop(name, None)

    @_oserror
    async def rmdir(self, parent_inode, name, ctx):
        self._as(ctx)
        parent = self._node(parent_inode)
        with self._changing(parent):
            os.rmdir(name, dir_fd=parent.fd)
        parent.given.pop(name, None)

    @_oserror
    async def rename(self, parent_inode_old, name_old, parent_inode_new, name_new, flags, ctx):
        if flags:
            raise FUSEError(errno.EINVAL)  # nfs_rename: "if (flags) return -EINVAL;"
        self._as(ctx)
        old = self._node(parent_inode_old)
        new = self._node(parent_inode_new)
        with self._changing(old, new):
            target = self._open_here(new, name_new)
            if target is not None and target.ino not in self.silly:
                self._sillyrename(new, name_new, target)
            os.rename(name_old, name_new, src_dir_fd=old.fd, dst_dir_fd=new.fd)
        moved = old.given.pop(name_old, None)
        new.given[name_new] = bool(moved)
        new.misses.discard(name_new)

    # ------------------------------------------------------------ files

    def _open_flags(self, flags):
        # The kernel sends explicit offsets (no O_APPEND here), the final
        # component was already checked for symlinks (no O_NOFOLLOW: we reopen
        # through /proc), and atime is the server's business.
        drop = os.O_APPEND | os.O_NOFOLLOW | os.O_CREAT | os.O_EXCL | os.O_NOCTTY | os.O_NOATIME
        return (flags & ~drop) | os.O_CLOEXEC

    def _new_handle(self, fd, node, flags):
        fh = self.next_fh
        self.next_fh += 1
        sync = bool(flags & (os.O_SYNC | os.O_DSYNC | os.O_DIRECT))
        self.handles[fh] = Handle(fd, node, sync, (flags & os.O_ACCMODE) != os.O_RDONLY)
        node.opens += 1
        return fh

    @_oserror
    async def open(self, inode, flags, ctx):
        if flags & O_TMPFILE_BITS == O_TMPFILE_BITS:
            raise FUSEError(errno.EOPNOTSUPP)
        self._as(ctx)
        node = self._node(inode)
        self._stat(node)
        if flags & os.O_TRUNC:
            self._flush_dirty(node)
        fd = os.open(self._path(node), self._open_flags(flags))
        keep = True
        if self.o.cto:
            st = os.fstat(fd)
            changed, _ = self._timeout(node, st)
            if changed:
                # Someone else changed it since we last looked: forget what we cached.
                self._drop_attrs(node)
                keep = False
        fi = pyfuse3.FileInfo(fh=self._new_handle(fd, node, flags))
        fi.keep_cache = keep
        return fi

    @_oserror
    async def create(self, parent_inode, name, mode, flags, ctx):
        self._as(ctx)
        parent = self._node(parent_inode)
        cflags = os.O_CREAT | (flags & os.O_EXCL)
        with self._changing(parent):
            fd = os.open(name, self._open_flags(flags) | cflags | os.O_NOFOLLOW,
                         stat.S_IMODE(mode) & ~ctx.umask, dir_fd=parent.fd)
        try:
            st = os.fstat(fd)
            attrs = self._remember(parent, name, st)
        except BaseException:
            os.close(fd)
            raise
        node = self.nodes[attrs.st_ino]
        fi = pyfuse3.FileInfo(fh=self._new_handle(fd, node, flags))
        return fi, attrs

    @_oserror
    async def read(self, fh, off, size):
        handle = self.handles[fh]
        node = handle.node
        self._stat(node)
        data = os.pread(handle.fd, size, off)
        if node.dirty:
            data = node.dirty.overlay(off, data, size)
        return data

    @_oserror
    async def write(self, fh, off, buf):
        handle = self.handles[fh]
        node = handle.node
        self._stat(node)
        if handle.sync:
            self._flush_dirty(node)
            n = 0
            while n < len(buf):
                n += os.pwrite(handle.fd, buf[n:], off + n)
            return n
        node.dirty.add(off, buf, handle.fd, time.monotonic())
        if node.dirty.nbytes > self.o.dirty_limit:
            self._flush_dirty(node)  # balance_dirty_pages: too much to hold
        return len(buf)

    @_oserror
    async def flush(self, fh):
        # close() of a file open for writing writes back everything dirty in
        # the inode (nfs_file_flush: nothing for read-only opens, else nfs_wb_all).
        handle = self.handles[fh]
        if handle.writable:
            self._flush_dirty(handle.node)

    @_oserror
    async def fsync(self, fh, datasync):
        handle = self.handles[fh]
        self._flush_dirty(handle.node)
        os.fsync(handle.fd)

    async def release(self, fh):
        handle = self.handles.pop(fh)
        node = handle.node
        try:
            if node.dirty.drop_fd(handle.fd):
                self._flush_dirty(node)
        except OSError as e:
            log.warning("writeback at release of inode %d failed: %s", node.ino, e)
        os.close(handle.fd)
        node.opens -= 1
        if node.opens == 0 and node.ino in self.silly:
            dir_node, silly = self.silly.pop(node.ino)
            self.ident.become(ROOT)  # the client removes its own .nfs file
            try:
                with self._changing(dir_node):
                    os.unlink(silly, dir_fd=dir_node.fd)
            except OSError:
                pass
            dir_node.given.pop(silly, None)
        self._maybe_drop(node)

    # ------------------------------------------------------------ xattrs
    # ENOSYS tells FUSE to stop asking: it then answers EOPNOTSUPP itself, as
    # NFSv3 does, with no round trip (the kernel asks for security.capability
    # before the first write to every file; NFS makes no RPC for that).

    async def getxattr(self, inode, name, ctx):
        raise FUSEError(errno.ENOSYS)

    async def setxattr(self, inode, name, value, ctx):
        raise FUSEError(errno.ENOSYS)

    async def removexattr(self, inode, name, ctx):
        raise FUSEError(errno.ENOSYS)

    async def listxattr(self, inode, ctx):
        return []  # NFSv3: no names (FUSE's ENOSYS here would be EOPNOTSUPP)
