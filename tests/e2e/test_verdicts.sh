#!/usr/bin/env bash
# Issue 30: verdicts that match what happened (docs/runs.md, "Which verdict").
#  - Ctrl-C or SIGTERM during the launch: the stage either gives everything up
#    (no job anywhere, the run cancelled) or launches every worker and
#    detaches; never a failure, and SIGTERM names itself;
#  - after a stop, one rule for the workers: a job that ended before the stop
#    keeps its result, the first failure stays failed, every other job that
#    was running ends stopped, whatever it exited with (kill --run, gang stop);
#  - --kill-previous stops only jobs that hold the TPU, and their runs end
#    stopped; a run that holds the workers without the TPU is named instead;
#  - a child that outlives its job and holds the TPU is stopped at the run's
#    end, and runs says so;
#  - a dead watcher: runs takes the exit records (and the stop marker) for the
#    verdict, kill --run records it, and a re-watch keeps the exit's time.
# Asserts on exit codes, records and processes, never on timings or on which
# process a signal reaches first.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gang_lib.sh"
require_tpurun

cfg=$SCRATCH/verdicts.json
cat >"$cfg" <<JSON
{ "default_pod": "v", "pods": { $(carved_pod v 0 3) } }
JSON
chmod 644 "$cfg"
chmod 755 "$SCRATCH"
FAKEPOD_CONFIG=$cfg
proj=$(make_project alice vproj)
logs=$FAKEPOD_NFS/logs/alice/vproj
rm -rf "$(srv "$logs")"
pids_of() { ls "$(srv "$logs/$1")"/worker*.pid 2>/dev/null | wc -l; }
worker_states() {  # RUN: "succeeded stopped ..." in worker order
  run_field alice "$1" '" ".join(w["state"] for w in r["workers"])'
}
state_field() {  # RUN EXPR: over the watcher's state.json, as d
  json_file "$(srv "$logs/$1")/state.json" "$2"
}
exits_of() { ls "$(srv "$logs/$1")"/worker*.exit 2>/dev/null | wc -l; }
# holding W...: each of the workers has a process with a TPU device open.
holding() {
  local w
  for w in "$@"; do [[ -n $(tpu_holders "$w") ]] || return 1; done
}
launched() {  # RUN N: N workers have the job's pid record
  [[ $(pids_of "$1") == "$2" ]]
}

interrupted_launch() {
  local attempt sig delay err client rc text run
  for attempt in "INT 0" "INT 0.05" "INT 0.2" "TERM 0" "TERM 0.1"; do
    read -r sig delay <<<"$attempt"
    err=$SCRATCH/launch.$sig.$delay.err
    tpurun_as alice -C "$proj" stage -- python3 train.py --forever --metrics-addr none >/dev/null 2>"$err" &
    client=$!
    wait_until "the stage to name its run" 120 grep -q '^tpurun: run ' "$err"
    sleep "$delay"  # the moment of the signal, after the run is named: any is right
    kill -"$sig" "$(client_pid "$client")"
    rc=0
    wait "$client" || rc=$?
    text=$(cat "$err")
    run=$(sed -n 's/^tpurun: run \([^ ]*\) → .*/\1/p' "$err")
    [[ -n $run ]] || fail "$sig after ${delay}s: no run named: $text"
    if [[ $text == *"recorded as cancelled"* ]]; then
      assert_eq "$rc" "$([[ $sig == INT ]] && echo 130 || echo 143)" "$sig after ${delay}s, cancelled: exit code"
      assert_eq "$(run_field alice "$run" 'r["verdict"]')" cancelled "$sig after ${delay}s"
      assert_eq "$(pids_of "$run")" 0 "$sig after ${delay}s: a cancelled run started jobs"
      no_job_left alice "$run"
    else
      assert_contains "$text" "detached from run $run" "$sig after ${delay}s: neither cancelled nor detached"
      assert_eq "$rc" "$([[ $sig == INT ]] && echo 130 || echo 143)" "$sig after ${delay}s, detached: exit code"
      assert_eq "$(pids_of "$run")" 4 "$sig after ${delay}s: launched, but not on every worker"
      assert_eq "$(run_field alice "$run" 'r["verdict"]')" running "$sig after ${delay}s"
      expect_exit 0 tpurun_as alice kill --run "$run" --grace 2s
      wait_verdict alice "$run" stopped
    fi
    [[ $sig == INT ]] || assert_not_contains "$text" "by Ctrl-C" "SIGTERM called itself Ctrl-C"
    assert_not_contains "$text" "failed" "$sig after ${delay}s"
  done
}
e2e_case interrupted_launch "Ctrl-C and SIGTERM at once and soon after the run is named: cancelled, or launched and detached"

