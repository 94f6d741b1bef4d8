"""The fake trainer's copy of libtpu's runtime metrics service.

libtpu serves tpu.monitoring.runtime.RuntimeMetricService (gRPC) on the host's
localhost:8431 while a workload runs, and tpu-info reads it there
(cloud-accelerator-diagnostics, tpu_info/metrics.py). This serves the same
service from the fake trainer, with the same messages on the wire (classes
generated from the project's own proto/libtpu_metrics.proto, whose field
numbers are libtpu's, into tpu_info/proto/), so tpurun's client meets what it
meets on a TPU VM:

  - GetRuntimeMetric for tpu.runtime.hbm.memory.usage.bytes and
    tpu.runtime.hbm.memory.total.bytes (Gauge.as_int) and
    tpu.runtime.tensorcore.dutycycle.percent (Gauge.as_double), one Metric per
    chip with the attribute {key "device-id", int_attr N} (the attribute tpu-info
    sorts by; the key as in apple/axlearn's fake libtpu server,
    axlearn/cloud/gcp/monitoring/tpu_client_test.py);
  - local channel credentials (grpc.local_server_credentials), the server side
    of what tpu-info uses (grpc.local_channel_credentials): plaintext HTTP/2,
    accepted only from a loopback peer;
  - nothing listens before the trainer holds the TPU or after it exits, so a
    client is refused, as when no framework uses the TPU.

Figures follow the trainer's phase: while "compiling" the duty cycle is 0 and
HBM use grows; while "training" the duty cycle is steady and HBM holds; a
stalled trainer holds its HBM at 0% duty cycle.

Needs python3-grpcio and python3-protobuf (Debian). Without them the trainer
runs as before, without the service, and says why in its log.
"""
import os
import threading
import time

# HBM per chip as libtpu reports it: v4 (/dev/accel*) and v5e (/dev/vfio/*),
# the totals in axlearn's tpu_client_test.py v4_8 and v5litepod_4 cases.
HBM_TOTAL_BYTES = {"accel": 34088157184, "vfio": 17044078592}
HBM_RAMP_S = 2.0        # while compiling, HBM use grows to its final figure over this long
HBM_START_FRACTION = 0.05
SERVICE = "tpu.monitoring.runtime.RuntimeMetricService"
USAGE = "tpu.runtime.hbm.memory.usage.bytes"
TOTAL = "tpu.runtime.hbm.memory.total.bytes"
DUTY = "tpu.runtime.tensorcore.dutycycle.percent"


class FakeRuntime:
    """The figures libtpu would report for this trainer, by phase."""

    def __init__(self, device_ids, kind, hbm_fraction, duty_cycle):
        self.device_ids = device_ids
        self.total = HBM_TOTAL_BYTES.get(kind, HBM_TOTAL_BYTES["accel"])
        self.hbm_fraction = hbm_fraction
        self.duty_cycle = duty_cycle
        self.started = time.monotonic()
        self.phase = "compiling"  # then "training" or "stalled"; set by the trainer's main thread

    def hbm_used(self, chip_index):
        final = self.hbm_fraction * self.total + chip_index * (64 << 20)
        if self.phase != "compiling":
            return int(final)
        grown = min(1.0, (time.monotonic() - self.started) / HBM_RAMP_S)
        start = HBM_START_FRACTION * self.total
        return int(start + (final - start) * grown)

    def duty(self):
        return self.duty_cycle if self.phase == "training" else 0.0


def _response(pb, runtime, name):
    now = time.time()
    metrics = []
    for i, dev in enumerate(runtime.device_ids):
        if name == USAGE:
            gauge = pb.Gauge(as_int=runtime.hbm_used(i))
        elif name == TOTAL:
            gauge = pb.Gauge(as_int=runtime.total)
        else:
            gauge = pb.Gauge(as_double=runtime.duty())
        m = pb.Metric(attribute=pb.Attribute(key="device-id", value=pb.AttrValue(int_attr=dev)), gauge=gauge)
        # "the timestamp of the last time the metric value is updated" (the .proto).
        m.timestamp.seconds = int(now)
        m.timestamp.nanos = int((now % 1) * 1e9)
        metrics.append(m)
    return pb.MetricResponse(metric=pb.TPUMetric(name=name, metrics=metrics))


def _serve(addr, runtime, log, started):
    # grpc core writes bind errors to stderr; the job's output is not the place.
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    try:
        import grpc
        from concurrent import futures
        from tpu_info.proto import libtpu_metrics_pb2 as pb
    except ImportError as e:
        _note(log, "metrics: not served (%s; install python3-grpcio and python3-protobuf)" % e)
        return

    def get_runtime_metric(request, context):
        if request.metric_name not in (USAGE, TOTAL, DUTY):
            # What libtpu answers for a name it does not serve is not documented;
            # NOT_FOUND is this fake's choice.
            context.abort(grpc.StatusCode.NOT_FOUND, "metric %s is not served by the fake trainer"
                          % request.metric_name)
        return _response(pb, runtime, request.metric_name)

    def list_supported(request, context):
        return pb.ListSupportedMetricsResponse(
            supported_metric=[pb.SupportedMetric(metric_name=n) for n in (USAGE, TOTAL, DUTY)])

    handler = grpc.method_handlers_generic_handler(SERVICE, {
        "GetRuntimeMetric": grpc.unary_unary_rpc_method_handler(
            get_runtime_metric, request_deserializer=pb.MetricRequest.FromString,
            response_serializer=pb.MetricResponse.SerializeToString),
        "ListSupportedMetrics": grpc.unary_unary_rpc_method_handler(
            list_supported, request_deserializer=pb.ListSupportedMetricsRequest.FromString,
            response_serializer=pb.ListSupportedMetricsResponse.SerializeToString),
    })
    # so_reuseport off: a second trainer on the same address must fail to
    # bind, not share the port (grpc turns SO_REUSEPORT on by default).
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), handlers=[handler],
                         options=[("grpc.so_reuseport", 0)])
    try:
        port = server.add_secure_port(addr, grpc.local_server_credentials(grpc.LocalConnectionType.LOCAL_TCP))
    except RuntimeError as e:
        port = 0
        _note(log, "metrics: not served: %s" % e)
    if not port:
        _note(log, "metrics: not served: cannot bind %s" % addr)
        return
    server.start()
    started.append(server)
    _note(log, "metrics: serving %s on %s" % (SERVICE, addr))


def _note(log, line):
    if log:
        try:
            log.write(line + "\n")
        except (OSError, ValueError):
            pass


def start(addr, runtime, log):
    """Serves in the background (importing grpc takes ~0.1 s); returns a list
    that holds the server once it runs, for stop()."""
    started = []
    threading.Thread(target=_serve, args=(addr, runtime, log, started), daemon=True).start()
    return started


def stop(started):
    for server in started:
        server.stop(0)
