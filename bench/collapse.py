#!/usr/bin/env python3
"""Collapsed output at --raw's pace (bench/collapse.sh runs this; not a test).

1. whole logs: a finished run's log dir with WORKERS logs of MB each of
   training-like lines (the same step and loss lines on every worker, some
   lines of each worker's own, tqdm bars redrawn with `\\r`), made once from a
   fixed seed and kept under /var/tmp. Then `tpurun logs RUN --raw` and
   `tpurun logs RUN` into a file, each REPS times: the best wall time, its CPU
   time, and the ratio collapsed / raw.
2. following a job that prints fast: `tpurun logs RUN -f` of a running run
   whose WORKERS logs grow by RATE step lines/s each for SECONDS (one writer
   process, the output made beforehand, appended every 5 ms; the step lines
   are the same on every worker, every 50th step adds one of the worker's
   own). Step N is due at start + N / RATE, so each chunk of tpurun's output
   tells how far behind the job it is: printed at the median, the 99th
   percentile and at most, and how long after the run's end tpurun exited.
   Collapsed lines are held up to their 1 s window on purpose (docs/output.md),
   but a step every worker printed goes out as soon as the last one did.
Timings are printed, never asserted.
"""
import argparse
import hashlib
import json
import os
import random
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

RUN_ID = "20261123_000000_bench1_collapse"


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def process_start(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


class FakeRun:
    """A run's log dir under a private logs root, with its config; no worker runs."""

    def __init__(self, root, workers):
        self.user = os.environ.get("USER") or "root"
        self.logs_root = os.path.join(root, "logs")
        self.dir = os.path.join(self.logs_root, self.user, "bench", RUN_ID)
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
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
        with open(os.path.join(self.dir, "watcher.log"), "w") as f:
            f.write(f"2026-11-23T00:00:00Z watching {workers} workers\n")
        self.sleeper = None

    def state(self, verdict, worker_state):
        """Writes state.json; a running run gets a live stand-in watcher (a process on this host)."""
        if verdict == "running" and self.sleeper is None:
            self.sleeper = subprocess.Popen(["sleep", "100000"])
        now = int(time.time())
        pid = self.sleeper.pid if self.sleeper else 0
        state = {"verdict": verdict, "attempt": 1, "max_attempts": 1, "on_failure": "stop",
                 "workers": [{"worker": i, "state": worker_state, "pid": 1000 + i,
                              "exit_code": 0 if worker_state == "succeeded" else None, "detail": ""}
                             for i in range(self.workers)],
                 "first_failure": None, "stopped_others": False, "message": "",
                 "watcher": {"pid": pid, "host": socket.gethostname(),
                             "started": process_start(pid) if pid else 0, "heartbeat": now},
                 "updated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))}
        write_atomic(os.path.join(self.dir, "state.json"), json.dumps(state, indent=2))

    def close(self):
        if self.sleeper:
            self.sleeper.kill()
            self.sleeper.wait()

    def cmd(self, binary, *args):
        return [binary, "--config", self.config, "--pod", "bench", "logs", RUN_ID] + list(args)


def training_log(worker, size, seed):
    """Yields blocks of worker `worker`'s log, about `size` bytes in all (the same steps on every worker).

    Every worker prints the same step/loss lines (a data-parallel job); every
    10th step adds a line of its own (its throughput and host); every 200th an
    eval bar redrawn with `\\r` 20 times whose final state is the same
    everywhere; every 1000th a checkpoint line only worker 0 prints.
    """
    shared = random.Random(seed)           # the same on every worker
    own = random.Random(seed * 1000 + worker + 1)
    steps, step, block = size * 100 // 11_381, 0, []  # 113.81 bytes a step on average
    while step < steps:
        step += 1
        loss = 2.5 / (1 + step / 5000) + shared.random() * 0.01
        line = (f"step {step} loss {loss:.5f} lr {3e-4 * min(1, step / 2000):.3e} "
                f"grad_norm {shared.random() * 2:.4f} tokens {step * 4096} step_time {0.2 + shared.random() * 0.05:.4f}s "
                f"mfu {0.5 + shared.random() * 0.01:.4f}\n")
        if step % 10 == 0:
            line += (f"worker {worker} host t1v-n-bench-w-{worker} step {step} "
                     f"throughput {9000 + own.random() * 500:.1f} samples/s mem {30000 + own.randrange(900)} MiB\n")
        if step % 200 == 0:
            bars = "".join(f"\reval {k * 5:3d}%|{'#' * k}{' ' * (20 - k)}| {k * 10}/200" for k in range(21))
            line += bars + f" acc {shared.random():.4f}\n"
        if step % 1000 == 0 and worker == 0:
            line += f"saved checkpoint gs://bench-bucket/ckpt/step_{step} in {own.random() * 9:.2f}s\n"
        block.append(line)
        if len(block) >= 512:
            yield "".join(block)
            block = []
    if block:
        yield "".join(block)


def make_finished_run(workers, mb, seed):
    """The finished run, kept under /var/tmp by its parameters (made once)."""
    key = hashlib.sha1(f"v3 {workers} {mb} {seed}".encode()).hexdigest()[:10]
    root = f"/var/tmp/tpurun-bench-collapse.{key}"
    run = FakeRun(root, workers)
    done = os.path.join(root, "complete")
    if not os.path.exists(done):
        print(f"making {workers} logs of {mb} MB under {root} (once)", file=sys.stderr, flush=True)
        for w in range(workers):
            with open(os.path.join(run.dir, f"worker{w}.log"), "w") as f:
                for block in training_log(w, mb * 1_000_000, seed):
                    f.write(block)
        open(done, "w").close()
    run.state("succeeded", "succeeded")
    return run


def timed(cmd, out_path, env):
    """Wall and CPU seconds of one run of cmd, its output into out_path."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    with open(out_path, "w") as out:
        subprocess.run(cmd, stdout=out, stderr=subprocess.DEVNULL, env=env, check=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def whole_logs(binary, args, env):
    run = make_finished_run(args.workers, args.mb, args.seed)
    lines = sum(open(os.path.join(run.dir, f"worker{w}.log"), "rb").read().count(b"\n") for w in range(args.workers))
    print(f"--- whole logs: {args.workers} workers x {args.mb} MB, {lines} lines in all ({run.dir})", flush=True)
    out = tempfile.mktemp(prefix="tpurun-bench-collapse.out.", dir="/var/tmp")
    best = {}
    try:
        for label, extra in (("raw", ["--raw"]), ("collapsed", [])):
            runs = [timed(run.cmd(binary, *extra), out, env) for _ in range(args.reps)]
            wall, cpu = min(runs)
            with open(out, "rb") as f:
                printed = sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 20), b""))
            best[label] = wall
            print(f"  {label:9s}: {wall:6.2f} s wall, {cpu:6.2f} s CPU (best of {args.reps}); "
                  f"{printed} lines printed, {lines / wall / 1000:.0f}k lines/s read", flush=True)
    finally:
        if os.path.exists(out):
            os.unlink(out)
        run.close()
    ratio = best["collapsed"] / best["raw"]
    print(f"  collapsed / raw: {ratio:.2f}x (target <= 3x)", flush=True)


def job_output(worker, rate, seconds):
    """What a fast job's worker prints: the same step lines on every worker, and every 50th step a
    line of its own; with the byte offset after each step."""
    parts, offsets, size = [], [], 0
    for i in range(int(rate * seconds)):
        line = f"step {i} loss {1 / (1 + i):.6f} of a job printing fast\n"
        if i % 50 == 49:
            line += f"w{worker} own line {i}\n"
        parts.append(line)
        size += len(line)
        offsets.append(size)
    return "".join(parts).encode(), offsets


def writer(paths, rate, seconds):
    """Appends job_output to each of `paths`, step i at start + i / rate, in slices every 5 ms.
    Prints 'ready' once the output is made, reads the start time from stdin; prints the steps written."""
    outputs = [job_output(w, rate, seconds) for w in range(len(paths))]
    print("ready", flush=True)
    start = float(sys.stdin.readline())
    files = [os.open(p, os.O_WRONLY | os.O_APPEND) for p in paths]
    steps, done = int(rate * seconds), 0
    while done < steps:
        time.sleep(max(0.0, start + (done + 1) / rate - time.time()) if done else max(0.0, start - time.time()))
        due = min(steps, int((time.time() - start) * rate) + 1)
        for fd, (data, offsets) in zip(files, outputs):
            os.write(fd, memoryview(data)[offsets[done - 1] if done else 0:offsets[due - 1]])
        done = due
        time.sleep(0.005)
    print(done, flush=True)


def follow_fast_job(binary, args, env, label, extra):
    root = tempfile.mkdtemp(prefix="tpurun-bench-collapse-follow.", dir="/var/tmp")
    run = FakeRun(root, args.workers)
    try:
        paths = [os.path.join(run.dir, f"worker{w}.log") for w in range(args.workers)]
        for p in paths:
            open(p, "w").close()
        run.state("running", "running")
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import collapse; "
                "collapse.writer(sys.argv[4:], int(sys.argv[2]), float(sys.argv[3]))")
        jobs = subprocess.Popen([sys.executable, "-c", code, os.path.dirname(os.path.abspath(__file__)),
                                 str(args.rate), str(args.seconds)] + paths,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert jobs.stdout.readline().strip() == "ready"
        proc = subprocess.Popen(run.cmd(binary, "-f", *extra), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                env=env)
        lags, printed, start = [], [0], [None]

        def read():  # cheap: counts lines, and reads the step of the last line of each chunk
            fd = proc.stdout.fileno()
            while True:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return
                t = time.time()
                printed[0] += chunk.count(b"\n")
                at = chunk.rfind(b"] step ")
                end = chunk.find(b" ", at + 7)
                if at >= 0 and end > 0 and start[0] is not None:
                    lags.append(t - (start[0] + int(chunk[at + 7:end]) / args.rate))
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        time.sleep(1)
        start[0] = time.time() + 0.2
        jobs.stdin.write(f"{start[0]}\n")
        jobs.stdin.flush()
        steps = int(jobs.stdout.readline())
        written = (steps + steps // 50) * args.workers
        jobs.wait()
        ended = time.time()
        run.state("succeeded", "succeeded")
        proc.wait(600)
        exited = time.time()
        reader.join(10)
        lags.sort()
        pick = (lambda q: lags[min(len(lags) - 1, int(len(lags) * q))]) if lags else (lambda q: float("nan"))
        print(f"  {label:9s}: {written} lines written in {ended - start[0]:.1f} s "
              f"({written / (ended - start[0]) / args.workers / 1000:.0f}k lines/s per worker); "
              f"{printed[0]} printed; behind the job by {pick(0.5):.2f} s at the median, {pick(0.99):.2f} s "
              f"at p99, {pick(1.0):.2f} s at most; exited {exited - ended:.2f} s after the run ended", flush=True)
    finally:
        run.close()
        shutil.rmtree(root, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--mb", type=int, default=50, help="MB per worker log (whole logs)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--rate", type=int, default=200_000, help="lines/s per worker (following)")
    ap.add_argument("--seconds", type=float, default=5, help="how long the job prints (following)")
    ap.add_argument("--only", choices=["whole", "follow", "all"], default="all")
    args = ap.parse_args()
    env = dict(os.environ, USER=os.environ.get("USER") or "root")
    if args.only in ("whole", "all"):
        whole_logs(args.binary, args, env)
    if args.only in ("follow", "all"):
        print(f"--- following a job: {args.workers} workers x {args.rate // 1000}k lines/s for {args.seconds:.0f} s",
              flush=True)
        for label, extra in (("raw", ["--raw"]), ("collapsed", [])):
            follow_fast_job(args.binary, args, env, label, extra)


if __name__ == "__main__":
    sys.exit(main())
