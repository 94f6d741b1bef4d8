#!/usr/bin/env bash
# Issue 16: tpurun at the Cloud TPU boundary, through gcloud (the real one when
# installed) against the simulated Cloud TPU API, on TPU VMs of their own
# (created here, so the default node stays as the other tests expect):
#  - exec and stage on a gcloud pod; a kept describe answer saves gcloud's
#    start-up on the next command;
#  - doctor finds each seeded problem: no shared mount, a missing TPU device,
#    a skewed clock, no sudo, another uid;
#  - stage refuses, before anything is staged, a VM where alice has another uid;
#    with OS Login the uids agree and it runs;
#  - --restarts across a stop and a start on new addresses relaunches there;
#  - status of a PREEMPTED VM says so; --restarts across a preemption ends
#    'preempted' (exit 75);
#  - runs and logs work after the VM is deleted, and exec says it is gone;
#  - a first-time user's key is refused; tpurun names the fix, and on a
#    terminal offers it (gcloud's own tpu-vm ssh) and then gets in.
source "$(dirname "$0")/lib.sh"
require_tpurun

ZONE=us-central2-b
N=$FAKEPOD_WORKERS
on_exit "\"\$FAKEPOD\" up $N >/dev/null"  # removes the VMs made here

node_slots() {  # NAME: the node's worker slots, space-separated
  /usr/bin/python3 -c 'import json,sys; print(" ".join(str(s) for n in json.load(open(sys.argv[1]))["nodes"].values() if n["name"] == sys.argv[2] for s in n["slots"]))' \
    "$FAKEPOD_STATE/cloud.json" "$1"
}
mount_shared() {  # NAME: what the VM's setup does: mount the share, and at every boot
  local s
  for s in $(node_slots "$1"); do
    wexec "$s" -- sh -c "echo 'fakenfs:/ $FAKEPOD_NFS fakenfs defaults 0 0' >>/etc/fstab && mount $FAKEPOD_NFS" \
      || fail "could not mount the share on slot $s"
  done
}
describes() {  # how many times the API was asked for a node so far
  grep -c 'GET /v2/projects/sim-proj/locations/[^/]*/nodes/[^/?: ]* ' "$FAKEPOD_STATE/api.log" || true
}

# A config with one gcloud pod per VM made here; users log in with their own key.
cfg=$SCRATCH/cloud.json
pod_entry() {  # NAME
  printf '"%s": { "gcloud": { "name": "%s", "zone": "%s", "project": "sim-proj" }, "ssh": { "identity_file": "~/.ssh/id_ed25519", "connect_timeout_s": 5 }, "staging_root": "%s/staging", "logs_root": "%s/logs" }' \
    "$1" "$1" "$ZONE" "$FAKEPOD_NFS" "$FAKEPOD_NFS"
}
cat >"$cfg" <<JSON
{ "default_pod": "cloud",
  "pods": { $(pod_entry cloud), $(pod_entry pre), $(pod_entry uidvm), $(pod_entry osl) } }
JSON
chmod 644 "$cfg"
t() {  # USER [-C DIR] ARGS...: tpurun with this test's config
  local u=$1 dir=()
  shift
  if [[ ${1:-} == -C ]]; then dir=(-C "$2"); shift 2; fi
  as_user "$u" "${dir[@]+"${dir[@]}"}" "$TPURUN" --config "$cfg" "$@"
}
entries() {  # DIR: how many entries the dir on the share has (0 when there is none), as the server has it
  local d n=0
  d=$(srv "$1")
  [[ -d $d ]] && n=$(ls "$d" | wc -l)
  echo "$n"
}
proj=$(make_project alice cloudproj)
logs=$FAKEPOD_NFS/logs/alice/cloudproj
# erin's key (bob's) first in a VM's metadata: she takes the VM's first uid.
printf 'erin:%s erin\n' "$(awk '{print $1, $2}' /home/bob/.ssh/id_ed25519.pub)" >"$SCRATCH/erin.keys"
# The run of restart_new_addresses, for deleted_vm.
run_file=$SCRATCH/cloud.run

