#!/usr/bin/env bash
# tpurun status and kill on a shared pod: every worker's holder is reported
# correctly (and only "partial" without sudo); kill takes exactly the caller's
# process trees, SIGKILLs what ignores SIGTERM, never touches another user's
# job, removes a stale lock only where nothing holds the TPU; --dry-run signals
# nothing; --force needs --yes, and then kills and writes the audit line.
source "$(dirname "$0")/lib.sh"
require_tpurun
N=$FAKEPOD_WORKERS
((N >= 8)) || skip "needs 8 workers, the pod has $N"

# alive W PID: the process exists on worker W and is not a zombie.
alive() {
  # shellcheck disable=SC2016
  wexec "$1" -- sh -c '[ -e /proc/$1 ] && ! grep -q "^State:.*Z" /proc/$1/status' _ "$2" 2>/dev/null
}
assert_alive() { alive "$1" "$2" || fail "${3:-pid $2} on w$1 should be alive"; }
assert_dead() { ! alive "$1" "$2" || fail "${3:-pid $2} on w$1 should be dead"; }
# holder_pids W USER: pids of USER's processes holding a device on worker W.
holder_pids() { tpu_holders "$1" | awk -v u="$2" '$2 == u {print $1}' | sort -un | tr '\n' ' '; }
has_file() { wexec "$1" -- test -e "$2"; }
row() {  # the status row of worker set $1 in $OUT
  grep -E "^  $(sed 's/[][]/\\&/g' <<<"$1") +" <<<"$OUT" || fail "no row for $1 in: $OUT"
}

# ------------------------------------------------------------------ the pod
# w0 free | w1 bob | w2 alice + 2 children | w3 bob SIGKILLed: stale lock |
# w4 alice ignoring SIGTERM | w5 bob | w6 alice, a tpurun run | w7 free, bob's tpu_logs
# make_scene: that pod, for one case (every TPU holder, lock and tpu_logs go
# at its end). Sets the caller's locals bob1 alice2 alice2_all bob3 alice4
# bob5 alice6.
make_scene() {
  on_exit reset_tpus
  bob1=$(start_trainer_on 1 bob --forever)
  alice2=$(start_trainer_on 2 alice --forever --children 2)
  alice2_all=$(holder_pids 2 alice)
  [[ $(wc -w <<<"$alice2_all") == 3 ]] || fail "expected alice's trainer and 2 children on w2: '$alice2_all'"
  bob3=$(start_trainer_on 3 bob --forever)
  wexec 3 -- kill -9 "$bob3"
  wait_until "bob's SIGKILLed trainer on w3 to let go of the TPU" 120 eval '[[ -z $(tpu_holders 3) ]]'
  has_file 3 /tmp/libtpu_lockfile || fail "SIGKILL should leave bob's lockfile on w3"
  alice4=$(start_trainer_on 4 alice --forever --ignore-sigterm)
  bob5=$(start_trainer_on 5 bob --forever)
  # A job started like `tpurun stage` does: own session, TPURUN_RUN_ID set.
  # shellcheck disable=SC2016
  alice6=$(wexec 6 --user alice -- env TPURUN_RUN_ID=e2e-run-6 bash -c \
    '( exec setsid python3 "$0" --forever >/tmp/fake-trainer.$BASHPID.log 2>&1 </dev/null ) & echo $!' "$(trainer_path)")
  echo "6 $alice6" >>"$SCRATCH/.trainers"
  wait_until "alice's run on w6 to take the TPU" 120 eval '[[ -n $(holder_pids 6 alice) ]]'
  [[ $(holder_pids 6 alice) == "$alice6 " ]] || fail "alice's run on w6 did not take the TPU"
  wexec 7 --user bob -- mkdir /tmp/tpu_logs
}

