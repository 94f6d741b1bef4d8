#!/usr/bin/python3
"""Writes the test vectors of libtpu's metric messages: each message built with
the protobuf runtime from classes protoc generated from the project's own
proto/libtpu_metrics.proto (-> examples/trainer/tpu_info/proto/), whose field
numbers are libtpu's (the .proto names its source), serialized as the service
sends it, into NAME.bin, with NAME.txt (text format) beside it for people.
tests/unit/tpu/metrics_proto_test.cpp decodes them.

Run with Debian's python3 and python3-protobuf (scripts/gen-proto).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "../../../.."))
sys.path.insert(0, os.path.join(ROOT, "examples/trainer"))

from google.protobuf import text_format  # noqa: E402
from tpu_info.proto import libtpu_metrics_pb2 as pb  # noqa: E402

USAGE = "tpu.runtime.hbm.memory.usage.bytes"
TOTAL = "tpu.runtime.hbm.memory.total.bytes"
DUTY = "tpu.runtime.tensorcore.dutycycle.percent"
STAMP = (1764000000, 123456789)  # a fixed Metric.timestamp, so the bytes do not change


def metric(device, gauge=None, key="device-id", string_id=None, stamp=True):
    value = pb.AttrValue(string_attr=string_id) if string_id is not None else pb.AttrValue(int_attr=device)
    m = pb.Metric(attribute=pb.Attribute(key=key, value=value))
    if gauge is not None:
        m.gauge.CopyFrom(gauge)
    if stamp:
        m.timestamp.seconds, m.timestamp.nanos = STAMP
    return m


def response(name, metrics, description=""):
    return pb.MetricResponse(metric=pb.TPUMetric(name=name, description=description, metrics=metrics))


def ints(values):
    return [metric(i, pb.Gauge(as_int=v)) for i, v in enumerate(values)]


def doubles(values):
    return [metric(i, pb.Gauge(as_double=v)) for i, v in enumerate(values)]


def distribution():
    """A cumulative distribution (megascale latencies): no gauge, a start_timestamp."""
    m = metric(0, None)
    m.start_timestamp.seconds = STAMP[0] - 60
    d = m.distribution
    d.count, d.mean, d.min, d.max = 3, 1.5, 1.0, 2.0
    d.bucket_options.exponential_buckets.num_finite_buckets = 2
    d.bucket_options.exponential_buckets.growth_factor = 2.0
    d.bucket_options.exponential_buckets.scale = 1.0
    d.bucket_counts.extend([0, 2, 1, 0])
    return m


VECTORS = {
    # The three requests tpurun sends (tpu-info sends the same: metric_name only).
    "request_usage": pb.MetricRequest(metric_name=USAGE),
    "request_total": pb.MetricRequest(metric_name=TOTAL),
    "request_duty": pb.MetricRequest(metric_name=DUTY),
    # A v4-8 host, four chips (the figures of axlearn's tpu_client_test v4_8).
    # Chip 0's zero values are set members of a oneof, so they are on the wire.
    "usage_v4": response(USAGE, ints([8522039296 * i for i in range(4)])),
    "total_v4": response(TOTAL, ints([34088157184] * 4)),
    "duty_v4": response(DUTY, doubles([0.0, 25.0, 50.0, 100.0])),
    # Memory per core, duty cycle per chip (v3: two cores per chip).
    "usage_v3_cores": response(USAGE, ints([1 << 30] * 8)),
    "duty_v3_chips": response(DUTY, doubles([10.0, 20.0, 30.0, 40.0])),
    # Values out of device order; one device id given as a string.
    "duty_unordered": response(DUTY, [metric(3, pb.Gauge(as_double=3.5)), metric(1, pb.Gauge(as_double=1.5)),
                                      metric(None, pb.Gauge(as_double=2.5), string_id="2")]),
    # Edges: a negative int64 (a 10-byte varint), a description, a value without a gauge.
    "edge_values": response(USAGE, [metric(0, pb.Gauge(as_int=-1)), distribution(),
                                    metric(7, pb.Gauge(as_bool=True))], description="HBM in use"),
    # A metric with no values, and the empty message (zero bytes).
    "no_values": response(DUTY, []),
    "empty": pb.MetricResponse(),
}


def main():
    for name, message in VECTORS.items():
        with open(os.path.join(HERE, name + ".bin"), "wb") as f:
            f.write(message.SerializeToString())
        with open(os.path.join(HERE, name + ".txt"), "w") as f:
            f.write("# %s, %d bytes\n" % (message.DESCRIPTOR.full_name, message.ByteSize()))
            f.write(text_format.MessageToString(message))
    print("wrote %d vectors to %s" % (len(VECTORS), HERE))


if __name__ == "__main__":
    main()
