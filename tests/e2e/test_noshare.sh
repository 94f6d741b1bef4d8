#!/usr/bin/env bash
# Issue 26: a pod with no shared mount (the TRC user's pod). On a pod of its
# own in FAKEPOD_NFS_MODE=none (each VM has only its own disk; the config has
# no staging_root/logs_root), stage copies the snapshot to every worker, the
# jobs write their logs on their own disks, and the watcher mirrors them to
# the dev VM: stage, an unchanged re-stage, collapsed followed output, a gang
# fail-fast, a restart, runs, profile, gc, kill --run, and logs and
# TensorBoard's event files read with a VM gone.
# Asserts on exit codes, messages and files, never on timings.
source "$(dirname "$0")/noshare_pod.sh" noshare 127.0.10

proj=$(make_project alice noshare)
printf 'odd\n' >"$proj/odd name (1).txt"
chown alice "$proj/odd name (1).txt"
home=$(user_home alice)    # the dev VM's (private homes: the test's own)
whome=$(worker_home alice) # the workers' (each on its own disk)
logs=$home/.tpurun/logs/alice/noshare
on_exit "rm -rf '$home/.tpurun'"
# worker_file I PATH: cat PATH on worker I's own disk, as alice.
worker_file() { wexec "$1" --user alice -- cat "$2"; }

# run_of_stage: the run a foreground stage named on stderr ($ERR).
run_of_stage() {
  sed -n 's/^tpurun: run \([^ ]*\) → .*/\1/p' <<<"$ERR"
}

# mirrored RUN: the dev VM has each worker's log line of stage_no_share's job.
mirrored() {
  local i
  for i in 0 1 2 3; do grep -qs "hello from" "$logs/$1/worker$i.log" || return 1; done
}

stage_no_share() {
  local run i gate=$SCRATCH/mirror.gate client rc=0
  # The jobs end once the log mirror has copied their first lines to the dev
  # VM while they run (the test then makes the gate, which the workers see
  # in the scratch dir; 3 after 300 s): the mirror's rounds meet a running
  # job, whose exit record's reserved bytes exist then.
  rm -f "$gate"
  on_exit "touch '$gate'"
  # shellcheck disable=SC2016
  tpurun_as alice -C "$proj" stage -- sh -c 'echo "hello from $(hostname)"; cat "odd name (1).txt"; echo same line
  mkdir -p "$TPURUN_LOG_DIR/tb" && echo "event of w$TPURUN_WORKER" >"$TPURUN_LOG_DIR/tb/events.out.tfevents.w$TPURUN_WORKER"
  i=0; until [ -e "$0" ]; do i=$((i + 1)); [ $i -le 3000 ] || exit 3; sleep 0.1; done' "$gate" \
    >"$SCRATCH/stage.out" 2>"$SCRATCH/stage.err" &
  client=$!
  wait_until "the stage to name its run" 300 grep -q '^tpurun: run ' "$SCRATCH/stage.err"
  ERR=$(<"$SCRATCH/stage.err")
  run=$(run_of_stage)
  wait_until "every worker's first lines on the dev VM while the jobs run" 300 mirrored "$run"
  touch "$gate"
  wait "$client" || rc=$?
  OUT=$(<"$SCRATCH/stage.out")
  ERR=$(<"$SCRATCH/stage.err")
  assert_eq "$rc" 0 "the stage: $ERR"
  assert_contains "$ERR" "→ 4 workers (no shared mount): sent"
  assert_not_contains "$ERR" "sent 0 files"
  assert_contains "$ERR" "succeeded"
  assert_contains "$OUT" "[w0-3] same line"
  run=$(run_of_stage)
  # (for logs_with_vm_gone)
  echo "$run" >"$SCRATCH/first-run"
  for i in 0 1 2 3; do
    assert_contains "$(cat "$logs/$run/worker$i.log")" "hello from" "w$i's log mirrored to the dev VM"
    assert_eq "$(cat "$logs/$run/worker$i.exit")" "0"
    [[ ! -e $logs/$run/worker$i.exit.pending ]] || fail "a stale worker$i.exit.pending on the dev VM"
    # and the worker's own copy is on its own disk, not on the dev VM's
    assert_contains "$(worker_file "$i" "$whome/.tpurun/logs/alice/noshare/$run/worker$i.log")" "odd"
  done
  wexec 1 --user alice -- test ! -e "$whome/.tpurun/logs/alice/noshare/$run/worker0.log" ||
    fail "w1 has w0's log: the disks are shared"
}
e2e_case stage_no_share "stage on a pod with no shared mount: the snapshot goes to every worker, the logs come back"

