"""How the fake trainer hangs like a real multi-host job (train.py --hang):
every worker waits in a "collective" that never completes, except the odd
one (--hang-odd N), stuck in a checkpoint write blocked on I/O (a pipe
nobody reads). With --loader-thread a background data-loader thread waits
on its full queue beside them. tpurun stacks should find the odd one."""
import os
import queue
import threading


def loader_loop(batches):
    """A data loader ahead of the step: blocks once its queue is full."""
    n = 0
    while True:
        batches.put(n)
        n += 1


def start_loader():
    batches = queue.Queue(maxsize=4)
    threading.Thread(target=loader_loop, args=(batches,), name="loader", daemon=True).start()
    return batches


def wait_for_peers():
    """A collective whose peer never arrives."""
    threading.Event().wait()


def all_reduce_step():
    wait_for_peers()


def train_loop():
    all_reduce_step()


def write_shard():
    """A write that blocks on I/O: a pipe whose buffer fills and is never read."""
    _, w = os.pipe()
    chunk = b"\0" * 65536
    while True:
        os.write(w, chunk)


def save_checkpoint():
    write_shard()


def hang(worker, odd):
    print("fake-trainer: worker %s %s" % (
        worker, "writes a checkpoint" if worker == odd else "waits for its peers"), flush=True)
    if worker == odd:
        save_checkpoint()
    else:
        train_loop()
