#!/usr/bin/env python3
"""Generates a deterministic source tree for bench/stage.sh.

Roughly what a research code directory looks like, scaled up: many small
files, some medium ones, a few multi-megabyte ones, a few hundred
directories, some exact duplicates (empty __init__.py files), executable
scripts and symlinks. The same seed always gives the same bytes.
"""
import argparse
import os
import random


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dest")
    parser.add_argument("--files", type=int, default=10000)
    parser.add_argument("--bytes", type=int, default=200 * 1000 * 1000)
    parser.add_argument("--seed", type=int, default=20240419)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    dirs = [""]
    for _ in range(max(1, args.files // 30)):
        parent = rng.choice(dirs)
        if parent.count("/") >= 4:
            parent = ""
        dirs.append(os.path.join(parent, f"d{len(dirs):03d}"))

    # Heavy-tailed sizes, rescaled so the total is what was asked for.
    weights = [rng.paretovariate(1.2) for _ in range(args.files)]
    scale = args.bytes / sum(weights)
    sizes = [int(w * scale) for w in weights]
    sizes[0] += args.bytes - sum(sizes)

    os.makedirs(args.dest, exist_ok=True)
    for d in dirs[1:]:
        os.makedirs(os.path.join(args.dest, d), exist_ok=True)
    for i, size in enumerate(sizes):
        d = rng.choice(dirs)
        if i % 50 == 0:
            name, size = "__init__.py", 0
        else:
            name = f"f{i:05d}" + rng.choice([".py", ".py", ".txt", ".json", ".bin"])
        path = os.path.join(args.dest, d, name)
        if os.path.exists(path):
            name = f"f{i:05d}.dup"
            path = os.path.join(args.dest, d, name)
        with open(path, "wb") as f:
            f.write(rng.randbytes(size))
        if i % 97 == 0:
            os.chmod(path, 0o755)
        if i % 500 == 0:
            os.symlink(name, path + ".link")


if __name__ == "__main__":
    main()