# The VM cloud that new_vms_unmounted makes is the one the cases after it
# use, up to deleted_vm: each needs the one before it (after a failed case
# the harness's `fakepod up` deletes every VM made here). The others make
# their own VMs.

# ------------------------------------------------------------------ doctor
new_vm_unmounted() {
  fakepod create cloud --zone $ZONE --accelerator v4-16 >/dev/null
  expect_exit 1 t alice doctor
  assert_contains "$OUT" "error   w[0-1]: $FAKEPOD_NFS/staging does not exist there"
  assert_contains "$OUT" "mount the shared NFS volume"
  mount_shared cloud
}
e2e_case new_vm_unmounted "a new TPU VM, cloud (2 workers): doctor says it has no shared mount yet"

doctor_problems() {
  local c0 c1
  read -r c0 c1 <<<"$(node_slots cloud)"
  wexec "$c0" -- sh -c 'rm -f /dev/accel*'
  fakepod clock-skew "$c1" 7 >/dev/null
  expect_exit 1 t alice doctor --json
  /usr/bin/python3 - "$OUT" <<'PY' || fail "doctor --json: $OUT"
import json, sys
d = json.loads(sys.argv[1])
by = {p["check"]: p for p in d["problems"]}
assert not d["ok"] and d["workers"] == 2, d
assert by["devices"]["severity"] == "error" and by["devices"]["workers"] == [0], by
assert by["clock"]["severity"] == "warning" and by["clock"]["workers"] == [1], by
assert "7s ahead" in by["clock"]["problem"], by
assert set(by) == {"devices", "clock"}, by  # mount, uid, sudo, tpu, tmp are fine now
PY
  expect_exit 1 t carol doctor
  assert_contains "$OUT" "warning w[0-1]: no passwordless sudo"
  fakepod clock-skew "$c1" 0 >/dev/null
  wexec "$c0" -- sh -c 'for i in 0 1 2 3; do : >/dev/accel$i; chmod 666 /dev/accel$i; done'
  expect_exit 0 t alice doctor
  assert_contains "$OUT" "no problems found"
}
e2e_case doctor_problems "doctor: a missing TPU device, a skewed clock, no sudo" --needs new_vm_unmounted

# ------------------------------------------------------------------ exec and stage
exec_and_stage() {
  local before
  expect_exit 0 t alice exec -- sh -c 'echo "w$TPU_WORKER_ID $(id -un)"'
  assert_contains "$OUT" "w0 alice"
  assert_contains "$OUT" "w1 alice"
  before=$(describes)
  expect_exit 0 t alice -C "$proj" stage -- sh -c 'echo "staged on $TPURUN_WORKER of $TPURUN_NUM_WORKERS"'
  assert_contains "$OUT" "staged on 1 of 2"
  assert_eq "$(describes)" "$before" "describe was asked again within its 10 minutes"
}
e2e_case exec_and_stage "exec and stage on a gcloud pod; the next command reuses describe's answer" --needs doctor_problems

