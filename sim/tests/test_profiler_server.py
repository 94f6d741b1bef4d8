"""The fake trainer's profiler server (examples/trainer/profiler_server.py),
called over real gRPC (python3-grpcio) on 127.0.0.1 as a pod-wide capture
calls each host's `jax.profiler.start_server` port: where the trace lands,
that it parses as an XSpace with events inside the traced window, that two
hosts given one session id and one start time write traces that line up, and
the real server's inconvenient answers (a busy session, 0 ms, an unwritable
repository, version 0, a cancelled call).

Time is only asserted where the protocol promises it: a session does not
start before start_timestamp_ns, and traces for opts.duration_ms. Where two
hosts' first events are compared, the bound (ALIGN_NS) is loose on purpose:
both wake at the same start time, on a shared 2-core machine."""
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

TRAINER = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../examples/trainer"))
sys.path.insert(0, TRAINER)

try:
    import grpc
    from tpu_info.proto import profiler_service_pb2 as pb
    from tpu_info.proto import xplane_pb2 as xp
except ImportError:  # python3-grpcio / python3-protobuf missing: the tests skip
    grpc = None
import profiler_server  # noqa: E402

PATH = "/tensorflow.ProfilerService/Profile"
ALIGN_NS = 50 * 1000000
SESSION = "2025_11_24_16_00_00"


def profile_call(port):
    channel = grpc.insecure_channel("127.0.0.1:%d" % port)
    return channel, channel.unary_unary(PATH, request_serializer=pb.ProfileRequest.SerializeToString,
                                        response_deserializer=pb.ProfileResponse.FromString)


def request(root, host_name, duration_ms, start_ns=0, version=1, session=SESSION):
    return pb.ProfileRequest(
        duration_ms=duration_ms, max_events=1000000, tools=["xplane.pb"], repository_root=root,
        session_id=session, host_name=host_name,
        opts=pb.ProfileOptions(version=version, host_tracer_level=2, device_tracer_level=1,
                               start_timestamp_ns=start_ns, duration_ms=duration_ms))


def read_space(path):
    with open(path, "rb") as f:
        return xp.XSpace.FromString(f.read())


def plane(space, name):
    found = [p for p in space.planes if p.name == name]
    if len(found) != 1:
        raise AssertionError("%d planes named %r in %s" % (len(found), name, [p.name for p in space.planes]))
    return found[0]


def session_times(space):
    """profile_start_time and profile_stop_time of the Task Environment plane."""
    env = plane(space, profiler_server.TASK_ENV_PLANE)
    stats = {env.stat_metadata[s.metadata_id].name: s.uint64_value for s in env.stats}
    return stats["profile_start_time"], stats["profile_stop_time"]


