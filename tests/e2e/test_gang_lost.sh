#!/usr/bin/env bash
# Lost workers: a preempted host (its namespace killed) and a frozen one (every
# process stopped, TCP still open) end the run as "lost" after --lost-after,
# stopping the others; exec reports a frozen worker and --timeout instead of
# hanging. Asserts on states and exit codes, never on timings.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gang_lib.sh"
N=$FAKEPOD_WORKERS
frozen=$((N - 2))  # frozen_worker's victim: w6 of 8, w2 of 4
proj=$(make_project alice proj)
logs=$FAKEPOD_NFS/logs/alice/proj

launched() {  # RUN: every worker has the job's pid record
  [[ $(ls "$(srv "$logs/$1")"/worker*.pid 2>/dev/null | wc -l) == "$N" ]]
}
# The frozen worker's cases are judged over ssh, not the shared mount: they run
# on the plain one.
no_frozen_on_nfs() {
  nfs_mode && elsewhere "a frozen worker, and exec's frozen-worker and --timeout cases, are judged over ssh, not the shared mount: they run on the plain one"
  return 0
}

preempted_worker() {
  local run
  run=$(stage_detached alice "$proj" --lost-after 3s -- python3 train.py --forever --metrics-addr none)
  wait_until "the run's jobs on every worker" 120 launched "$run"
  stop_worker 3
  expect_exit 255 tpurun_as alice -C "$proj" logs "$run" -f
  assert_contains "$ERR" "first failure: w3 $(worker_ip 3) was lost (since "
  assert_eq "$(run_field alice "$run" 'r["verdict"]')" "lost"
  assert_eq "$(run_field alice "$run" 'r["first_failure"]["how"]')" "lost"
  assert_eq "$(run_field alice "$run" 'sum(w["state"] == "stopped" for w in r["workers"])')" "$((N - 1))"
  fakepod start-worker 3 >&2
  no_job_left alice "$run"
}
e2e_case preempted_worker "preempted mid-run: the watcher declares w3 lost and stops the others"

frozen_worker() {
  no_frozen_on_nfs
  local run
  run=$(stage_detached alice "$proj" --lost-after 3s -- python3 train.py --forever --metrics-addr none)
  wait_until "the run's jobs on every worker" 120 launched "$run"
  freeze_worker "$frozen"
  expect_exit 255 tpurun_as alice -C "$proj" logs "$run" -f
  assert_contains "$ERR" "first failure: w$frozen $(worker_ip "$frozen") was lost"
  assert_eq "$(run_field alice "$run" 'sum(w["state"] == "stopped" for w in r["workers"])')" "$((N - 1))"
  thaw_worker "$frozen"
}
e2e_case frozen_worker "frozen mid-run (sshd and the job stopped, TCP still open): lost, the others stopped"

exec_frozen_worker() {
  no_frozen_on_nfs
  local client rc
  tpurun_as alice exec --raw -- sh -c 'echo started; sleep 40; echo finished' >"$SCRATCH/exec.out" 2>"$SCRATCH/exec.err" &
  client=$!
  wait_until "every worker to start the command" 120 eval '[[ $(grep -c started "$SCRATCH/exec.out") == "$N" ]]'
  freeze_worker 2
  rc=0
  wait "$client" || rc=$?
  thaw_worker 2
  assert_eq "$rc" "255" "exec exit code with a frozen worker"
  assert_contains "$(cat "$SCRATCH/exec.err")" "w2 $(worker_ip 2): the worker stopped answering mid-command"
  assert_eq "$(grep -c finished "$SCRATCH/exec.out")" "$((N - 1))"
}
e2e_case exec_frozen_worker "exec: a worker that freezes mid-command is reported, the others finish"

exec_timeout() {
  no_frozen_on_nfs
  expect_exit 124 tpurun_as alice exec --worker 0-1 --timeout 1s -- sleep 30
  assert_contains "$ERR" "w0 $(worker_ip 0): timed out after 1s"
  assert_eq "$(wexec 0 -- pgrep -u alice -x sleep || true)" ""
  expect_exit 2 tpurun_as alice exec --timeout 0 -- true
}
e2e_case exec_timeout "exec --timeout: the command is stopped and the worker reports a timeout; --timeout 0 is refused"

e2e_run
