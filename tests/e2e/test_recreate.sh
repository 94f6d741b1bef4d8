#!/usr/bin/env bash
# Issue 21: stage --recreate survives preemption, through gcloud (the real one
# when installed) against the simulated Cloud TPU API, on a 2-worker spot TPU
# VM of its own (the default node stays as the other tests expect):
#  - --dry-run prints the exact gcloud commands and deletes nothing;
#  - --recreate is refused on a pod with a worker list; a VM that a queued
#    resource made comes back through it (--dry-run); --max-preemptions needs
#    --recreate;
#  - preempted during a run: the watcher deletes the VM, creates it again as
#    describe recorded it (spot, labels, metadata), waits for READY, pushes
#    the key, runs the pod's setup (which mounts the share) and resumes: the
#    run succeeds as attempt 2 although --restarts is 0; runs shows when, how
#    long it was down and which attempt resumed; the audit log has both steps;
#  - --max-preemptions 1 with two preemptions (TERMINATED, then PREEMPTED):
#    the second ends the run, preempted (exit 75), saying why; the VM stays;
#  - a pod that bob has claimed, or where he holds a TPU, is never deleted
#    (preempted with notice: the workers still answer, the jobs get SIGTERM);
#  - issue 39: `down --yes` of a --recreate run's VM (made by its queued
#    resource) ends the run as stopped, and the watcher makes nothing again;
#    kill --run while the watcher waits on the queued resource it made again
#    (stocked out): the run is stopped, and that queued resource deleted; the
#    new VM preempted during the recreate's setup counts as a preemption, and
#    the recreate tries again: the run resumes as attempt 2.
source "$(dirname "$0")/lib.sh"
require_tpurun

ZONE=us-central2-b
N=$FAKEPOD_WORKERS
on_exit "\"\$FAKEPOD\" up $N >/dev/null"  # removes the VMs made here

# The pod's setup, as the seeds' run_init_remote.sh: the shared mount (as
# root), and a mark on the VM's own disk.
cat >"$SCRATCH/setup.sh" <<SH
#!/bin/bash
set -e
# (a new VM hides the share behind an empty read-only dir until it is mounted)
[ -n "\$(ls -A $FAKEPOD_NFS)" ] || sudo mount -t fakenfs fakenfs:/ $FAKEPOD_NFS
sudo touch /etc/tpurun-e2e-setup
# (preempted_during_setup: a setup held until the VM is preempted under it,
# polled, at most 10 minutes)
if [ -e $SCRATCH/hold/on ]; then touch $SCRATCH/hold/in-setup; n=0; while [ ! -e $SCRATCH/hold/gate ] && [ \$n -lt 3000 ]; do sleep 0.2; n=\$((n + 1)); done; fi
echo "setup ran on \$(hostname)"
SH
install -d -m 1777 "$SCRATCH/hold"
chmod 644 "$SCRATCH/setup.sh"

cfg=$SCRATCH/recreate.json
pod_entry() {  # NAME [EXTRA]
  printf '"%s": { "gcloud": { "name": "%s", "zone": "%s", "project": "sim-proj" }, "ssh": { "identity_file": "~/.ssh/id_ed25519", "connect_timeout_s": 5 }, "staging_root": "%s/staging", "logs_root": "%s/logs"%s }' \
    "$1" "$1" "$ZONE" "$FAKEPOD_NFS" "$FAKEPOD_NFS" "${2:-}"
}
cat >"$cfg" <<JSON
{ "default_pod": "rc",
  "pods": { $(pod_entry rc ', "setup": "setup.sh"'), $(pod_entry qrvm), $(carved_pod fixed 0 1),
            $(pod_entry rq ', "setup": "setup.sh"'), $(pod_entry rs ', "setup": "setup.sh"') } }
