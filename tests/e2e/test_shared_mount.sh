#!/usr/bin/env bash
# Safe on a shared mount: bob squats alice's per-user dirs on the shared
# staging and logs roots (a 0777 dir made before her first stage, a planted
# symlink), and every tpurun command alice runs there refuses, naming the
# path, its owner and mode and the one command that fixes it, and writes
# nothing there. Her own dirs are private (0700). gc keeps the snapshot of a
# run that is still going, names the run, and removes it once the run ended.
source "$(dirname "$0")/lib.sh"
N=$FAKEPOD_WORKERS
S=$FAKEPOD_NFS/staging
L=$FAKEPOD_NFS/logs

# A fresh user-dir state for alice; her real dirs come back at exit. Root
# (an admin on the NFS server, in NFS mode) moves them: srv.
for d in "$(srv "$S/alice")" "$(srv "$L/alice")"; do
  saved="$(dirname "$d")/.e2e-saved-alice-$$"
  rm -rf "$saved"
  if [[ -e $d || -L $d ]]; then mv "$d" "$saved"; fi
  on_exit "rm -rf '$d'; if [[ -e '$saved' ]]; then mv '$saved' '$d'; fi"
done
reset_alice_dirs() { rm -rf "$(srv "$S/alice")" "$(srv "$L/alice")"; }

proj=$(make_project alice proj)
bobdir=$(user_dir bob)

# expect_refused WHAT PATH OWNER MODE FIX CMD...: CMD fails and its error
# names the path, owner and mode, and the fix.
expect_refused() {
  local what=$1 path=$2 owner=$3 mode=$4 fix=$5
  shift 5
  expect_exit nonzero "$@"
  assert_contains "$ERR" "$path" "$what: path"
  assert_contains "$ERR" "owner $owner, mode $mode" "$what: owner and mode"
  assert_contains "$ERR" "$fix" "$what: the fix"
}

# Each case that squats starts from no dirs of alice's (an earlier case that
# failed may have left its squatters) and leaves none.

squatted_staging() {
  reset_alice_dirs
  as_user bob mkdir -m 777 "$S/alice"
  expect_refused "stage, squatted staging dir" "$S/alice is not yours" bob 0777 "sudo rm -rf $S/alice" \
    tpurun_as alice -C "$proj" stage --skip-preflight -- true
  assert_eq "$(find "$(srv "$S/alice")" -mindepth 1 | wc -l)" "0" "alice wrote into bob's dir"
  expect_refused "gc, squatted staging dir" "$S/alice" bob 0777 "sudo rm -rf $S/alice" \
    tpurun_as alice gc --older-than 0s
  reset_alice_dirs
}
e2e_case squatted_staging "bob makes alice's staging dir before her first stage: stage and gc refuse, naming the fix"

squatted_logs() {
  reset_alice_dirs
  as_user bob mkdir -m 777 "$L/alice"
  expect_refused "stage, squatted logs dir" "$L/alice is not yours" bob 0777 "sudo rm -rf $L/alice" \
    tpurun_as alice -C "$proj" stage --skip-preflight -- true
  assert_eq "$(find "$(srv "$L/alice")" -mindepth 1 | wc -l)" "0" "alice wrote into bob's dir"
  expect_refused "logs" "$L/alice" bob 0777 "sudo rm -rf $L/alice" tpurun_as alice logs last
  expect_refused "runs" "$L/alice" bob 0777 "sudo rm -rf $L/alice" tpurun_as alice runs --no-check
  expect_refused "gc" "$L/alice" bob 0777 "sudo rm -rf $L/alice" tpurun_as alice gc --older-than 0s
  reset_alice_dirs
}
e2e_case squatted_logs "bob makes alice's logs dir: stage stops before the run dir, and logs, runs and gc refuse as well"

