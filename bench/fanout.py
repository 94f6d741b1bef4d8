#!/usr/bin/env python3
"""Fan-out benchmark: `tpurun exec -- true` side by side with pdsh, clush,
parallel-ssh and a serial ssh loop, on the pod simulator, in one run.

Every tool runs as the same user with the same key, known_hosts and key
exchange (curve25519-sha256), all workers at once (fanout = worker count), and
the repetitions are interleaved so machine noise hits every tool alike.
Prints medians and ratios, and writes bench/results/fanout.csv and
bench/results/fanout.png (gnuplot). Not a test: it asserts nothing.

usage: bench/fanout.py [--sizes 8,32,128] [--reps 5] [--user alice]
"""
import argparse, csv, json, os, shutil, statistics, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAKEPOD = os.path.join(ROOT, "scripts", "fakepod")
KEX = "curve25519-sha256"


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw).stdout


def pod_env(n):
    sh([FAKEPOD, "up", str(n)])
    env = {}
    for line in sh([FAKEPOD, "env"]).splitlines():
        k, _, v = line.partition("=")
        env[k] = v.strip().strip("'\"")
    cfg = json.load(open(env["FAKEPOD_CONFIG"]))
    return env, cfg["pods"]["sim"]["workers"]


def as_user(user, argv, extra_env=None):
    home = os.path.expanduser("~" + user)
    env = {"HOME": home, "USER": user, "LOGNAME": user, "PATH": "/usr/local/bin:/usr/bin:/bin"}
    env.update(extra_env or {})
    return ["setpriv", "--reuid=" + user, "--regid=" + user, "--init-groups", "env", "-i"] + \
        [f"{k}={v}" for k, v in env.items()] + argv


def measure(argv, cwd):
    """Wall seconds, client CPU seconds (user+sys, children included), peak RSS in MB."""
    out = tempfile.NamedTemporaryFile("r", delete=False)
    subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", "-o", out.name] + argv, cwd=cwd,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall, user, system, rss_kb = open(out.name).read().split()[-4:]
    os.unlink(out.name)
    return float(wall), float(user) + float(system), int(rss_kb) / 1024.0


def tools(user, hosts, ssh_config, tpurun, tpurun_config):
    n = len(hosts)
    ssh = f"ssh -F {ssh_config}"
    loop = " ".join(f"{ssh} {h} true || exit 1;" for h in hosts)
    return {
        "tpurun": as_user(user, [tpurun, "--config", tpurun_config, "exec", "--fanout", str(n), "--", "true"],
                          {"TPURUN_SSH_KEX": KEX}),
        "pdsh": as_user(user, ["pdsh", "-R", "ssh", "-f", str(n), "-w", ",".join(hosts), "true"],
                        {"PDSH_SSH_ARGS": f"-F {ssh_config} -x -l%u %h"}),
        "clush": as_user(user, ["clush", "-f", str(n), "-o", f"-F {ssh_config}", "-w", ",".join(hosts), "true"]),
        "parallel-ssh": as_user(user, ["parallel-ssh", "-p", str(n), "-x", f"-F {ssh_config}",
                                       "-H", " ".join(hosts), "true"]),
        "ssh-loop": as_user(user, ["sh", "-c", loop]),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="8,32,128")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--user", default="alice")
    ap.add_argument("--loop-max", type=int, default=128, help="skip the serial loop above this size")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/fanout.py: run as root (it drives scripts/fakepod)")
    tpurun = os.path.join(ROOT, "build", "tpurun")
    results_dir = os.path.join(ROOT, "bench", "results")
    os.makedirs(results_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="tpurun-bench-", dir="/var/tmp")
    os.chmod(work, 0o755)
    rows = []
    for n in [int(s) for s in args.sizes.split(",")]:
        env, hosts = pod_env(n)
        bin_copy = os.path.join(env["FAKEPOD_STATE"], "bin", "tpurun")
        shutil.copy(tpurun, bin_copy)
        os.chmod(bin_copy, 0o755)
        home = os.path.expanduser("~" + args.user)
        kh = os.path.join(work, f"known_hosts.{n}")
        ssh_config = os.path.join(work, f"ssh_config.{n}")
        with open(ssh_config, "w") as f:
            f.write(f"Host *\n  IdentityFile {home}/.ssh/id_ed25519\n  KexAlgorithms {KEX}\n"
                    f"  UserKnownHostsFile {kh}\n  StrictHostKeyChecking accept-new\n  BatchMode yes\n"
                    f"  GSSAPIAuthentication no\n  User {args.user}\n  LogLevel ERROR\n")
        cfg = json.load(open(env["FAKEPOD_CONFIG"]))
        cfg["pods"]["sim"]["ssh"]["known_hosts"] = kh
        tpurun_config = os.path.join(work, f"tpurun.{n}.json")
        json.dump(cfg, open(tpurun_config, "w"))
        for p in (ssh_config, tpurun_config):
            os.chmod(p, 0o644)
        subprocess.run(["chown", args.user, work])
        commands = tools(args.user, hosts, ssh_config, bin_copy, tpurun_config)
        if n > args.loop_max:
            del commands["ssh-loop"]
        # Warm-up: records host keys and fills caches for every tool alike.
        for argv in commands.values():
            measure(argv, work)
        samples = {name: [] for name in commands}
        for _ in range(args.reps):
            for name, argv in commands.items():
                samples[name].append(measure(argv, work))
        for name, runs in samples.items():
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            rss = max(r[2] for r in runs)
            rows.append({"workers": n, "tool": name, "wall_s": round(wall, 3), "client_cpu_s": round(cpu, 3),
                         "peak_rss_mb": round(rss, 1), "reps": len(runs)})
        print_table(rows, n)
    write_outputs(rows, results_dir)


