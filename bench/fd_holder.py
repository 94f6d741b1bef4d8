#!/usr/bin/env python3
"""Bench-only: a busy TPU host's process table, as data loader workers make it.

    python3 fd_holder.py PROCS FDS

makes a new session of PROCS processes that each hold FDS open file
descriptors (a mix of pipes, socket pairs, regular files in
/tmp/bench-fds.<pgid>/ and /dev/null), all of them `sleep infinity`, and
prints the session's id (also its process group) once they all run. Stop them
with `kill -9 -- -PGID` and remove /tmp/bench-fds.PGID. Not a test.
"""
import os
import resource
import socket
import sys

procs, fds = int(sys.argv[1]), int(sys.argv[2])
ready_r, ready_w = os.pipe()  # not inheritable: closes at exec
if os.fork():
    os.close(ready_w)
    with os.fdopen(ready_r) as ready:
        line = ready.read().strip()
    if not line.isdigit():
        sys.exit(f"fd_holder: did not start: {line or 'no report'}")
    print(line)
    sys.exit(0)

try:
    os.close(ready_r)
    os.setsid()
    pgid = os.getpid()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < fds + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (fds + 64, hard))  # ValueError when hard is lower
    null = os.open("/dev/null", os.O_RDWR)
    for std in (0, 1, 2):
        os.dup2(null, std)
    files = f"/tmp/bench-fds.{pgid}"
    os.mkdir(files, 0o700)
    held = []
    while len(held) < fds:
        kind = len(held) % 8
        if kind < 3:
            held += os.pipe()
        elif kind < 5:
            a, b = socket.socketpair()
            held += [a.detach(), b.detach()]
        elif kind < 7:
            held.append(os.open(f"{files}/f{len(held) % 200}", os.O_RDWR | os.O_CREAT, 0o600))
        else:
            held.append(os.open("/dev/null", os.O_RDONLY))
    for fd in held[fds:]:
        os.close(fd)
    for fd in held[:fds]:
        os.set_inheritable(fd, True)
    for _ in range(procs - 1):
        if os.fork() == 0:
            os.execvp("sleep", ["sleep", "infinity"])
    os.write(ready_w, f"{pgid}\n".encode())
except Exception as e:  # report to the waiting parent, then give up
    os.write(ready_w, f"{type(e).__name__}: {e}\n".encode())
    os._exit(1)
os.execvp("sleep", ["sleep", "infinity"])
