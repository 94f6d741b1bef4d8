#!/usr/bin/env python3
"""Line latency of `tpurun logs -f` through NFS caches (bench/nfs.sh runs this; not a test).

  nfs_lines.py job LINES EVERY QUIET
      The job, on every worker of a run: for line k = 0..LINES-1 it waits
      EVERY * (0.5..1.5) s, and one worker (the same seeded choice on all of
      them) prints "bench-line k wW t=<time.time()>" and flushes; between lines
      and for QUIET s after the last one it computes quietly, as a trainer
      does between its log lines, so nothing but tpurun pushes a line out of
      the worker's NFS client.

  nfs_lines.py measure LINES TIMEOUT -- COMMAND...
      Runs COMMAND (`tpurun logs RUN -f`, as the run's user) twice at once,
      with --raw and as is (collapsing), and for each line notes when it shows
      on that follower's output: latency = shown - t, the job's own timestamp
      (the workers share this machine's clock). Prints the median and maximum
      per follower. Stops when both followers saw every line or exited, or
      after TIMEOUT s.
"""
import os
import random
import statistics
import subprocess
import sys
import threading
import time



def job(lines, every, quiet):
    me = int(os.environ["TPURUN_WORKER"])
    workers = int(os.environ["TPURUN_NUM_WORKERS"])
    rng = random.Random(17)
    print(f"worker {me} of {workers}: {lines} lines, one every ~{every} s", flush=True)
    for k in range(lines):
        time.sleep(every * (0.5 + rng.random()))
        if rng.randrange(workers) == me:
            print(f"bench-line {k} w{me} t={time.time():.6f}", flush=True)
    time.sleep(quiet)


def measure(lines, timeout, command):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from follow import drain, stop  # bench/follow.py's follower helpers (not on the workers: job needs none)
    followers = {}
    seen = {}
    done = threading.Event()
    for label, extra in (("--raw", ["--raw"]), ("collapsed", [])):
        seen[label] = {}
        proc = subprocess.Popen(command + extra, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                bufsize=1)

        def on_line(line, now, label=label):
            if "bench-line " not in line:
                return
            words = line.split("bench-line ", 1)[1].split()
            stamp = [w for w in words if w.startswith("t=")]
            if stamp:
                seen[label].setdefault(int(words[0]), now - float(stamp[0][2:]))
            if all(len(s) >= lines for s in seen.values()):
                done.set()
        followers[label] = (proc, drain(proc, on_line))
    deadline = time.monotonic() + timeout
    while not done.is_set() and time.monotonic() < deadline:
        if all(p.poll() is not None for p, _ in followers.values()):
            break
        done.wait(0.5)
    for proc, reader in followers.values():
        if proc.poll() is None:
            stop(proc)
        reader.join(5)
    ok = True
    for label, got in seen.items():
        lat = list(got.values())
        if not lat:
            print(f"  logs -f {label:10}: no line shown of {lines}")
            ok = False
            continue
        missing = lines - len(lat)
        print(f"  logs -f {label:10}: median {statistics.median(lat):.2f} s, max {max(lat):.2f} s over "
              f"{len(lat)} lines" + (f" ({missing} never shown)" if missing else "")
              + f"   (target: median <= 2 s) {'ok' if statistics.median(lat) <= 2 else 'MISSED'}")
    return 0 if ok else 1


def main():
    if sys.argv[1:2] == ["job"]:
        job(int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]))
        return 0
    if sys.argv[1:2] == ["measure"] and "--" in sys.argv:
        cut = sys.argv.index("--")
        return measure(int(sys.argv[2]), float(sys.argv[3]), sys.argv[cut + 1:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
