#!/usr/bin/env bash
# Scale: a 256-worker simulated pod passes exec, status and kill without a
# single failed connection. (The pod goes back to its usual size at exit.)
source "$(dirname "$0")/lib.sh"
SCALE=${TPURUN_SCALE_WORKERS:-256}
fakepod up "$SCALE" >&2
ulimit -n 65536 2>/dev/null || true

expect_exit 0 tpurun_as alice exec --json -- bash -c 'echo $TPU_WORKER_ID'
python3 - "$OUT" "$SCALE" <<'PY'
import json, sys
doc = json.loads(sys.argv[1]); n = int(sys.argv[2])
ws = doc["workers"]
assert len(ws) == n, len(ws)
failed = [w for w in ws if w["error"] or w["exit_code"] != 0]
assert not failed, failed[:3]
assert sorted(int(w["stdout"]) for w in ws) == list(range(n))
PY

# A job of alice's on the last worker, so status and kill have something to find.
pid=$(start_trainer_on $((SCALE - 1)) alice --forever)
expect_exit nonzero tpurun_as alice status --json
python3 - "$OUT" "$SCALE" <<'PY'
import json, sys
ws = json.loads(sys.argv[1])["workers"]; n = int(sys.argv[2])
assert len(ws) == n, len(ws)
assert not [w for w in ws if w["error"]], [w for w in ws if w["error"]][:3]
states = {w["worker"]: w["state"] for w in ws}
assert states[n - 1] == "busy-self", states[n - 1]
assert all(s == "free" for k, s in states.items() if k != n - 1), [s for s in states.values() if s != "free"][:5]
PY

expect_exit 0 tpurun_as alice kill --grace 2s --json
python3 - "$OUT" "$SCALE" <<'PY'
import json, sys
doc = json.loads(sys.argv[1]); n = int(sys.argv[2])
ws = doc["workers"]
assert len(ws) == n and not [w for w in ws if w.get("error")], [w for w in ws if w.get("error")][:3]
assert all(w["state"] == "free" for w in ws), [w["state"] for w in ws if w["state"] != "free"][:5]
PY
if fakepod exec $((SCALE - 1)) -- kill -0 "$pid" 2>/dev/null; then fail "alice's trainer survived kill"; fi
pass
