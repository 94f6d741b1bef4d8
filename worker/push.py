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
# worker_gc.py removes a snapshot with its manifest.
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


def have(udir):
    try:
        if os.readlink(os.path.join(udir, ".tree-" + tree)) != name:
            return False
        os.utime(os.path.join(udir, name))
        return os.path.isdir(os.path.join(udir, name))
    except OSError:
        return False


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


def copy_to_fd(n, fd):
    while n > 0:
        got = inp.readinto(chunk[:min(n, len(chunk))])
        if not got:
            raise EOFError("the stage stopped sending")
        write_all(fd, chunk[:got])
        n -= got


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


def sources(udir, wanted):  # object -> its file, relative to udir
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
                            found[obj] = snap + "/" + path
                    continue
                for kind, x, size, obj, path, target in manifest_of(f)[0]:
                    if kind == "f" and obj not in found:
                        found[obj] = snap + "/" + path
        except (OSError, ValueError, IndexError, EOFError):  # unreadable: not a source
            continue
    return found


tmp = None
try:
    os.makedirs(root, 0o755, exist_ok=True)
    udir = os.path.join(root, user)
    own_dir(udir)
    if have(udir):
        done(udir)
        sys.exit(0)
    say(PUSH_NEED)
    entries, manifest = manifest_of(inp)
    # Paths below are relative to the user's dir (a descriptor): each lookup
    # walks a few names, not the whole path from /.
    ufd = os.open(udir, os.O_RDONLY | os.O_DIRECTORY)
    found = sources(udir, {e[3] for e in entries if e[0] == "f"})
    legacy = ".objects" if os.path.isdir(os.path.join(udir, ".objects")) else None
    # Room for what no earlier snapshot has, before anything is made.
    sizes = {obj: size for kind, x, size, obj, path, target in entries if kind == "f"}
    need = sum(size for obj, size in sizes.items() if obj not in found and not legacy)
    vfs = os.statvfs(udir)
    free = vfs.f_bavail * vfs.f_frsize
    if need + (1 << 20) > free:
        say("%s %d %d" % (PUSH_NOSPACE, need, free))
        sys.exit(1)
    # The snapshot is built in a temp dir. What this worker has is linked
    # there first: a link that works is the check that the earlier file is
    # still there (one system call, not a stat and then the link), and the
    # tree is checked whole once built.
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

    def at_udir(rel, flags):
        return os.open(rel, flags, 0o600, dir_fd=ufd)

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

    def linked_as(src, rel, size, x):  # an earlier file linked in, if it is what the manifest says
        if not link_or_copy(src, rel, x):
            return False
        st = os.lstat(rel, dir_fd=ufd)
        if stat.S_ISREG(st.st_mode) and st.st_size == size and bool(st.st_mode & 0o100) == x:
            return True
        os.unlink(rel, dir_fd=ufd)  # changed since: sent again
        return False

    here, missing = {}, {}
    for kind, x, size, obj, path, target in entries:
        if kind == "l":
            os.symlink(target, place(path), dir_fd=ufd)
        elif obj in here:
            link_or_copy(here[obj], place(path), x)
        elif obj in missing:
            missing[obj].append(path)
        else:
            rel = place(path)
            old = legacy and legacy + "/" + obj
            if (obj in found and linked_as(found[obj], rel, size, x)) or (old and linked_as(old, rel, size, x)):
                here[obj] = rel
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
        try:
            copy_to_fd(int(size), fd)
        finally:
            os.close(fd)
        for p in paths[1:]:
            link_or_copy(first, place(p), obj.endswith(".x"))
    if missing:
        raise OSError("the stage did not send %d of the files this worker lacked" % len(missing))
    for kind, x, size, obj, path, target in entries:
        if obj in here:  # checked when it was linked in
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
    final = os.path.join(udir, name)
    try:
        os.rename(tmp, final)
        tmp = None
    except OSError:
        if not os.path.isdir(final):
            raise
    kept = os.path.join(udir, ".manifest-%s.tmp-%d" % (name, os.getpid()))
    try:  # only an index of content for later stages: the snapshot stands without it
        with open(kept, "wb") as f:
            f.write(manifest)
        os.rename(kept, os.path.join(udir, ".manifest-" + name))
    except OSError:
        try:
            os.unlink(kept)
        except OSError:
            pass
    link = os.path.join(udir, ".tree-%s.tmp-%d" % (tree, os.getpid()))
    os.symlink(name, link)
    os.rename(link, os.path.join(udir, ".tree-" + tree))
    done(udir)
except SystemExit:
    raise
except BaseException as e:
    if tmp:
        for top, ds, fs in os.walk(tmp):
            os.chmod(top, 0o700)
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    say(PUSH_ERROR + " " + (str(e) or type(e).__name__).replace("\n", " "))
    sys.exit(1)
