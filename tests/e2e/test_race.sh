#!/usr/bin/env bash
# Issue 30: two stages at the same moment never split the workers. Each
# round starts two stages at once for the same workers, with the fake
# trainer taking the TPU the way libtpu does; exactly one launches on every
# worker and the other is refused before any job of it starts, naming the
# winner, and the winner's jobs hold every TPU. Rounds: alice against bob,
# alice against herself, and a multi-slice pod; then --wait, which waits for
# its turn instead. A round counts only when the two stages overlapped (each
# began before the other ended): one the machine ran one after the other
# tested only a later stage's refusal, and another round is run.
# Asserts on exit codes, records and processes, never on durations.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/gang_lib.sh"
require_tpurun

cfg=$SCRATCH/race.json
cat >"$cfg" <<JSON
{ "default_pod": "race",
  "pods": {
    $(carved_pod race 0 3),
    $(carved_pod ra 4 5),
    $(carved_pod rb 6 7),
    "rab": { "slices": ["ra", "rb"] } } }
JSON
chmod 644 "$cfg"
chmod 755 "$SCRATCH"
FAKEPOD_CONFIG=$cfg
aproj=$(make_project alice raceproj)
bproj=$(make_project bob raceproj)
rm -rf "$(srv "$FAKEPOD_NFS/logs/alice/raceproj")" "$(srv "$FAKEPOD_NFS/logs/bob/raceproj")"

