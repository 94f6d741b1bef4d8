#!/usr/bin/env bash
# tpurun on an NFS-like shared mount (FAKEPOD_NFS_MODE=fuse; ctest runs it on
# a second pod in that mode, beside the reused gang, stage, follow, claims and
# shared-mount tests): every host has its own client with NFS's caches at
# their realistic defaults (attributes 3-60 s, a miss cached until the
# directory is seen changed, 30 s writeback, root_squash). What only shows
# across clients:
#   - the mount really is like that here (so the rest can fail);
#   - issue 17's original failure: w0 exits 0 at 2 s, the others much later;
#     the run succeeds, nobody is lost, stopped or restarted, and another
#     client (a worker) reads the final state;
#   - logs -f shows a line the job wrote and then went quiet on long before
#     the worker's client would write it back, and the watcher's notes reach
#     the server too;
#   - claims taken on one host count on another, and racing claimants on two
#     hosts get exactly one winner;
#   - under root_squash, the fixes tpurun names for a squatted dir work.
# Asserts on states and exit codes; waits are upper bounds, never timings.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gang_lib.sh"
nfs_mode || skip "needs the NFS-like mount (FAKEPOD_NFS_MODE=fuse; ctest runs it so: e2e.nfs.*)"
N=$FAKEPOD_WORKERS
S=$FAKEPOD_NFS/staging
L=$FAKEPOD_NFS/logs
proj=$(make_project alice proj)
gates=$(scratch_dir alice)  # local, not on the mount: the test's own signals

# wtpurun I U ARGS...: tpurun run by U on worker I, i.e. through another NFS
# client than the dev VM's (a second dev VM, as far as the mount can tell).
wtpurun() {
  local i=$1 u=$2
  shift 2
  wexec "$i" --user "$u" -- "$TPURUN" --config "$FAKEPOD_CONFIG" "$@"
}

# Two pods for the claims, on the mount's board.
cfg=$SCRATCH/board.json
printf '{ "default_pod": "nfs-a", "pods": { %s, %s } }\n' "$(carved_pod nfs-a 0 3)" "$(carved_pod nfs-b 4 $((N - 1)))" >"$cfg"
chmod 644 "$cfg"
chmod 755 "$SCRATCH"
board=$L/.board
# b U ARGS... / wb I U ARGS...: tpurun with those pods, as U on the dev VM / on worker I.
b() { as_user "$1" "$TPURUN" --config "$cfg" "${@:2}"; }
wb() { wexec "$1" --user "$2" -- "$TPURUN" --config "$cfg" "${@:3}"; }

nfs_like_mount() {
  local d=$S/nfs-e2e-$$
  as_user alice mkdir -m 755 "$d"
  on_exit "rm -rf '$(srv "$d")'"
  as_user alice test ! -e "$d/made-on-w1" || fail "no such file yet"
  wexec 1 --user alice -- touch "$d/made-on-w1"
  [[ -e $(srv "$d")/made-on-w1 ]] || fail "w1's create did not reach the server"
  if as_user alice test -e "$d/made-on-w1"; then
    fail "the dev VM's client did not keep its cached miss: this is not NFS-like"
  fi
  as_user alice sh -c "exec 3<'$d' && test -e '$d/made-on-w1'" || fail "opening the dir did not revalidate it"
  if touch "$FAKEPOD_NFS/root-was-here" 2>/dev/null; then fail "root is not squashed on the dev VM's client"; fi
}
e2e_case nfs_like_mount "the mount is NFS-like: a miss cached on the dev VM outlives a worker's create until the directory is opened; root is nobody on the clients"

