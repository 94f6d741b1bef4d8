#!/usr/bin/env bash
# Issue 26, where the VMs come and go, on a pod with no shared mount
# (FAKEPOD_NFS_MODE=none, a pod of its own: each VM has only its own disk):
#  - a full disk on one worker: the stage names the worker and the room it
#    needs, and starts nothing;
#  - a worker lost mid-run: the gang stops as one, "lost", and what the lost
#    worker had written is on the dev VM;
#  - a multi-slice run over two slices of the pod: every worker of both gets
#    the snapshot and its variables, every log comes back;
#  - a preempted spot TPU VM, --recreate: the new VM's empty disk gets the
#    snapshot again before attempt 2 starts there (through real gcloud when
#    installed), and attempt 1's output, mirrored from the VM that is gone,
#    stays in the log before attempt 2's.
# Asserts on exit codes, messages and files, never on timings.
source "$(dirname "$0")/noshare_pod.sh" noshare-vm 127.0.12

proj=$(make_project alice nsvm)
printf 'the snapshot is here\n' >"$proj/data.txt"
chown alice "$proj/data.txt"
home=$(user_home alice)    # the dev VM's (private homes: the test's own)
whome=$(worker_home alice) # the workers' (each on its own disk)
logs=$home/.tpurun/logs/alice/nsvm
on_exit "rm -rf '$home/.tpurun'"
run_of() { sed -n 's/^tpurun: run \([^ ]*\) → .*/\1/p' <<<"$1" | head -1; }
# wait_line FILE TEXT: until FILE (on the dev VM) has the text (120 s at most).
wait_line() {
  (wait_until "'$2' in $1" 120 grep -qsF -- "$2" "$1") 2>/dev/null || fail "no '$2' in $1 after 120 s: $(cat "$1" 2>&1)"
}

full_disk() {
  local uid gid
  uid=$(wexec 1 --user alice -- id -u) gid=$(wexec 1 --user alice -- id -g)
  wexec 1 --user alice -- mkdir -p "$whome/.tpurun"
  wexec 1 -- mount -t tmpfs -o "size=256k,uid=$uid,gid=$gid,mode=700" tmpfs "$whome/.tpurun"
  on_exit "\"\$FAKEPOD\" exec 1 -- umount '$whome/.tpurun' 2>/dev/null || true"
  expect_exit 1 tpurun_as alice -C "$proj" stage -- true
  assert_contains "$ERR" "the snapshot did not reach 1 worker"
  assert_contains "$ERR" "w1 $(worker_ip 1): no room for the snapshot under ~/.tpurun/staging"
  assert_contains "$ERR" "needed (its files' disk blocks, and 1 MiB for the run's first logs), "
  assert_contains "$ERR" "nothing was started"
  [[ ! -e $logs ]] || [[ -z $(ls "$logs") ]] || fail "a refused stage left a run: $(ls "$logs")"
  wexec 1 -- umount "$whome/.tpurun"
}
e2e_case full_disk "a full disk on one worker: the stage names it and the room needed, and starts nothing anywhere"

# A ~/.tpurun on w2 that root made (a `sudo tpurun ...` once): the stage says
# whose it is and what fixes it, not a raw "[Errno 13]".
root_owned_dir() {
  wexec 2 -- sh -c 'rm -rf "$1" && mkdir "$1" && chmod 755 "$1"' sh "$whome/.tpurun"  # root's
  expect_exit 1 tpurun_as alice -C "$proj" stage -- true
  assert_contains "$ERR" "w2 $(worker_ip 2): cannot make $whome/.tpurun/staging/alice: Permission denied ($whome/.tpurun is root's, mode 755; as root: chown -R alice $whome/.tpurun)"
  assert_contains "$ERR" "nothing was started"
  wexec 2 -- rm -rf "$whome/.tpurun"
}
e2e_case root_owned_dir "a ~/.tpurun that root made on one worker: the stage says whose it is and the fix, and starts nothing"