planted_symlinks() {
  reset_alice_dirs
  as_user bob mkdir -m 777 "$bobdir/x"
  as_user bob ln -s "$bobdir/x" "$L/alice"
  expect_refused "stage, logs dir symlink" "$L/alice is a symlink to $bobdir/x" bob 0777 "sudo rm $L/alice" \
    tpurun_as alice -C "$proj" stage --skip-preflight -- true
  expect_refused "runs, logs dir symlink" "$L/alice is a symlink" bob 0777 "sudo rm $L/alice" \
    tpurun_as alice runs --no-check
  reset_alice_dirs
  as_user bob ln -s "$bobdir/x" "$S/alice"
  expect_refused "stage, staging dir symlink" "$S/alice is a symlink to $bobdir/x" bob 0777 "sudo rm $S/alice" \
    tpurun_as alice -C "$proj" stage --skip-preflight -- true
  assert_eq "$(find "$bobdir/x" -mindepth 1 | wc -l)" "0" "alice wrote through bob's symlink"
  reset_alice_dirs
}
e2e_case planted_symlinks "bob plants symlinks as alice's dirs, pointing into a dir of his: refused, nothing written through them"

own_dir_bad_mode() {
  reset_alice_dirs
  as_user alice mkdir -m 777 "$L/alice"
  expect_refused "own dir, mode 0777" "$L/alice is writable by group or others" alice 0777 "chmod go-w $L/alice" \
    tpurun_as alice runs --no-check
  reset_alice_dirs
}
e2e_case own_dir_bad_mode "alice's own dir with a bad mode: she can fix that herself, and is told how"

private_dirs() {
  reset_alice_dirs
  expect_exit 0 tpurun_as alice -C "$proj" stage --detach --json -- true
  assert_eq "$(stat -c '%U %a' "$(srv "$S/alice")")" "alice 700"
  assert_eq "$(stat -c '%U %a' "$(srv "$L/alice")")" "alice 700"
  if as_user bob ls "$S/alice" >/dev/null 2>&1; then fail "bob can list alice's snapshots"; fi
  if as_user bob ls "$L/alice" >/dev/null 2>&1; then fail "bob can list alice's run logs"; fi
}
e2e_case private_dirs "a normal stage: alice's dirs are hers and private; bob can't look in"

gc_during_run() {
  local run_id snap run_dir name
  # (alice's dirs as the cases before left them, or as a stage makes them)
  expect_exit 0 tpurun_as alice -C "$proj" stage --skip-preflight --detach --json -- sleep 120
  read -r run_id snap < <(json_get "$OUT" 'd["run_id"] + " " + d["staged_dir"]')
  run_dir=$(srv "$L/alice/proj/$run_id")
  wait_until "the run's jobs on every worker" 120 eval '[[ $(ls "$run_dir"/worker*.pid 2>/dev/null | wc -l) == "$N" ]]'
  name=$(basename "$snap")
  expect_exit 0 tpurun_as alice gc --older-than 0s --dry-run --json
  /usr/bin/python3 - "$OUT" "$name" "$run_id" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
assert sys.argv[2] not in d["snapshots_removed"], d
kept = [k for k in d["kept"] if k["snapshot"] == sys.argv[2]]
assert kept and kept[0]["runs"][0]["run_id"] == sys.argv[3], d
PY
  expect_exit 0 tpurun_as alice gc --older-than 0s
  assert_contains "$OUT" "kept $name: used by run $run_id (running)"
  [[ -d $(srv "$snap") ]] || fail "gc removed the snapshot of a running job"
  assert_not_contains "$OUT" "removed $name"

  # Once the run has ended, gc removes it. Ended as run_is_active has it: every
  # worker's exit record, and a final verdict in state.json when its watcher
  # keeps one.
  ended() {
    [[ $(ls "$run_dir"/worker*.exit 2>/dev/null | wc -l) == "$N" ]] || return 1
    [[ -f $run_dir/state.json ]] || return 0
    /usr/bin/python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["verdict"] in ("running", "restarting"))' \
      "$run_dir/state.json"
  }
  expect_exit 0 tpurun_as alice kill --run "$run_id" --grace 2s
  wait_until "run $run_id to end after kill --run" 120 ended
  expect_exit 0 tpurun_as alice gc --older-than 0s
  assert_contains "$OUT" "removed $name"
  [[ ! -e $(srv "$snap") ]] || fail "gc kept the snapshot of an ended run"
}
e2e_case gc_during_run "gc during a run keeps its snapshot and names the run; once the run ended, gc removes it"

e2e_run
