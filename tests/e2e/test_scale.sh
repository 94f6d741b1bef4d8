#!/usr/bin/env bash
# Scale: a 256-worker simulated pod passes exec, status and kill without a
# single failed connection. On a pod of its own (its own state dir and
# addresses, 127.1.x.y), brought down at exit, so the other tests' pod keeps
# its size and ctest runs this beside them.
SCALE=${TPURUN_SCALE_WORKERS:-256}
export FAKEPOD_STATE=/var/lib/tpurun-fakepod-scale FAKEPOD_NET=127.1 FAKEPOD_NFS=/srv/tpurun-scale
export FAKEPOD_WORKERS=$SCALE
ulimit -n 65536 2>/dev/null || true
source "$(dirname "$0")/lib.sh"
on_exit "_E2E_READY=0; \"$FAKEPOD\" down; rm -rf '$FAKEPOD_STATE'"
# The pod's config with a connect timeout of 30 s, not the simulator's 5: 256
# sshds do their key exchange at once on this machine's few cores, where on a
# pod each worker has its own. The test is about no connection failing, not
# about how fast a starved CPU answers.
cfg=$SCRATCH/scale.json
sed 's/"connect_timeout_s": 5/"connect_timeout_s": 30/' "$FAKEPOD_CONFIG" >"$cfg"
grep -q '"connect_timeout_s": 30' "$cfg" || fail "no connect_timeout_s in $FAKEPOD_CONFIG"
chmod 644 "$cfg"
chmod 755 "$SCRATCH"
FAKEPOD_CONFIG=$cfg
# scale_pod: the pod at $SCALE workers: after a failed case the harness
# brings it up again (a no-op when it is).
scale_pod() {
  fakepod up "$SCALE" >&2
}

exec_every_worker() {
  scale_pod
  expect_exit 0 tpurun_as alice exec --json -- bash -c 'echo $TPU_WORKER_ID'
  /usr/bin/python3 - "$OUT" "$SCALE" <<'PY'
import json, sys
doc = json.loads(sys.argv[1]); n = int(sys.argv[2])
ws = doc["workers"]
assert len(ws) == n, len(ws)
failed = [w for w in ws if w["error"] or w["exit_code"] != 0]
assert not failed, failed[:3]
assert sorted(int(w["stdout"]) for w in ws) == list(range(n))
PY
}
e2e_case exec_every_worker "exec on every worker: each answers with its own TPU_WORKER_ID, no failed connection"

status_and_kill() {
  local pid
  scale_pod
  # A job of alice's on the last worker, so status and kill have something to find.
  pid=$(start_trainer_on $((SCALE - 1)) alice --forever --metrics-addr none)
  expect_exit nonzero tpurun_as alice status --json
  /usr/bin/python3 - "$OUT" "$SCALE" <<'PY'
import json, sys
ws = json.loads(sys.argv[1])["workers"]; n = int(sys.argv[2])
assert len(ws) == n, len(ws)
assert not [w for w in ws if w["error"]], [w for w in ws if w["error"]][:3]
states = {w["worker"]: w["state"] for w in ws}
assert states[n - 1] == "busy-self", states[n - 1]
assert all(s == "free" for k, s in states.items() if k != n - 1), [s for s in states.values() if s != "free"][:5]
PY

  expect_exit 0 tpurun_as alice kill --grace 2s --json
  /usr/bin/python3 - "$OUT" "$SCALE" <<'PY'
import json, sys
doc = json.loads(sys.argv[1]); n = int(sys.argv[2])
ws = doc["workers"]
assert len(ws) == n and not [w for w in ws if w.get("error")], [w for w in ws if w.get("error")][:3]
assert all(w["state"] == "free" for w in ws), [w["state"] for w in ws if w["state"] != "free"][:5]
PY
  if fakepod exec $((SCALE - 1)) -- kill -0 "$pid" 2>/dev/null; then fail "alice's trainer survived kill"; fi
}
e2e_case status_and_kill "status finds alice's job on the last worker and every other one free; kill stops it"

e2e_run