# A worker's push stopped (SIGSTOP) for 150 s in the middle of a file: longer
# than the 120 s a worker keeps a reservation without a keepalive. The stage
# sends its keepalives while the write waits, so w1 keeps its reservation and
# the gang starts whole once the push goes on (issue 37, finding 9: the
# reservation was lost, the job started on 3 of 4 workers, "lost").
stalled_push() {
  local big=$SCRATCH/big stage_pid rc=0 run i t0
  mkdir -p "$big"
  cp "$proj/train.py" "$big/"
  head -c $((96 << 20)) /dev/urandom >"$big/weights.bin"  # far more than a channel's window and pipes hold
  chown -R alice "$big"
  # On w1, as soon as its push has made its temp tree (the objects flow
  # next): stop it.
  wexec 1 -- timeout 120 sh -c 'until ls -d "$1"/.tmp-*-code-* >/dev/null 2>&1; do :; done
    pkill -STOP -u alice -f "^tpurun-push "' sh "$whome/.tpurun/staging/alice" &
  local stopper=$!
  tpurun_as alice -C "$big" stage -- sh -c 'cmp -s weights.bin - <weights.bin && echo "w$TPURUN_WORKER has it"' \
    >"$SCRATCH/stall.out" 2>"$SCRATCH/stall.err" &
  stage_pid=$!
  wait "$stopper" || fail "w1's push was never seen (or not stopped): $(cat "$SCRATCH/stall.err")"
  t0=$SECONDS
  # the stall itself: 150 s, the stage waiting all along
  wait_until "150 s of w1's push stopped, the stage still waiting" 200 \
    eval '! kill -0 $stage_pid 2>/dev/null || (( SECONDS - t0 >= 150 ))'
  kill -0 "$stage_pid" 2>/dev/null || fail "the stage ended while w1's push was stopped: $(cat "$SCRATCH/stall.err")"
  # gc meanwhile, with a cutoff that takes every snapshot: the one being sent
  # is kept, pinned by the stage (issue 37: it was removed).
  local snap
  snap=$(sed -n 's/^tpurun: staged .* → .*\/\([^/]*\)$/\1/p' "$SCRATCH/stall.err" | head -1)
  [[ -n $snap ]] || fail "no snapshot named in the stage's output: $(cat "$SCRATCH/stall.err")"
  expect_exit 0 tpurun_as alice gc --older-than 0s --dry-run --json
  assert_eq "$(json_get "$OUT" "[k['being_staged'] for k in d['kept'] if k['snapshot'] == '$snap']")" "[True]" \
    "gc's verdict on the snapshot being sent ($snap): $OUT"
  assert_eq "$(json_get "$OUT" "'$snap' in d['snapshots_removed']")" False "gc would remove the snapshot being sent"
  wexec 1 -- pkill -CONT -u alice -f "^tpurun-push "
  wait "$stage_pid" || rc=$?
  assert_eq "$rc" 0 "the stage's exit code: $(cat "$SCRATCH/stall.err")"
  for i in 0 1 2 3; do assert_contains "$(cat "$SCRATCH/stall.out")" "w$i has it"; done
  run=$(run_of "$(cat "$SCRATCH/stall.err")")
  assert_eq "$(run_field alice "$run" 'r["verdict"]')" "succeeded"
  rm -rf "$big"
}
e2e_case stalled_push "a worker's push stopped 150 s mid-file: its reservation holds, and the gang starts whole after"

lost_worker() {
  local run
  run=$(stage_detached alice "$proj" --lost-after 3s -- \
    sh -c 'echo "w$TPURUN_WORKER up"; exec python3 train.py --forever --metrics-addr none --step-time 0.1')
  wait_line "$logs/$run/worker3.log" "w3 up"
  stop_worker 3
  expect_exit 255 tpurun_as alice -C "$proj" logs "$run" -f
  assert_contains "$ERR" "first failure: w3 $(worker_ip 3) was lost"
  assert_eq "$(run_field alice "$run" 'r["verdict"]')" "lost"
  assert_eq "$(run_field alice "$run" 'sum(w["state"] == "stopped" for w in r["workers"])')" "3"
  fakepod start-worker 3 >&2
  no_job_left alice "$run"
}
e2e_case lost_worker "a worker lost mid-run: the gang stops as one, and w3's output so far is here"

