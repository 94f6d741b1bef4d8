#!/usr/bin/env bash
# Multi-slice runs: two slices carved out of the simulated pod (workers 0-3
# and 4-7) run one job as one gang. Every worker gets the MEGASCALE_* and
# TPURUN_* variables (checked value by value on every worker); a failure on
# slice 1 stops slice 0; kill --run stops both; claims on a slice count; bad
# slice lists get clear errors. Asserts on states and files, never on timings.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gang_lib.sh"
require_tpurun
board_dir=$FAKEPOD_NFS/logs/.board
on_exit "rm -f '$(srv "$board_dir")'/slice-b.*.json"

cfg=$SCRATCH/multislice.json
cat >"$cfg" <<JSON
{ "default_pod": "slice-a",
  "pods": {
    $(carved_pod slice-a 0 3),
    $(carved_pod slice-b 4 7),
    $(carved_pod odd-logs 0 1 "$FAKEPOD_NFS/elsewhere"),
    "ms": { "slices": ["slice-a", "slice-b"], "megascale_port": 8476 } } }
JSON
chmod 644 "$cfg"
chmod 755 "$SCRATCH"
FAKEPOD_CONFIG=$cfg  # tpurun_as (and gang_lib's helpers) use this config
proj=$(make_project alice msproj)
logs=$FAKEPOD_NFS/logs/alice/msproj
rm -rf "$(srv "$logs")"  # runs of an earlier pass
# run_of: the run id that stage printed on stderr.
run_of() { sed -n 's/^tpurun: run \([^ ]*\) → .*/\1/p' <<<"$ERR"; }

bad_slice_lists() {
  local bad
  expect_exit 2 tpurun_as alice -C "$proj" --pod slice-a,slice-bb stage -- true
  assert_contains "$ERR" "--pod slice-a,slice-bb: no pod named 'slice-bb' (did you mean 'slice-b'?)"
  expect_exit 2 tpurun_as alice -C "$proj" --pod slice-a,slice-a stage -- true
  assert_contains "$ERR" "slice 'slice-a' is listed twice"
  expect_exit 2 tpurun_as alice -C "$proj" --pod slice-a,odd-logs stage -- true
  assert_contains "$ERR" "slices 'slice-a' and 'odd-logs' have different logs_root"
  expect_exit 2 tpurun_as alice -C "$proj" --pod ms,slice-b stage -- true
  assert_contains "$ERR" "'ms' is itself made of slices; list its slices (slice-a, slice-b) instead"
  bad=$SCRATCH/bad.json
  sed 's/"slices": \["slice-a", "slice-b"\]/"slices": ["slice-a", "slcie-b"]/' "$cfg" >"$bad"
  chmod 644 "$bad"
  expect_exit 2 as_user alice "$TPURUN" --config "$bad" status
  assert_contains "$ERR" "$bad:6: pods.ms.slices[1]: no pod named 'slcie-b' (did you mean 'slice-b'?)"
  expect_exit 2 tpurun_as alice -C "$proj" --pod slice-a,slice-b stage --env MEGASCALE_PORT=1 -- true
  assert_contains "$ERR" "--env MEGASCALE_PORT: tpurun sets"
  expect_exit 2 tpurun_as alice -C "$proj" --pod slice-a,slice-b stage --worker 0-3 -- true
  assert_contains "$ERR" "a multi-slice run needs every worker of every slice"
  expect_exit 2 tpurun_as alice -C "$proj" stage --megascale-port 9000 -- true
  assert_contains "$ERR" "--megascale-port: pod 'slice-a' is a single slice"
  # (The first case: no run of msproj before it.)
  [[ ! -e $(srv "$logs") ]] || fail "a refused stage created a log dir"
}
e2e_case bad_slice_lists "bad slice lists: clear errors naming the flag or file:line, nothing launched"

slices_dry_run() {
  expect_exit 0 tpurun_as alice -C "$proj" --pod slice-a,slice-b stage --dry-run -- true
  assert_contains "$OUT" "2 slices (slice-a: w0-3, slice-b: w4-7), MEGASCALE_COORDINATOR_ADDRESS=$(worker_ip 0):8080"
  assert_contains "$OUT" "w5 s1w1 $(worker_ip 5)"
}
e2e_case slices_dry_run "--dry-run shows the slices, the coordinator and each worker's place"

