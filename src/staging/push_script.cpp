// The worker's side of a snapshot push (push.hpp): a python3 program (every
// Ubuntu TPU VM image has python3; nothing is installed), given as `-c` with
// its arguments, that talks over its stdin/stdout:
//
//   argv: STAGING_ROOT LOGS_ROOT USER NAME TREE [PROJECT RUN]
//   -> "TPURUN-PUSH have DIR [LOGDIR]"   the snapshot is there whole: done
//   -> "TPURUN-PUSH need"                 else; then it reads the manifest:
//   <- "M <count>\n" and per file "<f|l> <x> <size> <object|-> <pathlen> <targetlen>\n<path><target>"
//   -> "TPURUN-PUSH missing <n> <bytes>\n" and the n objects it lacks, one per line
//      (or "TPURUN-PUSH nospace <bytes needed> <bytes free>")
//   <- per object "<object> <size>\n<bytes>", then "E\n"
//   -> "TPURUN-PUSH have DIR [LOGDIR]"   built, checked, renamed into place
//   -> "TPURUN-PUSH error <why>"          anything else; nothing half made stays
//
// The layout is the dev VM's (staging/object_store.hpp): <root>/<user>/ is
// the user's own (0700), objects in .objects/ab/cdef...[.x] (read-only, the x
// bit in the name), snapshots as hard links to them, ".tree-<hash>" naming
// the snapshot of a tree. A snapshot is built in a hidden temp dir, checked
// against the manifest (every file there, its size and x bit, every symlink's
// target), made read-only and renamed into place: it is whole or absent.
#include "staging/push_script.hpp"

namespace tpurun::staging {

const char* push_worker_program() {
  return R"PY(
import os, sys, stat
root, logs, user, name, tree = sys.argv[1:6]
project, run = (sys.argv[6], sys.argv[7]) if len(sys.argv) > 7 else ("", "")
out = sys.stdout
inp = sys.stdin.buffer
def say(text):
    out.write("TPURUN-PUSH " + text + "\n"); out.flush()
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
def done(udir):
    say(("have %s %s" % (os.path.join(udir, name), log_dir())).rstrip())
def readline():
    line = inp.readline()
    if not line.endswith(b"\n"):
        raise EOFError("the stage stopped sending")
    return line[:-1].decode()
def readn(n):
    parts = []
    while n > 0:
        b = inp.read(min(n, 1 << 20))
        if not b:
            raise EOFError("the stage stopped sending")
        parts.append(b)
        n -= len(b)
    return b"".join(parts)
tmp = None
try:
    os.makedirs(root, 0o755, exist_ok=True)
    udir = os.path.join(root, user)
    own_dir(udir)
    if have(udir):
        done(udir)
        sys.exit(0)
    say("need")
    store = os.path.join(udir, ".objects")
    own_dir(store)
    os.makedirs(os.path.join(store, "tmp"), 0o700, exist_ok=True)
    head = readline().split()
    entries = []
    for _ in range(int(head[1])):
        kind, x, size, obj, plen, tlen = readline().split()
        path = readn(int(plen)).decode("utf-8", "surrogateescape")
        target = readn(int(tlen)).decode("utf-8", "surrogateescape")
        entries.append((kind, x == "1", int(size), obj, path, target))
    missing, need = [], 0
    for kind, x, size, obj, path, target in entries:
        if kind == "f" and obj not in missing and not os.path.exists(os.path.join(store, obj)):
            missing.append(obj)
            need += size
    vfs = os.statvfs(udir)
    free = vfs.f_bavail * vfs.f_frsize
    if need + (1 << 20) > free:
        say("nospace %d %d" % (need, free))
        sys.exit(1)
    say("missing %d %d" % (len(missing), need))
    out.write("".join(m + "\n" for m in missing)); out.flush()
    while True:
        line = readline()
        if line == "E":
            break
        obj, size = line.split()
        size = int(size)
        part = os.path.join(store, "tmp", "%d-%s" % (os.getpid(), obj.replace("/", "")))
        with open(part, "wb") as f:
            left = size
            while left > 0:
                b = inp.read(min(left, 1 << 20))
                if not b:
                    raise EOFError("the stage stopped sending")
                f.write(b)
                left -= len(b)
        os.chmod(part, 0o555 if obj.endswith(".x") else 0o444)
        os.makedirs(os.path.join(store, obj[:2]), 0o700, exist_ok=True)
        try:
            os.link(part, os.path.join(store, obj))
        except FileExistsError:
            pass
        os.unlink(part)
    tmp = os.path.join(udir, ".tmp-%s-%d" % (name, os.getpid()))
    os.mkdir(tmp, 0o700)
    dirs = set()
    for kind, x, size, obj, path, target in entries:
        full = os.path.join(tmp, path)
        parent = os.path.dirname(full)
        if parent not in dirs:
            os.makedirs(parent, 0o755, exist_ok=True)
            dirs.add(parent)
        if kind == "l":
            os.symlink(target, full)
            continue
        try:
            os.link(os.path.join(store, obj), full)
        except OSError:  # too many links: a copy
            with open(os.path.join(store, obj), "rb") as src, open(full, "wb") as dst:
                dst.write(src.read())
            os.chmod(full, 0o555 if x else 0o444)
    for kind, x, size, obj, path, target in entries:
        full = os.path.join(tmp, path)
        st = os.lstat(full)
        if kind == "l":
            if not stat.S_ISLNK(st.st_mode) or os.readlink(full) != target:
                raise OSError("%s: not the symlink the snapshot has" % path)
        elif not stat.S_ISREG(st.st_mode) or st.st_size != size or bool(st.st_mode & 0o100) != x:
            raise OSError("%s: %d bytes here, %d in the snapshot (or another mode)" % (path, st.st_size, size))
    for d in sorted(dirs | {tmp}, key=len, reverse=True):
        os.chmod(d, 0o555)
    final = os.path.join(udir, name)
    try:
        os.rename(tmp, final)
        tmp = None
    except OSError:
        if not os.path.isdir(final):
            raise
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
    say("error " + (str(e) or type(e).__name__).replace("\n", " "))
    sys.exit(1)
)PY";
}

}  // namespace tpurun::staging