ns_pod() {  # NAME FIRST LAST: workers of this pod, no staging_root/logs_root (their own disks)
  local ips="" i
  for ((i = $2; i <= $3; i++)); do ips+="${ips:+, }\"$(worker_ip "$i")\""; done
  printf '"%s": { "workers": [%s], "ssh": { "identity_file": "~/.ssh/id_ed25519", "known_hosts": "~/.ssh/known_hosts", "host_key_policy": "accept-new", "connect_timeout_s": 5 } }' \
    "$1" "$ips"
}
multislice() {
  local cfg=$SCRATCH/slices.json msrun i
  cat >"$cfg" <<JSON
{ "default_pod": "slice-a", "pods": { $(ns_pod slice-a 0 1), $(ns_pod slice-b 2 3) } }
JSON
  chmod 644 "$cfg"
  chmod 755 "$SCRATCH"
  printf 'slices\n' >"$proj/slices.txt"  # a new tree: pushed to every worker of both slices
  chown alice "$proj/slices.txt"
  local FAKEPOD_CONFIG=$cfg  # (tpurun_as's config, in this case)
  expect_exit 0 tpurun_as alice -C "$proj" --pod slice-a,slice-b stage -- \
    sh -c 'echo "slice $MEGASCALE_SLICE_ID worker $TPURUN_SLICE_WORKER of $TPURUN_NUM_WORKERS: $(cat slices.txt)"'
  assert_contains "$ERR" "→ 4 workers (no shared mount): sent"
  assert_contains "$ERR" "launched on 4 workers in 2 slices"
  assert_contains "$ERR" "succeeded"
  msrun=$(run_of "$ERR")
  for i in 0 1 2 3; do
    assert_eq "$(cat "$logs/$msrun/worker$i.log")" "slice $((i / 2)) worker $((i % 2)) of 4: slices" "worker$i.log"
  done
}
e2e_case multislice "a multi-slice run over two slices: one snapshot on all four disks, every log mirrored"

recreate_no_share() {
  local ZONE=us-central2-b cfg=$SCRATCH/rc.json job rcrun i log
  fakepod create rc --zone $ZONE --accelerator v4-16 --spot >/dev/null
  cat >"$cfg" <<JSON
{ "default_pod": "rc",
  "pods": { "rc": { "gcloud": { "name": "rc", "zone": "$ZONE", "project": "sim-proj" },
                    "ssh": { "identity_file": "~/.ssh/id_ed25519", "connect_timeout_s": 5 } } } }
JSON
  chmod 644 "$cfg"
  local FAKEPOD_CONFIG=$cfg  # (tpurun_as's config, in this case)
  expect_exit 0 tpurun_as alice -C "$proj" stage --recreate --dry-run -- true
  assert_contains "$OUT" "gcloud compute tpus tpu-vm create rc --zone $ZONE --project sim-proj --accelerator-type v4-16"
  assert_contains "$OUT" "the snapshot copied to the new VM's workers (no shared mount)"
  job='echo "attempt $TPURUN_ATTEMPT on $(hostname): $(cat data.txt)"; if [ "$TPURUN_ATTEMPT" = 1 ]; then sleep 600; fi'
  expect_exit 0 tpurun_as alice -C "$proj" stage --detach --recreate --lost-after 3s -- sh -c "$job"
  rcrun=$(run_of "$ERR")
  [[ -n $rcrun ]] || fail "no run id in: $ERR"
  wait_line "$logs/$rcrun/worker1.log" "attempt 1 on"
  fakepod preempt rc --zone $ZONE >/dev/null
  expect_exit 0 tpurun_as alice logs "$rcrun" -f
  assert_contains "$ERR" "recreating it (preemption 1 of at most 3"
  assert_contains "$ERR" "(no shared mount): sent"
  assert_contains "$ERR" "resumed as attempt 2"
  for i in 0 1; do
    log=$(cat "$logs/$rcrun/worker$i.log")
    assert_contains "$log" "attempt 1 on t1v-n-" "w$i's attempt 1 (its VM is gone)"
    assert_contains "$log" "attempt 2 on t1v-n-" "w$i's attempt 2"
    [[ $(grep -n "attempt 1 on" <<<"$log" | cut -d: -f1) -lt $(grep -n "attempt 2 on" <<<"$log" | cut -d: -f1) ]] ||
      fail "w$i's attempts out of order: $log"
    assert_contains "$log" "the snapshot is here"
    [[ $(grep -c "the snapshot is here" <<<"$log") == 2 ]] || fail "w$i's attempt 2 did not see the snapshot: $log"
  done
  assert_eq "$(run_field alice "$rcrun" 'r["verdict"]')" "succeeded"
}
e2e_case recreate_no_share "a preempted spot TPU VM with --recreate: the new VM gets the snapshot again, attempt 1's output stays"

e2e_run