def print_table(rows, n):
    at_n = [r for r in rows if r["workers"] == n]
    base = {r["tool"]: r for r in at_n}
    t = base["tpurun"]["wall_s"]
    print(f"\n{n} workers (median of {at_n[0]['reps']} runs)")
    print(f"  {'tool':<14}{'wall s':>9}{'client cpu s':>14}{'peak rss MB':>13}{'tpurun/tool':>13}")
    for r in at_n:
        ratio = t / r["wall_s"] if r["wall_s"] > 0 else float("nan")
        print(f"  {r['tool']:<14}{r['wall_s']:>9.3f}{r['client_cpu_s']:>14.3f}{r['peak_rss_mb']:>13.1f}{ratio:>13.2f}")
    sys.stdout.flush()


def write_outputs(rows, results_dir):
    path = os.path.join(results_dir, "fanout.csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    print(f"\nwrote {path}")
    if shutil.which("gnuplot"):
        tools_seen = sorted({r["tool"] for r in rows}, key=lambda t: (t != "tpurun", t))
        data = os.path.join(results_dir, "fanout.dat")
        with open(data, "w") as f:
            for tool in tools_seen:
                f.write(f'"{tool}"\n')
                for r in (r for r in rows if r["tool"] == tool):
                    f.write(f"{r['workers']} {r['wall_s']}\n")
                f.write("\n\n")
        png = os.path.join(results_dir, "fanout.png")
        plot = ", ".join(f"'{data}' index {i} with linespoints title columnheader(1)" for i in range(len(tools_seen)))
        script = (f"set terminal png size 900,560; set output '{png}'; set key left top;"
                  f"set title 'Run `true` on every worker (median wall time)'; set xlabel 'workers';"
                  f"set ylabel 'seconds'; set grid; plot {plot}")
        subprocess.run(["gnuplot", "-e", script], check=False)
        print(f"wrote {png}")
    ratios(rows)


def ratios(rows):
    def wall(tool, n):
        return next((r["wall_s"] for r in rows if r["tool"] == tool and r["workers"] == n), None)
    sizes = sorted({r["workers"] for r in rows})
    print("\ntargets:")
    if 32 in sizes:
        t, p = wall("tpurun", 32), wall("pdsh", 32)
        print(f"  tpurun / pdsh at 32 workers = {t / p:.2f} (target <= 0.65)")
    if len(sizes) >= 2:
        a, b = sizes[0], sizes[-1]
        ta, tb = wall("tpurun", a), wall("tpurun", b)
        print(f"  tpurun time per worker: {ta / a * 1000:.1f} ms at {a}, {tb / b * 1000:.1f} ms at {b} "
              f"(linear growth means these stay close or fall)")


if __name__ == "__main__":
    main()
