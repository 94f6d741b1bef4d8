# `tpurun gc` on a worker without a shared mount (staging/worker_gc.hpp;
# docs/protocols.md): run by the worker's python3 as the login user, this
# program on its stdin. It shows in ps as "tpurun-gc".
#
# argv: ROOT LOGS_ROOT USER OLDER_THAN_S DRY_RUN NOW [KEEP...]; on stdin,
# after the program, the runs whose log dirs may go ("PROJECT/RUN" per line:
# ended, and whole on the dev VM). Prints "removed NAME", "run PROJECT/RUN
# BYTES" (a run's log dir whose newest file is older than the cutoff),
# "objects N BYTES", "error WHY". Snapshots (read-only dirs) are made
# writable before removal, and their kept manifests and records (.sums-,
# .stat-, push.py) go with them; the
# content freed is each removed file that no other snapshot links (one
# link). The .objects/ store of earlier builds loses what nothing links.
import os
import re
import shutil
import stat
import sys

# tpurun-embed: include lib/proc_title.py
# tpurun-embed: include lib/files_under.py

proc_title("tpurun-gc")
root, logs, user = sys.argv[1], sys.argv[2], sys.argv[3]
older, dry, now = int(sys.argv[4]), sys.argv[5] == "1", int(sys.argv[6])
keep = set(sys.argv[7:])
done_runs = {line.strip() for line in sys.stdin if line.strip()}
udir = os.path.join(root, user)
n = size = 0


def freed(st):
    global n, size
    if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
        n += 1
        size += st.st_size


def rm_tree(path, count):
    for top, dirs, files in os.walk(path):
        if not dry:
            os.chmod(top, 0o700)
        for f in files:  # each counted as it goes: a file two removed snapshots share counts once
            p = os.path.join(top, f)
            try:
                if count:
                    freed(os.lstat(p))
                if not dry:
                    os.unlink(p)
            except OSError:
                pass
    if not dry:
        shutil.rmtree(path)


def old_runs():
    """The log dirs of done_runs under LOGS_ROOT/USER whose newest entry is
    older than the cutoff: (PROJECT/RUN, path, bytes). Only the user's own
    dirs, never through a symlink."""
    def own(path):  # its lstat when it is a dir of ours (not a symlink), else None
        try:
            st = os.lstat(path)
        except OSError:
            return None
        return st if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() else None

    base = os.path.join(logs, user)
    if own(base) is None:
        return
    for run in sorted(done_runs):
        parts = run.split("/")
        if len(parts) != 2 or "" in parts or ".." in parts or "." in parts:
            continue
        path = os.path.join(base, parts[0], parts[1])
        st = own(path)
        if st is None:
            continue
        newest, size = st.st_mtime, 0
        for top, dirs, files in os.walk(path):
            for n in dirs + files:
                try:
                    s = os.lstat(os.path.join(top, n))
                except OSError:
                    continue
                newest = max(newest, s.st_mtime)
                if stat.S_ISREG(s.st_mode):
                    size += s.st_size
        if now - newest > older:
            yield run, path, size


def rm_file(path):
    if not dry:
        try:
            os.unlink(path)
        except OSError:
            pass


try:
    st = os.lstat(udir)
except FileNotFoundError:
    print("objects 0 0")
    sys.exit(0)
if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
    print("error %s is not your own dir" % udir)
    sys.exit(0)
KEPT = (".manifest-", ".sums-", ".stat-")  # what push.py keeps beside a snapshot
snap = re.compile(r"^[0-9]{12}-[a-z0-9]{6}-[0-9a-z]+-code$")
def last_use(path, name):  # a snapshot's: each use touches its marker (push.py), not the dir
    try:
        return max(os.lstat(path).st_mtime, os.lstat(os.path.join(udir, ".stat-" + name)).st_mtime)
    except OSError:
        return os.lstat(path).st_mtime


for name in sorted(os.listdir(udir)):
    path = os.path.join(udir, name)
    try:
        age = now - last_use(path, name)
    except OSError:
        continue
    if name.startswith(".tmp-") and age > 3600:
        rm_tree(path, False)
    elif ".tmp-" in name and name.startswith(KEPT + (".tree-",)) and age > 3600:
        rm_file(path)
    elif snap.match(name) and age > older and name not in keep:
        print("removed " + name)
        rm_tree(path, True)
        for prefix in KEPT:
            rm_file(os.path.join(udir, prefix + name))
for name in os.listdir(udir):
    path = os.path.join(udir, name)
    if name.startswith(".tree-") and not os.path.exists(path):
        rm_file(path)
    elif name.startswith(KEPT) and ".tmp-" not in name and \
            not os.path.isdir(os.path.join(udir, name.split("-", 1)[1])):
        rm_file(path)
for path, name, st in files_under(os.path.join(udir, ".objects")):
    if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
        freed(st)
        rm_file(path)
for run, path, run_size in old_runs():
    try:
        rm_tree(path, False)
        print("run %s %d" % (run, run_size))
    except OSError as e:
        print("error cannot remove %s: %s" % (path, e))
print("objects %d %d" % (n, size))
