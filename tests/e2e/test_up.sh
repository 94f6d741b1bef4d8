#!/usr/bin/env bash
# Issue 27: `tpurun up` / `tpurun down` through real gcloud against the
# simulated Cloud TPU API, on 2-worker TPU VMs of their own:
#  - a config found implicitly (./tpurun.json) with a relative "setup" works;
#  - up --dry-run prints the exact gcloud commands and creates nothing;
#  - queued, three zones: the first one's queued resource goes FAILED (its
#    error printed, deleted with --force), the second keeps it waiting past
#    max_queued (deleted), the third gives it: keys, setup on every worker
#    (one line each, output kept), doctor, exit 0; later commands find the VM
#    in that zone; up again says it is READY already;
#  - a spot preemption (node PREEMPTED, queued resource SUSPENDED): stage
#    --recreate deletes the queued resource, creates it again, resumes the run;
#  - doctor names the worker whose jax is another version;
#  - down refuses without --yes, and bob's down refuses alice's VM; --dry-run
#    deletes nothing; stage --down runs, then deletes the VM and its queued
#    resource;
#  - plain ("queued": false): a stocked-out zone fails with code 8, the next
#    one gives it; down --yes;
#  - the board: no VM, a FAILED queued resource with its reason, one waiting
#    (left by up --keep after Ctrl-C) for how long;
#  - up interrupted while queued (Ctrl-C): the queued resource is deleted,
#    nothing is left.
source "$(dirname "$0")/lib.sh"
require_tpurun

Z1=us-central2-b
Z2=us-east1-d
Z3=europe-west4-a
on_exit "\"\$FAKEPOD\" fault clear >/dev/null; \"\$FAKEPOD\" up $FAKEPOD_WORKERS >/dev/null"  # capacity back; VMs made here go

cat >"$SCRATCH/setup.sh" <<SH
#!/bin/bash
set -e
[ -n "\$(ls -A $FAKEPOD_NFS)" ] || sudo mount -t fakenfs fakenfs:/ $FAKEPOD_NFS
echo "setup ran on \$(hostname)"
SH
chmod 644 "$SCRATCH/setup.sh"

proj=$(make_project alice upproj)
cp "$SCRATCH/setup.sh" "$proj/setup.sh"
pod_entry() {  # NAME CREATE
  printf '"%s": { "gcloud": { "name": "%s", "zone": "%s", "project": "sim-proj" }, "ssh": { "identity_file": "~/.ssh/id_ed25519", "connect_timeout_s": 5 }, "staging_root": "%s/staging", "logs_root": "%s/logs", "setup": "setup.sh", "create": %s }' \
    "$1" "$1" "$Z1" "$FAKEPOD_NFS" "$FAKEPOD_NFS" "$2"
}
# ./tpurun.json in the project: found implicitly, its "setup" relative to it
cat >"$proj/tpurun.json" <<JSON
{ "default_pod": "qup",
  "pods": { $(pod_entry qup "{ \"accelerator_type\": \"v4-16\", \"runtime_version\": \"tpu-ubuntu2204-base\", \"spot\": true, \"zones\": [\"$Z1\", \"$Z2\", \"$Z3\"], \"max_queued\": \"2s\", \"labels\": { \"team\": \"kmh\" } }"),
            $(pod_entry pup "{ \"accelerator_type\": \"v4-16\", \"runtime_version\": \"tpu-ubuntu2204-base\", \"queued\": false, \"zones\": [\"$Z1\", \"$Z2\"] }") } }
