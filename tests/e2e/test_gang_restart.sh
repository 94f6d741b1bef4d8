#!/usr/bin/env bash
# Restarts: the whole run is relaunched after a failure, from the same
# snapshot into the same log dir, with TPURUN_ATTEMPT and an attempt header;
# the watcher keeps going when the client is SIGKILLed during the restart
# wait, and `logs -f` takes over when the watcher itself is killed.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gang_lib.sh"
N=$FAKEPOD_WORKERS
held=$((N - 2))  # client_killed_in_restart_wait: bob holds w6 of 8, w2 of 4
odd=$((N / 2))   # watcher_killed: w4 of 8, w2 of 4 fails
proj=$(make_project alice proj)
logs=$FAKEPOD_NFS/logs/alice/proj
# Gates the jobs wait for (the workers see the scratch dir).
gates=$(scratch_dir alice)

# latest_run_dir: alice's newest run of proj, as root reads it (run ids sort by time).
latest_run_dir() {
  ls -d "$(srv "$logs")"/*/ | sort | tail -1
}
# all_runs: alice's runs of proj, sorted (none before her first).
all_runs() {
  ls "$(srv "$logs")" 2>/dev/null | sort || true
}
# watcher_pid RUN: the watcher's pid in the run's state.json (nothing before it is written).
watcher_pid() {
  json_file "$(srv "$logs/$1")/state.json" 'd["watcher"]["pid"]' 2>/dev/null || true
}
# dead PID: the process is gone (or a zombie not yet reaped).
dead() {
  [[ ! -e /proc/$1 || $(ps -o stat= -p "$1" 2>/dev/null) == Z* ]]
}
launched() {  # RUN: every worker has the job's pid record
  [[ $(ls "$(srv "$logs/$1")"/worker*.pid 2>/dev/null | wc -l) == "$N" ]]
}

restart_then_success() {
  local job='echo "attempt=$TPURUN_ATTEMPT"; if [ "$TPURUN_ATTEMPT" = 1 ] && [ "$TPURUN_WORKER" = 1 ]; then exit 7; fi; sleep 2; echo done'
  local run_dir run
  expect_exit 0 tpurun_as alice -C "$proj" stage --restarts 1 -- sh -c "$job"
  run_dir=$(latest_run_dir)
  run=$(basename "$run_dir")
  assert_contains "$ERR" "attempt 1 failed (w1 exited 7); restarting as attempt 2 of 2"
  assert_contains "$ERR" "succeeded (attempt 2 of 2)"
  assert_eq "$(run_field alice "$run" 'r["attempt"]')" "2"
  assert_eq "$(run_field alice "$run" 'r["verdict"]')" "succeeded"
  grep -q '^==== tpurun: attempt 1 of 2' "$run_dir/worker1.log" || fail "no attempt 1 header"
  grep -q '^==== tpurun: attempt 2 of 2' "$run_dir/worker1.log" || fail "no attempt 2 header"
  grep -q '^attempt=2$' "$run_dir/worker1.log" || fail "the job did not see TPURUN_ATTEMPT=2"
  assert_eq "$(cat "$run_dir/worker1.exit")" "7"
  assert_eq "$(cat "$run_dir/worker1.a2.exit")" "0"
}
e2e_case restart_then_success "--restarts 1 with a job that fails only on its first attempt: success on the second"

out_of_restarts() {
  nfs_mode && elsewhere "on the plain mount only: the summary's words; restart_then_success restarts over the mount"
  expect_exit 7 tpurun_as alice -C "$proj" stage --restarts 1 -- sh -c 'if [ "$TPURUN_WORKER" = 1 ]; then exit 7; fi; exec python3 train.py --forever --metrics-addr none'
  assert_contains "$ERR" "failed (attempt 2 of 2)"
  assert_contains "$ERR" "first failure: w1 $(worker_ip 1) exited 7"
}
e2e_case out_of_restarts "out of restarts: the same summary as a failure, the first failure's code"

client_killed_in_restart_wait() {
  local before run="" client gate=$gates/fail-attempt1
  rm -f "$gate"
  # w1's first attempt fails once the gate is there: after bob holds w$held's TPU
  # (with a fixed delay, a slow start of bob's trainer would let the restart
  # through before it).
  local job="if [ \"\$TPURUN_ATTEMPT\" = 1 ] && [ \"\$TPURUN_WORKER\" = 1 ]; then while [ ! -e '$gate' ]; do sleep 0.1; done; exit 7; fi; sleep 1; echo done"
  before=$(all_runs)
  as_user alice -C "$proj" "$TPURUN" --config "$FAKEPOD_CONFIG" stage --restarts 1 -- sh -c "$job" >/dev/null 2>&1 &
  client=$!
  new_run() {
    run=$(comm -13 <(echo "$before") <(all_runs) | head -1)
    [[ -n $run ]]
  }
  wait_until "the run to start" 120 new_run
  start_trainer_on "$held" bob --forever --metrics-addr none >/dev/null
  touch "$gate"
  # The watcher's notes as alice sees them on the dev VM, where the watcher
  # writes them (on NFS another client sees them once they are flushed).
  notes() { as_user alice cat "$logs/$run/watcher.log" 2>/dev/null || true; }
  wait_until "the watcher to wait before the restart" 120 eval 'grep -q "waiting for" <<<"$(notes)"'
  assert_contains "$(notes)" "w$held $(worker_ip "$held") (TPU held by bob"
  kill -KILL "$(client_pid "$client")"
  wait "$client" 2>/dev/null || true
  assert_eq "$(run_field alice "$run" 'r["verdict"]')" "restarting"
  assert_eq "$(run_field alice "$run" 'r["watched"]')" "True"
  reset_tpus >/dev/null 2>&1   # bob's trainer goes: the watcher relaunches on its own
  wait_verdict alice "$run" succeeded
  assert_eq "$(run_field alice "$run" 'r["attempt"]')" "2"
}
e2e_case client_killed_in_restart_wait "the client SIGKILLed while the watcher waits to restart (bob holds a worker's TPU): the watcher goes on"

watcher_killed() {
  local run sup err follower rc gate=$gates/fail-w$odd
  rm -f "$gate"
  # w$odd fails once the gate is there: after the checks of the unwatched run and
  # once logs -f has taken it over (with a fixed delay, a slow machine would
  # see the failure before them).
  run=$(stage_detached alice "$proj" -- sh -c "$(fail_on_worker_job "$odd" 5 | sed "s|sleep 1|while [ ! -e '$gate' ]; do sleep 0.1; done|")")
  wait_until "the watcher's pid in state.json" 120 eval 'sup=$(watcher_pid "$run"); [[ -n $sup && $sup != 0 ]]'
  kill -KILL "$sup"
  wait_until "the watcher to die" 120 dead "$sup"
  expect_exit 0 tpurun_as alice -C "$proj" runs
  assert_contains "$OUT" "UNWATCHED"
  assert_eq "$(run_field alice "$run" 'r["verdict"]')" "running"
  err=$SCRATCH/resume.err
  tpurun_as alice -C "$proj" logs "$run" -f >/dev/null 2>"$err" &
  follower=$!
  on_exit "kill $follower 2>/dev/null; touch '$gate'"
  wait_until "logs -f to start a watcher" 120 grep -q "this run has no watcher" "$err"
  touch "$gate"
  rc=0
  wait "$follower" || rc=$?
  ERR=$(cat "$err")
  assert_eq "$rc" 5 "logs -f's exit code: $ERR"
  assert_contains "$ERR" "this run has no watcher"
  assert_contains "$ERR" "first failure: w$odd $(worker_ip "$odd") exited 5"
  no_job_left alice "$run"
}
e2e_case watcher_killed "the watcher SIGKILLed: the job keeps running, runs says UNWATCHED, logs -f resumes watching"

# kill_by_name_stops_restarts HOW: a run with --restarts 2 killed by a name
# for it (HOW: id, last, or prefix: its id up to the pod's name). The kill
# tells the run's watcher first, so the run ends as stopped. Only the watcher
# relaunches, so once it has exited nothing can.
kill_by_name_stops_restarts() {
  local run sup name
  run=$(stage_detached alice "$proj" --restarts 2 -- /usr/bin/python3 train.py --forever --metrics-addr none)
  wait_until "the run's jobs on every worker" 120 launched "$run"
  wait_until "the run's watcher" 120 eval 'sup=$(watcher_pid "$run"); [[ $sup =~ ^[1-9] ]]'
  case $1 in
    id) name=$run ;;
    last) name=last ;;
    prefix) name=${run:0:22} ;;  # <date>_<time>_<rand6>, less "_<pod>"
  esac
  expect_exit 0 tpurun_as alice -C "$proj" kill --run "$name" --grace 2s
  assert_contains "$ERR" "stopped the watcher of run $run"
  wait_verdict alice "$run" stopped
  wait_until "the watcher to exit" 120 dead "$sup"
  assert_eq "$(run_field alice "$run" 'r["verdict"]')" "stopped"
  assert_eq "$(run_field alice "$run" 'r["attempt"]')" "1"
  assert_eq "$(ls "$(srv "$logs/$run")" | grep -c '\.a2\.' || true)" "0" "files of a second attempt"
  no_job_left alice "$run"
}
kill_stops_restarts() { kill_by_name_stops_restarts id; }
# On NFS, kill_stops_restarts stops a run over the mount; the other two differ
# only in how the run is named.
kill_last_stops_restarts() {
  nfs_mode && elsewhere "on the plain mount only: naming the run"
  kill_by_name_stops_restarts last
}
kill_prefix_stops_restarts() {
  nfs_mode && elsewhere "on the plain mount only: naming the run"
  kill_by_name_stops_restarts prefix
}
e2e_case kill_stops_restarts "kill --run stops the watcher too: the run ends as stopped, and is not restarted"
e2e_case kill_last_stops_restarts "the same with kill --run last"
e2e_case kill_prefix_stops_restarts "the same with a prefix of the run id"

e2e_run
