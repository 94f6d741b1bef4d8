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

note "kill --run with a run id that does not exist names the mistake and exits 1"
expect_exit 1 tpurun_as alice kill --run 20991231_000000_nosuch
assert_contains "$ERR" "no run '20991231_000000_nosuch' of alice"

note "a launch that fails on every worker: no follow line, the workers lost, the run lost"
# (a logs root on the dev VM only: no worker sees it)
expect_exit 255 tpurun_as alice -C "$proj" --pod hidden stage -- true
assert_contains "$ERR" "the job started on no worker"
assert_not_contains "$ERR" "follow: tpurun logs"
hidden_run=$(sed -n 's/^tpurun: run \([^ ]*\) → .*/\1/p' <<<"$ERR")
for _ in $(seq 100); do
  v=$(tpurun_as alice --pod hidden runs --json --no-check | python3 -c '
import json, sys
r = [r for r in json.load(sys.stdin)["runs"] if r["run_id"] == sys.argv[1]][0]
print(r["verdict"], " ".join(w["state"] for w in r["workers"]))' "$hidden_run")
  [[ $v == lost* ]] && break
  sleep 0.2
done
assert_eq "$v" "lost lost lost"

note "a worker listed twice is refused at its line"
dup=$SCRATCH/dup.json
printf '{ "pods": { "d": { "workers": ["%s",\n "%s:22"] } } }\n' "$(worker_ip 0)" "$(worker_ip 0)" >"$dup"
chmod 644 "$dup"
expect_exit 2 as_user alice "$TPURUN" --config "$dup" exec -- true
assert_contains "$ERR" "dup.json:2: pods.d.workers[1]: \"$(worker_ip 0):22\" is the same host as worker 0"

note "durations too long to mean anything are refused, not wrapped around"
expect_exit 2 tpurun_as alice kill --grace 99999999999999d
assert_contains "$ERR" "too long a duration"
expect_exit 2 tpurun_as alice runs -n 0
expect_exit 2 tpurun_as alice runs -n -5
expect_exit 2 tpurun_as alice status --no-such-flag
expect_exit 2 tpurun_as alice stage --lost-after

note "tags that cannot make a run id are refused before anything is staged"
long=$(printf 'x%.0s' $(seq 300))
for tag in "$long" . .. ""; do
  expect_exit 2 tpurun_as alice -C "$proj" stage --tag "$tag" -- true
  assert_contains "$ERR" "--tag" "tag '$tag'"
done
[[ ! -e $(srv "$logs") ]] || fail "a refused tag made a log dir: $(ls "$(srv "$logs")")"

note "1 worker, not 1 workers"
expect_exit 0 tpurun_as alice -C "$proj" --pod one stage -- true
assert_contains "$ERR" "launched on 1 worker (detached"
assert_contains "$ERR" "its worker exited 0"

note "after kill --run: no interrupt line in the run's log, no empty watcher line, no lock file left"
run=$(stage_detached alice "$proj" -- python3 train.py --forever)
tpurun_as alice logs "$run" -f >/dev/null 2>"$SCRATCH/follow.err" &
follower=$!
sleep 2
expect_exit 0 tpurun_as alice kill --run "$run" --grace 2s
rc=0
wait "$follower" || rc=$?
assert_eq "$rc" 143
assert_not_contains "$(cat "$(srv "$logs/$run")/watcher.log")" "finishing up"
if grep -qx 'tpurun: watcher: *' "$SCRATCH/follow.err"; then fail "an empty watcher line: $(cat "$SCRATCH/follow.err")"; fi
for _ in $(seq 50); do [[ -z $(ls "$(user_dir alice)/.cache/tpurun/watchers/" 2>/dev/null) ]] && break; sleep 0.1; done
assert_eq "$(ls "$(user_dir alice)/.cache/tpurun/watchers/" 2>/dev/null)" "" "a watcher's lock file was left"

note "a corrupt run.json and state.json are named, not dumped"
echo '{ not json' >"$(srv "$logs/$run")/run.json"
expect_exit 1 tpurun_as alice logs "$run"
assert_contains "$ERR" "unreadable run record: not valid JSON"
assert_not_contains "$ERR" "json.exception"
run2=$(stage_detached alice "$proj" -- true)
wait_verdict alice "$run2" succeeded
echo 'garbage' >"$(srv "$logs/$run2")/state.json"
expect_exit 0 tpurun_as alice runs --no-check
assert_contains "$ERR" "run $run2: its state.json is not valid JSON"

note "a log truncated while it is followed is read again from its start"
run3=$(stage_detached alice "$proj" -- sh -c 'i=0; while [ $i -lt 60 ]; do echo "line $i"; i=$((i+1)); sleep 0.1; done')
tpurun_as alice logs "$run3" -f --raw >"$SCRATCH/trunc.out" 2>"$SCRATCH/trunc.err" &
follower=$!
for _ in $(seq 100); do grep -q 'line 20' "$SCRATCH/trunc.out" 2>/dev/null && break; sleep 0.1; done
: >"$(srv "$logs/$run3/worker0.log")"
wait "$follower" || true
assert_contains "$(cat "$SCRATCH/trunc.out" "$SCRATCH/trunc.err")" "worker0.log was truncated; reading it again from its start"
assert_contains "$(cat "$SCRATCH/trunc.out")" "line 59"
pass
