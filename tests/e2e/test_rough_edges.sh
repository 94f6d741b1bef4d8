#!/usr/bin/env bash
# Issue 30, item 9: the rough edges a hostile test found, each with a check:
# kill --run of a run that does not exist; a launch that fails everywhere;
# a worker listed twice; huge durations; runs -n 0; CLI11's own exit codes;
# no interrupt line in the run's log after kill --run; no lock file left per
# run; tags that cannot make a run id; corrupt run.json and state.json; a log
# truncated while followed; "1 worker", not "1 workers".
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gang_lib.sh"
require_tpurun

cfg=$SCRATCH/edges.json
# The workers have a /tmp of their own: roots there are the dev VM's alone.
hidden=/tmp/tpurun-e2e-hidden-$$
cat >"$cfg" <<JSON
{ "default_pod": "e",
  "pods": {
    $(carved_pod e 0 3),
    $(carved_pod one 0 0),
    "hidden": { "workers": ["$(worker_ip 0)", "$(worker_ip 1)"],
                "ssh": { "identity_file": "~/.ssh/id_ed25519", "known_hosts": "~/.ssh/known_hosts",
                         "host_key_policy": "accept-new", "connect_timeout_s": 5 },
                "staging_root": "$hidden/staging", "logs_root": "$hidden/logs" } } }
JSON
chmod 644 "$cfg"
chmod 755 "$SCRATCH"
install -d -m 1777 "$hidden" "$hidden/staging" "$hidden/logs"
on_exit "rm -rf '$hidden'"
FAKEPOD_CONFIG=$cfg
proj=$(make_project alice eproj)
logs=$FAKEPOD_NFS/logs/alice/eproj
rm -rf "$(srv "$logs")"

kill_unknown_run() {
  expect_exit 1 tpurun_as alice kill --run 20991231_000000_nosuch
  assert_contains "$ERR" "no run '20991231_000000_nosuch' of alice"
}
e2e_case kill_unknown_run "kill --run with a run id that does not exist names the mistake and exits 1"

