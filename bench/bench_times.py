"""What the benches' summaries share: their results file ("LABEL MICROSECONDS"
lines, as bench/lib.sh's `timed` writes them) read back as seconds by label,
with each label's median. Use it from a bench's inline Python as

    sys.path.insert(0, BENCH_DIR); from bench_times import load
    times, med = load(results)
"""
import statistics


def load(path):
    times = {}
    for line in open(path):
        label, us = line.split()
        times.setdefault(label, []).append(int(us) / 1e6)
    return times, {k: statistics.median(v) for k, v in times.items()}
