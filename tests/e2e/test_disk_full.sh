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

note "a job that fills the logs disk: the run and the stage end, with the reason and the fix"
rc=0
tpurun_as alice -C "$proj" stage -- sh -c "$job" >"$SCRATCH/stage.out" 2>"$SCRATCH/stage.err" &
client=$!
for _ in $(seq 1500); do kill -0 "$client" 2>/dev/null || break; sleep 0.2; done  # a hang guard, ~5 min
if kill -0 "$client" 2>/dev/null; then
  pkill -P "$client"
  fail "the stage never ended on a full disk: $(tail -20 "$SCRATCH/stage.err")"
fi
wait "$client" || rc=$?
err=$(cat "$SCRATCH/stage.err")
assert_eq "$rc" 1 "the stage's exit code: $err"
assert_contains "$err" "out of space on the logs root $FAKEPOD_NFS/logs"
assert_contains "$err" "tpurun gc"
assert_not_contains "$err" "starting one"
run=$(sed -n 's/^tpurun: run \([^ ]*\) → .*/\1/p' <<<"$err")

note "every worker's exit record is there, and no temp file"
assert_eq "$(ls "$logs/$run"/worker*.exit | wc -l)" 4
assert_eq "$(ls "$logs/$run" | grep -c 'tmp' || true)" 0 "half-written files: $(ls "$logs/$run")"
assert_eq "$(run_field alice "$run" 'r["verdict"]') $(run_field alice "$run" 'r["first_failure"]["how"]')" \
  "failed out_of_space"
expect_exit 0 tpurun_as alice runs --no-check
assert_not_contains "$OUT" "UNWATCHED"

note "gc frees the snapshot of the run that no longer runs"
snapshots() { ls "$FAKEPOD_NFS/staging/alice" | grep -c code || true; }
before=$(snapshots)
expect_exit 0 tpurun_as alice gc --older-than 0s
assert_eq "$(snapshots)" "$((before - 1))" "gc kept the ended run's snapshot: $OUT"
pass