doctor_own_disks() {
  expect_exit 0 tpurun_as alice doctor
  assert_not_contains "$OUT$ERR" "shared mount"
  # and says what each worker's disk holds of tpurun's
  assert_contains "$OUT" " of snapshots and "
  expect_exit 0 tpurun_as alice doctor --json
  /usr/bin/python3 -c '
import json, sys
disk = json.loads(sys.argv[1])["disk"]
assert sorted(d["worker"] for d in disk) == [0, 1, 2, 3], disk
assert all(d["staging_kib"] > 0 and d["logs_kib"] > 0 for d in disk), disk
' "$OUT"
}
e2e_case doctor_own_disks "doctor checks each worker's own disk, not a shared mount, and says what each holds" --needs stage_no_share

restage_sends_nothing() {
  # Whether this stage re-reads the files or its stat cache already trusts
  # them depends on how long ago the project was written (racy-clean files are
  # read again): either way nothing goes to the workers.
  expect_exit 0 tpurun_as alice -C "$proj" stage -- true
  [[ $ERR == *"sent 0 files (0 B)"* || $ERR == *"every worker had snapshot"* ]] ||
    fail "the re-stage sent something: $ERR"
  expect_exit 0 tpurun_as alice -C "$proj" stage -- true  # now the stat cache trusts the files
  assert_contains "$ERR" "every worker had snapshot"
}
e2e_case restage_sends_nothing "a re-stage sends nothing the workers have" --needs stage_no_share

# damage I SNAP PATH SCRIPT: as alice on worker I, SCRIPT run in snapshot
# SNAP's dir made writable for it (then read-only again), with the mtime of
# PATH put back: what only a ctime or the bytes can show.
damage() {
  wexec "$1" --user alice -- sh -c 'cd "$1" && f=$2 && t=$(stat -c %y "$f") && chmod -R u+w . &&
    eval "$3" && touch -c -d "$t" "$f"; chmod -R a-w .' sh "$whome/.tpurun/staging/alice/$2" "$3" "$4"
}
# same_bytes_as_here PATH: PATH's sha256 in the newest run's snapshot on every
# worker is the one of the project's copy here.
same_bytes_as_here() {
  local run snap want i
  run=$(run_of_stage)
  snap=$(basename "$(run_field alice "$run" 'r["staged_dir"]')")
  want=$(sha256sum <"$proj/$1")
  for i in 0 1 2 3; do
    assert_eq "$(wexec "$i" --user alice -- sh -c 'sha256sum <"$1"' sh "$whome/.tpurun/staging/alice/$snap/$1")" "$want" \
      "w$i's $1"
  done
}