launch_fails_everywhere() {
  local hidden_run v=""
  # (a logs root on the dev VM only: no worker sees it)
  expect_exit 255 tpurun_as alice -C "$proj" --pod hidden stage -- true
  assert_contains "$ERR" "the job started on no worker"
  assert_not_contains "$ERR" "follow: tpurun logs"
  hidden_run=$(sed -n 's/^tpurun: run \([^ ]*\) → .*/\1/p' <<<"$ERR")
  # hidden_lost: the run's verdict and worker states, in v, say lost.
  hidden_lost() {
    v=$(tpurun_as alice --pod hidden runs --json --no-check | /usr/bin/python3 -c '
import json, sys
r = [r for r in json.load(sys.stdin)["runs"] if r["run_id"] == sys.argv[1]][0]
print(r["verdict"], " ".join(w["state"] for w in r["workers"]))' "$hidden_run")
    [[ $v == lost* ]]
  }
  wait_until "run $hidden_run to be lost" 120 hidden_lost
  assert_eq "$v" "lost lost lost"
}
e2e_case launch_fails_everywhere "a launch that fails on every worker: no follow line, the workers lost, the run lost"

worker_twice() {
  local dup=$SCRATCH/dup.json
  printf '{ "pods": { "d": { "workers": ["%s",\n "%s:22"] } } }\n' "$(worker_ip 0)" "$(worker_ip 0)" >"$dup"
  chmod 644 "$dup"
  expect_exit 2 as_user alice "$TPURUN" --config "$dup" exec -- true
  assert_contains "$ERR" "dup.json:2: pods.d.workers[1]: \"$(worker_ip 0):22\" is the same host as worker 0"
}
e2e_case worker_twice "a worker listed twice is refused at its line"

huge_durations() {
  expect_exit 2 tpurun_as alice kill --grace 99999999999999d
  assert_contains "$ERR" "too long a duration"
  expect_exit 2 tpurun_as alice runs -n 0
  expect_exit 2 tpurun_as alice runs -n -5
  expect_exit 2 tpurun_as alice status --no-such-flag
  expect_exit 2 tpurun_as alice stage --lost-after
}
e2e_case huge_durations "durations too long to mean anything are refused, not wrapped around; runs -n 0 and CLI11's errors exit 2"

bad_tags() {
  local long tag
  long=$(printf 'x%.0s' $(seq 300))
  for tag in "$long" . .. ""; do
    expect_exit 2 tpurun_as alice -C "$proj" stage --tag "$tag" -- true
    assert_contains "$ERR" "--tag" "tag '$tag'"
  done
  # (No case before this one stages in eproj: the setup removed its logs.)
  [[ ! -e $(srv "$logs") ]] || fail "a refused tag made a log dir: $(ls "$(srv "$logs")")"
}
e2e_case bad_tags "tags that cannot make a run id are refused before anything is staged"

one_worker() {
  expect_exit 0 tpurun_as alice -C "$proj" --pod one stage -- true
  assert_contains "$ERR" "launched on 1 worker (detached"
  assert_contains "$ERR" "its worker exited 0"
}
e2e_case one_worker "1 worker, not 1 workers"

# follows PID RUN: the tpurun process PID reads RUN's logs (it has worker0.log open).
follows() {
  ls -l "/proc/$1/fd" 2>/dev/null | grep -q "/$2/worker0.log"
}

kill_run_clean() {
  local run follower rc
  run=$(stage_detached alice "$proj" -- python3 train.py --forever --metrics-addr none)
  tpurun_as alice logs "$run" -f >/dev/null 2>"$SCRATCH/follow.err" &
  follower=$!
  # The kill comes while logs -f follows the run, not before it started.
  wait_until "logs -f to follow the run" 120 follows "$(client_pid "$follower")" "$run"
  expect_exit 0 tpurun_as alice kill --run "$run" --grace 2s
  rc=0
  wait "$follower" || rc=$?
  assert_eq "$rc" 143
  assert_not_contains "$(cat "$(srv "$logs/$run")/watcher.log")" "finishing up"
  if grep -qx 'tpurun: watcher: *' "$SCRATCH/follow.err"; then fail "an empty watcher line: $(cat "$SCRATCH/follow.err")"; fi
  wait_until "the watcher's lock file to go" 120 eval '[[ -z $(ls "$(user_dir alice)/.cache/tpurun/watchers/" 2>/dev/null) ]]'
  assert_eq "$(ls "$(user_dir alice)/.cache/tpurun/watchers/" 2>/dev/null)" "" "a watcher's lock file was left"
}
e2e_case kill_run_clean "after kill --run: no interrupt line in the run's log, no empty watcher line, no lock file left"

corrupt_records() {
  local run run2
  # Two runs that ended: one's run.json, the other's state.json made garbage.
  run=$(stage_detached alice "$proj" -- true)
  wait_verdict alice "$run" succeeded
  echo '{ not json' >"$(srv "$logs/$run")/run.json"
  expect_exit 1 tpurun_as alice logs "$run"
  assert_contains "$ERR" "unreadable run record: not valid JSON"
  assert_not_contains "$ERR" "json.exception"
  run2=$(stage_detached alice "$proj" -- true)
  wait_verdict alice "$run2" succeeded
  echo 'garbage' >"$(srv "$logs/$run2")/state.json"
  expect_exit 0 tpurun_as alice runs --no-check
  assert_contains "$ERR" "run $run2: its state.json is not valid JSON"
}
e2e_case corrupt_records "a corrupt run.json and state.json are named, not dumped"

truncated_log() {
  local run3 follower gate
  gate=$(user_dir alice)/trunc.gate
  rm -f "$gate"
  # The job stops after line 20 until the gate is there, which the test makes
  # once logs -f has seen the truncation: the truncation comes mid-run, and
  # the log grows again only after it was noticed (the workers see the
  # scratch dir).
  run3=$(stage_detached alice "$proj" -- sh -c "i=0; while [ \$i -lt 60 ]; do echo \"line \$i\"; i=\$((i+1)); [ \$i = 21 ] && while [ ! -e '$gate' ]; do sleep 0.1; done; sleep 0.1; done")
  on_exit "touch '$gate'"
  tpurun_as alice logs "$run3" -f --raw >"$SCRATCH/trunc.out" 2>"$SCRATCH/trunc.err" &
  follower=$!
  wait_until "logs -f to show w0's line 20" 120 grep -qF "[w0 $(worker_ip 0)] line 20" "$SCRATCH/trunc.out"
  : >"$(srv "$logs/$run3/worker0.log")"
  wait_until "logs -f to see the truncation" 120 eval 'grep -q "worker0.log was truncated" "$SCRATCH/trunc.out" "$SCRATCH/trunc.err"'
  touch "$gate"
  wait "$follower" || true
  assert_contains "$(cat "$SCRATCH/trunc.out" "$SCRATCH/trunc.err")" "worker0.log was truncated; reading it again from its start"
  assert_contains "$(cat "$SCRATCH/trunc.out")" "line 59"
}
e2e_case truncated_log "a log truncated while it is followed is read again from its start"

e2e_run