kill_run_rule() {
  # w0 has ended (0) before the kill; w1 exits 0 on SIGTERM (its shell's trap,
  # whichever process of its tree the signal reaches first: a foreground
  # sleep ends, the loop comes back to the trap); w2 and w3 hold the TPU.
  local job='case $TPURUN_WORKER in 0) exit 0 ;; 1) trap "exit 0" TERM; while :; do sleep 0.2; done ;; esac; python3 train.py --forever --metrics-addr none & wait $!'
  local run detail
  run=$(stage_detached alice "$proj" -- sh -c "$job")
  wait_until "w0's exit record and every job's pid" 120 eval '[[ -s $(srv "$logs/$run/worker0.exit") ]] && launched "$run" 4'
  wait_until "the trainers on w2 and w3 to take their TPUs" 120 holding 2 3
  expect_exit 0 tpurun_as alice kill --run "$run" --grace 3s
  wait_verdict alice "$run" stopped
  assert_eq "$(worker_states "$run")" "succeeded stopped stopped stopped"
  # The watcher either saw w1's exit record before the stop marker or not:
  # either way it was stopped by tpurun, and an exit it saw is named.
  detail=$(run_field alice "$run" 'r["workers"][1]["detail"]')
  [[ $detail == "stopped by tpurun kill" || $detail == "stopped by tpurun (exited 0)" ]] ||
    fail "w1's detail: '$detail'"
}
e2e_case kill_run_rule "kill --run: the job that had ended keeps its result; every other one is stopped, whatever its code"

gang_stop_rule() {
  local job='case $TPURUN_WORKER in 1) sleep 1; exit 3 ;; 2) trap "exit 0" TERM; while :; do sleep 0.2; done ;; esac; python3 train.py --forever --metrics-addr none & wait $!'
  local run
  run=$(stage_detached alice "$proj" -- sh -c "$job")
  expect_exit 3 tpurun_as alice logs "$run" -f
  assert_eq "$(run_field alice "$run" 'r["verdict"]')" failed
  assert_eq "$(worker_states "$run")" "stopped failed stopped stopped"
}
e2e_case gang_stop_rule "a gang stop: one failure, the others stopped even when they exit 0 on SIGTERM"

kill_previous() {
  local tpu_run sleep_run new_run
  tpu_run=$(stage_detached alice "$proj" -- python3 train.py --forever --metrics-addr none)
  wait_until "the run's jobs on 4 workers" 120 launched "$tpu_run" 4
  wait_until "the trainers to take their TPUs" 120 holding 0 1 2 3
  sleep_run=$(stage_detached alice "$proj" --skip-preflight -- sleep 300)
  expect_exit 0 tpurun_as alice -C "$proj" stage --detach --kill-previous -- python3 train.py --forever --metrics-addr none
  new_run=$(grep -o 'tpurun logs [^ ]* -f' <<<"$ERR" | awk '{print $3}')
  wait_verdict alice "$tpu_run" stopped
  assert_eq "$(worker_states "$tpu_run")" "stopped stopped stopped stopped"
  assert_eq "$(run_field alice "$sleep_run" 'r["verdict"]')" running "--kill-previous stopped a job without the TPU"
  wait_until "the new run's jobs on 4 workers" 120 launched "$new_run" 4
  expect_exit 0 tpurun_as alice kill --run "$new_run" --grace 2s
  wait_verdict alice "$new_run" stopped
  expect_exit 0 tpurun_as alice kill --run "$sleep_run" --grace 2s
  wait_verdict alice "$sleep_run" stopped
}
e2e_case kill_previous "--kill-previous stops the run that holds the TPU (it ends stopped), not alice's sleep beside it"

kill_previous_names() {
  local sleep_run
  sleep_run=$(stage_detached alice "$proj" -- sleep 300)
  expect_exit 1 tpurun_as alice -C "$proj" stage --detach --kill-previous -- true
  assert_contains "$ERR" "your run $sleep_run still runs there"
  assert_eq "$(run_field alice "$sleep_run" 'r["verdict"]')" running
  expect_exit 0 tpurun_as alice kill --run "$sleep_run" --grace 2s
  wait_verdict alice "$sleep_run" stopped
}
e2e_case kill_previous_names "a run that holds the workers without the TPU is named, not stopped"