JSON
chown -R alice "$proj"
t() {  # USER ARGS...: tpurun in the project dir (its tpurun.json), state in the test's dir
  local u=$1
  shift
  AS_USER_ENV="XDG_STATE_HOME=$(user_dir "$u")/state" as_user "$u" -C "$proj" "$TPURUN" "$@"
}
qrs() { "$FAKEPOD" qr list | awk '{print $2, $3, $5}' | sort; }  # NAME STATE zone=Z of every queued resource
node_zone() {  # NAME: the zone of the TPU VM of that name, "" when there is none
  /usr/bin/python3 -c 'import json,sys; print(" ".join(n["zone"] for n in json.load(open(sys.argv[1]))["nodes"].values() if n["name"] == sys.argv[2]))' \
    "$FAKEPOD_STATE/cloud.json" "$1"
}
node_slots() {  # NAME: the node's worker slots, space-separated
  /usr/bin/python3 -c 'import json,sys; print(" ".join(str(s) for n in json.load(open(sys.argv[1]))["nodes"].values() if n["name"] == sys.argv[2] for s in n["slots"]))' \
    "$FAKEPOD_STATE/cloud.json" "$1"
}
api_log_since() { tail -n +"$(( $1 + 1 ))" "$FAKEPOD_STATE/api.log"; }
rm -rf "$(user_dir alice)/state" "$(user_dir bob)/state"
stockout_all() {  # every zone of qup's: a queued resource waits in the first
  local z
  for z in $Z1 $Z2 $Z3; do "$FAKEPOD" capacity stockout "$z" >/dev/null; done
}
# The VM qup that queued_three_zones makes is the one the cases after it use,
# until stage_down deletes it: each needs the one before it (after a failed
# case the harness's `fakepod up` deletes every VM made here).

# ------------------------------------------------------------------ item 8: the relative setup
implicit_config() {
  expect_exit 0 t alice runs --no-check
  assert_not_contains "$ERR" "cannot make absolute path"
}
e2e_case implicit_config "a config found implicitly with \"setup\": \"setup.sh\" (it was: cannot make absolute path)"

# ------------------------------------------------------------------ --dry-run
up_dry_run() {
  local api_before
  api_before=$(wc -l <"$FAKEPOD_STATE/api.log")
  expect_exit 0 t alice up --dry-run
  assert_contains "$OUT" "in $Z1: gcloud compute tpus queued-resources create qup --node-id qup --zone $Z1 --project sim-proj --accelerator-type v4-16 --runtime-version tpu-ubuntu2204-base --spot --labels=team=kmh,tpurun-user=alice --quiet"
  assert_contains "$OUT" "gcloud compute tpus queued-resources delete qup --zone $Z3 --project sim-proj --force --quiet, then the next zone"
  assert_contains "$OUT" "setup: bash -s < $proj/setup.sh on every worker"
  assert_not_contains "$(api_log_since "$api_before")" "POST" "a dry run created something"
  # Issue 39 finding 14: a typo in "setup" is named before anything is made
  # (it was "setup ... ok" after the VM was READY: an unreadable file read as "").
  sed 's/"setup": "setup.sh"/"setup": "setpu.sh"/' "$proj/tpurun.json" >"$proj/typo.json"
  chown alice "$proj/typo.json"
  expect_exit 2 t alice --config "$proj/typo.json" up --poll 500ms
  assert_contains "$ERR" "pod 'qup': its \"setup\" script $proj/setpu.sh cannot be read: No such file or directory; nothing was made"
  expect_exit 2 t alice --config "$proj/typo.json" up --dry-run
  expect_exit 2 t alice up --dry-run --max-queued 500ms  # it was "no limit" (rounded to 0)
  assert_contains "$ERR" "--max-queued must be 0 (no limit) or at least 1s: 500ms would round to 0"
  assert_not_contains "$(api_log_since "$api_before")" "POST" "up with a setup typo created something"
}
e2e_case up_dry_run "up --dry-run: the exact gcloud commands, zone by zone; nothing is created; a setup typo is named first"