slice_variables() {
  local run log_dir i s k want
  expect_exit 0 tpurun_as alice -C "$proj" --pod slice-a,slice-b stage --raw -- sh -c \
    'env | grep -E "^(MEGASCALE_|TPURUN_(WORKER|NUM_WORKERS|SLICE|SLICE_WORKER|NUM_SLICES)=)" | LC_ALL=C sort'
  assert_contains "$ERR" "launched on 8 workers in 2 slices"
  assert_contains "$ERR" "succeeded: all 8 workers exited 0"
  run=$(run_of)
  log_dir=$(srv "$logs/$run")
  [[ $run == *_slice-a-slice-b ]] || fail "run id '$run' does not name the slices"
  for i in $(seq 0 7); do
    s=$((i / 4)) k=$((i % 4))
    want=$(LC_ALL=C sort <<EOF
MEGASCALE_COORDINATOR_ADDRESS=$(worker_ip 0):8080
MEGASCALE_NUM_SLICES=2
MEGASCALE_SLICE_ID=$s
MEGASCALE_PORT=8080
TPURUN_SLICE=$s
TPURUN_SLICE_WORKER=$k
TPURUN_NUM_SLICES=2
TPURUN_WORKER=$i
TPURUN_NUM_WORKERS=8
EOF
)
    assert_eq "$(cat "$log_dir/worker$i.log")" "$want" "worker$i.log"
    assert_contains "$OUT" "[w$i s${s}w$k $(worker_ip "$i")] MEGASCALE_SLICE_ID=$s"
  done
  /usr/bin/python3 - "$log_dir/run.json" "$(worker_ip 0)" <<'PY' || fail "run.json does not record the slices"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["pod"] == "slice-a,slice-b" and r["slices"] == ["slice-a", "slice-b"], r
assert r["megascale"] == {"num_slices": 2, "coordinator": sys.argv[2], "port": 8080}, r["megascale"]
assert [(w["worker"], w["slice"], w["slice_worker"]) for w in r["workers"]] == [(i, i // 4, i % 4) for i in range(8)], r["workers"]
PY
  assert_eq "$(run_field alice "$run" '[(w["worker"], w["slice"], w["slice_worker"]) for w in r["workers"]][5]')" "(5, 1, 1)"
  assert_eq "$(run_field alice "$run" 'r["slices"]')" "['slice-a', 'slice-b']"
}
e2e_case slice_variables "every worker of both slices gets its variables; one log dir, workerN.log by global index, prefixes that name slice and worker"

megascale_port() {
  local port_job='echo "$MEGASCALE_COORDINATOR_ADDRESS $MEGASCALE_PORT $MEGASCALE_NUM_SLICES"'
  local run
  run=$(stage_detached alice "$proj" --pod ms -- sh -c "$port_job")
  wait_verdict alice "$run" succeeded
  assert_eq "$(cat "$(srv "$logs/$run")/worker7.log")" "$(worker_ip 0):8476 8476 2"
  run=$(stage_detached alice "$proj" --pod ms --megascale-port 9100 -- sh -c "$port_job")
  wait_verdict alice "$run" succeeded
  assert_eq "$(cat "$(srv "$logs/$run")/worker2.log")" "$(worker_ip 0):9100 9100 2"
}
e2e_case megascale_port "the config's multi-slice pod: its megascale_port, and --megascale-port over it"

failfast_across_slices() {
  local run
  expect_exit 7 tpurun_as alice -C "$proj" --pod slice-a,slice-b stage -- sh -c \
    'if [ "$TPURUN_SLICE" = 1 ] && [ "$TPURUN_SLICE_WORKER" = 0 ]; then echo "s1w0 broke"; sleep 1; exit 7; fi; exec python3 train.py --forever --metrics-addr none'
  run=$(run_of)
  assert_contains "$ERR" "first failure: w4 s1w0 $(worker_ip 4) exited 7"
  assert_contains "$ERR" "[w4 s1w0 $(worker_ip 4)] s1w0 broke"
  assert_contains "$ERR" "tpurun stopped the run's jobs on the other workers"
  assert_eq "$(run_field alice "$run" 'r["verdict"]')" "failed"
  assert_eq "$(run_field alice "$run" '(r["first_failure"]["worker"], r["first_failure"]["slice"])')" "(4, 1)"
  assert_eq "$(run_field alice "$run" '" ".join(sorted(set(w["state"] for w in r["workers"] if w["worker"] != 4)))')" "stopped"
  no_job_left alice "$run"
  expect_exit 0 tpurun_as alice runs
  assert_contains "$OUT" "failed: w4 s1w0 exited 7 first"
}
e2e_case failfast_across_slices "slice 1's worker 0 fails: slice 0's jobs (blocked like JAX in a collective) are stopped, nothing is left"

restarts_every_slice() {
  local run i
  run=$(stage_detached alice "$proj" --pod slice-a,slice-b --restarts 1 -- sh -c \
    'if [ "$TPURUN_ATTEMPT" = 1 ]; then if [ "$TPURUN_WORKER" = 6 ]; then exit 3; fi; exec python3 train.py --forever --metrics-addr none; fi
     echo "attempt $TPURUN_ATTEMPT: $TPURUN_WORKER $MEGASCALE_SLICE_ID $TPURUN_SLICE_WORKER $MEGASCALE_COORDINATOR_ADDRESS"')
  wait_verdict alice "$run" succeeded
  assert_eq "$(run_field alice "$run" 'r["attempt"]')" "2"
  for i in 1 6; do
    assert_contains "$(cat "$(srv "$logs/$run")/worker$i.log")" \
      "attempt 2: $i $((i / 4)) $((i % 4)) $(worker_ip 0):8080"
  done
  no_job_left alice "$run"
}
e2e_case restarts_every_slice "--restarts relaunches every slice with the same variables: the watcher finds the slices again from run.json's pod"

kill_run_across_slices() {
  local run
  run=$(stage_detached alice "$proj" --pod ms -- python3 train.py --forever --metrics-addr none)
  running_workers() { run_field alice "$run" 'sum(w["state"] == "running" for w in r["workers"])'; }
  wait_until "the run's jobs running on all 8 workers" 120 eval '[[ $(running_workers) == 8 ]]'
  expect_exit 1 tpurun_as alice --pod slice-a,slice-b status --json
  /usr/bin/python3 -c '
import json, sys
d = json.loads(sys.argv[1])
ws = d["workers"]
assert len(ws) == 8, ws
assert all(w["state"] == "busy-self" for w in ws), [w["state"] for w in ws]
assert (ws[6]["slice"], ws[6]["slice_worker"]) == (1, 2), ws[6]
' "$OUT" || fail "status --pod slice-a,slice-b: $OUT"
  expect_exit 0 tpurun_as alice -C "$proj" kill --run "$run" --grace 2s
  assert_contains "$ERR" "run $run was started on pod 'ms': killing it there"
  wait_verdict alice "$run" stopped
  no_job_left alice "$run"
}
e2e_case kill_run_across_slices "status and kill --run see the run as one gang across its slices; kill --run without --pod reaches slice-b too"

kill_every_worker() {
  local run
  run=$(stage_detached alice "$proj" --pod ms -- python3 train.py --forever --metrics-addr none)
  expect_exit 0 tpurun_as alice -C "$proj" --pod slice-a,slice-b kill --grace 2s
  wait_verdict alice "$run" stopped failed
  assert_eq "$(run_field alice "$run" 'r["verdict"]')" "stopped"
  no_job_left alice "$run"
}
e2e_case kill_every_worker "kill on every worker of the slices, under the other name of the same pod: the watcher is told first, the run ends stopped"

claims_on_slices() {
  on_exit "tpurun_as bob release slice-b 2>/dev/null"
  expect_exit 0 tpurun_as bob claim slice-b --for 1h --note "slice test"
  expect_exit 2 tpurun_as alice -C "$proj" --pod ms stage -- true
  assert_contains "$ERR" "pod 'slice-b' is claimed by bob"
  expect_exit 2 tpurun_as bob claim ms --for 1h
  assert_contains "$ERR" "pod 'ms' is made of the slices slice-a, slice-b"
  expect_exit 0 tpurun_as bob release slice-b
}
e2e_case claims_on_slices "a claim on either slice stops a multi-slice stage; the multi-slice pod itself is claimed through its slices"

board_lists_slices() {
  expect_exit 0 tpurun_as alice status --all --json
  assert_eq "$(/usr/bin/python3 -c 'import json,sys; print(" ".join(sorted(p["pod"] for p in json.loads(sys.argv[1])["pods"])))' "$OUT")" \
    "odd-logs slice-a slice-b"
}
e2e_case board_lists_slices "the board: one line per slice, none for the multi-slice pod (the same hosts again)"

e2e_run
