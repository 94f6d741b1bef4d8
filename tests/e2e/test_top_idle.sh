#!/usr/bin/env bash
# A worker with no TPU workload, as status and top see it: status on a host
# with no TPU device file says so ("no-device"), even for a user with sudo,
# instead of "partial"; top on a worker that nothing holds takes a metrics
# service's UNAVAILABLE as "no TPU workload" (exit 0), while the same answer
# where a job holds the TPU stays a failure (exit 1).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/board_lib.sh"
require_tpurun

cfg=$SCRATCH/idle.json
cat >"$cfg" <<JSON
{ "pods": {
    $(carved_pod one 6 6),
    $(carved_pod nodev 6 6 | sed 's|"workers"|"device_globs": ["/dev/tpurun-no-such-device*"], &|') } }
JSON
chmod 644 "$cfg"
chmod 755 "$SCRATCH"

# svc_listening: something listens on worker 6's 127.0.0.1:8431 (grpcio binds
# 127.0.0.1 as a dual-stack socket: ::ffff:127.0.0.1, in tcp6).
svc_listening() {
  wexec 6 -- sh -c "cat /proc/net/tcp /proc/net/tcp6 | grep -q ':20EF [0-9A-F:]* 0A '"
}

# start_unavailable_svc: on worker 6, bob's metrics service that answers
# UNAVAILABLE (it holds no TPU) on 127.0.0.1:8431, stopped at the case's end
# (it would end by itself after 170 s: not before the case is done with it).
start_unavailable_svc() {
  /usr/bin/python3 -c 'import grpc' 2>/dev/null || skip "python3-grpcio missing"
  [[ ${FAKEPOD_NETNS:-1} != 0 ]] || skip "FAKEPOD_NETNS=0: the workers share one localhost"
  # An earlier case's service is killed at its end: its port is free again
  # before this one binds it (and the wait below sees this one, not that).
  wait_until "port 8431 on w6 to be free" 120 eval '! svc_listening'
  wexec 6 --user bob -- /usr/bin/python3 -c '
import grpc, os, time
from concurrent import futures
open("/tmp/idle-svc.pid", "w").write(str(os.getpid()))
def unavailable(request, context):
    context.abort(grpc.StatusCode.UNAVAILABLE, "no TPU workload")
h = grpc.method_handlers_generic_handler("tpu.monitoring.runtime.RuntimeMetricService",
    {"GetRuntimeMetric": grpc.unary_unary_rpc_method_handler(unavailable)})
s = grpc.server(futures.ThreadPoolExecutor(max_workers=4), handlers=[h], options=[("grpc.so_reuseport", 0)])
s.add_insecure_port("127.0.0.1:8431"); s.start(); time.sleep(170)' &
  local svc=$!
  on_exit "wexec 6 --user bob -- sh -c 'kill \$(cat /tmp/idle-svc.pid)' 2>/dev/null; kill $svc 2>/dev/null"
  wait_until "the UNAVAILABLE service to listen on w6" 120 svc_listening
}

# ---- status
status_no_device() {
  expect_exit 1 b alice --pod nodev status
  assert_contains "$OUT" "no-device"
  assert_contains "$OUT" "no TPU device file"
  assert_not_contains "$OUT" "partial"
  expect_exit 1 b alice --pod nodev status --json
  assert_contains "$OUT" '"no-device"'
  expect_exit 0 b alice --pod one status
  assert_contains "$OUT" "free"
}
e2e_case status_no_device "status with no device file at all says no-device, not partial (alice has passwordless sudo)"

# ---- top
top_unavailable_idle() {
  start_unavailable_svc
  expect_exit 0 b alice --pod one top
  assert_contains "$OUT" "no TPU workload"
  assert_contains "$OUT" "free"
}
e2e_case top_unavailable_idle "top: a metrics service that answers UNAVAILABLE where nothing holds the TPU is no TPU workload"

top_unavailable_held() {
  start_unavailable_svc
  # The same answer while alice's job holds the TPU (its runtime serves no
  # metrics here): the service failing there is an error.
  start_trainer_on 6 alice --forever --metrics-addr none >/dev/null
  expect_exit 1 b alice --pod one top
  assert_contains "$OUT" "UNAVAILABLE"
}
e2e_case top_unavailable_held "top: the same UNAVAILABLE while a job holds the TPU is a failure"

e2e_run