JSON
chmod 644 "$cfg"
t() {  # USER [-C DIR] ARGS...: tpurun with this test's config; audit log in the test's dir
  local u=$1 dir=()
  shift
  if [[ ${1:-} == -C ]]; then dir=(-C "$2"); shift 2; fi
  AS_USER_ENV="XDG_STATE_HOME=$(user_dir "$u")/state" as_user "$u" "${dir[@]+"${dir[@]}"}" "$TPURUN" --config "$cfg" "$@"
}
node() {  # NAME EXPR [raw]: a Python expression over the node n as the API describes it (raw: as stored)
  /usr/bin/python3 - "$FAKEPOD_STATE/cloud.json" "$1" "$2" "$TPURUN_SOURCE_DIR/sim" ${3:+raw} <<'PY'
import json, sys
sys.path.insert(0, sys.argv[4])
from fakepod import cloud, config
nodes = json.load(open(sys.argv[1]))["nodes"]
(n,) = [cloud.Node.from_json(d) for d in nodes.values() if d["name"] == sys.argv[2]]
if len(sys.argv) < 6:
    n = n.to_api(config.Env.load({}))
else:
    n = n.__dict__  # as the simulator keeps it (slots)
print(eval(sys.argv[3]))
PY
}
api_deletes() { grep -c "DELETE /v2/projects/sim-proj/locations/$ZONE/nodes/rc " "$FAKEPOD_STATE/api.log" || true; }
run_of() { grep -o 'tpurun logs [^ ]* -f' <<<"$1" | awk '{print $3}'; }
wait_file() {  # PATH: until it exists (at most 90 s: a recreate on a loaded machine); a path on the share, read as root on the server
  wait_until "$1" 180 test -s "$(srv "$1")"
}
audit=$(user_dir alice)/state/tpurun/audit.jsonl
logs=$FAKEPOD_NFS/logs/alice/rcproj
rm -rf "$(srv "$logs")" "$(user_dir alice)/state"  # runs and audit lines of an earlier pass
proj=$(make_project alice rcproj)
# The VM rc that spot_vm makes is the one the cases after it use, up to
# max_preemptions: each needs the one before it (after a failed case the
# harness's `fakepod up` deletes every VM made here). The refusals need no VM;
# claimed_pod makes its own.

# ------------------------------------------------------------------ refusals and --dry-run
refusals() {
  expect_exit 2 t alice -C "$proj" --pod fixed stage --recreate -- true
  assert_contains "$ERR" "--recreate: pod 'fixed' lists its workers"
  expect_exit 2 t alice -C "$proj" stage --max-preemptions 2 -- true
  assert_contains "$ERR" "--max-preemptions bounds how often --recreate"
  [[ ! -e $(srv "$logs") ]] || fail "a refused stage made a log dir"
}
e2e_case refusals "--recreate needs a gcloud pod; --max-preemptions needs --recreate"

queued_resource_dry_run() {
  fakepod create qrvm --zone $ZONE --accelerator v4-8 --queued-resource qr1 >/dev/null
  expect_exit 0 t alice -C "$proj" --pod qrvm stage --recreate --dry-run -- true
  assert_contains "$OUT" "gcloud compute tpus queued-resources delete qr1 --zone $ZONE --project sim-proj --force --quiet"
  assert_contains "$OUT" "gcloud compute tpus queued-resources create qr1 --node-id qrvm --zone $ZONE --project sim-proj --accelerator-type v4-8 --runtime-version tpu-ubuntu2204-base"
  fakepod delete qrvm --zone $ZONE >/dev/null
  [[ ! -e $(srv "$logs") ]] || fail "a dry run made a log dir"
}
e2e_case queued_resource_dry_run "a VM that a queued resource made comes back through it (--dry-run: the exact commands)"

spot_vm() {
  fakepod create rc --zone $ZONE --accelerator v4-16 --spot --labels team=kmh,tier=spot \
    --metadata startup-script='echo boot' >/dev/null
  expect_exit 0 t alice exec --script "$SCRATCH/setup.sh"
}
e2e_case spot_vm "a 2-worker spot TPU VM with labels and a startup script, set up once by hand"