issue17_late_workers() {
  local gate=$gates/w3-read-running run i notes
  # The workers but w0 end at 12 s at the earliest, and not before w3 has
  # read the run as running (the gate): on a slow machine, 12 s alone could
  # pass before it does.
  # shellcheck disable=SC2016
  local job='echo "w$TPURUN_WORKER up"; if [ "$TPURUN_WORKER" = 0 ]; then sleep 2; else sleep 12; while [ ! -e "$1" ]; do sleep 0.2; done; fi; echo "w$TPURUN_WORKER done"'
  rm -f "$gate"
  on_exit "touch '$gate'"
  run=$(stage_detached alice "$proj" --restarts 1 -- sh -c "$job" _ "$gate")
  w3_reads_running() { [[ $(wtpurun 3 alice runs --json --no-check 2>/dev/null) == *'"running"'* ]]; }
  wait_until "w3 to read the run's state while it runs" 120 w3_reads_running
  assert_contains "$(wtpurun 3 alice runs --json --no-check)" '"running"' "w3 reads the run's state while it runs"
  touch "$gate"
  expect_exit 0 tpurun_as alice -C "$proj" logs "$run" -f
  assert_contains "$ERR" "run $run succeeded"
  for i in $(seq 0 $((N - 1))); do assert_contains "$OUT" "[w$i $(worker_ip "$i")] w$i done"; done
  assert_eq "$(run_field alice "$run" 'r["verdict"]')" "succeeded"
  assert_eq "$(run_field alice "$run" 'r["attempt"]')" "1"
  assert_eq "$(run_field alice "$run" 'r["stopped_others"]')" "False"
  assert_eq "$(run_field alice "$run" '" ".join(sorted(set(w["state"] for w in r["workers"])))')" "succeeded"
  notes=$(cat "$(srv "$L/alice/proj/$run")/watcher.log")
  assert_not_contains "$notes" " first: " "no first failure"
  assert_not_contains "$notes" "restarting"
  wtpurun 3 alice runs --json --no-check >"$SCRATCH/w3-runs.json" || fail "runs on w3"
  /usr/bin/python3 - "$SCRATCH/w3-runs.json" "$run" <<'PY' || fail "w3 reads a stale state: $(cat "$SCRATCH/w3-runs.json")"
import json, sys
r = [x for x in json.load(open(sys.argv[1]))["runs"] if x["run_id"] == sys.argv[2]][0]
assert r["verdict"] == "succeeded", r["verdict"]
PY
}
e2e_case issue17_late_workers "issue 17: w0 exits 0 at 2 s, the others much later; the run succeeds with nobody lost, stopped or restarted, and w3 reads the final state"

follow_quiet_jobs() {
  local run out=$SCRATCH/follow.out follower
  as_user alice rm -f "$gates/end"
  run=$(stage_detached alice "$proj" -- sh -c "echo \"line from \$TPURUN_WORKER\"; while [ ! -e '$gates/end' ]; do sleep 0.2; done")
  on_exit "touch '$gates/end'"
  tpurun_as alice -C "$proj" logs "$run" -f --raw >"$out" 2>"$out.err" &
  follower=$!
  on_exit "kill $(client_pid "$follower") 2>/dev/null"
  # The jobs stay quiet and the workers' clients hold dirty data for 10
  # minutes (the NFS pod's --writeback 600, tests/e2e/CMakeLists.txt): a line
  # that shows came through the job wrapper's sync, not the writeback clock.
  [[ ${FAKEPOD_NFS_OPTIONS:-} == *"--writeback 600"* ]] || skip "needs the NFS pod's --writeback 600 (FAKEPOD_NFS_OPTIONS)"
  wait_until "a line from each of the $N quiet jobs" 120 \
    eval '(($(grep -c "line from" "$out" || true) >= N))'
  assert_eq "$(grep -c "line from" "$out" || true)" "$N" "lines shown of quiet jobs (writeback: 600 s)"
  kill -0 "$follower" 2>/dev/null || fail "the follower ended before the run did: $(cat "$out.err")"
  grep -q "watching run $run" "$(srv "$L/alice/proj/$run")/watcher.log" ||
    fail "the watcher's first note is not on the server yet"
  as_user alice touch "$gates/end"
  wait "$follower" || fail "logs -f exited $?: $(cat "$out.err")"
  assert_contains "$(cat "$out.err")" "run $run succeeded"
}
e2e_case follow_quiet_jobs "logs -f shows each worker's line while the job is quiet, before writeback; the watcher's notes reach the server too"

