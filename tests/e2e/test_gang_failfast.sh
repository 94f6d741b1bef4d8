#!/usr/bin/env bash
# A run is a gang: one worker's failure stops the run on every worker, in the
# foreground and with no client attached; --on-failure continue keeps the old
# behaviour. Asserts on states and exit codes, never on timings.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gang_lib.sh"
N=$FAKEPOD_WORKERS
odd=$((N - 3))  # the worker that fails in detached_failure: w5 of 8, w1 of 4
proj=$(make_project alice proj)
logs=$FAKEPOD_NFS/logs/alice/proj

# latest_run: alice's newest run of proj (run ids sort by time).
latest_run() {
  basename "$(ls -d "$(srv "$logs")"/*/ | sort | tail -1)"
}

foreground_failure() {
  local run
  # w2 exits 3; the others block forever until tpurun stops them.
  expect_exit 3 tpurun_as alice -C "$proj" stage -- sh -c "$(fail_on_worker_job 2 3)"
  assert_contains "$ERR" "first failure: w2 $(worker_ip 2) exited 3"
  assert_contains "$ERR" "[w2 $(worker_ip 2)] w2 broke"
  assert_contains "$ERR" "tpurun stopped the run's jobs on the other workers"
  run=$(latest_run)
  assert_eq "$(run_field alice "$run" 'r["verdict"]')" "failed"
  assert_eq "$(run_field alice "$run" 'r["first_failure"]["worker"]')" "2"
  assert_eq "$(run_field alice "$run" '" ".join(sorted(set(w["state"] for w in r["workers"] if w["worker"] != 2)))')" "stopped"
  assert_eq "$(run_field alice "$run" '[w["state"] for w in r["workers"] if w["worker"] == 2][0]')" "failed"
  no_job_left alice "$run"
}
e2e_case foreground_failure "in the foreground, w2's failure stops the run on every other worker"

detached_failure() {
  local run
  run=$(stage_detached alice "$proj" -- sh -c "$(fail_on_worker_job "$odd" 4)")
  wait_verdict alice "$run" failed
  assert_eq "$(run_field alice "$run" 'r["first_failure"]["exit_code"]')" "4"
  assert_eq "$(run_field alice "$run" 'r["stopped_others"]')" "True"
  no_job_left alice "$run"
  # logs -f of an ended run prints its summary and returns its exit code.
  expect_exit 4 tpurun_as alice -C "$proj" logs "$run" -f
  assert_contains "$ERR" "first failure: w$odd $(worker_ip "$odd") exited 4"
}
e2e_case detached_failure "detached, nobody follows, and the watcher still stops the gang; logs -f then gives its code"

unwritable_cache() {
  local run
  nfs_mode && elsewhere "on the plain mount only: the cache dir is the dev VM's, not the shared mount's"
  # The watcher has no lock file, says so, and still watches (a run nobody
  # watches would keep no gang rules).
  run=$(AS_USER_ENV="XDG_CACHE_HOME=/proc/no-cache-here" stage_detached alice "$proj" -- sh -c "$(fail_on_worker_job 3 5)")
  wait_verdict alice "$run" failed
  assert_eq "$(run_field alice "$run" 'r["first_failure"]["exit_code"]')" "5"
  assert_contains "$(as_user alice cat "$logs/$run/watcher.log")" "watching without it"
  no_job_left alice "$run"
}
e2e_case unwritable_cache "a cache dir alice cannot write: the watcher watches without its lock file"

continue_on_failure() {
  local run
  nfs_mode && elsewhere "on the plain mount only: its records cross the mount as all_succeed's and foreground_failure's do"
  expect_exit 3 tpurun_as alice -C "$proj" stage --raw --on-failure continue -- \
    sh -c 'if [ "$TPURUN_WORKER" = 1 ]; then exit 3; fi; sleep 2; echo done'
  run=$(latest_run)
  assert_eq "$(run_field alice "$run" 'r["verdict"]')" "failed"
  assert_eq "$(run_field alice "$run" 'r["stopped_others"]')" "False"
  assert_eq "$(run_field alice "$run" 'sum(w["state"] == "succeeded" for w in r["workers"])')" "$((N - 1))"
  assert_eq "$(grep -c '] done' <<<"$OUT")" "$((N - 1))"
}
e2e_case continue_on_failure "--on-failure continue: the others finish on their own; nobody is stopped"

all_succeed() {
  local run i
  # The line all of them print is shown once (collapsed), the ones that
  # differ per worker each.
  expect_exit 0 tpurun_as alice -C "$proj" stage -- sh -c 'echo "step 1 loss 0.5"; echo "i am $TPURUN_WORKER"; sleep 1; echo ok'
  assert_contains "$ERR" "succeeded: all $N workers exited 0"
  assert_contains "$OUT" "[w0-$((N - 1))] step 1 loss 0.5"
  assert_eq "$(grep -c 'step 1 loss' <<<"$OUT")" "1"
  for i in $(seq 0 $((N - 1))); do assert_contains "$OUT" "[w$i $(worker_ip "$i")] i am $i"; done
  run=$(latest_run)
  expect_exit 0 tpurun_as alice -C "$proj" logs "$run" --raw
  assert_eq "$(grep -c 'step 1 loss' <<<"$OUT")" "$N"
}
e2e_case all_succeed "every worker exits 0: success, nobody stopped; a line all of them print is shown once"

disjoint_runs() {
  local other half=$((N / 2))
  nfs_mode && elsewhere "on the plain mount only: which runs stop each other is the watcher's choice, not the mount's"
  other=$(stage_detached alice "$proj" --worker "$half-$((N - 1))" -- python3 train.py --forever --metrics-addr none)
  expect_exit 9 tpurun_as alice -C "$proj" stage --worker "0-$((half - 1))" -- sh -c 'if [ "$TPURUN_WORKER" = 0 ]; then exit 9; fi; exec python3 train.py --forever --metrics-addr none'
  assert_eq "$(run_field alice "$other" 'r["verdict"]')" "running"
  expect_exit 0 tpurun_as alice -C "$proj" kill --run "$other" --grace 2s
  wait_verdict alice "$other" stopped
}
e2e_case disjoint_runs "two runs of the same user on different worker sets never stop each other"

bad_flags() {
  nfs_mode && elsewhere "on the plain mount only: argument checks"
  expect_exit 2 tpurun_as alice -C "$proj" stage --restarts -1 -- true
  assert_contains "$ERR" "--restarts -1"
  expect_exit 2 tpurun_as alice -C "$proj" stage --lost-after 0 -- true
  assert_contains "$ERR" "--lost-after 0"
  expect_exit 2 tpurun_as alice -C "$proj" stage --on-failure maybe -- true
  assert_contains "$ERR" "--on-failure maybe"
}
e2e_case bad_flags "bad --restarts, --lost-after and --on-failure values get clear errors"

e2e_run