damaged_snapshot() {
  local snap
  expect_exit 0 tpurun_as alice -C "$proj" stage -- true
  assert_contains "$ERR" "every worker had snapshot"
  snap=$(basename "$(run_field alice "$(run_of_stage)" 'r["staged_dir"]')")
  # w1: a file rewritten in place at its size, its mtime put back; w2: a file gone.
  damage 1 "$snap" "odd name (1).txt" 'printf "ODD\n" >"odd name (1).txt"'
  damage 2 "$snap" train.py 'rm train.py'
  expect_exit 0 tpurun_as alice -C "$proj" stage -- sh -c 'cat "odd name (1).txt"; test -f train.py && echo train.py there'
  assert_not_contains "$ERR" "every worker had snapshot"
  assert_contains "$OUT" "[w0-3] odd"
  assert_contains "$OUT" "[w0-3] train.py there"
  same_bytes_as_here "odd name (1).txt"
  same_bytes_as_here train.py
  # w1 again, and then another file changes: the new snapshot does not link
  # the damaged file in.
  damage 1 "$snap" "odd name (1).txt" 'printf "ODD\n" >"odd name (1).txt"'
  echo "# changed" >>"$proj/train.py"
  expect_exit 0 tpurun_as alice -C "$proj" stage -- cat "odd name (1).txt"
  assert_contains "$OUT" "[w0-3] odd"
  same_bytes_as_here "odd name (1).txt"
  same_bytes_as_here train.py
}
e2e_case damaged_snapshot "a snapshot on a worker changed in place (same size, mtime put back) or missing a file is not reused: sent again" --needs restage_sends_nothing

growing_file() {
  local run snap want i writer
  # A log in the project that a writer appends to all through the stage
  # (each line synced to disk, so that it grows at the disk's pace, not at
  # once), until the stage has ended or 64 MiB.
  : >"$proj/growing.log"
  /usr/bin/python3 -c '
import os, sys
with open(sys.argv[1], "ab", buffering=0) as f:
    for n in range(16384):
        f.write(b"%08d " % n + b"x" * 4086 + b"\n")
        os.fsync(f.fileno())
' "$proj/growing.log" &
  writer=$!
  wait_until "the writer's first bytes" 30 test -s "$proj/growing.log"
  expect_exit 0 tpurun_as alice -C "$proj" stage -- true
  note "$(grep 'changed while it was read' <<<"$ERR" || echo 'growing.log did not change between its listing and its read')"
  kill "$writer" 2>/dev/null || true
  wait "$writer" 2>/dev/null || true
  rm -f "$proj/growing.log"
  run=$(run_of_stage)
  snap=$(basename "$(run_field alice "$run" 'r["staged_dir"]')")
  # every worker has the dev VM's snapshot's bytes, whatever size it was read at
  want=$(sha256sum <"$home/.tpurun/staging/alice/$snap/growing.log")
  for i in 0 1 2 3; do
    assert_eq "$(wexec "$i" --user alice -- sh -c 'sha256sum <"$1"' sh "$whome/.tpurun/staging/alice/$snap/growing.log")" \
      "$want" "w$i's growing.log against the dev VM's copy"
  done
}
e2e_case growing_file "a file that grows during the stage: every worker gets the bytes of the dev VM's copy" --needs stage_no_share

# With the keeper on (alice's own runtime dir for it): a push of many new
# megabytes goes over direct connections of its own, not through the keeper's
# relay; a small change goes on the reservation's session, the keeper's.
bulk_push_direct() {
  local rt=$SCRATCH/alice-run n
  install -d -m 700 -o alice "$rt"
  on_exit "E2E_KEEP=10m AS_USER_ENV='XDG_RUNTIME_DIR=$rt' tpurun_as alice agent stop >/dev/null 2>&1 || true"
  head -c 9000000 /dev/urandom >"$proj/weights.bin"
  chown alice "$proj/weights.bin"
  E2E_KEEP=10m AS_USER_ENV="XDG_RUNTIME_DIR=$rt" expect_exit 0 tpurun_as alice -C "$proj" -v stage -- sh -c 'wc -c <weights.bin'
  assert_contains "$OUT" "[w0-3] 9000000"
  n=$(grep -c "over a direct connection of its own" <<<"$ERR" || true)
  assert_eq "$n" 4 "workers pushed to over a direct connection"
  same_bytes_as_here weights.bin
  echo "small change" >"$proj/small.txt"
  chown alice "$proj/small.txt"
  E2E_KEEP=10m AS_USER_ENV="XDG_RUNTIME_DIR=$rt" expect_exit 0 tpurun_as alice -C "$proj" -v stage -- cat small.txt
  assert_contains "$OUT" "[w0-3] small change"
  n=$(grep -cE "keeper: w[0-3] .* on a (kept|new) session of keeper pid" <<<"$ERR" || true)
  assert_eq "$n" 4 "workers reserved through the keeper"
  assert_not_contains "$ERR" "over a direct connection" "a small push went around the keeper"
  same_bytes_as_here small.txt
  rm -f "$proj/weights.bin" "$proj/small.txt"
}
e2e_case bulk_push_direct "with the keeper on, a push of many new megabytes goes over direct connections; a small one through the keeper" --needs stage_no_share