def events(space):
    """(name, stats, begin_ns, end_ns) in Unix ns, of the host plane's events."""
    start, _ = session_times(space)
    host = plane(space, profiler_server.HOST_PLANE)
    out = []
    for line in host.lines:
        for ev in line.events:
            begin = start + line.timestamp_ns + ev.offset_ps // 1000
            stats = {host.stat_metadata[s.metadata_id].name: s.int64_value for s in ev.stats}
            out.append((host.event_metadata[ev.metadata_id].name, stats, begin, begin + ev.duration_ps // 1000))
    return sorted(out, key=lambda e: e[2])


class Stepper:
    """Marks 'train' steps on a timeline every `period` s, like the trainer's loop."""

    def __init__(self, timeline, period=0.02):
        self.timeline, self.period, self.done = timeline, period, threading.Event()
        self.timeline.begin("train", step_num=1)
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        k = 1
        while not self.done.wait(self.period):
            k += 1
            self.timeline.begin("train", step_num=k)

    def stop(self):
        self.done.set()
        self.thread.join()


@unittest.skipIf(grpc is None, "needs python3-grpcio and python3-protobuf")
class ProfilerServerTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.root = os.path.join(self.dir, "logs", "plugins", "profile")  # not there yet: the server makes it
        self.servers, self.steppers, self.channels = [], [], []

    def tearDown(self):
        for s in self.steppers:
            s.stop()
        for c in self.channels:
            c.close()
        for s in self.servers:
            s.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def serve(self, steps=True):
        server = profiler_server.ProfilerServer(profiler_server.Timeline())
        port = server.start("127.0.0.1:0")
        self.assertGreater(port, 0)
        self.servers.append(server)
        if steps:
            self.steppers.append(Stepper(server.timeline))
        channel, call = profile_call(port)
        self.channels.append(channel)
        return server, port, call

    def test_trace_lands_at_root_session_host_and_parses_with_events_in_the_window(self):
        server, port, call = self.serve()
        host_name = "127.0.0.1:%d" % port
        start_ns = time.time_ns() + 300 * 1000000
        reply = call(request(self.root, host_name, 400, start_ns), timeout=30)
        self.assertFalse(reply.empty_trace)
        self.assertEqual(len(reply.tool_data), 0)
        # ':' of the address becomes '_' in the file name (tsl SaveXSpace).
        path = os.path.join(self.root, SESSION, "127.0.0.1_%d.xplane.pb" % port)
        self.assertEqual(os.listdir(os.path.join(self.root, SESSION)), [os.path.basename(path)])
        space = read_space(path)
        self.assertEqual(list(space.hostnames), [os.uname().nodename])
        start, stop = session_times(space)
        self.assertGreaterEqual(start, start_ns)  # the start time is honoured
        self.assertGreaterEqual(stop - start, 400 * 1000000)  # and traced for opts.duration_ms
        evs = events(space)
        self.assertGreater(len(evs), 1)
        for name, stats, begin, end in evs:
            self.assertEqual(name, "train")
            self.assertIn("step_num", stats)
            self.assertLessEqual(start, begin)
            self.assertLess(begin, end)
            self.assertLessEqual(end, stop)
        steps = [e[1]["step_num"] for e in evs]
        self.assertEqual(steps, list(range(steps[0], steps[0] + len(steps))))
        # The step in progress at the start is shown from the start (clipped).
        self.assertEqual(evs[0][2], start)

    def test_two_hosts_given_one_session_and_start_time_line_up(self):
        calls = [self.serve() for _ in range(2)]
        start_ns = time.time_ns() + 500 * 1000000
        replies, errors = [None, None], []

        def capture(i, port, call):
            try:
                replies[i] = call(request(self.root, "127.0.0.1:%d" % port, 300, start_ns), timeout=30)
            except grpc.RpcError as e:
                errors.append(e)
        threads = [threading.Thread(target=capture, args=(i, port, call)) for i, (_, port, call) in enumerate(calls)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        firsts = []
        for (_, port, _), reply in zip(calls, replies):
            self.assertFalse(reply.empty_trace)
            space = read_space(os.path.join(self.root, SESSION, "127.0.0.1_%d.xplane.pb" % port))
            start, _ = session_times(space)
            self.assertGreaterEqual(start, start_ns)
            firsts.append(events(space)[0][2])
        self.assertEqual(sorted(os.listdir(os.path.join(self.root, SESSION))),
                         sorted("127.0.0.1_%d.xplane.pb" % port for _, port, _ in calls))
        self.assertLess(abs(firsts[0] - firsts[1]), ALIGN_NS, firsts)

    def test_a_second_call_while_a_session_runs_or_waits_is_refused(self):
        server, port, call = self.serve()
        first = call.future(request(self.root, "a", 200, time.time_ns() + 1000 * 1000000))
        deadline = time.monotonic() + 10
        while not server._session.locked():  # the first call holds the session, waiting for its start
            self.assertLess(time.monotonic(), deadline, "the first call never reached the server")
            time.sleep(0.01)
        with self.assertRaises(grpc.RpcError) as caught:
            call(request(self.root, "b", 100), timeout=30)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INTERNAL)
        self.assertEqual(caught.exception.details(), "Another profiling session active.")
        self.assertFalse(first.result(timeout=30).empty_trace)
        self.assertEqual(os.listdir(os.path.join(self.root, SESSION)), ["a.xplane.pb"])
        # Once it is over, the next call is served.
        self.assertFalse(call(request(self.root, "b", 50), timeout=30).empty_trace)

    def test_zero_duration_writes_an_empty_trace_at_once(self):
        server, port, call = self.serve()
        reply = call(request(self.root, "h", 0), timeout=30)
        self.assertTrue(reply.empty_trace)
        space = read_space(os.path.join(self.root, SESSION, "h.xplane.pb"))
        self.assertEqual(events(space), [])
        start, stop = session_times(space)
        self.assertLessEqual(start, stop)

    def test_an_unwritable_repository_is_internal_with_the_path(self):
        server, port, call = self.serve()
        blocker = os.path.join(self.dir, "a-file")
        open(blocker, "w").close()
        root = os.path.join(blocker, "plugins", "profile")  # under a file: not even root can make it
        with self.assertRaises(grpc.RpcError) as caught:
            call(request(root, "h", 50), timeout=30)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INTERNAL)
        self.assertEqual(caught.exception.details(), "%s; Not a directory" % os.path.join(blocker, "plugins"))
        if os.geteuid() != 0:  # a directory without write permission (root would write anyway)
            ro = os.path.join(self.dir, "ro")
            os.mkdir(ro, 0o500)
            with self.assertRaises(grpc.RpcError) as caught:
                call(request(ro, "h", 50), timeout=30)
            self.assertEqual(caught.exception.details(), "%s; Permission denied" % os.path.join(ro, SESSION))

    def test_an_empty_host_name_is_not_filled_in(self):
        server, port, call = self.serve()
        call(request(self.root, "", 50), timeout=30)
        self.assertEqual(os.listdir(os.path.join(self.root, SESSION)), [".xplane.pb"])

    def test_version_0_ignores_the_start_time(self):
        server, port, call = self.serve()
        start_ns = time.time_ns() + 60 * 1000000000  # a minute ahead: a version-1 call would wait for it
        call(request(self.root, "h", 50, start_ns, version=0), timeout=10)
        start, _ = session_times(read_space(os.path.join(self.root, SESSION, "h.xplane.pb")))
        self.assertLess(start, start_ns)

    def test_a_cancelled_call_writes_nothing(self):
        server, port, call = self.serve()
        with self.assertRaises(grpc.RpcError) as caught:
            call(request(self.root, "h", 5000), timeout=0.5)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        deadline = time.monotonic() + 10
        while server._session.locked():  # the server notices within its 10 ms polls
            self.assertLess(time.monotonic(), deadline, "the server kept the session")
            time.sleep(0.01)
        self.assertFalse(os.path.exists(os.path.join(self.root, SESSION, "h.xplane.pb")))

    def test_paths_join_as_tsl_does(self):
        self.assertEqual(profiler_server.trace_path("/r/", "/s", "10.0.0.2:8466"),
                         ("/r/s", "/r/s/10.0.0.2_8466.xplane.pb"))
        self.assertEqual(profiler_server.trace_path("", "", "h"), ("", "h.xplane.pb"))
        self.assertEqual(profiler_server.trace_path("/r", "", "[::1]:9"), ("/r", "/r/[__1]_9.xplane.pb"))


@unittest.skipIf(grpc is None, "needs python3-grpcio and python3-protobuf")
@unittest.skipUnless(os.geteuid() == 0 and shutil.which("unshare"), "needs root and unshare (a private /dev)")
class TrainerProfilerTest(unittest.TestCase):
    """train.py --profiler-port HOST:PORT, holding fake /dev/accel* in a
    private mount namespace: its trace shows its own steps."""

    def test_the_trainers_steps_are_in_its_trace(self):
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        # Its /dev and /tmp (lockfile, logs) are its own; the trace goes to
        # /var/tmp, which both see.
        work = tempfile.mkdtemp(dir="/var/tmp")
        self.addCleanup(shutil.rmtree, work, True)
        script = ('mount -t tmpfs none /dev && touch /dev/accel0 && mount -t tmpfs none /tmp && '
                  'exec /usr/bin/python3 -B "$0" --forever --step-time 0.05 --metrics-addr none '
                  '--profiler-port 127.0.0.1:%d' % port)
        # The trainer runs from a copy in `work`: a checkout under /tmp would
        # be hidden by the private /tmp.
        trainer = os.path.join(work, "trainer")
        shutil.copytree(TRAINER, trainer, ignore=shutil.ignore_patterns("__pycache__"))
        proc = subprocess.Popen(["unshare", "-m", "sh", "-c", script, os.path.join(trainer, "train.py")],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=work)
        self.addCleanup(lambda: (proc.kill(), proc.communicate()))
        line = proc.stdout.readline()
        if b"fake-trainer: worker" not in line:
            proc.kill()
            out, err = proc.communicate()
            self.fail("the trainer ended before its first line (exit %s): stdout %r, stderr %r" % (
                proc.returncode, line + out, err))
        channel, call = profile_call(port)
        self.addCleanup(channel.close)
        root = os.path.join(work, "plugins", "profile")
        deadline = time.monotonic() + 20
        while True:  # the server starts in the background, as the metrics service does
            try:
                reply = call(request(root, "127.0.0.1:%d" % port, 300, time.time_ns() + 100 * 1000000),
                             timeout=10, wait_for_ready=False)
                break
            except grpc.RpcError as e:
                self.assertEqual(e.code(), grpc.StatusCode.UNAVAILABLE, e.details())
                self.assertLess(time.monotonic(), deadline, "the trainer never served the profiler")
                time.sleep(0.1)
        self.assertFalse(reply.empty_trace)
        space = read_space(os.path.join(root, SESSION, "127.0.0.1_%d.xplane.pb" % port))
        evs = events(space)
        self.assertGreater(len(evs), 2)
        self.assertEqual({e[0] for e in evs}, {"train"})
        start, stop = session_times(space)
        self.assertTrue(all(start <= e[2] < e[3] <= stop for e in evs))


if __name__ == "__main__":
    unittest.main()