dry_run() {
  local id_before
  id_before=$(node rc 'n["id"]')
  expect_exit 0 t alice -C "$proj" stage --recreate --dry-run -- true
  assert_contains "$OUT" "if TPU VM rc is PREEMPTED, TERMINATED or deleted (--recreate, at most 3 times)"
  assert_contains "$OUT" "gcloud compute tpus tpu-vm delete rc --zone $ZONE --project sim-proj --quiet"
  assert_contains "$OUT" "gcloud compute tpus tpu-vm create rc --zone $ZONE --project sim-proj --accelerator-type v4-16 --version tpu-ubuntu2204-base --network projects/sim-proj/global/networks/default"
  # (quoted: the log dir's <rand> is a placeholder until the run exists)
  assert_contains "$OUT" " --spot --labels=team=kmh,tier=spot '--metadata-from-file=startup-script=$FAKEPOD_NFS/logs/alice/rcproj/"
  assert_contains "$OUT" "gcloud compute tpus tpu-vm ssh rc --zone $ZONE --project sim-proj --internal-ip --worker=all --quiet --command=true"
  assert_contains "$OUT" "setup: bash -s < $SCRATCH/setup.sh on every worker"
  assert_eq "$(api_deletes)" 0 "a dry run deleted"
  assert_eq "$(node rc 'n["id"]')" "$id_before" "a dry run changed the VM"
}
e2e_case dry_run "--dry-run prints the exact commands and deletes nothing" --needs spot_vm