# ------------------------------------------------------------------ queued, three zones
queued_three_zones() {
  "$FAKEPOD" qr fail-next --zone $Z1 --code 8 --message "There is no more capacity in the zone \"$Z1\" (simulated)" >/dev/null
  "$FAKEPOD" capacity stockout $Z2 >/dev/null
  expect_exit 0 t alice up --poll 500ms
  assert_contains "$ERR" "queued resource qup in $Z1: FAILED"
  assert_contains "$ERR" "There is no more capacity in the zone \"$Z1\" (simulated) (code 8): deleting it (--force)"
  assert_contains "$ERR" "trying $Z2"
  assert_contains "$ERR" "queued resource qup in $Z2: WAITING_FOR_RESOURCES"
  assert_contains "$ERR" "(2s is the limit: \"max_queued\", --max-queued): deleting it (--force)"
  assert_contains "$ERR" "TPU VM qup in $Z3 is READY (2 workers)"
  assert_contains "$ERR" "setup w0 "
  assert_contains "$ERR" "setup w1 "
  assert_contains "$ERR" ": ok in "
  assert_contains "$OUT" "no problems found"
  assert_contains "$ERR" "pod 'qup' is ready: TPU VM qup in $Z3, queued resource qup (2 workers)"
  assert_contains "$(cat "$(user_dir alice)/state/tpurun/up-qup.setup.log")" "] setup ran on t1v-n-"
  assert_eq "$(qrs)" "qup ACTIVE zone=$Z3" "the queued resources left"
  assert_eq "$(node_zone qup)" "$Z3"
  grep -q "DELETE /v2/projects/sim-proj/locations/$Z1/queuedResources/qup?alt=json&force=True " "$FAKEPOD_STATE/api.log" \
    || fail "the FAILED queued resource was not deleted with force"
}
e2e_case queued_three_zones "queued: $Z1 FAILED, $Z2 waits past max_queued, $Z3 gives it; set up, checked, ready"

up_again() {
  local api_before
  expect_exit 0 t alice exec -- hostname
  assert_contains "$OUT" "t1v-n-"
  api_before=$(wc -l <"$FAKEPOD_STATE/api.log")
  expect_exit 0 t alice up
  assert_contains "$ERR" "TPU VM qup is READY in $Z3 already; nothing is created"
  assert_not_contains "$(api_log_since "$api_before")" "POST" "up on a READY pod created something"
}
e2e_case up_again "later commands find it in $Z3; up again changes nothing" --needs queued_three_zones

# ------------------------------------------------------------------ doctor: versions
doctor_jax_versions() {
  local s0 s1 site pair slot ver
  read -r s0 s1 <<<"$(node_slots qup)"
  site=/usr/local/lib/python3.11/dist-packages
  for pair in "$s0 0.4.30" "$s1 0.4.31"; do
    read -r slot ver <<<"$pair"
    install -d -m 755 "$SCRATCH/site-$slot/jax-$ver.dist-info"
    printf 'Metadata-Version: 2.1\nName: jax\nVersion: %s\n' "$ver" >"$SCRATCH/site-$slot/jax-$ver.dist-info/METADATA"
    chmod 644 "$SCRATCH/site-$slot/jax-$ver.dist-info/METADATA"
    wexec "$slot" -- mount --bind "$SCRATCH/site-$slot" "$site"
    on_exit "wexec $slot -- umount $site || true"
  done
  expect_exit 0 t alice doctor
  assert_contains "$OUT" "warning w1: jax is not the same version on every worker (0.4.30 on w0, 0.4.31 on w1)"
  assert_contains "$OUT" "pip install jax==0.4.30"
  for slot in "$s0" "$s1"; do wexec "$slot" -- umount "$site"; done
}
e2e_case doctor_jax_versions "doctor: jax at another version on one worker is named" --needs up_again

# ------------------------------------------------------------------ recreate through the queued resource
recreate_queued() {
  local job run
  job='if [ "$TPURUN_ATTEMPT" = 1 ]; then sleep 600; else echo "attempt $TPURUN_ATTEMPT on $(hostname)"; fi'
  expect_exit 0 t alice stage --detach --recreate --lost-after 3s -- sh -c "$job"
  run=$(grep -o 'tpurun logs [^ ]* -f' <<<"$ERR" | awk '{print $3}')
  [[ -n $run ]] || fail "no run id in: $ERR"
  wait_until "attempt 1's job on w1" 600 test -s "$(srv "$FAKEPOD_NFS/logs/alice/upproj/$run/worker1.pid")"
  "$FAKEPOD" preempt qup --zone $Z3 >/dev/null
  expect_exit 0 t alice logs "$run" -f
  assert_contains "$OUT" "attempt 2 on t1v-n-"
  assert_contains "$ERR" "TPU VM qup is PREEMPTED"
  assert_contains "$ERR" "and its queued resource: gcloud compute tpus queued-resources delete qup --zone $Z3 --project sim-proj --force --quiet"
  assert_contains "$ERR" "creating TPU VM qup again through its queued resource: gcloud compute tpus queued-resources create qup --node-id qup --zone $Z3"
  assert_contains "$ERR" "resumed as attempt 2"
  assert_eq "$(qrs)" "qup ACTIVE zone=$Z3" "the queued resources after the recreate"
}
e2e_case recreate_queued "a spot preemption suspends the queued resource: stage --recreate brings the VM back through it" --needs doctor_jax_versions