gang_fail_fast() {
  local frun
  expect_exit 3 tpurun_as alice -C "$proj" stage -- sh -c "$(fail_on_worker_job 1 3)"
  assert_contains "$ERR" "w1"
  assert_contains "$ERR" "exited 3"
  frun=$(run_of_stage)
  assert_eq "$(run_field alice "$frun" '" ".join(w["state"] for w in r["workers"])')" "stopped failed stopped stopped"
  assert_contains "$(cat "$logs/$frun/worker1.log")" "w1 broke"
  no_job_left alice "$frun"
}
e2e_case gang_fail_fast "a gang fail-fast: w1 fails, the others are stopped, the verdict and logs come back"

restart_records() {
  local rrun
  expect_exit 0 tpurun_as alice -C "$proj" stage --restarts 1 -- \
    sh -c 'if [ "$TPURUN_ATTEMPT" = 1 ] && [ "$TPURUN_WORKER" = 1 ]; then exit 7; fi; echo "attempt $TPURUN_ATTEMPT ok"'
  assert_contains "$ERR" "restarting as attempt 2 of 2"
  assert_contains "$ERR" "succeeded (attempt 2 of 2)"
  rrun=$(run_of_stage)
  assert_eq "$(cat "$logs/$rrun/worker1.exit")" "7"
  assert_eq "$(cat "$logs/$rrun/worker1.a2.exit")" "0"
  grep -q '^attempt 2 ok$' "$logs/$rrun/worker1.log" || fail "w1's second attempt's output was not mirrored"
  expect_exit 0 tpurun_as alice runs
  assert_contains "$OUT" "$rrun"
}
e2e_case restart_records "a restart: w1 fails its first attempt, the gang goes again, the second attempt's records come back"

