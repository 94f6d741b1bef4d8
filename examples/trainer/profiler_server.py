"""The fake trainer's profiler server: what `jax.profiler.start_server(PORT)`
serves, tensorflow.ProfilerService/Profile over gRPC, behaving as the real
server does for a pod-wide capture (one Profile call per host, one session id,
one start time a little ahead).

Sources (public): the server in tsl, openxla/xla
xla/tsl/profiler/rpc/profiler_server.cc and profiler_service_impl.cc; the
session it opens, tsl/profiler/lib/profiler_session.cc and profiler_lock.cc
(tensorflow/tensorflow third_party/xla/third_party/tsl/); how it saves the
trace, xla/tsl/profiler/rpc/client/save_profile.cc (SaveXSpace) and
xla/tsl/profiler/utils/file_system_utils.h (ProfilerJoinPath); what it does to
the trace before saving, xla/tsl/profiler/convert/post_process_single_host_xplane.cc
and utils/timestamp_utils.cc. On a Profile call it:

  - refuses at once, INTERNAL "Another profiling session active.", while
    another session runs in the process, including one still waiting for its
    start time (ProfilerSession takes the process-wide ProfilerLock before it
    waits; the server wraps any session error as INTERNAL with its message);
  - with opts.version >= 1, sleeps until opts.start_timestamp_ns when that is
    ahead (late: starts at once); with version 0 the session replaces the
    options with its defaults, so the start time is ignored (ProfilerSession's
    GetOptions);
  - traces for opts.duration_ms, measured from the start; request.duration_ms
    is not read. 0 means no tracing at all: the trace is collected at once
    (the .proto's "0: until interrupted" is not what Profile does);
  - a call the client cancels while tracing ends CANCELLED, and nothing is
    written;
  - writes the trace on its own file system to
    ProfilerJoinPath(repository_root, session_id) + "/" + host_name +
    ".xplane.pb", ':' written as '_' ("10.0.0.2:8466" -> 10.0.0.2_8466.xplane.pb),
    creating the directories (mode 0755). An empty host_name is not replaced by
    the server's own name: the file is ".xplane.pb". An empty repository_root
    and session_id give a path relative to the server's working directory;
  - a directory or file it cannot create: INTERNAL "<path>; <strerror>" (tsl's
    IOError), after the tracing;
  - answers ProfileResponse{empty_trace} (true when no line of any plane has
    an event), and no tool data.

The trace is a small XSpace of the project's own making (proto/xplane.proto):
hostnames = [gethostname()]; a "/host:CPU" plane with one line (the trainer's
main thread) whose events are the trainer's spans within the traced window
(start + opts.duration_ms), clipped to it (a Timeline the trainer marks:
"compile", "train" with stat step_num as jax.profiler.StepTraceAnnotation
writes it, "stalled in collective"); and a "Task Environment" plane with uint64 stats
profile_start_time and profile_stop_time (Unix ns). As the real session does,
line timestamps are written relative to the session's start (tsl
NormalizeTimestamps): an event's Unix time is profile_start_time +
XLine.timestamp_ns + XEvent.offset_ps / 1000.

One liberty: a real TraceMe is recorded only if the profiler was on when it
began (its constructor checks TraceMeRecorder::Active(); tsl/profiler/lib/
traceme.h), so the step in progress at the start is missing from a real
trace. Here it is kept, clipped to the start: every host's trace then begins
with an event at its session's start, which is what lets a test check that
hosts given one start time line up (on a real pod the steps themselves line
up, held together by collectives).

Not reproduced: Terminate, Monitor, ContinuousProfiling; request.max_events
(unused by the real server too); opts.advanced_configuration's
override_hostname; real tracers.

Needs python3-grpcio and python3-protobuf (Debian), imported on start();
Timeline alone is standard library.
"""
import collections
import os
import socket
import threading
import time

SERVICE = "tensorflow.ProfilerService"
LOCK_CONTENTION = "Another profiling session active."  # tsl kProfilerLockContention
HOST_PLANE = "/host:CPU"  # tsl kHostThreadsPlaneName
TASK_ENV_PLANE = "Task Environment"  # tsl kTaskEnvPlaneName
XPLANE_SUFFIX = "xplane.pb"  # tsl save_profile.cc kXPlanePb