# ------------------------------------------------------------------ restarts
restart_new_addresses() {
  local old0 old_ip run s i=0
  read -r old0 _ <<<"$(node_slots cloud)"
  old_ip=$(worker_ip "$old0")
  expect_exit 0 t alice -C "$proj" stage --detach --restarts 1 --lost-after 3s -- \
    sh -c 'if [ "$TPURUN_ATTEMPT" = 1 ]; then sleep 600; else echo "attempt $TPURUN_ATTEMPT on $(hostname)"; fi'
  run=$(grep -o 'tpurun logs [^ ]* -f' <<<"$ERR" | awk '{print $3}')
  [[ -n $run ]] || fail "no run id in: $ERR"
  echo "$run" >"$run_file"
  fakepod stop cloud --zone $ZONE >/dev/null
  wait_until "the run's watcher to see cloud STOPPED" 600 grep -qs "STOPPED" "$(srv "$logs/$run/watcher.log")"
  assert_contains "$(cat "$(srv "$logs/$run/watcher.log")")" "TPU VM cloud is STOPPED"
  fakepod start cloud --zone $ZONE --new-ips >/dev/null
  expect_exit 0 t alice logs "$run" -f
  assert_contains "$OUT" "attempt 2 on"
  assert_contains "$ERR" "is at "
  # exec reaches every worker at its new address (a dial of the old one
  # would fail: `cannot connect to OLD:22`, exit 255), each line prefixed
  # with the address it came from
  expect_exit 0 t alice exec --raw -- echo up
  for s in $(node_slots cloud); do
    assert_contains "$OUT" "[w$i $(worker_ip "$s")] up"
    i=$((i + 1))
  done
  assert_not_contains "$OUT$ERR" "$old_ip]" "exec after the move"
  # the record names the new addresses (profile, stacks and kill --run use it)
  assert_not_contains "$(cat "$(srv "$logs/$run/run.json")")" "\"$old_ip\"" "run.json after the move"
}
e2e_case restart_new_addresses "--restarts across a stop and a start on new addresses: the run is relaunched there" --needs exec_and_stage

preempted_status() {
  fakepod preempt cloud --zone $ZONE >/dev/null
  expect_exit 255 t alice status
  assert_contains "$OUT" "pod 'cloud': TPU VM cloud is PREEMPTED"
  expect_exit 255 t alice status --json
  assert_contains "$OUT" '"gcloud_state": "PREEMPTED"'
  expect_exit 0 t alice status --all
  assert_contains "$OUT" "gcloud: PREEMPTED"
}
e2e_case preempted_status "status of a PREEMPTED VM says what gcloud says" --needs restart_new_addresses

# ------------------------------------------------------------------ a deleted VM
deleted_vm() {
  local run
  run=$(cat "$run_file")
  fakepod delete cloud --zone $ZONE >/dev/null
  expect_exit 0 t alice runs
  assert_contains "$OUT" "$run"
  expect_exit 0 t alice logs "$run"
  assert_contains "$OUT" "attempt 2 on"
  expect_exit nonzero t alice exec -- true
  assert_contains "$ERR" "TPU VM cloud was not found in zone $ZONE of project sim-proj: it was deleted"
}
e2e_case deleted_vm "a deleted VM: runs and logs read the records; exec says it is gone" --needs preempted_status

# ------------------------------------------------------------------ uids
uid_mismatch() {
  local u0 there staged_before runs_before
  fakepod create uidvm --zone $ZONE --accelerator v4-8 --metadata "ssh-keys=$(cat "$SCRATCH/erin.keys")" >/dev/null
  mount_shared uidvm
  read -r u0 <<<"$(node_slots uidvm)"
  expect_exit 0 wexec "$u0" -- id -u alice
  [[ $OUT != "$(id -u alice)" ]] || fail "alice has the dev VM's uid on uidvm"
  there=$OUT
  staged_before=$(entries "$FAKEPOD_NFS/staging/alice")
  runs_before=$(entries "$logs")
  expect_exit nonzero t alice -C "$proj" --pod uidvm stage -- true
  assert_contains "$ERR" "not launching: you are uid $(id -u alice) gid $(id -g alice) on this host, but"
  assert_contains "$ERR" "w0: alice is uid $there gid"
  assert_contains "$ERR" "sudo usermod -u $(id -u alice)"
  assert_eq "$(entries "$FAKEPOD_NFS/staging/alice")" "$staged_before" "a snapshot was made"
  assert_eq "$(entries "$logs")" "$runs_before" "a log dir was made"
  expect_exit 1 t alice --pod uidvm doctor
  assert_contains "$OUT" "error   w0: alice is uid $there gid"
}
e2e_case uid_mismatch "uids: a VM where another user's key arrived first numbers alice differently; stage refuses it"

