"""fakepod exec I [--user U] -- CMD...: run CMD inside worker I's namespaces.

Kept small (os and sys only): the tests call it for every worker at every exit.
The user is looked up in the worker's own /etc/passwd (its uid may differ from
the dev VM's). The environment is clean: HOME, USER, LOGNAME, SHELL, PATH,
LANG, TPU_WORKER_ID and TPU_WORKER_HOSTNAMES; the working directory is HOME.
"""
import os
import sys


def die(msg):
    sys.stderr.write("fakepod: %s\n" % msg)
    sys.exit(1)


def main(args):
    if not args or not args[0].isdigit():
        die("bad worker index '%s'" % (args[0] if args else ""))
    slot = int(args[0])
    args = args[1:]
    user = "root"
    while args:
        if args[0] == "--user":
            if len(args) < 2:
                die("--user needs a name")
            user, args = args[1], args[2:]
        elif args[0].startswith("--user="):
            user, args = args[0][7:], args[1:]
        elif args[0] == "--":
            args = args[1:]
            break
        else:
            break
    if not args:
        die("exec: no command")
    state = os.environ.get("FAKEPOD_STATE") or "/var/lib/tpurun-fakepod"
    w = os.path.join(state, "w%d" % slot)
    try:
        with open(os.path.join(state, "workers")) as f:
            n = int(f.read().strip() or 0)
    except (OSError, ValueError):
        n = 0
    if not os.path.isdir(w) or (n == 0 and not os.path.exists(os.path.join(w, "init.pid"))):
        die("the pod is down (run: fakepod up N)" if n == 0 else "worker %d does not exist" % slot)
    try:
        with open(os.path.join(w, "init.pid")) as f:
            pid = int(f.read().strip())
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            ok = f.read().rstrip(b"\0").split(b"\0") == [b"bash", os.path.join(state, "init.sh").encode(),
                                                         str(slot).encode()]
    except (OSError, ValueError):
        ok = False
    if not ok:
        die("worker %d is down" % slot)
    boot = {}
    with open(os.path.join(w, "boot.env")) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            boot[k] = v
    hostnames = ""
    with open(os.path.join(w, "sshd_config")) as f:
        for line in f:
            if line.startswith("SetEnv "):
                for kv in line.split()[1:]:
                    if kv.startswith("TPU_WORKER_HOSTNAMES="):
                        hostnames = kv.split("=", 1)[1]
    pw = None
    try:
        with open("/proc/%d/root/etc/passwd" % pid) as f:
            for line in f:
                p = line.rstrip("\n").split(":")
                if p[0] == user:
                    pw = p
                    break
    except OSError:
        pass
    if pw is None:
        die("no such user on worker %d: %s" % (slot, user))
    home = pw[5]
    path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" if user == "root" \
        else "/usr/local/bin:/usr/bin:/bin"
    envv = ["HOME=" + home, "USER=" + user, "LOGNAME=" + user, "SHELL=/bin/bash", "PATH=" + path, "LANG=C.UTF-8",
            "TPU_WORKER_ID=" + boot.get("FP_WORKER", str(slot)), "TPU_WORKER_HOSTNAMES=" + hostnames]
    ns = ["-m", "-p", "-u"] + (["-n"] if boot.get("FP_NETNS") == "1" else [])
    # nsenter -p forks, so CMD is in the worker's PID namespace; whatever CMD
    # detaches is reparented to (and reaped by) the worker's init.
    argv = ["nsenter", "-t", str(pid)] + ns + ["--", "env", "-i"] + envv
    if user != "root":
        argv += ["setpriv", "--reuid=" + pw[0], "--regid=" + pw[3], "--init-groups", "--"]
    argv += ["env", "-C", home, "--"] + args
    os.execvp("nsenter", argv)