leftover_child() {
  local run
  # The job ends 0 once its child holds the TPU (the trainer says so),
  # within 120 s (else 3: the run fails and the case with it).
  # shellcheck disable=SC2016
  run=$(stage_detached alice "$proj" -- sh -c 'o=/tmp/leftover-$$.out
    python3 train.py --forever --metrics-addr none >"$o" 2>&1 &
    i=0; until grep -q " holds " "$o"; do i=$((i + 1)); [ $i -le 1200 ] || exit 3; sleep 0.1; done; exit 0')
  expect_exit 0 tpurun_as alice logs "$run" -f
  assert_contains "$(run_field alice "$run" 'r["workers"][0]["detail"]')" "leftover process held the TPU, stopped"
  no_job_left alice "$run"
  expect_exit 0 tpurun_as alice status
  assert_not_contains "$OUT" "busy"
}
e2e_case leftover_child "a child left holding the TPU is stopped when the run ends, and runs says so"

dead_watcher_records() {
  local run gate=$SCRATCH/records.gate watcher
  # The jobs exit 0 once the gate is there (the workers see the scratch
  # dir), which the test makes when the watcher is gone; 3 after 300 s.
  rm -f "$gate"
  on_exit "touch '$gate'"
  # shellcheck disable=SC2016
  run=$(stage_detached alice "$proj" -- sh -c \
    'i=0; until [ -e "$0" ]; do i=$((i + 1)); [ $i -le 3000 ] || exit 3; sleep 0.1; done; exit 0' "$gate")
  wait_until "the run's state.json" 120 test -s "$(srv "$logs/$run/state.json")"
  watcher=$(state_field "$run" 'd["watcher"]["pid"]')
  kill -9 "$watcher"
  wait_until "the watcher to be gone" 120 eval '! kill -0 "$watcher" 2>/dev/null'
  assert_eq "$(exits_of "$run")" 0 "exit records before the gate"
  touch "$gate"
  wait_until "4 exit records" 120 eval '[[ $(exits_of "$run") == 4 ]]'
  assert_eq "$(run_field alice "$run" 'r["verdict"]') $(run_field alice "$run" 'r["from_records"]')" "succeeded True"
  expect_exit 0 tpurun_as alice runs --no-check
  assert_contains "$OUT" "finished, not watched"
}
e2e_case dead_watcher_records "the watcher killed, then every job exits 0: runs gives the exit records' verdict"

dead_watcher_kill() {
  local run
  run=$(stage_detached alice "$proj" -- python3 train.py --forever --metrics-addr none)
  wait_until "the run's jobs on 4 workers" 120 launched "$run" 4
  wait_until "the run's state.json" 120 test -s "$(srv "$logs/$run/state.json")"
  kill -9 "$(state_field "$run" 'd["watcher"]["pid"]')"
  expect_exit 0 tpurun_as alice kill --run "$run" --grace 2s
  assert_contains "$ERR" "recorded as stopped"
  assert_eq "$(state_field "$run" 'd["verdict"]')" stopped
}
e2e_case dead_watcher_kill "the watcher killed, then kill --run: the kill records the run as stopped"

dead_watcher_failure() {
  local job='if [ "$TPURUN_WORKER" = 0 ]; then sleep 1; exit 7; fi; python3 train.py --forever --metrics-addr none'
  local run exit_file exited at
  run=$(stage_detached alice "$proj" -- sh -c "$job")
  wait_until "the run's state.json" 120 test -s "$(srv "$logs/$run/state.json")"
  kill -9 "$(state_field "$run" 'd["watcher"]["pid"]')"
  exit_file=$(srv "$logs/$run/worker0.exit")
  wait_until "w0's exit record" 120 test -s "$exit_file"
  at=$(stat -c %Y "$exit_file")
  exited=$(date -u -d "@$at" +%Y-%m-%dT%H:%M:%SZ)
  # Clock time, not synchronization: the next watcher starts seconds after the
  # exit, so its own time and the exit record's differ.
  wait_until "2 s to pass after the exit" 120 eval '(($(date +%s) >= at + 2))'
  expect_exit 7 tpurun_as alice logs "$run" -f
  assert_eq "$(state_field "$run" 'd["first_failure"]["at"]')" "$exited" "the failure's time is the exit record's"
}
e2e_case dead_watcher_failure "the watcher killed, w0 fails; the next watcher reports the failure at its own time"

e2e_run