# ------------------------------------------------------------------ status
status_report() {
  local bob1 alice2 alice2_all bob3 alice4 bob5 alice6
  make_scene
  expect_exit 1 tpurun_as alice status
  assert_contains "$OUT" "sim: $N workers:"
  assert_contains "$(row 'w[0,7]')" "free"
  assert_contains "$(row 'w[1,5]')" "busy-other   bob: python3 train.py --forever"
  assert_contains "$(row w2)" "busy-self"
  assert_contains "$(row w3)" "stale-lock"
  assert_contains "$(row w3)" "/tmp/libtpu_lockfile left by bob"
  assert_contains "$(row w4)" "busy-self"
  assert_contains "$(row w6)" "[run e2e-run-6]"
  # Whom to contact: user, pid, command for each of bob's jobs.
  grep -qE "^  w1 +bob +$bob1 +[0-9smhd]+ +python3 .*train.py --forever" <<<"$OUT" || fail "bob's job on w1 not listed: $OUT"
  grep -qE "^  w5 +bob +$bob5 " <<<"$OUT" || fail "bob's job on w5 not listed: $OUT"
  assert_contains "$OUT" "w[3,7]: /tmp/tpu_logs belongs to bob"
  assert_contains "$OUT" "tpurun kill --worker 3"

  expect_exit 1 tpurun_as alice status --json
  /usr/bin/python3 - "$OUT" "$bob1" "$alice2" "$alice4" <<'PY'
import json, sys
doc = json.loads(sys.argv[1]); bob1, alice2, alice4 = map(int, sys.argv[2:5])
w = {x["worker"]: x for x in doc["workers"]}
want = {0: "free", 1: "busy-other", 2: "busy-self", 3: "stale-lock", 4: "busy-self",
        5: "busy-other", 6: "busy-self", 7: "free"}
for i, s in want.items():
    assert w[i]["state"] == s, (i, w[i])
    assert w[i]["error"] is None and w[i]["host"].startswith("127."), w[i]
h = {p["pid"]: p for p in w[1]["holders"]}
assert h[bob1]["user"] == "bob" and h[bob1]["device"] == "/dev/accel0" and h[bob1]["pgid"] == bob1, h
assert "train.py" in h[bob1]["command"] and h[bob1]["elapsed_s"] >= 0 and h[bob1]["run_id"] is None, h
assert w[1]["lockfile"] == {"exists": True, "owner": "bob", "held": True, "holder_pid": bob1}, w[1]["lockfile"]
assert len(w[2]["holders"]) == 3 and {p["user"] for p in w[2]["holders"]} == {"alice"}, w[2]
assert w[3]["lockfile"]["exists"] and not w[3]["lockfile"]["held"] and w[3]["lockfile"]["owner"] == "bob"
assert w[3]["holders"] == [], w[3]
assert w[6]["holders"][0]["run_id"] == "e2e-run-6", w[6]
assert w[7]["tpu_logs_owner"] == "bob" and w[0]["tpu_logs_owner"] is None
assert doc["exit_code"] == 1
PY

  # carol has no sudo: her view is partial, never free; the lock's holder is
  # still visible to her through /proc/locks.
  expect_exit 1 tpurun_as carol status --json
  /usr/bin/python3 - "$OUT" <<'PY'
import json, sys
w = {x["worker"]: x for x in json.loads(sys.argv[1])["workers"]}
assert all(x["state"] != "free" for x in w.values()), w
for i in (0, 3, 7):
    assert w[i]["state"] == "partial", (i, w[i])
for i, user in ((1, "bob"), (2, "alice"), (4, "alice"), (5, "bob"), (6, "alice")):
    assert w[i]["state"] == "busy-other" and w[i]["holders"][0]["user"] == user, (i, w[i])
assert w[0]["privileged"] is False
PY
  expect_exit 1 tpurun_as carol status
  assert_contains "$OUT" "no passwordless sudo"
  assert_not_contains "$OUT" " free"
}
e2e_case status_report "status: every worker's holder, stale lock and tpu_logs, as alice sees them (and only partial for carol, without sudo)"