# ------------------------------------------------------------------ down's rules, stage --down
down_rules() {
  expect_exit 2 t alice down
  assert_contains "$ERR" "needs --yes"
  expect_exit 1 t bob down --yes
  assert_contains "$ERR" "tpurun made it for alice, not for you"
  # stage --down of alice's VM: refused before bob's run starts (it was after it)
  local bob_runs
  expect_exit 0 t bob runs --json --no-check
  bob_runs=$(json_get "$OUT" 'len(d["runs"])')
  expect_exit 2 t bob stage --down --dry-run -- true
  assert_contains "$ERR" "--down: pod 'qup': its TPU VM would not be deleted once the run ends: "
  assert_contains "$ERR" "tpurun made it for alice, not for you; \`tpurun down --force\` deletes it anyway; nothing was started"
  expect_exit 2 t bob stage --down -- true
  assert_contains "$ERR" "nothing was started"
  expect_exit 0 t bob runs --json --no-check
  assert_eq "$(json_get "$OUT" 'len(d["runs"])')" "$bob_runs" "bob's runs after a refused stage --down"
  # alice's own run on it is named first (issue 39, finding 12: it ended
  # "preempted" without a word from down)
  local run
  expect_exit 0 t alice stage --detach --json -- sleep 300
  run=$(json_get "$OUT" 'd["run_id"]')
  expect_exit 0 t alice down --dry-run
  assert_contains "$ERR" "pod 'qup': your run $run is still running on it: deleting the TPU VM ends it (\`tpurun kill --run $run\` stops it first)"
  assert_contains "$OUT" "queued resource qup: ACTIVE (made by tpurun for alice)"
  assert_contains "$OUT" "gcloud compute tpus queued-resources delete qup --zone $Z3 --project sim-proj --force --quiet"
  expect_exit 0 t alice kill --run "$run" --grace 2s
  assert_eq "$(node_zone qup)" "$Z3" "a dry run deleted"
}
e2e_case down_rules "down: --yes needed; bob may not delete alice's VM (nor stage --down on it); --dry-run deletes nothing" --needs recreate_queued

stage_down() {
  expect_exit 0 t alice stage --down -- sh -c 'echo "ran on $TPURUN_WORKER"'
  assert_contains "$OUT" "ran on 1"
  assert_contains "$ERR" "deleting the queued resource and its TPU VM"
  assert_contains "$ERR" "nothing of it is left"
  assert_eq "$(qrs)" "" "queued resources left after stage --down"
  assert_eq "$(node_zone qup)" "" "the VM is left after stage --down"
  expect_exit 0 t alice down --yes
  assert_contains "$ERR" "nothing to delete"
  expect_exit 0 t alice status --all
  assert_contains "$OUT" "gcloud: no VM"
}
e2e_case stage_down "stage --down: the run ends, then the VM and its queued resource go" --needs down_rules

