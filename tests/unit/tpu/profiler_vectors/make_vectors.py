#!/usr/bin/python3
"""Writes the test vectors of the profiler server's Profile messages, for a C++
client of tensorflow.ProfilerService/Profile: each message built with the
protobuf runtime from classes protoc generated from the project's own
proto/profiler_service.proto (-> examples/trainer/tpu_info/proto/), whose
field numbers are tsl's (the .proto names its source), serialized as the
client or the server sends it, into NAME.bin, with NAME.txt (text format)
beside it for people.

Run with Debian's python3 and python3-protobuf (scripts/gen-proto).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "../../../.."))
sys.path.insert(0, os.path.join(ROOT, "examples/trainer"))

from google.protobuf import text_format  # noqa: E402
from tpu_info.proto import profiler_service_pb2 as pb  # noqa: E402

START_NS = 1764000000123456789  # a fixed start time (Unix ns), 2025-11-24T16:00:00.123456789Z
ROOT_DIR = "/nfs/logs/run1/plugins/profile"  # <logdir>/plugins/profile, where TensorBoard looks
SESSION = "2025_11_24_16_00_00"  # tsl's client: the local time as YYYY_MM_DD_HH_MM_SS

VECTORS = {
    # Every field of the .proto set, as a pod-wide capture sends it to one host:
    # version 1 (else the server ignores start_timestamp_ns and the levels), the
    # tracer levels of tsl's defaults with Python tracing on, one start time and
    # one session id for all hosts, the host's address as host_name (the server
    # writes ROOT_DIR/SESSION/10.130.0.2_9999.xplane.pb), max_events as tsl's
    # client sends it, duration_ms twice (the server reads opts.duration_ms).
    "request_all_fields": pb.ProfileRequest(
        duration_ms=2000,
        max_events=1000000,
        tools=["xplane.pb", "trace_viewer"],
        opts=pb.ProfileOptions(version=1, host_tracer_level=2, device_tracer_level=1,
                               python_tracer_level=1, start_timestamp_ns=START_NS,
                               duration_ms=2000, repository_path=ROOT_DIR),
        repository_root=ROOT_DIR,
        session_id=SESSION,
        host_name="10.130.0.2:9999"),
    # What `tpurun profile` sends to worker 3 (src/tpu/profile_proto.cpp):
    # only xplane.pb asked for, tsl's default tracer levels, no
    # repository_path (the server reads repository_root), the worker's name
    # as host_name (the server writes ROOT_DIR/SESSION/w3.xplane.pb).
    "request_tpurun": pb.ProfileRequest(
        duration_ms=2000,
        max_events=1000000,
        tools=["xplane.pb"],
        opts=pb.ProfileOptions(version=1, host_tracer_level=2, device_tracer_level=1,
                               start_timestamp_ns=START_NS, duration_ms=2000),
        repository_root=ROOT_DIR,
        session_id=SESSION,
        host_name="w3"),
    # The server's answer when it wrote a trace with events: empty_trace false,
    # no tool data; every field at its default, so zero bytes.
    "response_trace": pb.ProfileResponse(empty_trace=False),
    # Its answer when the trace it wrote has no event (nothing ran, or a 0 ms
    # duration): the file is still written.
    "response_empty_trace": pb.ProfileResponse(empty_trace=True),
    # What an older server answered: the tool data inline (tsl's client then
    # writes ROOT_DIR/SESSION/<host>.<name> itself).
    "response_tool_data": pb.ProfileResponse(tool_data=[
        pb.ProfileToolData(name="trace.json.gz", data=b"\x1f\x8b\x08\x00fake gzip bytes")]),
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
