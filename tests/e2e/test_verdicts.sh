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
# Asserts on exit codes, records and processes, never on timings.
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
run_from() { grep -o 'tpurun logs [^ ]* -f' "$1" | awk '{print $3}' | head -1; }
pids_of() { ls "$(srv "$logs/$1")"/worker*.pid 2>/dev/null | wc -l; }
worker_states() {  # RUN: "succeeded stopped ..." in worker order
  run_field alice "$1" '" ".join(w["state"] for w in r["workers"])'
}
watcher_pid() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["watcher"]["pid"])' "$(srv "$logs/$1")/state.json"; }

# ------------------------------------------------------------------ Ctrl-C and SIGTERM during the launch
note "Ctrl-C and SIGTERM at once and soon after the run is named: cancelled, or launched and detached"
for attempt in "INT 0" "INT 0.05" "INT 0.2" "TERM 0" "TERM 0.1"; do
  read -r sig delay <<<"$attempt"
  err=$SCRATCH/launch.$sig.$delay.err
  tpurun_as alice -C "$proj" stage -- python3 train.py --forever >/dev/null 2>"$err" &
  client=$!
  for _ in $(seq 300); do grep -q '^tpurun: run ' "$err" 2>/dev/null && break; sleep 0.02; done
  sleep "$delay"
  kill -"$sig" "$(pgrep -P "$client" | head -1)"
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

# ------------------------------------------------------------------ one rule after a stop
note "kill --run: the job that had ended keeps its result; every other one is stopped, whatever its code"
job='case $TPURUN_WORKER in 0) exit 0 ;; 1) trap "exit 0" TERM ;; esac; python3 train.py --forever & wait $!'
run=$(stage_detached alice "$proj" -- sh -c "$job")
for _ in $(seq 100); do [[ -s $(srv "$logs/$run/worker0.exit") && $(pids_of "$run") == 4 ]] && break; sleep 0.1; done
sleep 1  # the trainers take their TPUs
expect_exit 0 tpurun_as alice kill --run "$run" --grace 3s
wait_verdict alice "$run" stopped
assert_eq "$(worker_states "$run")" "succeeded stopped stopped stopped"
assert_contains "$(run_field alice "$run" 'r["workers"][1]["detail"]')" "stopped by tpurun (exited 0)"

note "a gang stop: one failure, the others stopped even when they exit 0 on SIGTERM"
job='case $TPURUN_WORKER in 1) sleep 1; exit 3 ;; 2) trap "exit 0" TERM ;; esac; python3 train.py --forever & wait $!'
run=$(stage_detached alice "$proj" -- sh -c "$job")
expect_exit 3 tpurun_as alice logs "$run" -f
assert_eq "$(run_field alice "$run" 'r["verdict"]')" failed
assert_eq "$(worker_states "$run")" "stopped failed stopped stopped"

# ------------------------------------------------------------------ --kill-previous
note "--kill-previous stops the run that holds the TPU (it ends stopped), not alice's sleep beside it"
tpu_run=$(stage_detached alice "$proj" -- python3 train.py --forever)
for _ in $(seq 100); do [[ $(pids_of "$tpu_run") == 4 ]] && break; sleep 0.1; done
sleep 1
sleep_run=$(stage_detached alice "$proj" --skip-preflight -- sleep 300)
expect_exit 0 tpurun_as alice -C "$proj" stage --detach --kill-previous -- python3 train.py --forever
new_run=$(grep -o 'tpurun logs [^ ]* -f' <<<"$ERR" | awk '{print $3}')
wait_verdict alice "$tpu_run" stopped
assert_eq "$(worker_states "$tpu_run")" "stopped stopped stopped stopped"
assert_eq "$(run_field alice "$sleep_run" 'r["verdict"]')" running "--kill-previous stopped a job without the TPU"
for _ in $(seq 100); do [[ $(pids_of "$new_run") == 4 ]] && break; sleep 0.1; done
assert_eq "$(pids_of "$new_run")" 4
expect_exit 0 tpurun_as alice kill --run "$new_run" --grace 2s
wait_verdict alice "$new_run" stopped
expect_exit 0 tpurun_as alice kill --run "$sleep_run" --grace 2s
wait_verdict alice "$sleep_run" stopped
note "a run that holds the workers without the TPU is named, not stopped"
sleep_run=$(stage_detached alice "$proj" -- sleep 300)
expect_exit 1 tpurun_as alice -C "$proj" stage --detach --kill-previous -- true
assert_contains "$ERR" "your run $sleep_run still runs there"
assert_eq "$(run_field alice "$sleep_run" 'r["verdict"]')" running
expect_exit 0 tpurun_as alice kill --run "$sleep_run" --grace 2s
wait_verdict alice "$sleep_run" stopped

# ------------------------------------------------------------------ what outlives the job
note "a child left holding the TPU is stopped when the run ends, and runs says so"
run=$(stage_detached alice "$proj" -- sh -c 'python3 train.py --forever >/dev/null 2>&1 & sleep 3; exit 0')
expect_exit 0 tpurun_as alice logs "$run" -f
assert_contains "$(run_field alice "$run" 'r["workers"][0]["detail"]')" "leftover process held the TPU, stopped"
no_job_left alice "$run"
expect_exit 0 tpurun_as alice status
assert_not_contains "$OUT" "busy"

# ------------------------------------------------------------------ a dead watcher
note "the watcher killed, then every job exits 0: runs gives the exit records' verdict"
run=$(stage_detached alice "$proj" -- sh -c 'sleep 4; exit 0')
for _ in $(seq 100); do [[ -s $(srv "$logs/$run/state.json") ]] && break; sleep 0.1; done
kill -9 "$(watcher_pid "$run")"
for _ in $(seq 150); do [[ $(ls "$(srv "$logs/$run")"/worker*.exit 2>/dev/null | wc -l) == 4 ]] && break; sleep 0.1; done
assert_eq "$(run_field alice "$run" 'r["verdict"]') $(run_field alice "$run" 'r["from_records"]')" "succeeded True"
expect_exit 0 tpurun_as alice runs --no-check
assert_contains "$OUT" "finished, not watched"

note "the watcher killed, then kill --run: the kill records the run as stopped"
run=$(stage_detached alice "$proj" -- python3 train.py --forever)
for _ in $(seq 100); do [[ $(pids_of "$run") == 4 ]] && break; sleep 0.1; done
kill -9 "$(watcher_pid "$run")"
expect_exit 0 tpurun_as alice kill --run "$run" --grace 2s
assert_contains "$ERR" "recorded as stopped"
assert_eq "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$(srv "$logs/$run")/state.json")" stopped

note "the watcher killed, w0 fails; the next watcher reports the failure at its own time"
job='if [ "$TPURUN_WORKER" = 0 ]; then sleep 1; exit 7; fi; python3 train.py --forever'
run=$(stage_detached alice "$proj" -- sh -c "$job")
for _ in $(seq 100); do [[ -s $(srv "$logs/$run/state.json") ]] && break; sleep 0.1; done
kill -9 "$(watcher_pid "$run")"
for _ in $(seq 100); do [[ -s $(srv "$logs/$run/worker0.exit") ]] && break; sleep 0.1; done
exited=$(date -u -d "@$(stat -c %Y "$(srv "$logs/$run/worker0.exit")")" +%Y-%m-%dT%H:%M:%SZ)
sleep 3
expect_exit 7 tpurun_as alice logs "$run" -f
assert_eq "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["first_failure"]["at"])' "$(srv "$logs/$run")/state.json")" \
  "$exited" "the failure's time is the exit record's"
pass
