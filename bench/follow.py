#!/usr/bin/env python3
"""The cost of following an idle run (bench/follow.sh runs this; not a test).

It makes a 256-worker run's log dir without starting any worker: run.json,
state.json (verdict running, with a live stand-in watcher whose heartbeat
rewrites state.json every 5 s as the real one does) and 256 worker logs, under
a private logs root with its own config. Then, for each tpurun binary given
(label=path):
  1. idle: `tpurun logs RUN -f` for --seconds; client CPU from /proc/PID/stat
     (utime+stime), then the same again under `strace -c -f` for syscalls/s;
  2. latency: every --every seconds one line appended to a random worker's
     log; the time until it appears in tpurun's output (with --raw, since a
     collapsed line is held on purpose for its window; see docs/output.md),
     and then the same with collapsing on.
Timings are printed, never asserted.
"""
import argparse
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

RUN_ID = "20261123_000000_bench0_bench"
TICKS = os.sysconf("SC_CLK_TCK")


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def process_start(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


class FakeRun:
    """A run's log dir on a private logs root, and a stand-in watcher."""

    def __init__(self, workers, root):
        self.user = os.environ.get("USER") or "root"
        self.logs_root = os.path.join(root, "logs")
        self.dir = os.path.join(self.logs_root, self.user, "bench", RUN_ID)
        os.makedirs(self.dir, mode=0o700)
        for d in (os.path.join(self.logs_root, self.user), os.path.dirname(self.dir)):
            os.chmod(d, 0o700)
        os.makedirs(os.path.join(root, "staging"), exist_ok=True)
        self.workers = workers
        hosts = [f"127.0.9.{i % 250 + 1}" for i in range(workers)]
        self.config = os.path.join(root, "tpurun.json")
        with open(self.config, "w") as f:
            json.dump({"default_pod": "bench", "pods": {"bench": {
                "workers": hosts, "staging_root": os.path.join(root, "staging"),
                "logs_root": self.logs_root}}}, f)
        record = {"run_id": RUN_ID, "user": self.user, "pod": "bench", "project": "bench",
                  "workers": [{"worker": i, "host": h, "port": 22} for i, h in enumerate(hosts)],
                  "command": ["python3", "train.py"], "env_names": [], "tags": [],
                  "staged_dir": "", "log_dir": self.dir, "created_at": "2026-11-23T00:00:00Z",
                  "gang": {"on_failure": "stop", "restarts": 0, "lost_after_ms": 60000, "grace_ms": 10000}}
        write_atomic(os.path.join(self.dir, "run.json"), json.dumps(record, indent=2))
        for i in range(workers):
            with open(os.path.join(self.dir, f"worker{i}.log"), "w") as f:
                f.write(f"worker {i} started\n")
        with open(os.path.join(self.dir, "watcher.log"), "w") as f:
            f.write("2026-11-23T00:00:00Z watching 256 workers\n")
        # The stand-in watcher: a live process on this host, as watcher_alive() checks.
        self.sleeper = subprocess.Popen(["sleep", "100000"])
        self.stop = threading.Event()
        self.beat()
        self.heart = threading.Thread(target=self.beats, daemon=True)
        self.heart.start()

    def beat(self):
        now = int(time.time())
        state = {"verdict": "running", "attempt": 1, "max_attempts": 1, "on_failure": "stop",
                 "workers": [{"worker": i, "state": "running", "pid": 1000 + i, "exit_code": None,
                              "detail": ""} for i in range(self.workers)],
                 "first_failure": None, "stopped_others": False, "message": "",
                 "watcher": {"pid": self.sleeper.pid, "host": socket.gethostname(),
                                "started": process_start(self.sleeper.pid), "heartbeat": now},
                 "updated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))}
        write_atomic(os.path.join(self.dir, "state.json"), json.dumps(state, indent=2))

    def beats(self):
        while not self.stop.wait(5):
            self.beat()

    def close(self):
        self.stop.set()
        self.sleeper.kill()
        self.sleeper.wait()


def follow(binary, run, extra=(), prefix=()):
    env = dict(os.environ, USER=run.user)
    cmd = list(prefix) + [binary, "--config", run.config, "--pod", "bench", "logs", RUN_ID, "-f"] + list(extra)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True,
                            bufsize=1)


def stop(proc):
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def drain(proc, on_line=None):
    def loop():
        for line in proc.stdout:
            if on_line:
                on_line(line, time.time())
    t = threading.Thread(target=loop, daemon=True)
    t.start()
    return t


def idle_cpu(binary, run, seconds, extra):
    proc = follow(binary, run, extra)
    drain(proc)
    time.sleep(3)  # past the first read of every log
    c0, t0 = cpu_seconds(proc.pid), time.monotonic()
    time.sleep(seconds)
    c1, t1 = cpu_seconds(proc.pid), time.monotonic()
    stop(proc)
    return 100.0 * (c1 - c0) / (t1 - t0)


def idle_syscalls(binary, run, seconds, extra):
    """Syscalls per second of a follower that is past its first read, by strace -c attached for `seconds`."""
    fd, out = tempfile.mkstemp(prefix="tpurun-follow-strace.")
    os.close(fd)
    proc = follow(binary, run, extra)
    drain(proc)
    time.sleep(3)
    tracer = subprocess.Popen(["strace", "-f", "-c", "-o", out, "-p", str(proc.pid)], stderr=subprocess.DEVNULL)
    time.sleep(seconds)
    tracer.send_signal(signal.SIGINT)  # detaches and writes the summary
    tracer.wait(30)
    stop(proc)
    total, top = 0, []
    with open(out) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 5 and parts[0][0].isdigit() and parts[-1] != "total":
                calls = int(parts[3])
                total += calls
                top.append((calls, parts[-1]))
    os.unlink(out)
    top.sort(reverse=True)
    return total / seconds, ", ".join(f"{name} {calls / seconds:.0f}/s" for calls, name in top[:4])


def latencies(binary, run, lines, every, extra, phase):
    seen = {}
    proc = follow(binary, run, extra)
    drain(proc, lambda line, t: seen.setdefault(line.split("bench-line ")[-1].split()[0], t)
          if "bench-line " in line else None)
    time.sleep(3)
    sent = {}
    rng = random.Random(11)
    for n in range(lines):
        time.sleep(every * (0.5 + rng.random()))
        worker = rng.randrange(run.workers)
        key = f"{phase}-{n}"
        with open(os.path.join(run.dir, f"worker{worker}.log"), "a") as f:
            sent[key] = time.time()
            f.write(f"bench-line {key} from worker {worker}\n")
    time.sleep(3)
    stop(proc)
    got = [seen[k] - t for k, t in sent.items() if k in seen]
    return got, len(sent) - len(got)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binaries", nargs="+", help="label=path/to/tpurun[:ENV=VALUE]")
    ap.add_argument("--workers", type=int, default=256)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--lines", type=int, default=8)
    ap.add_argument("--every", type=float, default=3)
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="tpurun-bench-follow.", dir="/var/tmp")
    run = FakeRun(args.workers, root)
    results = {}
    try:
        for spec in args.binaries:
            label, path = spec.split("=", 1)
            env_set = None
            if ":" in path:
                path, env_set = path.split(":", 1)
                name, value = env_set.split("=", 1)
                os.environ[name] = value
            print(f"--- {label}: {path}{' with ' + env_set if env_set else ''}", flush=True)
            cpu = idle_cpu(path, run, args.seconds, [])
            rate, top = idle_syscalls(path, run, args.seconds, [])
            raw, raw_missed = latencies(path, run, args.lines, args.every, ["--raw"], f"{label}-raw")
            col, col_missed = latencies(path, run, args.lines, args.every, [], f"{label}-collapsed")
            results[label] = (cpu, rate)
            print(f"  idle {args.workers} workers, {args.seconds:.0f} s: client CPU {cpu:.2f}% of a core; "
                  f"{rate:.0f} syscalls/s ({top})")
            for what, got, missed in (("--raw", raw, raw_missed), ("collapsed", col, col_missed)):
                if got:
                    print(f"  line latency {what}: median {statistics.median(got):.2f} s, max {max(got):.2f} s "
                          f"over {len(got)} lines" + (f"; {missed} never shown" if missed else ""))
                else:
                    print(f"  line latency {what}: no line shown ({missed} written)")
            if env_set:
                del os.environ[env_set.split("=", 1)[0]]
        labels = list(results)
        old = labels[-1]
        co, ro = results[old]
        for new in labels[:-1]:
            cn, rn = results[new]
            print(f"=== {new} vs {old}: CPU {cn:.2f}% vs {co:.2f}% of a core ({cn / co if co else 0:.2f}x), "
                  f"syscalls {rn:.0f}/s vs {ro:.0f}/s ({rn / ro if ro else 0:.3f}x)")
        print("targets: client CPU <= 2% of a core while idle; line latency <= 1 s (--raw; collapsing adds "
              "its 1 s window on purpose)")
    finally:
        run.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
