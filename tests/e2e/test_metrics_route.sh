#!/usr/bin/env bash
# The metrics route end to end, below `top`: tpurun's SSH transport opens a
# direct-tcpip channel to a real sshd worker, speaks gRPC over it to the fake
# trainer's copy of libtpu's RuntimeMetricService (python grpcio), and decodes
# the figures. No workload is "no_workload"; the trainer's phases show.
# (tests/e2e/metrics_probe.cpp is the client, one JSON line per fetch.)
source "$(dirname "$0")/lib.sh"

[[ -n ${TPURUN_METRICS_PROBE:-} && -x ${TPURUN_METRICS_PROBE:-} ]] || skip "no metrics probe (TPURUN_METRICS_PROBE)"
/usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null || skip "python3-grpcio/python3-protobuf missing"
install -m 755 "$TPURUN_METRICS_PROBE" "$SCRATCH/probe"

# probe I [METRICS_PORT]: alice fetches worker I's metrics; prints the JSON line.
probe() {
  as_user alice "$SCRATCH/probe" "$(worker_ip "$1")" 22 "$(user_home alice)/.ssh/id_ed25519" \
    "$(user_dir alice)/known_hosts" "${2:-8431}"
}

# field JSON EXPR: a python expression over the parsed line `j`.
field() {
  /usr/bin/python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"
}

# probe_holds I PORT EXPR: one probe, its line kept in $SCRATCH/probe.line; EXPR holds over it.
probe_holds() {
  probe "$1" "$2" >"$SCRATCH/probe.line" || return 1
  [[ $(field "$(cat "$SCRATCH/probe.line")" "$3") == True ]]
}

# wait_for I PORT EXPR: probe until EXPR holds (30s at most); prints that line.
# (On a failure, the last line is in $SCRATCH/probe.line.)
wait_for() {
  wait_until "worker $1 port $2: '$3' (last probe: $SCRATCH/probe.line)" 120 probe_holds "$@"
  cat "$SCRATCH/probe.line"
}

# ---- no workload anywhere
idle_worker() {
  local line
  # libtpu serves nothing, sshd's connect is refused.
  line=$(probe 1)
  assert_eq "$(field "$line" 'j["outcome"]')" no_workload "idle worker"
  assert_contains "$(field "$line" 'j["detail"]')" "connection refused"
}
e2e_case idle_worker "no workload anywhere: libtpu serves nothing, sshd's connect is refused"

# ---- a trainer on worker 0
trainer_phases() {
  local pid line
  # Compiling (duty 0), then training at its duty cycle.
  # It compiles until the test has seen it compiling (a file on worker 0 ends the phase).
  pid=$(start_trainer_on 0 alice --forever --step-time 0.3 --compile-until "/tmp/compiled.$$" --duty-cycle 66.5)
  on_exit "wexec 0 -- rm -f /tmp/compiled.$$"
  line=$(wait_for 0 8431 'j["outcome"] == "figures"')
  assert_eq "$(field "$line" '[c["device_id"] for c in j["chips"]]')" "[0, 1, 2, 3]" "one row per chip it holds"
  assert_eq "$(field "$line" '{c["hbm_total"] for c in j["chips"]}')" "{34088157184}" "v4 HBM per chip"
  assert_eq "$(field "$line" 'j["notes"]')" "[]"
  # Served before the first step: the compile phase is visible at 0%.
  assert_eq "$(field "$line" '[c["duty_cycle_pct"] for c in j["chips"]]')" "[0.0, 0.0, 0.0, 0.0]" "compiling"
  wexec 0 -- touch "/tmp/compiled.$$"
  wait_for 0 8431 'j["outcome"] == "figures" and j["chips"][0]["duty_cycle_pct"] == 66.5' >/dev/null
  # Training: HBM holds at its final share (62% of the chip, +64 MiB per chip index).
  # Asked again: one probe's usage and duty cycle are separate calls, and the
  # trainer may have left compiling between them.
  line=$(probe 0)
  assert_eq "$(field "$line" '[c["hbm_used"] for c in j["chips"]]')" \
    "$(/usr/bin/python3 -c 'print([int(0.62 * 34088157184 + i * (64 << 20)) for i in range(4)])')"
  assert_contains "$(wexec 0 -- sh -c 'cat /tmp/tpu_logs/*')" "metrics: serving tpu.monitoring.runtime.RuntimeMetricService on 127.0.0.1:8431"

  # Each worker's localhost is its own: worker 1 runs nothing, so nothing answers there.
  if [[ $(field "$(probe 1)" 'j["outcome"]') == figures ]]; then
    note "worker 1 reaches worker 0's service: workers share the host's loopback (FAKEPOD_NETNS=0?)"
  else
    assert_eq "$(field "$(probe 1)" 'j["outcome"]')" no_workload "worker 1 beside a busy worker 0"
  fi

  # The trainer ends: the service goes with it.
  wexec 0 -- kill -TERM "$pid"
  wait_for 0 8431 'j["outcome"] == "no_workload"' >/dev/null
}
e2e_case trainer_phases "a trainer on w0: compiling at 0%, then its duty cycle and HBM; only w0 answers; gone with the trainer"

stalled_trainer() {
  local pid line held_at
  # --stall holds the TPU and its HBM at 0% duty cycle, and prints no steps.
  pid=$(start_trainer_on 0 bob --stall --step-time 0.2)
  line=$(wait_for 0 8431 'j["outcome"] == "figures" and j["chips"][3]["hbm_used"] == int(0.62 * 34088157184 + 3 * (64 << 20))')
  # Clock time, not synchronization: a second of what would be several steps,
  # were the trainer stepping.
  held_at=$(date +%s%3N)
  wait_until "1 s to pass" 120 eval '(($(date +%s%3N) >= held_at + 1000))'
  line=$(probe 0)
  assert_eq "$(field "$line" '[c["duty_cycle_pct"] for c in j["chips"]]')" "[0.0, 0.0, 0.0, 0.0]" "stalled"
  assert_not_contains "$(trainer_log 0 "$pid")" " step "
  wexec 0 -- kill -TERM "$pid"
  wait_for 0 8431 'j["outcome"] == "no_workload"' >/dev/null
}
e2e_case stalled_trainer "--stall: the TPU and its HBM held at 0% duty cycle, and no step printed"

metrics_address() {
  start_trainer_on 0 alice --forever --metrics-addr 127.0.0.1:18431 >/dev/null
  wait_for 0 18431 'j["outcome"] == "figures"' >/dev/null
  assert_eq "$(field "$(probe 0 8431)" 'j["outcome"]')" no_workload "default port unused"
}
e2e_case metrics_address "the address knob: the service on another port, and nothing on the default one"

e2e_run
