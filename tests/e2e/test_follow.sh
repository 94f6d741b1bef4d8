#!/usr/bin/env bash
# tpurun logs -f shows a line when a worker writes it, while the run is still
# going (not only in the drain at its end): with the watch tpurun picks itself
# (inotify on the simulator's shared dir) and with polling, which is what an
# NFS mount gets (TPURUN_FOLLOW_WATCH=poll).
source "$(dirname "$0")/lib.sh"
N=$FAKEPOD_WORKERS
proj=$(make_project alice proj)
gates=$(scratch_dir alice)
# Every worker prints one line and waits for `end`; worker 2 also waits for
# `go`, then prints a late line.
cat >"$proj/late.sh" <<'SH'
echo "early from $TPURUN_WORKER"
if [ "$TPURUN_WORKER" = 2 ]; then
  while [ ! -e "$1/go" ]; do sleep 0.1; done
  echo "late line from w2"
fi
while [ ! -e "$1/end" ]; do sleep 0.1; done
SH
chown alice: "$proj/late.sh"

# has_lines FILE FIXED COUNT: FILE has COUNT lines containing FIXED.
has_lines() {
  (($(grep -cF -- "$2" "$1" || true) >= $3))
}

# follow_in_mode MODE: logs -f with TPURUN_FOLLOW_WATCH=MODE shows the early
# lines, then the late one as soon as it is written, once; and ends with the run.
follow_in_mode() {
  local mode=$1 run_id out follower
  as_user alice rm -f "$gates/go" "$gates/end"
  expect_exit 0 tpurun_as alice -C "$proj" stage --detach --json -- sh late.sh "$gates"
  run_id=$(json_get "$OUT" 'd["run_id"]')
  out=$SCRATCH/follow-$mode.out
  AS_USER_ENV="TPURUN_FOLLOW_WATCH=$mode" tpurun_as alice -C "$proj" logs "$run_id" -f --raw >"$out" 2>"$out.err" &
  follower=$!
  on_exit "kill $follower 2>/dev/null; touch '$gates/end'"
  # (On a failure, $out and $out.err stay in the scratch dir.)
  wait_until "$mode: logs -f to show every worker's first line ($out)" 120 has_lines "$out" "early from" "$N"
  assert_not_contains "$(cat "$out")" "late line" "$mode: the late line before it was written"
  as_user alice touch "$gates/go"
  wait_until "$mode: logs -f to show a line written while it followed ($out)" 120 \
    has_lines "$out" "[w2 $(worker_ip 2)] late line from w2" 1
  kill -0 "$follower" 2>/dev/null || fail "$mode: the follower ended before the run did: $(cat "$out.err")"
  as_user alice touch "$gates/end"
  wait "$follower" || fail "$mode: logs -f exited $?: $(cat "$out.err")"
  assert_contains "$(cat "$out.err")" "run $run_id succeeded"
  assert_eq "$(grep -cF "late line from w2" "$out")" 1 "$mode: the late line once"
}

follow_with_watch() {
  follow_in_mode auto
}
e2e_case follow_with_watch "logs -f with the watch tpurun picks: a line shows while the run goes on"

follow_with_polling() {
  follow_in_mode poll
}
e2e_case follow_with_polling "logs -f with polling (what NFS gets): a line shows while the run goes on"

e2e_run