# The detached run krun of profile_traces goes on for gc_on_workers and
# kill_detached ($SCRATCH/krun).
profile_traces() {
  local krun
  krun=$(stage_detached alice "$proj" -- python3 train.py --forever --step-time 0.1 --profiler-port 9999)
  echo "$krun" >"$SCRATCH/krun"
  wait_until "the run's jobs on 4 workers" 120 eval '[[ $(ls "$logs/$krun"/worker*.pid 2>/dev/null | wc -l) == 4 ]]'
  # until every server listens
  wait_until "every worker's profiler server" 120 eval 'tpurun_as alice profile "$krun" --duration 1s >/dev/null 2>&1'
  expect_exit 0 tpurun_as alice profile "$krun" --duration 1s
  [[ $(ls "$logs/$krun"/plugins/profile/*/w*.xplane.pb | wc -l) -ge 4 ]] ||
    fail "traces not fetched: $(find "$logs/$krun/plugins" 2>&1)"
}
e2e_case profile_traces "profile: the traces written on the workers' disks are fetched into the run's log dir"

gc_on_workers() {
  local krun snap i first
  krun=$(cat "$SCRATCH/krun")
  expect_exit 0 tpurun_as alice gc --older-than 0s
  assert_contains "$OUT" "[w0 $(worker_ip 0)] removed"
  assert_contains "$OUT" "kept"
  snap=$(basename "$(run_field alice "$krun" 'r["staged_dir"]')")
  for i in 0 3; do
    wexec "$i" --user alice -- test -d "$whome/.tpurun/staging/alice/$snap" || fail "gc removed w$i's snapshot of a running run"
  done
  assert_eq "$(wexec 1 --user alice -- sh -c 'ls -d ~/.tpurun/staging/alice/*-code | wc -l')" 1 "w1's old snapshots"
  # and their manifests and records (.sums-, .stat-) went with them
  assert_eq "$(wexec 1 --user alice -- sh -c 'ls -A ~/.tpurun/staging/alice | grep -c "^\.\(manifest\|sums\|stat\)-"')" 3 \
    "w1's records of its one snapshot"
  # The log dirs of ended runs, whole here, go from the workers' disks; the
  # running run's stays, and the dev VM keeps its copies.
  assert_contains "$OUT" "old run log dirs"
  first=$(cat "$SCRATCH/first-run")
  for i in 0 3; do
    wexec "$i" --user alice -- test ! -e "$whome/.tpurun/logs/alice/noshare/$first" ||
      fail "gc left w$i's log dir of the ended run $first"
    wexec "$i" --user alice -- test -d "$whome/.tpurun/logs/alice/noshare/$krun" ||
      fail "gc removed w$i's log dir of the running run $krun"
  done
  assert_contains "$(cat "$logs/$first/worker0.log")" "hello from"
}
e2e_case gc_on_workers "gc on the workers too, sparing the snapshot that a running job uses; the log dirs of ended runs go" \
  --needs profile_traces stage_no_share

kill_detached() {
  local krun
  krun=$(cat "$SCRATCH/krun")
  expect_exit 0 tpurun_as alice kill --run "$krun"
  wait_verdict alice "$krun" stopped
  no_job_left alice "$krun"
}
e2e_case kill_detached "kill --run stops a detached run on every worker" --needs profile_traces gc_on_workers

logs_with_vm_gone() {
  local run
  run=$(cat "$SCRATCH/first-run")
  stop_worker 2
  expect_exit 0 tpurun_as alice logs "$run"
  assert_contains "$OUT" "hello from"
  assert_contains "$OUT" "same line"
  # and TensorBoard reads the event files that came back, here
  expect_exit 0 tpurun_as alice tensorboard "$run" --dry-run
  assert_contains "$OUT" "--logdir_spec="
  assert_contains "$OUT" "$logs/$run"
  assert_eq "$(cat "$logs/$run/w2/tb/events.out.tfevents.w2")" "event of w2"
}
e2e_case logs_with_vm_gone "logs of a finished run read with one of its VMs gone, and TensorBoard's event files" --needs stage_no_share

# A run's dir removed while its watcher runs (rm -rf of the run, or of
# ~/.tpurun): the watcher has nowhere to record anything and ends, and does
# not touch the jobs. (It went on for good, reconnecting every few seconds.)
run_dir_removed() {
  local run wpid
  run=$(stage_detached alice "$proj" -- sleep 600)
  wait_until "run $run's watcher" 60 pgrep -u alice -f " _watcher .*/$run\$" >/dev/null
  wpid=$(pgrep -u alice -f " _watcher .*/$run\$")
  # (rm again while the mirror still writes a file into it)
  wait_until "run $run's dir removed" 30 rm -rf "${logs:?}/$run" 2>/dev/null
  wait_until "the watcher of a run whose dir is gone to end" 60 eval '! kill -0 "$wpid" 2>/dev/null'
  wexec 0 -- pgrep -u alice -x sleep >/dev/null || fail "the watcher stopped the job of a run whose dir was removed"
  "$FAKEPOD" scrub --users alice >/dev/null
}
e2e_case run_dir_removed "a run's dir removed under its watcher: the watcher ends and leaves the jobs alone" --needs kill_detached

e2e_run
