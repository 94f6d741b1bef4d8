# The worker's side of a snapshot push (staging/push.hpp; docs/protocols.md):
# run by the worker's python3 (every Ubuntu TPU VM image has it; nothing is
# installed) as the login user, this program on its stdin ahead of the
# stage's words. It shows in ps as "tpurun-push NAME".
#
#   argv: STAGING_ROOT LOGS_ROOT USER NAME TREE [PROJECT RUN]
#   -> PUSH_HAVE DIR[\0LOGDIR]        the snapshot is there whole: done
#   -> PUSH_NEED                      else; then it reads the manifest:
#   <- "PUSH_MANIFEST <count> <bytes>\n" and <bytes> of, per file,
#      "<f|l> <x> <size> <object|-> <pathlen> <targetlen>\n<path><target>"
#   -> "PUSH_MISSING <n> <bytes>\n" and the n objects it lacks, one per line
#      (or "PUSH_NOSPACE <bytes needed> <bytes free>")
#   <- per object "<object> <size>\n<bytes>", then "PUSH_END\n"
#   -> PUSH_HAVE DIR[\0LOGDIR]        built, checked, renamed into place
#   -> PUSH_ERROR <why>               anything else; nothing half made stays
# Exit status: 0 once the snapshot is there, 1 otherwise.
#
# The layout: <root>/<user>/ is the user's own (0700); each snapshot a
# read-only tree, ".tree-<hash>" naming the snapshot of a tree, and
# ".manifest-<name>" beside it saying which content each of its files is.
# The worker's content store is its snapshots themselves (as rsync's
# --link-dest): a file whose content an earlier snapshot has is a hard link
# to that file there (or in the .objects/ store that earlier tpurun builds
# kept on workers), and content it lacks is written once, at its first path,
# with its final mode. A fresh worker thus makes each file once, as tar
# would, and not an object plus a link to it. The links are made before the
# worker says what it lacks: a link that fails (the earlier file is gone) or
# that shows another size or mode (someone changed it) is content to send. A
# snapshot is built in a hidden temp dir, checked against the manifest
# (every file linked or written there, its size and x bit, every symlink's
# target), made read-only and renamed into place: it is whole or absent.
#
# Nothing on a worker is trusted for being there. Beside each snapshot the
# worker keeps what it built: ".sums-<name>", each file's digest (SHA-256,
# of the bytes it wrote or linked), and ".stat-<name>", an empty marker
# written once the tree was whole, whose mtime says "as built until then".
# Any change to an entry (a write, even at the same size with its mtime put
# back; a chmod, an added or removed name in a dir) moves that entry's ctime
# past the marker, which no one can set back. A snapshot is reused, and an
# earlier file linked in, only when nothing in it changed since its marker
# (push_have.sh asks find, in sh), or else (a later snapshot's hard link
# moves a file's ctime too) each changed file's bytes have the recorded
# digest; the marker is then renewed. A reused snapshot that fails its check
# is built again, and the damaged one is renamed aside (".tmp-damaged-...",
# which worker_gc.py removes after an hour unused). Snapshots made before
# these records were kept are not trusted: their content is sent again
# once. Each use touches the marker (gc's age). worker_gc.py removes a
# snapshot with its manifest and records.
import os
import stat
import sys

# tpurun-embed: tokens
# tpurun-embed: include lib/proc_title.py

root, logs, user, name, tree = sys.argv[1:6]
project, run = (sys.argv[6], sys.argv[7]) if len(sys.argv) > 7 else ("", "")
proc_title("tpurun-push " + name)
out = sys.stdout
inp = sys.stdin.buffer
try:  # a bigger pipe from sshd: fewer wake-ups for both (F_SETPIPE_SZ; best effort)
    import fcntl
    fcntl.fcntl(0, 1031, 1 << 20)
except (ImportError, OSError):
    pass


def say(line):
    out.write(line + "\n")
    out.flush()


def own_dir(path):
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise OSError("%s is not %s's own dir, or others may write to it" % (path, user))


