#!/usr/bin/env bash
# Stalled runs: the run's watcher reads libtpu's metrics on every worker (the
# fake trainer serves them) and its workers' logs. Every worker at 0% duty
# cycle with no new log line for --stall-after is a stall: `runs` says so
# (--on-stall report, the default), and --on-stall stop stops the run as a
# failure. A job that computes, or that prints, is not stalled. The board
# (`status --all`) shows how long an idle run's holder has kept the TPU idle.
#
# A two-worker pod: a stall is every worker idle; one worker at work is not.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/board_lib.sh"
require_tpurun
/usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null || skip "python3-grpcio/python3-protobuf missing"

cfg=$SCRATCH/stall.json
cat >"$cfg" <<JSON
{ "default_pod": "two", "pods": { $(carved_pod two 0 1) } }
JSON
chmod 644 "$cfg"
chmod 755 "$SCRATCH"
proj=$(make_project alice)

# stage_bg ARGS...: alice stages on pod two, detached; prints the run id.
stage_bg() {
  expect_exit 0 b alice -C "$proj" stage --json "$@"
  /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.argv[1])["run_id"])' "$OUT"
}
# run_field RUN EXPR: a Python expression over the run's record r in `runs --json`.
run_field() {
  b alice runs --json --no-check | /usr/bin/python3 -c '
import json, sys
r = [r for r in json.load(sys.stdin)["runs"] if r["run_id"] == sys.argv[1]][0]
print(eval(sys.argv[2]))' "$1" "$2"
}
# run_holds RUN EXPR: EXPR over the run's record holds.
run_holds() {
  [[ $(run_field "$1" "$2" 2>/dev/null || true) == True ]]
}
# wait_run RUN EXPR: until EXPR holds (at most 60s).
wait_run() {
  wait_until "run $1: '$2'" 120 run_holds "$1" "$2"
}
# let_time_pass SECONDS: clock time, not synchronization: what a watcher would
# take to call a run stalled, were it.
let_time_pass() {
  local pass_until
  pass_until=$(($(date +%s%3N) + $1 * 1000))
  wait_until "$1 s to pass" $(($1 + 30)) eval '(($(date +%s%3N) >= pass_until))'
}
log_dir() { run_field "$1" 'r["log_dir"]'; }

bad_input() {
  expect_exit 2 b alice -C "$proj" stage --on-stall maybe -- true
  assert_contains "$ERR" "--on-stall maybe: use report (the default: only say so), stop or restart"
  expect_exit 2 b alice -C "$proj" stage --stall-after 500ms -- true
  assert_contains "$ERR" "--stall-after 500ms: must be at least 1s"
}
e2e_case bad_input "bad --on-stall and --stall-after values are refused"

# ---- a hung job, reported: 0% duty cycle and silence for 3s
stall_reported() {
  local run
  run=$(stage_bg --stall-after 3s -- python3 train.py --stall --step-time 0.2)
  wait_run "$run" 'r["stalled_since"] is not None'
  assert_eq "$(run_field "$run" 'r["verdict"]')" running "report only: the run goes on"
  expect_exit 0 b alice runs --no-check
  assert_contains "$OUT" "stalled since"
  assert_contains "$OUT" "(0% duty cycle, no new log line; on stall: report)"
  assert_contains "$(cat "$(log_dir "$run")/watcher.log")" "stalled: every worker at 0% duty cycle and no new log line since"
  # The board: bob sees alice's idle holding, and for how long (the watcher's idle_since).
  expect_exit 0 b bob status --all
  assert_contains "$OUT" "two  busy"
  assert_contains "$OUT" "alice: python3 train.py --stall --step-time 0.2 [run $run] on w[0-1], "
  grep -Eq ", idle [0-9]+s" <<<"$OUT" || fail "no idle time on the board: $OUT"
  expect_exit 0 b bob status --all --json
  /usr/bin/python3 - "$OUT" <<'PY' || fail "status --all --json: $OUT"
import json, sys
h = json.loads(sys.argv[1])["pods"][0]["holders"][0]
assert h["user"] == "alice" and h["idle_since"].endswith("Z"), h
PY
  expect_exit 0 b alice kill --run "$run"
  wait_run "$run" 'r["verdict"] == "stopped"'
}
e2e_case stall_reported "a hung job (0% duty cycle, silent) is reported stalled, the run goes on; the board shows the idle holder"

# ---- busy chips, or new log lines, are not a stall
busy_chips() {
  local busy
  busy=$(stage_bg --stall-after 2s -- python3 train.py --forever --step-time 0.3)
  let_time_pass 6
  assert_eq "$(run_field "$busy" 'r["stalled_since"]')" None "a job at 87.5% is not stalled"
  expect_exit 0 b bob status --all
  assert_not_contains "$OUT" "idle" "a busy holder is not idle"
  expect_exit 0 b alice kill --run "$busy"
  wait_run "$busy" 'r["verdict"] == "stopped"'
}
e2e_case busy_chips "a job whose chips compute is not stalled, nor its holder idle"

printing_job() {
  local quiet_chips
  quiet_chips=$(stage_bg --stall-after 2s -- python3 train.py --forever --step-time 0.3 --duty-cycle 0)
  let_time_pass 6
  assert_eq "$(run_field "$quiet_chips" 'r["stalled_since"]')" None "a job that prints lines is not stalled"
  expect_exit 0 b alice kill --run "$quiet_chips"
  wait_run "$quiet_chips" 'r["verdict"] == "stopped"'
}
e2e_case printing_job "a job at 0% duty cycle that prints lines is not stalled"

# ---- --on-stall stop
stall_stop() {
  local run
  # The watcher stops the run, which fails with the stall as its cause.
  run=$(stage_bg --stall-after 3s --on-stall stop --restarts 2 -- python3 train.py --stall --step-time 0.2)
  wait_run "$run" 'r["verdict"] == "failed"'
  assert_eq "$(run_field "$run" 'r["first_failure"]["how"]')" stalled
  assert_eq "$(run_field "$run" 'r["attempt"]')" 1 "on stall stop: no restart, whatever --restarts says"
  assert_eq "$(run_field "$run" '[w["state"] for w in r["workers"]]')" "['stopped', 'stopped']"
  expect_exit 0 b alice runs --no-check
  assert_contains "$OUT" "failed: stalled: every worker at 0% duty cycle and no new log line since"
  assert_contains "$(cat "$(log_dir "$run")/watcher.log")" "the run stalled: every worker at 0% duty cycle"
  expect_exit 0 b alice status
  assert_contains "$OUT" "free"
}
e2e_case stall_stop "--on-stall stop: the watcher stops the run, which fails with the stall as its cause, never restarted"

e2e_run