board_failed_qr() {
  "$FAKEPOD" qr fail-next --zone $Z1 --code 8 --message "no v4-16 for you (simulated)" >/dev/null
  expect_exit 0 as_user alice gcloud compute tpus queued-resources create qup --node-id qup --zone $Z1 \
    --accelerator-type v4-16 --runtime-version tpu-ubuntu2204-base --labels tpurun-user=alice --quiet
  wait_until "queued resource qup to go FAILED in $Z1" 600 eval '[[ $(qrs) == "qup FAILED zone=$Z1" ]]'
  expect_exit 0 t alice status --all
  assert_contains "$OUT" "gcloud: FAILED (queued resource qup): no v4-16 for you (simulated)"
  expect_exit 0 t alice down --yes
  assert_eq "$(qrs)" "" "down left the FAILED queued resource"
}
e2e_case board_failed_qr "the board: a queued resource FAILED with its reason"

# ------------------------------------------------------------------ plain
plain_zones() {
  "$FAKEPOD" fault clear >/dev/null
  "$FAKEPOD" capacity stockout $Z1 >/dev/null
  expect_exit 0 t alice --pod pup up --poll 500ms
  assert_contains "$ERR" "creating TPU VM pup in $Z1: gcloud compute tpus tpu-vm create pup --zone $Z1"
  assert_contains "$ERR" "There is no more capacity in the zone"
  assert_contains "$ERR" "trying $Z2"
  assert_contains "$ERR" "pod 'pup' is ready: TPU VM pup in $Z2"
  expect_exit 0 t alice --pod pup down --yes
  assert_contains "$ERR" "deleting the TPU VM: gcloud compute tpus tpu-vm delete pup --zone $Z2"
  assert_eq "$(node_zone pup)" ""
}
e2e_case plain_zones "plain: code 8 in stocked-out $Z1, then $Z2; down --yes"

# ------------------------------------------------------------------ Ctrl-C while queued
interrupted_up() {  # ARGS...: up, Ctrl-C once its queued resource waits; sets $err
  # No output of an earlier call: the wait below reads this call's.
  rm -f "$SCRATCH/int.out" "$SCRATCH/int.err"
  # (job control on: a background job of a script would otherwise start with SIGINT ignored)
  set -m
  AS_USER_ENV="XDG_STATE_HOME=$(user_dir alice)/state" as_user alice -C "$proj" \
    "$TPURUN" up --poll 500ms --max-queued 0 "$@" >"$SCRATCH/int.out" 2>"$SCRATCH/int.err" &
  local up_pid=$! rc=0
  set +m
  on_exit "kill -INT -- -$up_pid 2>/dev/null"  # (should it never wait: the check below fails first)
  wait_until "up to wait for its queued resource (WAITING_FOR_RESOURCES in $SCRATCH/int.err)" 600 \
    grep -q "WAITING_FOR_RESOURCES" "$SCRATCH/int.err"
  # Its process group, as Ctrl-C on a terminal: tpurun and what it runs (the
  # bound above them ignores SIGINT).
  kill -INT -- "-$up_pid"
  wait "$up_pid" || rc=$?
  err=$(cat "$SCRATCH/int.err")
  assert_eq "$rc" 130 "up's exit after Ctrl-C: $err"
}
up_keep_interrupted() {
  local err
  stockout_all
  interrupted_up --keep
  assert_contains "$err" "left in place (--keep): queued resource qup in $Z1 (WAITING_FOR_RESOURCES)"
  assert_eq "$(qrs)" "qup WAITING_FOR_RESOURCES zone=$Z1"
  expect_exit 0 t alice status --all
  assert_contains "$OUT" "gcloud: WAITING_FOR_RESOURCES for "
  assert_contains "$OUT" "(queued resource qup)"
  expect_exit 0 t alice down --yes
  assert_eq "$(qrs)" "" "down left the waiting queued resource"
}
e2e_case up_keep_interrupted "up --keep interrupted while queued: the waiting queued resource stays, and the board says so"

up_interrupted() {
  local err
  stockout_all
  interrupted_up
  assert_contains "$err" "deleting what this up made: queued resource qup in $Z1 (WAITING_FOR_RESOURCES), with --force"
  assert_contains "$err" "nothing of this up is left"
  assert_eq "$(qrs)" "" "queued resources left after Ctrl-C"
  assert_eq "$(node_zone qup)" ""
}
e2e_case up_interrupted "up interrupted while its queued resource waits: deleted, nothing left"

e2e_run