# ------------------------------------------------------------------ refusals, dry runs, then alice kills her jobs
kill_own_jobs() {
  local bob1 alice2 alice2_all bob3 alice4 bob5 alice6 pid
  make_scene
  expect_exit 2 tpurun_as alice kill --force
  assert_contains "$ERR" "--yes"
  expect_exit 0 tpurun_as alice kill --dry-run --grace 2s
  assert_contains "$OUT" "dry run"
  assert_contains "$OUT" "[w4 $(worker_ip 4)] would send SIGTERM, then SIGKILL after 2s"
  assert_contains "$OUT" "$alice4"
  assert_contains "$OUT" "[w3 $(worker_ip 3)] would remove /tmp/libtpu_lockfile"
  assert_contains "$OUT" "[w1 $(worker_ip 1)] not yours, not signalled: bob"
  expect_exit 0 tpurun_as alice kill --dry-run --force --worker 5
  assert_contains "$OUT" "$bob5"
  # --run names a run of yours: one that does not exist is a mistake, and
  # nothing is signalled.
  expect_exit 1 tpurun_as alice kill --worker 6 --run nope --grace 1s
  assert_contains "$ERR" "no run 'nope' of alice"
  for pid in $alice2_all; do assert_alive 2 "$pid" "alice's w2 process $pid after the dry run"; done
  assert_alive 4 "$alice4"; assert_alive 6 "$alice6"
  assert_alive 1 "$bob1"; assert_alive 5 "$bob5"
  has_file 3 /tmp/libtpu_lockfile || fail "the dry run removed w3's lockfile"

  # carol kills nothing of bob's, and is told her view is partial.
  expect_exit 1 tpurun_as carol kill --worker 1 --grace 1s
  assert_alive 1 "$bob1" "bob's job after carol's kill"

  # alice kills her jobs.
  expect_exit 1 tpurun_as alice kill --grace 2s --json
  /usr/bin/python3 - "$OUT" "$alice4" <<'PY'
import json, sys
w = {x["worker"]: x for x in json.loads(sys.argv[1])["workers"]}; alice4 = int(sys.argv[2])
assert alice4 in w[4]["gone_kill"], w[4]                  # ignored SIGTERM
assert w[2]["signalled"] and len(w[2]["victims"]) == 3 and not w[2]["survivors"], w[2]
for i in (1, 5):
    assert not w[i]["signalled"] and w[i]["victims"] == [] and w[i]["state"] == "busy-other", w[i]
    assert w[i]["not_signalled"][0]["user"] == "bob", w[i]
assert "/tmp/libtpu_lockfile" in w[3]["removed"] and "/tmp/tpu_logs" in w[3]["removed"], w[3]
assert "/tmp/tpu_logs" in w[7]["removed"], w[7]
assert w[1]["removed"] == [] and w[5]["removed"] == []
for i in (0, 2, 3, 4, 6, 7):
    assert w[i]["state"] == "free", (i, w[i])
PY
  for pid in $alice2_all; do assert_dead 2 "$pid" "alice's w2 process $pid"; done
  assert_dead 4 "$alice4" "alice's SIGTERM-ignoring job"
  assert_dead 6 "$alice6" "alice's run on w6"
  assert_alive 1 "$bob1" "bob's job on w1"
  assert_alive 5 "$bob5" "bob's job on w5"
  has_file 1 /tmp/libtpu_lockfile || fail "bob's live lockfile on w1 was removed"
  has_file 3 /tmp/libtpu_lockfile && fail "the stale lockfile on w3 is still there"
  has_file 4 /tmp/libtpu_lockfile && fail "alice's SIGKILLed lockfile on w4 is still there"
  has_file 7 /tmp/tpu_logs && fail "bob's tpu_logs on w7 is still there"
  expect_exit 1 tpurun_as alice status
  assert_contains "$(row 'w[0,2-4,6-7]')" "free"
}
e2e_case kill_own_jobs "--force without --yes, dry runs and carol's kill signal nothing; alice's kill takes exactly her trees and the stale lock"

# ------------------------------------------------------------------ an admin's override
force_kill() {
  local bob1 bob5 audit syslog before=0 sys_before=0 new
  # What the pod holds when alice has killed her own jobs: bob's on w1 and w5.
  on_exit reset_tpus
  bob1=$(start_trainer_on 1 bob --forever)
  bob5=$(start_trainer_on 5 bob --forever)
  # The record goes to alice's own audit file and to the worker's syslog (the
  # simulator's sink, $FAKEPOD_STATE/w5/syslog, stands in for journald).
  audit=$(user_home alice)/.local/state/tpurun/audit.jsonl
  syslog=$FAKEPOD_STATE/w5/syslog
  [[ -f $audit ]] && before=$(wc -l <"$audit")
  [[ -f $syslog ]] && sys_before=$(wc -l <"$syslog")
  expect_exit 0 tpurun_as alice kill --worker 5 --force --yes --grace 2s
  assert_contains "$OUT" "bob"
  assert_contains "$OUT" "$bob5"
  assert_contains "$ERR" "recorded in $audit"
  assert_dead 5 "$bob5" "bob's job after --force --yes"
  assert_alive 1 "$bob1" "bob's job on w1 (not selected)"
  new=$(tail -n +$((before + 1)) "$audit")
  assert_contains "$new" '"caller":"alice"'
  assert_contains "$new" "\"worker\":\"w5\",\"host\":\"$(worker_ip 5)\",\"pid\":$bob5,"
  assert_contains "$new" '"user":"bob"'
  assert_contains "$new" "train.py --forever"
  assert_contains "$(tail -n +$((sys_before + 1)) "$syslog")" "uid=0 "
  assert_contains "$(tail -n +$((sys_before + 1)) "$syslog")" "kill --force by alice"
}
e2e_case force_kill "kill --force --yes on bob's job: killed, only on the worker named, with the audit line and the syslog record"

e2e_run
