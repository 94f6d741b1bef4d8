#!/usr/bin/env bash
# Issue 30, item 3: a job whose output fills the logs disk. On a pod of its
# own whose shared mount is a small filesystem (a 48 MiB tmpfs), the run ends,
# and the stage with it, as failed "out of space on the logs root" with the
# fix; every worker's exit record is there (no half-written temp files); runs
# says failed, not an unwatched run; and gc can free the run's snapshot.
# Asserts on exit codes, messages and files, never on timings.
export FAKEPOD_STATE=/var/lib/tpurun-fakepod-full FAKEPOD_NET=127.0.9 FAKEPOD_NFS=/srv/tpurun-full
export FAKEPOD_WORKERS=4 FAKEPOD_NFS_MODE=bind
if [[ $(id -u) == 0 ]] && ! mountpoint -q "$FAKEPOD_NFS"; then
  install -d -m 755 "$FAKEPOD_NFS"
  mount -t tmpfs -o size=48m,mode=755 tmpfs "$FAKEPOD_NFS"
fi
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gang_lib.sh"
require_tpurun
# This pod goes when the test ends, and its small disk with it.
on_exit "_E2E_READY=0; \"$FAKEPOD\" down; umount '$FAKEPOD_NFS'; rm -rf '$FAKEPOD_STATE'"

proj=$(make_project alice fullproj)
logs=$FAKEPOD_NFS/logs/alice/fullproj
job='b=$(head -c 100000 /dev/zero | tr "\0" x); while :; do echo "$b"; sleep 0.01; done'
# The run that filled the disk, for the cases after the first.
run_file=$SCRATCH/full.run

disk_fills() {
  local rc=0 err run
  # No wait of the test's own: as_user's bound (E2E_TIMEOUT) is the hang
  # guard; a stage that never ends on a full disk is ended there and fails
  # the exit-code check below, with its stderr.
  tpurun_as alice -C "$proj" stage -- sh -c "$job" >"$SCRATCH/stage.out" 2>"$SCRATCH/stage.err" || rc=$?
  err=$(cat "$SCRATCH/stage.err")
  assert_eq "$rc" 1 "the stage's exit code: $err"
  assert_contains "$err" "out of space on the logs root $FAKEPOD_NFS/logs"
  assert_contains "$err" "tpurun gc"
  assert_not_contains "$err" "starting one"
  run=$(sed -n 's/^tpurun: run \([^ ]*\) → .*/\1/p' <<<"$err")
  [[ -n $run ]] || fail "the stage named no run: $err"
  echo "$run" >"$run_file"
}
e2e_case disk_fills "a job that fills the logs disk: the run and the stage end, with the reason and the fix"

exit_records() {
  local run
  run=$(cat "$run_file")
  assert_eq "$(ls "$logs/$run"/worker*.exit | wc -l)" 4
  assert_eq "$(ls "$logs/$run" | grep -c 'tmp' || true)" 0 "half-written files: $(ls "$logs/$run")"
  assert_eq "$(run_field alice "$run" 'r["verdict"]') $(run_field alice "$run" 'r["first_failure"]["how"]')" \
    "failed out_of_space"
  expect_exit 0 tpurun_as alice runs --no-check
  assert_not_contains "$OUT" "UNWATCHED"
}
e2e_case exit_records "every worker's exit record is there, and no temp file; runs says failed, not an unwatched run" --needs disk_fills

gc_frees_snapshot() {
  local before
  snapshots() { ls "$FAKEPOD_NFS/staging/alice" | grep -c code || true; }
  before=$(snapshots)
  expect_exit 0 tpurun_as alice gc --older-than 0s
  assert_eq "$(snapshots)" "$((before - 1))" "gc kept the ended run's snapshot: $OUT"
}
e2e_case gc_frees_snapshot "gc frees the snapshot of the run that no longer runs" --needs disk_fills

e2e_run
