#!/usr/bin/env bash
# Restarts: the whole run is relaunched after a failure, from the same
# snapshot into the same log dir, with TPURUN_ATTEMPT and an attempt header;
# the watcher keeps going when the client is SIGKILLed during the restart
# wait, and `logs -f` takes over when the watcher itself is killed.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gang_lib.sh"
proj=$(make_project alice proj)
job='echo "attempt=$TPURUN_ATTEMPT"; if [ "$TPURUN_ATTEMPT" = 1 ] && [ "$TPURUN_WORKER" = 1 ]; then exit 7; fi; sleep 2; echo done'

# --restarts 1 with a job that fails only on its first attempt: success on the second.
expect_exit 0 tpurun_as alice -C "$proj" stage --restarts 1 -- sh -c "$job"
run_dir=$(ls -d $FAKEPOD_NFS_EXPORT/logs/alice/proj/*/ | sort | tail -1)
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

# Out of restarts: the same summary as a failure, the first failure's code.
expect_exit 7 tpurun_as alice -C "$proj" stage --restarts 1 -- sh -c 'if [ "$TPURUN_WORKER" = 1 ]; then exit 7; fi; exec python3 train.py --forever'
assert_contains "$ERR" "failed (attempt 2 of 2)"
assert_contains "$ERR" "first failure: w1 $(worker_ip 1) exited 7"

# The client is SIGKILLed while the watcher waits to restart (bob holds w6's TPU).
before=$(ls $FAKEPOD_NFS_EXPORT/logs/alice/proj | sort)
as_user alice -C "$proj" "$TPURUN" --config "$FAKEPOD_CONFIG" stage --restarts 1 -- sh -c \
  'if [ "$TPURUN_ATTEMPT" = 1 ] && [ "$TPURUN_WORKER" = 1 ]; then sleep 2; exit 7; fi; sleep 1; echo done' \
  >/dev/null 2>&1 &
client=$!
for _ in $(seq 100); do
  run=$(comm -13 <(echo "$before") <(ls $FAKEPOD_NFS_EXPORT/logs/alice/proj | sort) | head -1)
  [[ -n $run ]] && break
  sleep 0.1
done
[[ -n $run ]] || fail "the run did not start"
start_trainer_on 6 bob >/dev/null
# The watcher's notes as alice sees them on the dev VM, where the watcher
# writes them (on NFS another client sees them once they are flushed).
notes() { as_user alice cat "$FAKEPOD_NFS/logs/alice/proj/$run/watcher.log" 2>/dev/null || true; }
for _ in $(seq 300); do
  grep -q 'waiting for' <<<"$(notes)" && break
  sleep 0.2
done
assert_contains "$(notes)" "w6 $(worker_ip 6) (TPU held by bob"
kill -KILL "$client"
wait "$client" 2>/dev/null || true
assert_eq "$(run_field alice "$run" 'r["verdict"]')" "restarting"
assert_eq "$(run_field alice "$run" 'r["watched"]')" "True"
reset_tpus >/dev/null 2>&1   # bob's trainer goes: the watcher relaunches on its own
wait_verdict alice "$run" succeeded
assert_eq "$(run_field alice "$run" 'r["attempt"]')" "2"

# The watcher dies (SIGKILL): the job keeps running, runs says UNWATCHED, logs -f resumes watching.
run=$(stage_detached alice "$proj" -- sh -c "$(fail_on_worker_job 4 5 | sed 's/sleep 1/sleep 6/')")
for _ in $(seq 50); do
  pid=$(run_field alice "$run" 'r.get("watcher_pid") or 0' 2>/dev/null || true)
  sup=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["watcher"]["pid"])' \
    "$FAKEPOD_NFS_EXPORT/logs/alice/proj/$run/state.json" 2>/dev/null || true)
  [[ -n $sup && $sup != 0 ]] && break
  sleep 0.1
done
kill -KILL "$sup"
expect_exit 0 tpurun_as alice -C "$proj" runs
assert_contains "$OUT" "UNWATCHED"
assert_eq "$(run_field alice "$run" 'r["verdict"]')" "running"
expect_exit 5 tpurun_as alice -C "$proj" logs "$run" -f
assert_contains "$ERR" "this run has no watcher"
assert_contains "$ERR" "first failure: w4 $(worker_ip 4) exited 5"
no_job_left alice "$run"

# kill --run stops the watcher too: the run ends as stopped, and is not restarted.
run=$(stage_detached alice "$proj" --restarts 3 -- python3 train.py --forever)
sleep 1
expect_exit 0 tpurun_as alice -C "$proj" kill --run "$run" --grace 2s
wait_verdict alice "$run" stopped
sleep 3
assert_eq "$(run_field alice "$run" 'r["attempt"]')" "1"
no_job_left alice "$run"
pass