Span = collections.namedtuple("Span", "name begin_ns end_ns stats")


class Timeline:
    """What the trainer's main thread is doing, as consecutive spans: the
    events a trace shows. begin(name, **int_stats) ends the span in progress
    and starts the next, now. Finished spans are kept only while a session
    records (as TraceMe records only while a profiler runs); the one in
    progress is always known, so a trace starting mid-span shows it from the
    session's start."""

    def __init__(self, thread_name="MainThread"):
        self.thread_id = threading.get_native_id()
        self.thread_name = thread_name
        self._lock = threading.Lock()
        self._current = None  # (name, begin_ns, stats)
        self._recorded = None  # a list while a session records

    def begin(self, name, **stats):
        now = time.time_ns()
        with self._lock:
            if self._current is not None and self._recorded is not None:
                name0, begin0, stats0 = self._current
                self._recorded.append(Span(name0, begin0, now, stats0))
            self._current = (name, now, stats)

    def start_recording(self):
        with self._lock:
            self._recorded = []

    def stop_recording(self, start_ns, stop_ns):
        """The spans within [start_ns, stop_ns], clipped to it; ends recording."""
        with self._lock:
            spans, self._recorded = self._recorded or [], None
            if self._current is not None:
                name, begin, stats = self._current
                spans.append(Span(name, begin, stop_ns, stats))
        clipped = []
        for s in spans:
            begin, end = max(s.begin_ns, start_ns), min(s.end_ns, stop_ns)
            if end > begin:
                clipped.append(s._replace(begin_ns=begin, end_ns=end))
        return clipped


def join_path(*parts):
    """tsl's ProfilerJoinPath: empty parts skipped, one '/' between parts (a
    later part's leading '/' dropped, so it never restarts at the root)."""
    out = ""
    for p in parts:
        if not p:
            continue
        if not out:
            out = p
            continue
        p = p[1:] if p.startswith("/") else p
        out = out + p if out.endswith("/") else out + "/" + p
    return out


def trace_path(repository_root, session_id, host_name):
    """Where SaveXSpace writes: <root>/<session>/<host>.xplane.pb, ':' as '_'."""
    file_name = ("%s.%s" % (host_name, XPLANE_SUFFIX)).replace(":", "_")
    return join_path(repository_root, session_id), join_path(join_path(repository_root, session_id), file_name)


def build_xspace(xp, spans, start_ns, stop_ns, thread_id, thread_name, hostname):
    """The XSpace a session with these spans writes (xp: the xplane_pb2 module)."""
    space = xp.XSpace(hostnames=[hostname])
    host = space.planes.add(id=0, name=HOST_PLANE)
    if spans:
        line = host.lines.add(id=thread_id, name=thread_name, timestamp_ns=0,
                              duration_ps=(stop_ns - start_ns) * 1000)
        event_ids, stat_ids = {}, {}
        for s in spans:
            mid = event_ids.setdefault(s.name, len(event_ids) + 1)
            host.event_metadata[mid].id = mid
            host.event_metadata[mid].name = s.name
            ev = line.events.add(metadata_id=mid, offset_ps=(s.begin_ns - start_ns) * 1000,
                                 duration_ps=(s.end_ns - s.begin_ns) * 1000)
            for key, value in sorted(s.stats.items()):
                sid = stat_ids.setdefault(key, len(stat_ids) + 1)
                host.stat_metadata[sid].id = sid
                host.stat_metadata[sid].name = key
                ev.stats.add(metadata_id=sid, int64_value=int(value))
    env = space.planes.add(id=1, name=TASK_ENV_PLANE)
    for sid, (key, value) in enumerate((("profile_start_time", start_ns), ("profile_stop_time", stop_ns)), 1):
        env.stat_metadata[sid].id = sid
        env.stat_metadata[sid].name = key
        env.stats.add(metadata_id=sid, uint64_value=value)
    return space


def is_empty(space):
    """tsl IsEmpty: no line of any plane has an event."""
    return not any(line.events for plane in space.planes for line in plane.lines)


