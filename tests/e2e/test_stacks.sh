#!/usr/bin/env bash
# tpurun stacks (docs/stacks.md): a run hung like a multi-host job (the fake
# trainer's --hang: every worker in a "collective", one in a checkpoint
# write) has its Python stacks taken on every worker at once, the odd worker
# named apart from the others; the job's own SIGUSR1/SIGUSR2 handlers are
# never called and it goes on; bob's Python process on the same worker, made
# to look like a process of alice's run, is neither signalled nor read. The
# watcher's flight recorder saves the stacks before it stops a stalled run or
# the rest of a gang after a failure, and `stacks RUN` prints them after.
# One case on the whole 8-worker pod (the odd one out of 8); the others on
# its first 2 or 4 workers.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gang_lib.sh"
require_tpurun
N=$FAKEPOD_WORKERS
proj=$(make_project alice proj)
logs=$FAKEPOD_NFS/logs/alice/proj
hang_job=(/usr/bin/python3 train.py --hang --metrics-addr none)

# small_pod K: the cases' config becomes a pod of the first K workers.
small_pod() {
  FAKEPOD_CONFIG=$SCRATCH/pod$1.json
  printf '{ "default_pod": "sim", "pods": { %s } }\n' "$(carved_pod sim 0 $(($1 - 1)))" >"$FAKEPOD_CONFIG"
  chmod 644 "$FAKEPOD_CONFIG"
}

# hanging RUN K: all K workers' jobs have said where they hang.
hanging() {
  local n
  n=$(cat "$(srv "$logs/$1")"/worker*.log 2>/dev/null | grep -cE "fake-trainer: worker [0-9]+ (waits for its peers|writes a checkpoint)") || true
  ((n >= $2))
}

