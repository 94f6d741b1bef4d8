#!/usr/bin/env bash
# stage's preflight: it never launches beside someone else's job, stops at the
# caller's own old job unless --kill-previous, and cleans a stale lock.
source "$(dirname "$0")/lib.sh"
proj=$(make_project alice proj)
snap_count() { ls "$(srv "$FAKEPOD_NFS/staging/alice")" 2>/dev/null | grep -c -- '-code$' || true; }
# bob_trainer: bob holds worker 2 (his trainer's pid in bob_pid), for the
# cases that check it is never signalled. The first case starts it and the
# next ones find it (a failed case's scrub kills it: the next case starts
# another).
bob_trainer() {
  bob_pid=$(cat "$SCRATCH/bob.pid" 2>/dev/null || true)
  # shellcheck disable=SC2016
  if [[ -z $bob_pid ]] ||
    ! fakepod exec 2 -- sh -c '[ -e /proc/$1 ] && ! grep -q "^State:.*Z" /proc/$1/status' _ "$bob_pid" 2>/dev/null; then
    bob_pid=$(start_trainer_on 2 bob --forever)
    echo "$bob_pid" >"$SCRATCH/bob.pid"
  fi
}

refuses_beside_bob() {
  local bob_pid before
  bob_trainer
  before=$(snap_count)
  expect_exit 1 tpurun_as alice -C "$proj" stage -- python3 train.py --steps 1
  assert_contains "$ERR" "not launching"
  assert_contains "$ERR" "w2 $(worker_ip 2): TPU held by bob pid $bob_pid"
  assert_contains "$ERR" "train.py"
  assert_eq "$(snap_count)" "$before" "a refused stage must not snapshot"
  fakepod exec 2 -- kill -0 "$bob_pid" || fail "bob's trainer was signalled"
}
e2e_case refuses_beside_bob "bob holds worker 2: alice's stage refuses, naming bob's job, and stages nothing"

other_workers_and_skip() {
  local bob_pid
  bob_trainer
  # Workers bob doesn't hold are fine.
  expect_exit 0 tpurun_as alice -C "$proj" stage --worker 0-1 -- python3 train.py --steps 1 --step-time 0.1
  # --skip-preflight launches anyway (the job itself then meets libtpu's error).
  expect_exit 1 tpurun_as alice -C "$proj" stage --skip-preflight --worker 2 -- python3 train.py --steps 1
  assert_contains "$OUT" "already in use by another process probably owned by another user"
  fakepod exec 2 -- kill -0 "$bob_pid" || fail "bob's trainer was signalled"
}
e2e_case other_workers_and_skip "workers bob doesn't hold are fine; --skip-preflight launches beside him anyway, and the job meets libtpu's error"

kill_previous() {
  local own_pid
  # alice's own earlier job holds worker 1.
  own_pid=$(start_trainer_on 1 alice --forever --children 1)
  expect_exit 1 tpurun_as alice -C "$proj" stage --worker 0-1 -- python3 train.py --steps 1
  assert_contains "$ERR" "your own earlier job still holds the TPU"
  assert_contains "$ERR" "--kill-previous"
  expect_exit 0 tpurun_as alice -C "$proj" stage --worker 0-1 --kill-previous -- python3 train.py --steps 1 --step-time 0.1
  assert_contains "$ERR" "--kill-previous stopped"
  if fakepod exec 1 -- kill -0 "$own_pid" 2>/dev/null; then fail "--kill-previous left alice's old job"; fi
}
e2e_case kill_previous "alice's own earlier job holds a worker: refused with the way out; --kill-previous takes it"

stale_lock() {
  local bob_pid stale_pid
  bob_trainer
  # bob's trainer on worker 3, SIGKILLed: its lockfile stays.
  stale_pid=$(start_trainer_on 3 bob --forever)
  fakepod exec 3 -- kill -9 "$stale_pid"
  wait_until "bob's SIGKILLed trainer on w3 to let go of the TPU" 120 eval '[[ -z $(tpu_holders 3) ]]'
  assert_eq "$(fakepod exec 3 -- stat -c %U /tmp/libtpu_lockfile)" "bob"
  expect_exit 0 tpurun_as alice -C "$proj" stage --worker 3 -- python3 train.py --steps 1 --step-time 0.1
  assert_contains "$ERR" "removed stale /tmp/libtpu_lockfile"
  assert_contains "$OUT" "step 1"
  fakepod exec 2 -- kill -0 "$bob_pid" || fail "bob's trainer was signalled"
}
e2e_case stale_lock "a stale lockfile of bob's on worker 3 (his trainer was SIGKILLed): cleaned, then launched"

e2e_run