class ProfilerServer:
    """start(addr) serves Profile until stop(); one session at a time."""

    def __init__(self, timeline=None, log=None):
        self.timeline = timeline or Timeline()
        self.log = log
        self._session = threading.Lock()  # tsl's ProfilerLock, process-wide there
        self._stopping = threading.Event()
        self._server = None

    def start(self, addr):
        """Binds addr ("[::]:PORT" as JAX does; "127.0.0.1:0" in tests) and
        serves; returns the port, 0 when it could not bind."""
        import grpc
        from concurrent import futures
        from tpu_info.proto import profiler_service_pb2 as pb
        from tpu_info.proto import xplane_pb2 as xp
        self._grpc, self._pb, self._xp = grpc, pb, xp
        handler = grpc.method_handlers_generic_handler(SERVICE, {
            "Profile": grpc.unary_unary_rpc_method_handler(
                self._profile, request_deserializer=pb.ProfileRequest.FromString,
                response_serializer=pb.ProfileResponse.SerializeToString)})
        # Several workers, so that a second call meets the busy session rather
        # than a queue (grpc++'s sync server runs calls concurrently too);
        # so_reuseport off: a port in use is an error, as in the metrics server.
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), handlers=[handler],
                             options=[("grpc.so_reuseport", 0)])
        try:
            port = server.add_insecure_port(addr)  # the real server: InsecureServerCredentials
        except RuntimeError:
            port = 0
        if not port:
            self.note("profiler: not served: cannot bind %s" % addr)
            return 0
        server.start()
        self._server = server
        self.note("profiler: serving %s on %s (port %d)" % (SERVICE, addr, port))
        return port

    def stop(self):
        self._stopping.set()
        if self._server is not None:
            self._server.stop(0)
            self._server = None

    def note(self, line):
        if self.log:
            try:
                self.log.write(line + "\n")
            except (OSError, ValueError):
                pass

    def _profile(self, request, context):
        grpc, pb = self._grpc, self._pb
        if not self._session.acquire(blocking=False):
            context.abort(grpc.StatusCode.INTERNAL, LOCK_CONTENTION)
        try:
            opts = request.opts
            # ProfilerSession: with version 0 the options are its defaults,
            # whose start_timestamp_ns is 0. It sleeps through the wait without
            # looking at the call (a cancelled call is noticed after); only
            # this fake's shutdown cuts the wait short.
            if opts.version and opts.start_timestamp_ns:
                ahead = opts.start_timestamp_ns - time.time_ns()
                if ahead > 0 and self._stopping.wait(ahead / 1e9):
                    context.abort(grpc.StatusCode.UNAVAILABLE, "profiler server stopping")
            self.timeline.start_recording()
            start_ns = time.time_ns()
            deadline = start_ns + opts.duration_ms * 1000000  # opts, not request.duration_ms
            while True:
                left = deadline - time.time_ns()
                if left <= 0:
                    break
                self._stopping.wait(min(left / 1e9, 0.01))
                if not context.is_active() or self._stopping.is_set():
                    self.timeline.stop_recording(start_ns, time.time_ns())
                    context.abort(grpc.StatusCode.CANCELLED, "")
            stop_ns = time.time_ns()
            # Events within the traced window, [start, start + duration]: a
            # 0 ms session shows none (the real one, stopped microseconds after
            # it started, has next to nothing).
            spans = self.timeline.stop_recording(start_ns, min(stop_ns, deadline))
            space = build_xspace(self._xp, spans, start_ns, stop_ns, self.timeline.thread_id,
                                 self.timeline.thread_name, socket.gethostname())
            log_dir, path = trace_path(request.repository_root, request.session_id, request.host_name)
            try:
                if log_dir:
                    os.makedirs(log_dir, mode=0o755, exist_ok=True)
                with open(path, "wb") as f:
                    f.write(space.SerializeToString())
            except OSError as e:
                context.abort(grpc.StatusCode.INTERNAL, "%s; %s" % (e.filename or path, e.strerror))
            self.note("profiler: session %r: %d events to %s" % (request.session_id, len(spans), path))
            return pb.ProfileResponse(empty_trace=is_empty(space))
        finally:
            self._session.release()