# bob_python I RUN: bob's Python process on worker I, made to look like one of
# alice's run (its run id, a stacks dir), with faulthandler on tpurun's
# signal and USR handlers that would print into its output; prints its pid.
bob_python() {
  local pid
  # shellcheck disable=SC2016
  pid=$(wexec "$1" --user bob -- bash -c '( exec setsid env TPURUN_RUN_ID="$1" TPURUN_STACKS_DIR=/tmp \
    /usr/bin/python3 -c "$2" >"/tmp/bob-stacks.$BASHPID.log" 2>&1 </dev/null ) & echo $!' _ "$2" '
import faulthandler, signal, sys, threading
faulthandler.register(signal.SIGRTMIN + 7, file=sys.stdout, all_threads=True)
for s in (signal.SIGUSR1, signal.SIGUSR2):
    signal.signal(s, lambda n, f: print("bob signalled", n, flush=True))
print("bob ready", flush=True)
threading.Event().wait()')
  [[ $pid =~ ^[0-9]+$ ]] || fail "bob's process did not start: $pid"
  on_exit "\"\$FAKEPOD\" exec $1 -- kill -9 $pid"
  wait_until "bob's process is ready" 30 wexec "$1" -- grep -q "bob ready" "/tmp/bob-stacks.$pid.log"
  echo "$pid"
}

bad_input() {
  expect_exit 2 tpurun_as alice stacks --timeout 5h
  assert_contains "$ERR" "--timeout 5h: pick 100ms to 1m"
  expect_exit nonzero tpurun_as alice stacks no-such-run
  assert_contains "$ERR" "no-such-run"
}
e2e_case bad_input "a bad --timeout and an unknown run are refused, with why"

odd_one_out() {
  local run bob out
  # libtpu's metrics served (0% duty cycle while it hangs), as top reads them.
  run=$(stage_detached alice "$proj" -- /usr/bin/python3 train.py --hang --hang-odd 3 --loader-thread --usr-handlers)
  on_exit "tpurun_as alice kill --run $run"
  wait_until "every worker's job hangs" 120 hanging "$run" "$N"
  bob=$(bob_python 3 "$run")

  # The newest running run, by default: w3 apart from the other seven, named.
  expect_exit 0 tpurun_as alice -C "$proj" stacks
  assert_contains "$OUT" "[w0-2,4-7] 7 workers"
  assert_contains "$OUT" "[w3] 1 worker"
  assert_contains "$OUT" "w3 differs: MainThread in hang → save_checkpoint → write_shard"
  assert_contains "$OUT" "wait_for_peers  hang.py:"
  assert_contains "$OUT" "loader_loop  hang.py:"
  assert_contains "$OUT" "w3 "
  assert_not_contains "$OUT" "bob"
  if /usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null; then
    assert_contains "$OUT" "fake-trainer: worker 3 writes a checkpoint  duty 0.0%"
  fi

  expect_exit 0 tpurun_as alice stacks "$run" --json
  out=$OUT
  /usr/bin/python3 - "$out" "$bob" <<'PY' || fail "stacks --json: $out"
import json, sys
d, bob = json.loads(sys.argv[1]), int(sys.argv[2])
assert len(d["workers"]) == 8 and all(w["has_stack"] for w in d["workers"]), d
def functions(w):
    return [f["function"] for p in w["processes"] for t in p.get("threads", []) for f in t["frames"]]
for w in d["workers"]:
    assert ("write_shard" in functions(w)) == (w["worker"] == 3), w
    assert ("wait_for_peers" in functions(w)) == (w["worker"] != 3), w
assert not any(p["pid"] == bob for p in d["workers"][3]["processes"]), d["workers"][3]
assert d["groups"][0]["label"] == "w0-2,4-7" and d["groups"][1]["label"] == "w3", d["groups"]
PY
  expect_exit 0 tpurun_as alice stacks "$run" --worker 0,3 --dry-run
  assert_contains "$OUT" "w3 $(worker_ip 3)"
  assert_not_contains "$OUT" "w1 "
  expect_exit 0 tpurun_as alice stacks "$run" --worker 0,3 --json
  assert_eq "$(json_get "$OUT" '[w["worker"] for w in d["workers"]]')" "[0, 3]"

  # Bob's process: not signalled, nothing in its output, alive.
  assert_eq "$(wexec 3 -- cat "/tmp/bob-stacks.$bob.log")" "bob ready"
  wexec 3 -- kill -0 "$bob" || fail "bob's process is gone"
  # Alice's job: its USR handlers never called, and it goes on.
  assert_not_contains "$(cat "$(srv "$logs/$run")"/worker*.log)" "got SIGUSR"
  assert_eq "$(run_field alice "$run" 'r["verdict"]')" running
  expect_exit 0 tpurun_as alice kill --run "$run"
  wait_verdict alice "$run" stopped
}
e2e_case odd_one_out "8 workers: the one in a checkpoint write is named apart from the 7 in a collective; bob's process and the job's USR handlers untouched"

no_stack() {
  local run
  small_pod 2
  run=$(stage_detached alice "$proj" -- sleep 600)
  on_exit "tpurun_as alice kill --run $run"
  expect_exit 1 tpurun_as alice stacks "$run"
  assert_contains "$OUT" "no Python stack (not Python: sleep)"
  stop_worker 1
  expect_exit 255 tpurun_as alice stacks "$run"
  assert_contains "$OUT" "[w1]"
}
e2e_case no_stack "a job that is not Python: exit 1 and why; a worker down: exit 255"

stall_capture() {
  local run dir
  /usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null || skip "python3-grpcio/python3-protobuf missing"
  small_pod 4
  run=$(stage_detached alice "$proj" --stall-after 3s --on-stall stop -- /usr/bin/python3 train.py --hang --hang-odd 1)
  wait_verdict alice "$run" failed
  assert_eq "$(run_field alice "$run" 'r["first_failure"]["how"]')" stalled
  dir=$(ls -d "$(srv "$logs/$run")"/stacks/*-stalled)
  assert_contains "$(cat "$dir/w1.txt")" "write_shard"
  assert_contains "$(cat "$dir/w0.txt")" "wait_for_peers"
  assert_contains "$(cat "$(srv "$logs/$run")/watcher.log")" "stacks of w0-3 saved in stacks/"
  expect_exit 0 tpurun_as alice runs --no-check
  assert_contains "$OUT" "stacks of w0-3 saved in stacks/"
  expect_exit 0 tpurun_as alice stacks "$run"
  assert_contains "$OUT" "(stalled)"
  assert_contains "$OUT" "w1 differs: MainThread in hang → save_checkpoint → write_shard"
}
e2e_case stall_capture "--on-stall stop: the stacks taken before the stop are in the log dir, runs says so, stacks RUN prints them"

failfast_capture() {
  local run dir go=/tmp/stacks-go.$$
  small_pod 4
  run=$(stage_detached alice "$proj" -- sh -c "if [ \"\$TPURUN_WORKER\" = 2 ]; then while [ ! -e $go ]; do sleep 0.1; done; exit 3; fi; exec ${hang_job[*]}")
  wait_until "workers 0, 1 and 3 hang" 120 hanging "$run" 3
  wexec 2 -- touch "$go"
  on_exit "\"\$FAKEPOD\" exec 2 -- rm -f $go"
  wait_verdict alice "$run" failed
  dir=$(ls -d "$(srv "$logs/$run")"/stacks/*-failed)
  assert_contains "$(cat "$dir/w0.txt")" "wait_for_peers"
  assert_contains "$(run_field alice "$run" 'r["first_failure"]["stacks"]')" "stacks of w0-1,3 saved in stacks/"
  expect_exit 0 tpurun_as alice stacks "$run" --json
  assert_eq "$(json_get "$OUT" 'd["captures"][0]["reason"]')" failed
}
e2e_case failfast_capture "fail-fast: w2 exits 3 while the others hang; their stacks are saved before they are stopped"


# none_running U: none of U's runs is still running (the cases' runs above
# are stopped as each case ends).
none_running() {
  tpurun_as "$1" runs --json --no-check | /usr/bin/python3 -c '
import json, sys
sys.exit(any(r["verdict"] in (None, "running") for r in json.load(sys.stdin)["runs"]))'
}

holders() {
  local mine bobs out
  small_pod 4
  wait_until "no run of alice's is running" 60 none_running alice
  # A job of alice's started outside tpurun on w1, one of bob's on w2: both
  # hold the TPU, neither has tpurun's bootstrap.
  mine=$(start_trainer_on 1 alice --forever --metrics-addr none)
  bobs=$(start_trainer_on 2 bob --forever --metrics-addr none)
  expect_exit 0 tpurun_as alice stacks --dry-run
  assert_contains "$OUT" "would take the Python stacks of your processes that hold the TPU on 4 workers"
  # No run of hers is running: her own processes that hold the TPU, on every worker.
  expect_exit 1 tpurun_as alice stacks
  assert_contains "$OUT" "your processes that hold the TPU: stacks of 4 workers"
  assert_contains "$OUT" "started without tpurun's bootstrap"
  expect_exit 1 tpurun_as alice stacks --json
  out=$OUT
  /usr/bin/python3 - "$out" "$mine" "$bobs" <<'PY' || fail "stacks --json: $out"
import json, sys
d, mine, bobs = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
assert d["run_id"] is None, d
procs = {w["worker"]: [p["pid"] for p in w["processes"]] for w in d["workers"]}
assert procs == {0: [], 1: [mine], 2: [], 3: []}, procs
why = d["workers"][1]["processes"][0]["no_stack"]
assert "started without tpurun's bootstrap" in why, why
PY
  # Bob's job: neither listed nor signalled, and still there.
  wexec 2 -- kill -0 "$bobs" || fail "bob's job on w2 is gone"
}
e2e_case holders "no run running: your own processes that hold the TPU (a job started outside tpurun), never bob's"

e2e_run