claims_across_hosts() {
  local round pa pb ra rb winner loser_err
  rm -rf "$(srv "$board")"
  on_exit "rm -rf '$(srv "$board")'"
  # alice's dev VM looked at the board (and cached that there is none); bob
  # claims from w1; alice's claims, exec and stage see it.
  expect_exit 0 b alice claims
  assert_contains "$OUT" "no live claims"
  expect_exit 0 wb 1 bob claim nfs-a --for 1h --note "from w1"
  expect_exit 0 b alice claims
  assert_contains "$OUT" "bob, "
  assert_contains "$OUT" "from w1"
  expect_exit 2 b alice --pod nfs-a exec -- true
  assert_contains "$ERR" "pod 'nfs-a' is claimed by bob"
  expect_exit 0 wb 1 bob release nfs-a
  expect_exit 0 b alice --pod nfs-a exec -- true
  # Racing from two hosts: exactly one winner each round, and both agree.
  for round in 1 2 3; do
    b alice claim nfs-b --for 1h >"$SCRATCH/a.out" 2>"$SCRATCH/a.err" & pa=$!
    wb 2 bob claim nfs-b --for 1h >"$SCRATCH/b.out" 2>"$SCRATCH/b.err" & pb=$!
    ra=0 rb=0
    wait $pa || ra=$?
    wait $pb || rb=$?
    if [[ $ra == 0 && $rb == 1 ]]; then winner=alice loser_err=$(cat "$SCRATCH/b.err")
    elif [[ $ra == 1 && $rb == 0 ]]; then winner=bob loser_err=$(cat "$SCRATCH/a.err")
    else fail "round $round: alice exit $ra, bob exit $rb: $(cat "$SCRATCH"/[ab].err)"
    fi
    assert_contains "$loser_err" "already claimed by $winner"
    expect_exit 0 wb 5 alice claims --json
    /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert [c["user"] for c in d if c["pod"]=="nfs-b"]==[sys.argv[2]], d' \
      "$OUT" "$winner" || fail "round $round: claims seen from w5: $OUT"
    if [[ $winner == alice ]]; then expect_exit 0 b alice release nfs-b; else expect_exit 0 wb 2 bob release nfs-b; fi
  done
}
e2e_case claims_across_hosts "claims taken on one host count on another; racing claimants on two hosts get exactly one winner"

root_squash_fixes() {
  rm -rf "$(srv "$S/alice")"  # (an admin on the server: a fresh start for alice)
  as_user bob mkdir -m 777 "$S/alice"
  on_exit "rm -rf '$(srv "$S/alice")'"
  expect_exit nonzero tpurun_as alice -C "$proj" stage --skip-preflight -- true
  assert_contains "$ERR" "$S/alice is not yours"
  assert_contains "$ERR" "sudo rm -rf $S/alice (as root where root is root: on the NFS server"
  assert_contains "$ERR" "or bob, its owner: rm -rf $S/alice"
  expect_exit nonzero as_user alice sudo -n rm -rf "$S/alice"  # alice's sudo: nobody here
  [[ -d $(srv "$S/alice") ]] || fail "sudo on a client removed bob's dir: root is not squashed"
  expect_exit 0 as_user bob rm -rf "$S/alice"
  expect_exit 0 tpurun_as alice -C "$proj" stage --detach -- true
  assert_eq "$(stat -c '%U %a' "$(srv "$S/alice")")" "alice 700"
}
e2e_case root_squash_fixes "under root_squash (sudo on a client is nobody), the fixes tpurun names for bob's squat on alice's staging dir work"

e2e_run