def log_dir():
    if not run:
        return ""
    for d in (logs, os.path.join(logs, user), os.path.join(logs, user, project)):
        if d == logs:
            os.makedirs(d, 0o755, exist_ok=True)
        else:
            own_dir(d)
    d = os.path.join(logs, user, project, run)
    own_dir(d)
    return d


def done(udir):  # NUL between the two paths: either may hold spaces
    say(PUSH_HAVE + " " + os.path.join(udir, name) + ("\0" + log_dir() if run else ""))


def line_of(f):
    line = f.readline()
    if not line.endswith(b"\n"):
        raise EOFError("the stage stopped sending")
    return line[:-1].decode()


def copy_n(f, n, write):
    while n > 0:
        b = f.read(min(n, 1 << 20))
        if not b:
            raise EOFError("the stage stopped sending")
        write(b)
        n -= len(b)


def write_all(fd, b):
    while b:
        b = b[os.write(fd, b):]


chunk = memoryview(bytearray(1 << 20))  # one buffer for all content: no allocation per read


def copy_to_fd(n, fd, digest):
    while n > 0:
        got = inp.readinto(chunk[:min(n, len(chunk))])
        if not got:
            raise EOFError("the stage stopped sending")
        write_all(fd, chunk[:got])
        digest.update(chunk[:got])
        n -= got


def new_digest(like=None):
    """SHA-256: OpenSSL's, with the CPU's SHA instructions, hashes twice as
    fast as BLAKE2b (1,645 MB/s against 762 measured on the simulator's
    host), and a fresh push hashes every byte it writes. A recorded digest
    `like` of 32 hex digits is BLAKE2b's (16 bytes), as earlier tpurun
    builds wrote them: checked the way it was made."""
    import hashlib  # only where bytes are written or checked
    if like is not None and len(like) == 32:
        return hashlib.blake2b(digest_size=16)
    return hashlib.sha256()


def path_bytes(path):  # a path as the file system spells it
    return path.encode("utf-8", "surrogateescape")


def read_sums(data):  # .sums-<name> ("DIGEST PATH\0" per file): path -> digest
    sums = {}
    for rec in data.split(b"\0")[:-1]:
        digest, path = rec.split(b" ", 1)
        sums[path] = digest.decode()
    return sums


# A manifest, from the stage or from a file kept beside an earlier snapshot:
# entries (kind, x, size, object, path, target).
def manifest_of(f):
    head = line_of(f).split()
    count, size = int(head[1]), int(head[2])
    parts = []
    copy_n(f, size, parts.append)
    data = b"".join(parts)
    entries, pos = [], 0
    for _ in range(count):
        nl = data.index(b"\n", pos)
        kind, x, size, obj, plen, tlen = data[pos:nl].decode().split()
        start = nl + 1
        mid = start + int(plen)
        pos = mid + int(tlen)
        entries.append((kind, x == "1", int(size), obj, data[start:mid].decode("utf-8", "surrogateescape"),
                        data[mid:pos].decode("utf-8", "surrogateescape")))
    if pos != len(data):
        raise ValueError("a manifest of %d bytes held %d" % (len(data), pos))
    return entries, ("%s %d %d\n" % (PUSH_MANIFEST, count, len(data))).encode() + data


# Where content this worker already has lives: the files of its newest
# snapshots (their kept manifests say which object each is), and the object
# store of earlier tpurun versions. Newest first, and only for the objects
# still wanted: when few are (a changed file or two), each is looked up in the
# manifest's bytes rather than the whole manifest parsed (at 10k files, a
# parse is 15 ms of a worker's CPU; 32 simulated workers share 2 cores).
def find_in(data, obj):  # the path of obj's file in a manifest's bytes, or None
    key = (" %s " % obj).encode()
    at = data.find(key)
    while at >= 0:
        # "f <x> <size> <obj> <pathlen> <targetlen>\n<path><target>": the words around it
        s1 = data.rfind(b" ", 0, at)
        s2 = data.rfind(b" ", 0, s1)
        nl = data.find(b"\n", at)
        rest = data[at + len(key):nl].split()
        if (s2 > 0 and data[s2 - 1:s2] == b"f" and data[s2 + 1:s1] in (b"0", b"1") and data[s1 + 1:at].isdigit()
                and len(rest) == 2 and rest[0].isdigit()):
            return data[nl + 1:nl + 1 + int(rest[0])].decode("utf-8", "surrogateescape")
        at = data.find(key, at + 1)
    return None