runs_of() {  # U: the user's run dirs of this test, one per line
  ls -d "$(srv "$FAKEPOD_NFS/logs/$1/raceproj")"/*/ 2>/dev/null | sort || true
}
all_runs() { runs_of alice; runs_of bob; }
job_count() {  # U RUN: workers with a pid record
  ls "$(srv "$FAKEPOD_NFS/logs/$1/raceproj/$2")"/worker*.pid 2>/dev/null | wc -l
}

# holds_tpus U FIRST N: U's processes, and nobody else's, hold the TPU of
# each of workers FIRST..FIRST+N-1.
holds_tpus() {
  local u=$1 first=$2 n=$3 i
  for ((i = first; i < first + n; i++)); do
    [[ $(tpu_holders "$i" | awk '{print $2}' | sort -u) == "$u" ]] || return 1
  done
}

# staged K U DIR POD: U's stage in the background, its output in
# $SCRATCH/rK.{out,err} and, once it has ended, "START END" (microseconds of
# the clock just before it started and just after it ended) in $SCRATCH/rK.span.
staged() {
  local k=$1 u=$2 d=$3 pod=$4
  rm -f "$SCRATCH/r$k.span"
  (
    t0=${EPOCHREALTIME/./} rc=0
    tpurun_as "$u" -C "$d" --pod "$pod" stage --detach -- python3 train.py --forever --metrics-addr none \
      >"$SCRATCH/r$k.out" 2>"$SCRATCH/r$k.err" || rc=$?
    echo "$t0 ${EPOCHREALTIME/./}" >"$SCRATCH/r$k.span"
    exit "$rc"
  ) &
}

# race POD N FIRST U1 U2 ROUND: both stage at once; exactly one launches on
# all N workers (FIRST..FIRST+N-1), and its jobs hold every TPU there.
# $overlapped: 1 when the two stages ran at the same time (each started
# before the other ended), 0 when the machine ran them one after the other:
# then the round showed only that a later stage is refused.
race() {
  local pod=$1 n=$2 first=$3 u1=$4 u2=$5 round=$6
  local rc1=0 rc2=0 runs_before
  runs_before=$(all_runs | grep -c . || true)
  local d1 d2
  d1=$([[ $u1 == alice ]] && echo "$aproj" || echo "$bproj")
  d2=$([[ $u2 == alice ]] && echo "$aproj" || echo "$bproj")
  staged 1 "$u1" "$d1" "$pod"
  local p1=$!
  staged 2 "$u2" "$d2" "$pod"
  local p2=$!
  wait "$p1" || rc1=$?
  wait "$p2" || rc2=$?
  local s1 e1 s2 e2
  read -r s1 e1 <"$SCRATCH/r1.span"
  read -r s2 e2 <"$SCRATCH/r2.span"
  overlapped=0
  ((s1 < e2 && s2 < e1)) && overlapped=1
  local winner loser werr lerr
  if ((rc1 == 0 && rc2 != 0)); then
    winner=$u1 loser=$u2 werr=$SCRATCH/r1.err lerr=$SCRATCH/r2.err
  elif ((rc2 == 0 && rc1 != 0)); then
    winner=$u2 loser=$u1 werr=$SCRATCH/r2.err lerr=$SCRATCH/r1.err
  else
    fail "round $round ($pod, $u1 vs $u2): exit codes $rc1 and $rc2, not one launch and one refusal
--- first: $(cat "$SCRATCH/r1.err")
--- second: $(cat "$SCRATCH/r2.err")"
  fi
  local run
  run=$(grep -o 'tpurun logs [^ ]* -f' "$werr" | awk '{print $3}')
  [[ -n $run ]] || fail "round $round: the winner printed no run: $(cat "$werr")"
  # The loser started nothing: the round made one run dir, the winner's.
  assert_eq "$(all_runs | grep -c .)" "$((runs_before + 1))" "round $round: the refused stage made a run"
  local lmsg
  lmsg=$(cat "$lerr")
  assert_contains "$lmsg" "not launching" "round $round: the loser's refusal"
  [[ $lmsg == *"reserved by $winner's run $run"* || $lmsg == *"TPU held by $winner"* ||
     $lmsg == *"your run $run still runs there"* || $lmsg == *"your own earlier job still holds the TPU"* ]] ||
    fail "round $round: the refusal does not name the winner ($winner, run $run): $lmsg"
  # The winner's job runs on every worker, and holds every TPU.
  wait_until "round $round: the winner's jobs on $n workers" 120 eval '[[ $(job_count "$winner" "$run") == "$n" ]]'
  assert_eq "$(job_count "$winner" "$run")" "$n" "round $round: the winner's jobs"
  wait_until "round $round: $winner's jobs to hold the TPU of workers $first-$((first + n - 1))" 120 \
    holds_tpus "$winner" "$first" "$n"
  expect_exit 0 tpurun_as "$winner" --pod "$pod" kill --run "$run" --grace 2s
  wait_verdict "$winner" "$run" stopped
}

# rounds COUNT FIRST_ROUND POD N FIRST U1 U2: COUNT rounds in which the two
# stages overlapped. A round the machine ran one stage after the other is
# checked as any other but not counted; at most 3*COUNT rounds in all.
rounds() {
  local count=$1 round=$2 pod=$3 n=$4 first=$5 u1=$6 u2=$7 raced=0 tries=0
  while ((raced < count)); do
    ((tries < 3 * count)) || fail "$pod, $u1 vs $u2: only $raced of $tries rounds had the two stages at the same time"
    race "$pod" "$n" "$first" "$u1" "$u2" "$round"
    tries=$((tries + 1)) round=$((round + 1))
    if ((overlapped)); then
      raced=$((raced + 1))
    else
      note "round $((round - 1)): the stages ran one after the other; not counted"
    fi
  done
}

alice_against_bob() {
  rounds 14 1 race 4 0 alice bob
}
e2e_case alice_against_bob "14 rounds: alice and bob stage the same 4 workers at the same moment"

alice_against_herself() {
  rounds 4 101 race 4 0 alice alice
}
e2e_case alice_against_herself "4 rounds: alice stages twice at the same moment"

multislice_rounds() {
  rounds 2 201 ra,rb 4 4 alice bob
}
e2e_case multislice_rounds "2 rounds: alice and bob stage the same multi-slice pod (2 slices of 2 workers)"

wait_for_turn() {
  local arun gate client rc
  gate=$(user_dir alice)/wait.gate
  rm -f "$gate"
  # Alice's job holds the workers until the gate is there (her trainer, the
  # TPU, while it runs its steps), which the test makes once bob waits: bob
  # finds her run there whatever the machine's speed (the workers see the
  # scratch dir). It exits with her trainer's code.
  expect_exit 0 tpurun_as alice -C "$aproj" stage --detach -- \
    sh -c "python3 train.py --steps 6 --step-time 0.5 & while [ ! -e '$gate' ]; do sleep 0.1; done; wait \$!"
  arun=$(grep -o 'tpurun logs [^ ]* -f' <<<"$ERR" | awk '{print $3}')
  on_exit "touch '$gate'"
  tpurun_as bob -C "$bproj" stage --detach --wait=1 -- python3 train.py --steps 1 \
    >"$SCRATCH/wait.out" 2>"$SCRATCH/wait.err" &
  client=$!
  wait_until "bob's stage to wait" 120 grep -q "waiting for the workers (--wait" "$SCRATCH/wait.err"
  touch "$gate"
  rc=0
  wait "$client" || rc=$?
  ERR=$(cat "$SCRATCH/wait.err")
  assert_eq "$rc" 0 "bob's stage --wait: $ERR"
  assert_contains "$ERR" "waiting for the workers (--wait"
  # (her watcher writes the verdict a poll after her jobs end, which bob waited for)
  wait_verdict alice "$arun" succeeded stopped failed lost
  assert_eq "$(run_field alice "$arun" 'r["verdict"]')" "succeeded" "alice's run was cut short"
}
e2e_case wait_for_turn "--wait: bob waits for alice's run to end, then launches"

e2e_run
