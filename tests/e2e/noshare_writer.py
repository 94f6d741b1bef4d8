"""The job of test_noshare_logs.sh (copied into its project, run by Debian's
/usr/bin/python3 on each worker): files written into $TPURUN_LOG_DIR the way
jobs write them.

  many N          N small files in many/, an app.log and a metrics.csv of the
                  same names on every worker, names with .tmp in them
  rewrites GATE N the files below (and N small files in many/ on worker 0),
                  then, once GATE exists: one replaced by rename, one
                  rewritten in place at its size, one truncated and shorter
"""
import os
import sys
import time

d = os.environ["TPURUN_LOG_DIR"]
w = os.environ["TPURUN_WORKER"]


def write(rel, data, mode="wb"):
    path = os.path.join(d, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode) as f:
        f.write(data)


def many(n):
    for i in range(n):
        write("many/f%05d.txt" % i, b"w%s file %d\n" % (w.encode(), i))


def main():
    what = sys.argv[1]
    if what == "many":
        many(int(sys.argv[2]))
        for j in range(50):
            write("app.log", b"w%s line %d\n" % (w.encode(), j), "ab")
        write("metrics.csv", b"".join(b"w%s,%d,%f\n" % (w.encode(), j, j / 7) for j in range(200)))
        write("results.tmp.json", b'{"worker": %s}\n' % w.encode())
        write("my.tmpl", b"template of w%s\n" % w.encode())
        print("done w%s" % w, flush=True)
        return
    gate, n = sys.argv[2], int(sys.argv[3])
    if w == "0":
        many(n)
    write("renamed.txt", b"a" * 5000)
    write("inplace.bin", b"a" * 5000)
    write("trunc.log", b"x" * 7999 + b"\n")
    print("ready w%s" % w, flush=True)
    for _ in range(6000):  # the test's gate, 10 min at most
        if os.path.exists(gate):
            break
        time.sleep(0.1)
    write(".renamed.new", b"b" * 6000)
    os.rename(os.path.join(d, ".renamed.new"), os.path.join(d, "renamed.txt"))
    with open(os.path.join(d, "inplace.bin"), "r+b") as f:
        f.write(b"c" * 5000)
    write("trunc.log", b"short\n")
    print("after the cut w%s" % w, flush=True)


main()