# ------------------------------------------------------------------ preempted, recreated, resumed
# stage_recreate POD CMD...: a --recreate run of alice's on POD, detached: $run, once its job runs on w1.
stage_recreate() {
  local pod=$1
  shift
  expect_exit 0 t alice -C "$proj" --pod "$pod" stage --detach --recreate --lost-after 3s -- "$@"
  run=$(run_of "$ERR")
  [[ -n $run ]] || fail "no run id in: $ERR"
  wait_file "$logs/$run/worker1.pid"
}
preempted_recreated() {
  local job run first_id second_id kept_id
  # the VM spot_vm made (the dry run did not touch it)
  first_id=$(node rc 'n["id"]')
  job='if [ "$TPURUN_ATTEMPT" = 1 ]; then sleep 600; else echo "attempt $TPURUN_ATTEMPT on $(hostname) setup=$(ls /etc/tpurun-e2e-setup)"; fi'
  stage_recreate rc sh -c "$job"
  fakepod preempt rc --zone $ZONE >/dev/null
  expect_exit 0 t alice logs "$run" -f
  assert_contains "$OUT" "attempt 2 on t1v-n-"
  assert_contains "$OUT" "setup=/etc/tpurun-e2e-setup"
  assert_contains "$ERR" "TPU VM rc is PREEMPTED"
  assert_contains "$ERR" "recreating it (preemption 1 of at most 3"
  assert_contains "$ERR" "TPU VM rc is READY"
  assert_contains "$ERR" "resumed as attempt 2"
  assert_contains "$(cat "$(srv "$logs/$run/setup.log")")" "] setup ran on t1v-n-"
  second_id=$(node rc 'n["id"]')
  [[ $second_id != "$first_id" ]] || fail "the VM was not recreated"
  # alice's kept describe names the new VM, not the deleted one
  kept_id=$(/usr/bin/python3 -c 'import glob, json, sys
(f,) = glob.glob(sys.argv[1] + "/.cache/tpurun/describe/*_rc.*json")
print(json.loads(json.load(open(f))["node"])["id"])' "$(user_dir alice)" 2>&1 || true)
  assert_eq "$kept_id" "$second_id" "alice's kept describe after the recreate"
  # as describe recorded it: spot, labels, metadata
  assert_eq "$(node rc 'n["schedulingConfig"].get("spot")')" True "the new VM is not spot"
  assert_eq "$(node rc 'n["labels"]')" "{'team': 'kmh', 'tier': 'spot'}"
  assert_eq "$(node rc 'n["metadata"]["startup-script"]')" "echo boot"
  expect_exit 0 t alice runs --json --no-check
  /usr/bin/python3 - "$OUT" "$run" "$first_id" "$second_id" <<'PY' || fail "runs --json: $OUT"
import json, sys
run = [r for r in json.loads(sys.argv[1])["runs"] if r["run_id"] == sys.argv[2]][0]
assert run["verdict"] == "succeeded" and run["attempt"] == 2 and run["max_attempts"] == 2, run
(p,) = run["preemptions"]
assert p["state"] == "PREEMPTED" and p["attempt"] == 1 and p["node_id"] == sys.argv[3], p
assert p["action"] == "recreated" and p["new_id"] == sys.argv[4] and p["resumed_attempt"] == 2, p
assert p["down_s"] > 0 and p["resumed_at"] >= p["at"] >= p["since"], p
assert set(p["times_s"]) == {"api", "keys", "setup", "launch"}, p
PY
  expect_exit 0 t alice runs --no-check
  assert_contains "$OUT" "preempted "
  assert_contains "$OUT" ": TPU VM rc PREEMPTED (attempt 1); recreated (id $first_id → $second_id), down "
  assert_contains "$OUT" "resumed as attempt 2"
  /usr/bin/python3 - "$audit" "$first_id" "$run" <<'PY' || fail "audit log: $(cat "$audit")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert [l["event"] for l in lines] == ["tpu-vm-delete", "tpu-vm-create"], lines
assert all(l["caller"] == "alice" and l["tpu"] == "rc" and l["run_id"] == sys.argv[3] for l in lines), lines
assert lines[0]["node_id"] == sys.argv[2] and lines[0]["command"][:5] == ["gcloud", "compute", "tpus", "tpu-vm", "delete"]
PY
}
e2e_case preempted_recreated "preempted during a run with --restarts 0: recreated, set up, resumed as attempt 2" --needs dry_run

# ------------------------------------------------------------------ --max-preemptions
max_preemptions() {
  local run2 third_id
  expect_exit 0 t alice -C "$proj" stage --detach --recreate --max-preemptions 1 --lost-after 3s -- sleep 600
  run2=$(run_of "$ERR")
  wait_file "$logs/$run2/worker1.pid"
  fakepod preempt rc --zone $ZONE --terminated >/dev/null
  wait_file "$logs/$run2/worker1.a2.pid"
  third_id=$(node rc 'n["id"]')
  fakepod preempt rc --zone $ZONE >/dev/null
  expect_exit 75 t alice logs "$run2" -f
  assert_contains "$ERR" "TPU VM rc is TERMINATED"
  assert_contains "$ERR" "not recreated: 2 preemptions, and --max-preemptions 1 allows 1"
  assert_eq "$(node rc 'n["state"]') $(node rc 'n["id"]')" "PREEMPTED $third_id" "the VM over the budget was touched"
  expect_exit 0 t alice runs --json --no-check
  /usr/bin/python3 - "$OUT" "$run2" <<'PY' || fail "runs --json: $OUT"
import json, sys
run = [r for r in json.loads(sys.argv[1])["runs"] if r["run_id"] == sys.argv[2]][0]
assert run["verdict"] == "preempted" and run["attempt"] == 2, run
first, second = run["preemptions"]
assert first["state"] == "TERMINATED" and first["action"] == "recreated" and first["resumed_attempt"] == 2, first
assert second["action"] == "not recreated" and "--max-preemptions 1" in second["why"], second
PY
}
e2e_case max_preemptions "--max-preemptions 1, preempted twice: the second ends the run, and the VM stays" --needs preempted_recreated

# ------------------------------------------------------------------ a claimed pod, another user's TPU
# With --notice the API says PREEMPTED while the workers still answer (the
# guest's shutdown time), and the shutdown's SIGTERM ends the jobs: each run
# fails with 143, finds its VM PREEMPTED, and would recreate it.
claimed_pod() {
  local run3 run4 slot0 claimed_id deletes
  on_exit reset_tpus
  # back to a READY VM, set up by hand (rc is gone already when a case before failed)
  fakepod delete rc --zone $ZONE >/dev/null 2>&1 || true
  fakepod create rc --zone $ZONE --accelerator v4-16 --spot >/dev/null
  expect_exit 0 t alice exec --script "$SCRATCH/setup.sh"
  expect_exit 0 t alice -C "$proj" stage --detach --recreate -- sleep 600
  run3=$(run_of "$ERR")
  # (a second run beside the first: --skip-preflight, since one stage at a time holds the workers)
  expect_exit 0 t alice -C "$proj" stage --detach --recreate --skip-preflight -- sleep 600
  run4=$(run_of "$ERR")
  wait_file "$logs/$run3/worker0.pid"
  wait_file "$logs/$run4/worker0.pid"
  expect_exit 0 t bob claim rc --for 1h --note "maintenance"
  on_exit "t bob release rc"
  slot0=$(node rc 'n["slots"][0]' raw)
  start_trainer_on "$slot0" bob --forever >/dev/null  # (--forever: a trainer of 20 steps may be done before the second run's watcher looks)
  claimed_id=$(node rc 'n["id"]')
  deletes=$(api_deletes)
  fakepod preempt rc --zone $ZONE --notice 120 >/dev/null
  shutdown_job() {  # RUN: the guest's shutdown sends the run's job on w0 SIGTERM
    local pid pgid
    read -r pid pgid <"$(srv "$logs/$1/worker0.pid")"
    fakepod exec "$slot0" -- kill -TERM -- "-$pgid"
  }
  shutdown_job "$run3"
  expect_exit 75 t alice logs "$run3" -f
  assert_contains "$ERR" "TPU VM rc is PREEMPTED"
  assert_contains "$ERR" "not recreated: the pod is claimed by bob"
  assert_contains "$ERR" "maintenance"
  expect_exit 0 t bob release rc
  shutdown_job "$run4"
  expect_exit 75 t alice logs "$run4" -f
  assert_contains "$ERR" "not recreated: another user holds a TPU on the pod's workers: w0"
  assert_contains "$ERR" "bob pid "
  assert_eq "$(api_deletes)" "$deletes" "a claimed pod's VM, or one where bob holds a TPU, was deleted"
  assert_eq "$(node rc 'n["state"]') $(node rc 'n["id"]')" "PREEMPTED $claimed_id"
  assert_not_contains "$(cat "$audit")" "$run3" "a refused recreate was audited"
  assert_not_contains "$(cat "$audit")" "$run4" "a refused recreate was audited"
}
e2e_case claimed_pod "bob claims the pod, then holds a TPU on it: alice's preempted VM is never deleted"

# ------------------------------------------------------------------ issue 39: down, kill --run, a second preemption
# What real gcloud lists of NAME in the zone: "vm NAME STATE", "qr NAME STATE".
gcloud_left() {
  {
    as_user alice gcloud compute tpus tpu-vm list --zone $ZONE --project sim-proj --format='value(name.basename(),state)' | sed 's/^/vm /'
    as_user alice gcloud compute tpus queued-resources list --zone $ZONE --project sim-proj \
      --format='value(name.basename(),state.state)' | sed 's/^/qr /'
  } | awk -v n="$1" '$2 == n' | tr '\t' ' '
}
# rq: a spot TPU VM that its queued resource made for alice (labelled as
# `up` labels it, so that down may delete it), set up by hand.
rq_vm() {
  expect_exit 0 as_user alice gcloud compute tpus queued-resources create rq --node-id rq --zone $ZONE \
    --project sim-proj --accelerator-type v4-16 --runtime-version tpu-ubuntu2204-base --spot \
    --labels tpurun-user=alice --quiet
  wait_until "TPU VM rq to be READY" 600 eval '[[ $(node rq "n[\"state\"]" 2>/dev/null) == READY ]]'
  expect_exit 0 t alice --pod rq exec --script "$SCRATCH/setup.sh"
}
run_json() {  # RUN EXPR: a Python expression over the run r of `runs --json`
  expect_exit 0 t alice runs --json --no-check
  /usr/bin/python3 - "$OUT" "$1" "$2" <<'PY' || fail "runs --json: $OUT"
import json, sys
r = [r for r in json.loads(sys.argv[1])["runs"] if r["run_id"] == sys.argv[2]][0]
assert eval(sys.argv[3]), r
PY
}

down_during_recreate_run() {
  local run
  rq_vm
  stage_recreate rq sleep 600
  expect_exit 0 t alice --pod rq down --yes
  assert_contains "$ERR" "your run $run is still running on it"
  assert_contains "$ERR" "nothing of it is left"
  expect_exit 143 t alice logs "$run" -f
  assert_contains "$ERR" "asked for TPU VM rq to be deleted"
  assert_contains "$ERR" "the run is stopped, and its TPU VM is not made again"
  assert_not_contains "$ERR" "creating TPU VM rq again"
  run_json "$run" 'r["verdict"] == "stopped" and not any(p["action"] == "recreated" for p in r["preemptions"])'
  assert_eq "$(gcloud_left rq)" "" "what gcloud lists of rq after down"
  [[ ! -f $audit ]] || assert_not_contains "$(<"$audit")" "\"run_id\":\"$run\"" "the watcher deleted or created for the run"
}
e2e_case down_during_recreate_run "down --yes of a --recreate run's VM: the run ends stopped, and nothing is made again"

kill_during_recreate() {
  local run
  rq_vm
  stage_recreate rq sleep 600
  # The queued resource made again waits: the zone has no spot capacity.
  "$FAKEPOD" capacity stockout $ZONE >/dev/null
  on_exit "\"\$FAKEPOD\" capacity restock $ZONE >/dev/null"
  fakepod preempt rq --zone $ZONE >/dev/null
  wait_until "the watcher to make queued resource rq again" 600 \
    grep -q "creating TPU VM rq again through its queued resource" "$(srv "$logs/$run/watcher.log")"
  expect_exit 0 t alice --pod rq kill --run "$run"
  assert_contains "$ERR" "run $run was stopped while its TPU VM was away"
  expect_exit 143 t alice logs "$run" -f
  assert_contains "$ERR" "stopped by tpurun kill --run while the TPU VM was being recreated"
  assert_contains "$ERR" "deleting what this recreate created: gcloud compute tpus queued-resources delete rq --zone $ZONE --project sim-proj --force --quiet"
  run_json "$run" 'r["verdict"] == "stopped" and r["preemptions"][0]["action"] == "not recreated"'
  assert_eq "$(gcloud_left rq)" "" "what gcloud lists of rq after the kill"
}
e2e_case kill_during_recreate "kill --run while the recreate's queued resource waits: the run is stopped, the queued resource deleted"

preempted_during_setup() {
  local run job
  fakepod create rs --zone $ZONE --accelerator v4-16 --spot >/dev/null
  expect_exit 0 t alice --pod rs exec --script "$SCRATCH/setup.sh"
  job='if [ "$TPURUN_ATTEMPT" = 1 ]; then sleep 600; else echo "attempt $TPURUN_ATTEMPT"; fi'
  stage_recreate rs sh -c "$job"
  # The recreate's setup holds until the new VM is preempted under it; the next one runs through.
  touch "$SCRATCH/hold/on"
  on_exit "touch $SCRATCH/hold/gate"
  fakepod preempt rs --zone $ZONE >/dev/null
  wait_until "the recreate's setup to run" 600 test -e "$SCRATCH/hold/in-setup"
  rm "$SCRATCH/hold/on"
  fakepod preempt rs --zone $ZONE >/dev/null
  expect_exit 0 t alice logs "$run" -f
  assert_contains "$OUT" "attempt 2"
  assert_contains "$ERR" "TPU VM rs is PREEMPTED ("
  assert_contains "$ERR" ") during the recreate's setup (the setup failed: "
  assert_contains "$ERR" "recreating it again (preemption 2 of at most 3)"
  assert_contains "$ERR" "resumed as attempt 2"
  run_json "$run" 'r["verdict"] == "succeeded" and r["attempt"] == 2 and r["max_attempts"] == 2 and len(r["preemptions"]) == 2 and all(p["action"] == "recreated" for p in r["preemptions"]) and r["preemptions"][1]["resumed_attempt"] == 2'
  assert_eq "$(gcloud_left rs)" "vm rs READY" "what gcloud lists of rs after the recreates"
}
e2e_case preempted_during_setup "the new VM preempted during the recreate's setup: a second preemption, recreated again, resumed as attempt 2"

e2e_run