def sources(udir, wanted):  # object -> (snapshot, path) of a file that had it
    found = {}
    kept = []
    for n in os.listdir(udir):
        if n.startswith(".manifest-") and ".tmp-" not in n:
            try:
                kept.append((os.lstat(os.path.join(udir, n)).st_mtime, n[10:]))
            except OSError:
                pass
    for _, snap in sorted(kept, reverse=True)[:8]:
        left = [o for o in wanted if o not in found]
        if not left:
            break
        try:
            with open(os.path.join(udir, ".manifest-" + snap), "rb") as f:
                if len(left) <= 64:
                    data = f.read()
                    for obj in left:
                        path = find_in(data, obj)
                        if path is not None:
                            found[obj] = (snap, path)
                    continue
                for kind, x, size, obj, path, target in manifest_of(f)[0]:
                    if kind == "f" and obj not in found:
                        found[obj] = (snap, path)
        except (OSError, ValueError, IndexError, EOFError):  # unreadable: not a source
            continue
    return found


tmp = None


def cannot_make(path, e):
    """Why a dir of ours cannot be made, and the fix: whose the nearest dir
    that is there is (a ~/.tpurun that root made, say)."""
    there = path
    while there != os.path.dirname(there) and not os.path.lexists(there):
        there = os.path.dirname(there)
    try:
        st = os.lstat(there)
        import pwd
        try:
            owner = pwd.getpwuid(st.st_uid).pw_name
        except KeyError:
            owner = "uid %d" % st.st_uid
        return OSError("cannot make %s: %s (%s is %s's, mode %o; as root: chown -R %s %s)" % (
            path, e.strerror or e, there, owner, stat.S_IMODE(st.st_mode), user, there))
    except OSError:
        return e


def remove_tmp():  # the temp tree of a build that did not become the snapshot
    global tmp
    if tmp:
        for top, ds, fs in os.walk(tmp):
            os.chmod(top, 0o700)
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
        tmp = None


