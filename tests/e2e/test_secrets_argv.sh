#!/usr/bin/env bash
# --env values never appear in any process's argv on the workers (the launcher
# gets them on stdin; the wrapper and the job get them in their environment,
# which only the user and root can read), yet the job sees them, also after a
# restart.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gang_lib.sh"
proj=$(make_project alice proj)
secret=s3cr3t-$RANDOM$RANDOM
logs=$FAKEPOD_NFS/logs/alice/proj
# The run of secret_not_in_argv, for the case after it.
run_file=$SCRATCH/secrets.run

secret_not_in_argv() {
  local run dir i args
  run=$(stage_detached alice "$proj" --restarts 1 --env WANDB_API_KEY="$secret" -- \
    sh -c 'echo "key=$WANDB_API_KEY"; if [ "$TPURUN_ATTEMPT" = 1 ] && [ "$TPURUN_WORKER" = 0 ]; then sleep 1; exit 1; fi; exec sleep 30')
  echo "$run" >"$run_file"
  dir=$(srv "$logs/$run")
  wait_until "the second attempt to start" 120 test -e "$dir/worker0.a2.pid"
  for i in 0 3; do
    args=$(wexec "$i" --user bob -- ps -eww -o args)
    assert_contains "$args" "sleep 30" "bob sees the jobs on w$i"
    assert_not_contains "$args" "$secret" "the secret in an argv on w$i"
    if wexec "$i" -- sh -c "cat /proc/[0-9]*/cmdline | tr '\\0' ' '" | grep -qF "$secret"; then
      fail "the secret is in a /proc/PID/cmdline on w$i"
    fi
  done
  assert_eq "$(grep -c "key=$secret" "$dir/worker0.log")" "2" "the job saw the value on both attempts"
}
e2e_case secret_not_in_argv "the job sees the --env value on both attempts; no argv on the workers holds it"

kept_values() {
  local run kept
  run=$(cat "$run_file")
  # The kept values are the user's alone, and gone when the run ends.
  kept=$(user_dir alice)/.cache/tpurun/run-env/$run.env.json  # as_user's XDG_CACHE_HOME
  assert_eq "$(stat -c %a "$kept")" "600"
  expect_exit 0 tpurun_as alice -C "$proj" kill --run "$run" --grace 1s
  wait_verdict alice "$run" stopped
  wait_until "the kept --env values to go with the run (they outlived it)" 120 eval '[[ ! -e $kept ]]'
}
e2e_case kept_values "the kept --env values are the user's alone (0600), and gone when the run ends" --needs secret_not_in_argv

# What a worker's process list shows during a run: the job's wrapper by a
# short name, and no program of tpurun's (they travel on stdin) in any argv.
short_names_in_ps() {
  local run dir i args text last=$((FAKEPOD_WORKERS - 1))
  run=$(stage_detached alice "$proj" -- sh -c 'exec sleep 61')
  dir=$(srv "$logs/$run")
  for i in 0 "$last"; do
    wait_until "w$i's job to run" 120 eval '[[ $(wexec "$i" -- ps -eww -o args) == *"sleep 61"* ]]'
    args=$(wexec "$i" -- ps -eww -o args)
    assert_contains "$args" "tpurun-job $run w$i" "the job's wrapper on w$i"
    for text in "perl -e" "python3 -I -S -c" "use strict" "sysread" "import os" "job_env" "TPURUN_JOB_WRAPPER"; do
      assert_not_contains "$args" "$text" "program text in an argv on w$i"
    done
  done
  # kill spares the wrapper (it has no run id): it records how the job ended.
  expect_exit 0 tpurun_as alice -C "$proj" kill --run "$run" --grace 1s
  wait_verdict alice "$run" stopped
  assert_eq "$(cat "$dir/worker$last.exit")" "143" "the wrapper's exit record of the killed job"
}
e2e_case short_names_in_ps "during a run, ps on a worker shows the wrapper as tpurun-job RUN wN and no program text"

e2e_run
