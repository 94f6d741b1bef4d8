#!/usr/bin/env bash
# tpurun stage: the job runs inside an immutable snapshot on every worker with
# the right environment, detached from the client; re-staging reuses content;
# logs/runs/gc work on the records it leaves.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gang_lib.sh"
N=$FAKEPOD_WORKERS
down=$((N - 2))  # worker_down's worker: w6 of 8, w2 of 4
proj=$(make_project alice proj)
as_user alice git -C "$proj" init -q
as_user alice git -C "$proj" -c user.name=a -c user.email=a@x add -A
as_user alice git -C "$proj" -c user.name=a -c user.email=a@x commit -qm init
cat >"$proj/probe.sh" <<'SH'
echo "cwd=$(pwd)"
echo "run=$TPURUN_RUN_ID worker=$TPURUN_WORKER of=$TPURUN_NUM_WORKERS logdir=$TPURUN_LOG_DIR foo=$FOO"
echo "stdin=$(cat | wc -c)"
sleep "${1:-0}"
echo "data=$(cat data.txt)"
exit $(( TPURUN_WORKER % 3 ))
SH
echo v1 >"$proj/data.txt"
chown alice: "$proj/probe.sh" "$proj/data.txt"
sha=$(as_user alice git -C "$proj" rev-parse --short=7 HEAD)
run_dirs() { ls -d $FAKEPOD_NFS_EXPORT/logs/alice/proj/*/ 2>/dev/null | sort || true; }  # as root sees them: srv; none before the first run
# new_run_dir BEFORE: the run dir that is not in the list BEFORE (run ids made
# in the same second sort by their random part, so "the last one" can lie).
new_run_dir() { comm -13 <(echo "$1") <(run_dirs) | head -1; }

job_in_snapshot() {
  local before run_dir run_id snap i pid pgid
  before=$(run_dirs)
  expect_exit nonzero tpurun_as alice -C "$proj" stage --raw --on-failure continue --tag t=1 --env FOO='bar baz' -- sh probe.sh
  run_dir=$(new_run_dir "$before"); run_id=$(basename "$run_dir")
  [[ $run_id =~ ^[0-9]{8}_[0-9]{6}_[a-z0-9]{6}_sim_t1$ ]] || fail "bad run id $run_id"
  snap=$(json_file "$run_dir/run.json" 'd["staged_dir"]')
  [[ $(basename "$snap") =~ ^[0-9]{12}-[a-z0-9]{6}-$sha-code$ ]] || fail "bad snapshot name $snap"
  for i in $(seq 0 $((N - 1))); do
    assert_contains "$OUT" "[w$i $(worker_ip "$i")] cwd=$snap"
    assert_contains "$OUT" "[w$i $(worker_ip "$i")] run=$run_id worker=$i of=$N logdir=$(mount_path "${run_dir%/}") foo=bar baz"
    assert_contains "$OUT" "[w$i $(worker_ip "$i")] stdin=0"
    assert_eq "$(cat "$run_dir/worker$i.exit")" "$(( i % 3 ))"
    read -r pid pgid <"$run_dir/worker$i.pid"
    assert_eq "$pid" "$pgid" "the job leads its own process group"
  done
  [[ $RC == 1 || $RC == 2 ]] || fail "exit code $RC: expected the first failing worker's (1 or 2)"
  assert_contains "$ERR" "w2 $(worker_ip 2): failed — exited 2"
  /usr/bin/python3 - "$run_dir/run.json" "$run_id" "$snap" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for k in ("run_id", "user", "pod", "workers", "command", "env_names", "staged_dir", "git", "tree_hash", "created_at"):
    assert k in r, k
assert r["run_id"] == sys.argv[2] and r["staged_dir"] == sys.argv[3] and r["user"] == "alice"
assert r["command"] == ["sh", "probe.sh"] and r["env_names"] == ["FOO"] and "env" not in r, r
assert len(r["git"]["sha"]) == 40 and r["git"]["dirty"] is True  # probe.sh is untracked
PY
  # The snapshot is read-only.
  if as_user alice touch "$snap/new-file" 2>/dev/null; then fail "snapshot is writable"; fi
}
e2e_case job_in_snapshot "the job runs in the snapshot on every worker, with the TPURUN_* env and --env; the first failing worker's code is tpurun's"

edit_while_running() {
  local run_id
  echo v1 >"$proj/data.txt"  # what the run's snapshot holds
  expect_exit 0 tpurun_as alice -C "$proj" stage --on-failure continue --detach --json -- sh probe.sh 3
  run_id=$(json_get "$OUT" 'd["run_id"]')
  echo v2 >"$proj/data.txt"
  expect_exit nonzero tpurun_as alice -C "$proj" logs "$run_id" -f --raw
  assert_eq "$(grep -c 'data=v1' <<<"$OUT")" "$N"
  assert_not_contains "$OUT" "data=v2"
  assert_contains "$ERR" "run $run_id failed"
  expect_exit 0 tpurun_as alice -C "$proj" logs "${run_id:0:22}" --worker 1
  assert_contains "$OUT" "[w1 $(worker_ip 1)] data=v1"
  assert_not_contains "$OUT" "[w0 "
}
e2e_case edit_while_running "editing the source tree afterwards does not change a running job; detach and reattach"

restage_reuses() {
  local s1 s2 s3
  expect_exit 0 tpurun_as alice -C "$proj" stage --detach --json -- true
  s1=$(json_get "$OUT" 'd["staged_dir"]')
  expect_exit 0 tpurun_as alice -C "$proj" stage --detach --json -- true
  s2=$(json_get "$OUT" 'd["staged_dir"]')
  assert_eq "$s2" "$s1" "an unchanged re-stage reuses the snapshot"
  assert_contains "$ERR" "unchanged since snapshot $(basename "$s1"): reusing it"
  echo v3 >"$proj/data.txt"
  expect_exit 0 tpurun_as alice -C "$proj" stage --detach --json -- true
  s3=$(json_get "$OUT" 'd["staged_dir"]')
  [[ $s1 != "$s3" ]] || fail "a changed tree reused the old snapshot"
  assert_eq "$(stat -c %i "$(srv "$s1")/train.py")" "$(stat -c %i "$(srv "$s3")/train.py")"
  (( $(stat -c %h "$(srv "$s3")/train.py") >= 3 )) || fail "expected >= 3 links (object + 2 snapshots)"
  # The changed data.txt joins the object store: during the stage on a local
  # disk, after the launch (a detached `tpurun _adopt`) on a network one.
  # (More links when an earlier test stored the same bytes.)
  wait_until "data.txt to join the object store (see adopt.log in alice's tpurun cache)" 120 \
    eval '(( $(stat -c %h "$(srv "$s3")/data.txt") >= 2 ))'
  (( $(stat -c %h "$(srv "$s3")/data.txt") >= 2 )) || fail "data.txt never joined the object store (see adopt.log in alice's tpurun cache)"
}
e2e_case restage_reuses "re-staging an unchanged tree reuses its read-only snapshot; a changed file makes a new one that shares the unchanged content"

client_sigkilled() {
  local before run_dir client i
  before=$(run_dirs)
  as_user alice -C "$proj" "$TPURUN" --config "$FAKEPOD_CONFIG" stage --on-failure continue -- sh probe.sh 3 >/dev/null 2>&1 &
  client=$!
  launched() {
    run_dir=$(new_run_dir "$before")
    [[ -n $run_dir && $(ls "$run_dir"/worker*.pid 2>/dev/null | wc -l) == "$N" ]]
  }
  wait_until "the run's jobs on all $N workers" 120 launched
  [[ -n $run_dir ]] || fail "the run did not start"
  kill -KILL "$(client_pid "$client")"
  wait "$client" 2>/dev/null || true
  wait_until "every job's exit record" 120 eval '[[ $(ls "$run_dir"/worker*.exit 2>/dev/null | wc -l) == "$N" ]]'
  for i in $(seq 0 $((N - 1))); do
    assert_eq "$(cat "$run_dir/worker$i.exit" 2>/dev/null)" "$(( i % 3 ))" "worker $i exit record"
  done

  # runs lists them with per-worker states, once the watcher has seen them end.
  wait_verdict alice "$(basename "$run_dir")" failed
  expect_exit 0 tpurun_as alice -C "$proj" runs --json
  /usr/bin/python3 - "$OUT" "$(basename "$run_dir")" "$N" <<'PY'
import json, sys
runs = json.loads(sys.argv[1])["runs"]
r = [x for x in runs if x["run_id"] == sys.argv[2]][0]
states = [w["state"] for w in r["workers"]]
assert r["verdict"] == "failed", r
assert states == ["succeeded" if i % 3 == 0 else "failed" for i in range(int(sys.argv[3]))], states
PY
  expect_exit 0 tpurun_as alice -C "$proj" runs
  assert_contains "$OUT" "failed: w"
}
e2e_case client_sigkilled "SIGKILL of the client mid-run: every job still finishes and records its exit code, and runs lists the per-worker states"

worker_down() {
  nfs_mode && elsewhere "on the plain mount only: the preflight reads the workers over ssh"
  stop_worker "$down"
  expect_exit 1 tpurun_as alice -C "$proj" stage -- true
  assert_contains "$ERR" "w$down $(worker_ip "$down"): cannot check: cannot connect"
  expect_exit 255 tpurun_as alice -C "$proj" stage --skip-preflight -- true
  assert_contains "$ERR" "w$down $(worker_ip "$down"): cannot connect"
  assert_contains "$ERR" "the job started on $((N - 1)) of $N workers only"
  fakepod start-worker "$down"
}
e2e_case worker_down "a worker that is down: the preflight refuses; with --skip-preflight the others launch and run, and tpurun says so"

# The next two look at alice's staging dir, which the cases above made.
dry_run_changes_nothing() {
  local before
  before=$(ls $FAKEPOD_NFS_EXPORT/staging/alice | wc -l)
  expect_exit 0 tpurun_as alice -C "$proj" stage --dry-run -- python3 train.py
  assert_contains "$OUT" "dry run"
  assert_eq "$(ls $FAKEPOD_NFS_EXPORT/staging/alice | wc -l)" "$before"
}
e2e_case dry_run_changes_nothing "--dry-run changes nothing in the staging root" --needs job_in_snapshot

gc_own_snapshots() {
  local bobproj bob_snaps left kept
  bobproj=$(make_project bob proj)
  expect_exit 0 tpurun_as bob -C "$bobproj" stage --detach -- true
  bob_snaps=$(ls $FAKEPOD_NFS_EXPORT/staging/bob | grep -c -- '-code$')
  expect_exit 0 tpurun_as alice -C "$proj" gc --older-than 0s --dry-run
  assert_contains "$OUT" "would remove"
  (( $(ls $FAKEPOD_NFS_EXPORT/staging/alice | grep -c -- '-code$') > 0 )) || fail "dry run removed snapshots"
  expect_exit 0 tpurun_as alice -C "$proj" gc --older-than 0s
  # What stays is exactly what gc kept for a run that may still use it (one
  # whose watcher has not recorded its end yet).
  left=$(ls $FAKEPOD_NFS_EXPORT/staging/alice | grep -- '-code$' || true)
  kept=$(grep -o '^kept [^:]*' <<<"$OUT" | cut -d' ' -f2 | sort || true)
  assert_eq "$left" "$kept" "snapshots left by gc --older-than 0s"
  assert_eq "$(ls $FAKEPOD_NFS_EXPORT/staging/bob | grep -c -- '-code$')" "$bob_snaps"
}
e2e_case gc_own_snapshots "gc removes only the caller's old snapshots, never another user's" --needs job_in_snapshot

e2e_run