try:
    udir = os.path.join(root, user)
    try:
        os.makedirs(root, 0o755, exist_ok=True)
        own_dir(udir)
    except PermissionError as e:
        raise cannot_make(udir, e)
    # Paths below are relative to the user's dir (a descriptor): each lookup
    # walks a few names, not the whole path from /.
    ufd = os.open(udir, os.O_RDONLY | os.O_DIRECTORY)

    def at_udir(rel, flags):
        return os.open(rel, flags, 0o600, dir_fd=ufd)

    def digest_of(rel, like=None):
        digest = new_digest(like)
        with open(rel, "rb", buffering=0, opener=at_udir) as f:
            while True:
                got = f.readinto(chunk)
                if not got:
                    return digest.hexdigest()
                digest.update(chunk[:got])

    def kept(prefix, snap):
        with open(prefix + snap, "rb", opener=at_udir) as f:
            return f.read()

    sums_of = {}  # snapshot -> (its .sums, its marker's mtime), read once (None: it has none)

    def records(snap):
        if snap not in sums_of:
            try:  # the marker first: sums written after it are not vouched for by it
                marked = os.lstat(".stat-" + snap, dir_fd=ufd).st_mtime_ns
                sums_of[snap] = (read_sums(kept(".sums-", snap)), marked)
            except (OSError, ValueError):
                sums_of[snap] = None
        return sums_of[snap]

    def trusted(snap, path, size, st=None):
        """The digest of snap's file at path when it holds what snap's
        build recorded (unchanged since its marker, or else the same
        bytes), else None."""
        kept_records = records(snap)
        if kept_records is None:
            return None
        digest = kept_records[0].get(path_bytes(path))
        rel = snap + "/" + path
        try:
            st = st or os.lstat(rel, dir_fd=ufd)
        except OSError:
            return None
        if digest is None or not stat.S_ISREG(st.st_mode) or st.st_size != size:
            return None
        if st.st_ctime_ns <= kept_records[1] or digest_of(rel, digest) == digest:
            return digest
        return None

    def as_built(snap):
        """Whether snapshot snap is still what its manifest says, each file's
        bytes as recorded: no file or link missing, added, re-moded, or with
        other bytes than its digest when it changed since the marker. The
        marker is renewed when only ctimes moved."""
        try:
            with open(".manifest-" + snap, "rb", opener=at_udir) as f:
                entries = manifest_of(f)[0]
            on_disk, top_dir = set(), os.path.join(udir, snap)
            for top, ds, fs in os.walk(top_dir):  # files and symlinks (to dirs too), not dirs
                on_disk.update(os.path.relpath(os.path.join(top, n), top_dir) for n in fs)
                on_disk.update(os.path.relpath(os.path.join(top, n), top_dir) for n in ds
                               if os.path.islink(os.path.join(top, n)))
            if on_disk != {e[4] for e in entries}:
                return False
            for kind, x, size, obj, path, target in entries:
                st = os.lstat(snap + "/" + path, dir_fd=ufd)
                if kind == "l":
                    if not stat.S_ISLNK(st.st_mode) or os.readlink(snap + "/" + path, dir_fd=ufd) != target:
                        return False
                elif stat.S_IMODE(st.st_mode) != (0o555 if x else 0o444) or not trusted(snap, path, size, st):
                    return False
            write_kept(".stat-", snap, b"")
            return True
        except (OSError, ValueError, IndexError, EOFError):
            return False

    def write_kept(prefix, snap, data):  # a record beside a snapshot, whole or absent
        path = os.path.join(udir, "%s%s.tmp-%d" % (prefix, snap, os.getpid()))
        try:
            with open(path, "wb") as f:
                f.write(data)
            os.rename(path, os.path.join(udir, prefix + snap))
        except OSError:
            try:
                os.unlink(path)
            except OSError:
                pass

    def keep_records(snap, entries, digests):
        """.sums-<snap> (digests: object -> the digest of what this push
        wrote or linked), then the marker: the tree is whole as of now."""
        write_kept(".sums-", snap, b"".join(b"%s %s\0" % (digests[obj].encode(), path_bytes(path))
                                            for kind, x, size, obj, path, target in entries if kind == "f"))
        write_kept(".stat-", snap, b"")

    final = os.path.join(udir, name)
    damaged = False
    try:
        if os.readlink(os.path.join(udir, ".tree-" + tree)) == name and os.path.isdir(final) \
                and not os.path.islink(final):
            if as_built(name):  # (which renews the marker: gc's age)
                done(udir)
                sys.exit(0)
            damaged = True
    except OSError:
        pass
    say(PUSH_NEED)
    entries, manifest = manifest_of(inp)
    found = sources(udir, {e[3] for e in entries if e[0] == "f"})
    # Room for what no earlier snapshot has, before anything is made: the
    # disk blocks its files take (20,000 small files are 80 MB of 4 KiB
    # blocks, not their bytes), and 1 MiB for the run's first logs.
    sizes = {obj: size for kind, x, size, obj, path, target in entries if kind == "f"}
    vfs = os.statvfs(udir)
    block = vfs.f_frsize or 4096
    need = sum(-(-size // block) * block for obj, size in sizes.items() if obj not in found) + (1 << 20)
    free = vfs.f_bavail * vfs.f_frsize
    if need > free:
        say("%s %d %d" % (PUSH_NOSPACE, need, free))
        sys.exit(1)
    # The snapshot is built in a temp dir. What this worker has is linked
    # there first, each earlier file checked against its snapshot's records
    # before it is linked, and the tree is checked whole once built.
    tmp_name = ".tmp-%s-%d" % (name, os.getpid())
    tmp = os.path.join(udir, tmp_name)
    os.mkdir(tmp, 0o700)
    dirs = set()

    def place(path):  # the path's name in the temp dir, relative to udir; its dirs made
        rel = tmp_name + "/" + path
        parent = os.path.dirname(rel)
        if parent not in dirs:
            os.makedirs(os.path.join(udir, parent), 0o755, exist_ok=True)
            dirs.add(parent)
        return rel

    def link_or_copy(src, rel, x):
        try:
            os.link(src, rel, src_dir_fd=ufd, dst_dir_fd=ufd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        except OSError:  # too many links, or another file system: a copy
            with open(src, "rb", opener=at_udir) as s, open(rel, "wb", opener=at_udir) as d:
                d.write(s.read())
            os.chmod(rel, 0o555 if x else 0o444, dir_fd=ufd)
        return True

    def linked_as(snap, path, rel, size, x):  # an earlier file linked in, if it holds what its snapshot recorded
        src = snap + "/" + path
        try:
            st = os.lstat(src, dir_fd=ufd)  # (the link is this inode: its mode is the link's)
        except OSError:
            return None
        digest = bool(st.st_mode & 0o100) == x and trusted(snap, path, size, st)
        if not digest or not link_or_copy(src, rel, x):
            return None
        return digest

    here, missing, digests = {}, {}, {}
    for kind, x, size, obj, path, target in entries:
        if kind == "l":
            os.symlink(target, place(path), dir_fd=ufd)
        elif obj in here:
            link_or_copy(here[obj], place(path), x)
        elif obj in missing:
            missing[obj].append(path)
        else:
            rel = place(path)
            digest = obj in found and linked_as(found[obj][0], found[obj][1], rel, size, x)
            if digest:
                here[obj], digests[obj] = rel, digest
            else:
                missing[obj] = [path]
    need = sum(sizes[obj] for obj in missing)
    # One write: a second small one would wait for the ACK of the first
    # (Nagle's algorithm in sshd, against the stage's delayed ACK: 40 ms).
    out.write("%s %d %d\n" % (PUSH_MISSING, len(missing), need) + "".join(m + "\n" for m in missing))
    out.flush()
    # Each new object is written once, at its first path, with its final mode.
    while True:
        line = line_of(inp)
        if line == PUSH_END:
            break
        obj, size = line.split()
        paths = missing.pop(obj)
        first = place(paths[0])
        fd = os.open(first, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o555 if obj.endswith(".x") else 0o444,
                     dir_fd=ufd)
        digest = new_digest()
        try:
            copy_to_fd(int(size), fd, digest)
        finally:
            os.close(fd)
        digests[obj] = digest.hexdigest()
        for p in paths[1:]:
            link_or_copy(first, place(p), obj.endswith(".x"))
    if missing:
        raise OSError("the stage did not send %d of the files this worker lacked" % len(missing))
    for kind, x, size, obj, path, target in entries:
        if obj in here:  # checked before it was linked in
            continue
        rel = tmp_name + "/" + path
        st = os.lstat(rel, dir_fd=ufd)
        if kind == "l":
            if not stat.S_ISLNK(st.st_mode) or os.readlink(rel, dir_fd=ufd) != target:
                raise OSError("%s: not the symlink the snapshot has" % path)
        elif not stat.S_ISREG(st.st_mode) or st.st_size != size or bool(st.st_mode & 0o100) != x:
            raise OSError("%s: %d bytes here, %d in the snapshot (or another mode)" % (path, st.st_size, size))
    for d in sorted(dirs | {tmp_name}, key=len, reverse=True):
        os.chmod(d, 0o555, dir_fd=ufd)
    try:
        if damaged:  # the one there failed its check: aside, for gc (a job may still run in it)
            os.rename(final, os.path.join(udir, ".tmp-damaged-%s-%d" % (name, os.getpid())))
        os.rename(tmp, final)
        tmp = None
    except OSError:
        if not os.path.isdir(final):  # else another stage's, just made: ours goes
            raise
        remove_tmp()
    else:
        keep_records(name, entries, digests)
    write_kept(".manifest-", name, manifest)
    link = os.path.join(udir, ".tree-%s.tmp-%d" % (tree, os.getpid()))
    os.symlink(name, link)
    os.rename(link, os.path.join(udir, ".tree-" + tree))
    done(udir)
except SystemExit:
    raise
except BaseException as e:
    remove_tmp()
    say(PUSH_ERROR + " " + (str(e) or type(e).__name__).replace("\n", " "))
    sys.exit(1)