# ------------------------------------------------------------------ preemption
preempted_restarts() {
  local prerun
  fakepod create pre --zone $ZONE --accelerator v4-16 >/dev/null
  mount_shared pre
  expect_exit 0 t alice -C "$proj" --pod pre stage --detach --restarts 2 --lost-after 3s -- sleep 600
  prerun=$(grep -o 'tpurun logs [^ ]* -f' <<<"$ERR" | awk '{print $3}')
  wait_until "the run's job on w1" 600 test -s "$(srv "$logs/$prerun/worker1.pid")"
  fakepod preempt pre --zone $ZONE >/dev/null
  expect_exit 75 t alice --pod pre logs "$prerun" -f
  assert_contains "$ERR" "its TPU VM is gone"
  assert_contains "$ERR" "PREEMPTED"
  expect_exit 0 t alice --pod pre runs --json
  /usr/bin/python3 - "$OUT" "$prerun" <<'PY' || fail "runs --json: $OUT"
import json, sys
run = [r for r in json.loads(sys.argv[1])["runs"] if r["run_id"] == sys.argv[2]][0]
assert run["verdict"] == "preempted", run
assert run["preemptions"][0]["state"] == "PREEMPTED" and run["preemptions"][0]["tpu"] == "pre", run
PY
}
e2e_case preempted_restarts "--restarts across a preemption: the run ends 'preempted' (exit 75), not waiting forever"

# ------------------------------------------------------------------ OS Login, first use
os_login_uids() {
  fakepod create osl --zone $ZONE --accelerator v4-8 --metadata enable-oslogin=TRUE \
    --metadata "ssh-keys=$(cat "$SCRATCH/erin.keys")" >/dev/null
  mount_shared osl
  expect_exit 0 t alice -C "$proj" --pod osl stage -- id -u
  assert_contains "$OUT" "$(id -u alice)"
}
e2e_case os_login_uids "OS Login: the same VM shape as uidvm's, and alice has her one uid everywhere"

first_use() {
  local dave_home dcfg
  fakepod user add dave --no-key >/dev/null
  dave_home=$(user_home dave)
  install -d -m 700 -o dave -g "$(id -gn dave)" "$dave_home/.ssh"
  rm -f "$dave_home/.ssh/google_compute_engine"{,.pub} "$dave_home/.ssh/google_compute_known_hosts"
  # dave has used gcloud before (a key), but never on this TPU VM.
  as_user dave ssh-keygen -q -t ed25519 -N '' -f "$dave_home/.ssh/google_compute_engine"
  on_exit "rm -f '$dave_home/.ssh/google_compute_engine' '$dave_home/.ssh/google_compute_engine.pub' '$dave_home/.ssh/google_compute_known_hosts'"
  dcfg=$SCRATCH/dave.json
  printf '{ "pods": { "pre2": { "gcloud": { "name": "osl", "zone": "%s", "project": "sim-proj" }, "ssh": { "connect_timeout_s": 5 }, "staging_root": "%s/staging", "logs_root": "%s/logs" } } }\n' \
    "$ZONE" "$FAKEPOD_NFS" "$FAKEPOD_NFS" >"$dcfg"
  chmod 644 "$dcfg"
  fakepod metadata unset enable-oslogin --node osl >/dev/null  # the agent makes users from keys again
  expect_exit 255 as_user dave "$TPURUN" --config "$dcfg" exec -- id -un
  assert_contains "$OUT$ERR" "authentication as 'dave' refused"
  assert_contains "$OUT$ERR" "tpurun --pod pre2 hostkeys --import"
  assert_contains "$OUT$ERR" "gcloud compute tpus tpu-vm ssh osl --zone $ZONE --project sim-proj --internal-ip --worker=all --command=true"
  printf 'y\n' >"$SCRATCH/yes"
  chmod 644 "$SCRATCH/yes"
  AS_USER_STDIN=$SCRATCH/yes expect_exit 0 as_user dave script -qfec "$TPURUN --config $dcfg exec -- id -un" /dev/null
  assert_contains "$OUT" "do it now, the way gcloud does?"
  assert_contains "$OUT" "your key is on TPU VM osl now; trying again"
  assert_contains "$OUT" "dave"
}
e2e_case first_use "first use: dave's key is on no VM; tpurun names the fix, then offers it on a terminal" --needs os_login_uids

e2e_run
