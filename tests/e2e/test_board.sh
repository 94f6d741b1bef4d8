#!/usr/bin/env bash
# Claims on pods: bob's claim makes alice's stage and exec refuse (naming bob,
# the time left and the note) unless --ignore-claim; release and expiry end
# it; status --all shows every pod's state with its claim; a forged claim file counts for nothing; two users claiming the same pod
# at once get exactly one winner.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/board_lib.sh"
require_tpurun
board_dir=$FAKEPOD_NFS/logs/.board
on_exit "rm -rf '$(srv "$board_dir")'"
rm -rf "$(srv "$board_dir")"  # root, as an admin on the NFS server

# Four pods carved out of the simulated one, all on the shared mount; board-a
# comes last in the file, so --pod auto has to skip the others to reach it.
cfg=$SCRATCH/board.json
cat >"$cfg" <<JSON
{ "default_pod": "board-a",
  "pods": {
    $(carved_pod board-b 2 3),
    $(carved_pod board-c 4 5),
    $(carved_pod board-d 6 7),
    $(carved_pod board-a 0 1) } }
JSON
chmod 644 "$cfg"
chmod 755 "$SCRATCH"
proj=$(make_project alice proj)

# busy_board: board-a free, board-b free but claimed by bob, board-c busy
# with bob's job, board-d unreachable (one worker down); undone at the end of
# the case. Sets bob_pid (bob's trainer on w4; the caller's local).
busy_board() {
  on_exit "b bob release board-b 2>/dev/null"
  on_exit reset_tpus
  expect_exit 0 b bob claim board-b --for 1h --note "lr sweep"
  bob_pid=$(start_trainer_on 4 bob --forever)
  start_trainer_on 5 bob --forever >/dev/null
  stop_worker 7
}

claim_bad_input() {
  expect_exit 2 b bob claim board-bb --for 1h
  assert_contains "$ERR" "unknown pod 'board-bb'"
  assert_contains "$ERR" "did you mean 'board-b'"
  expect_exit 2 b bob claim board-b --for 0
  assert_contains "$ERR" "--for 0: must be at least 1s"
  expect_exit 2 b bob claim board-b --for 3x
  assert_contains "$ERR" "unknown unit 'x'"
  expect_exit 2 b bob claim board-b --for -1h
  assert_contains "$ERR" "'-1h' is not a duration"
  [[ ! -e $(srv "$board_dir") ]] || fail "a refused claim created $board_dir"
}
e2e_case claim_bad_input "bad input: clear errors, nothing created"

claim_refuses_others() {
  # Released even if a check below fails, so that later cases find board-b free.
  on_exit "b bob release board-b 2>/dev/null"
  # bob claims board-b: the board is shared like /tmp, his file is his alone.
  # (The first claim on board-b of this test: its file is board-b.1.json.)
  expect_exit 0 b bob claim board-b --for 2h --note "lr sweep"
  assert_contains "$OUT" "claimed pod 'board-b' for bob"
  assert_eq "$(stat -c %a "$(srv "$board_dir")")" "1777"
  assert_eq "$(stat -c '%U %a' "$(srv "$board_dir")/board-b.1.json")" "bob 644"
  expect_exit 0 b alice claims
  assert_contains "$OUT" "board-b"
  assert_contains "$OUT" "bob, 1h59m left"
  assert_contains "$OUT" "lr sweep"
  expect_exit 0 b alice claims --json
  /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert [(c["pod"],c["user"],c["note"]) for c in d]==[("board-b","bob","lr sweep")], d' "$OUT" \
    || fail "claims --json: $OUT"
  expect_exit 1 b alice claim board-b --for 1h
  assert_contains "$ERR" "already claimed by bob"

  # alice's stage and exec on board-b are refused, naming bob, time left and note.
  expect_exit 2 b alice -C "$proj" --pod board-b stage -- python3 train.py --steps 1
  assert_contains "$ERR" "pod 'board-b' is claimed by bob, 1h59m left"
  assert_contains "$ERR" "lr sweep"
  assert_contains "$ERR" "--ignore-claim"
  expect_exit 2 b alice --pod board-b exec -- true
  assert_contains "$ERR" "claimed by bob"
  # Other pods are untouched, and bob may use his own.
  expect_exit 0 b alice --pod board-a exec -- true
  expect_exit 0 b bob --pod board-b exec -- true
  # --ignore-claim goes ahead and says so.
  expect_exit 0 b alice -C "$proj" --pod board-b stage --ignore-claim -- python3 train.py --steps 1 --step-time 0.1
  assert_contains "$ERR" "--ignore-claim: going ahead on pod 'board-b' claimed by bob"
  assert_contains "$OUT" "step 1"
  expect_exit 0 b alice --pod board-b exec --ignore-claim -- true

  # A claim file that carol writes in bob's name counts for nothing, with a warning naming it.
  as_user carol sh -c "sed 's/board-b/board-c/; s/\"seq\": 1/\"seq\": 7/' '$board_dir/board-b.1.json' > '$board_dir/board-c.7.json'"
  assert_eq "$(stat -c %U "$(srv "$board_dir")/board-c.7.json")" "carol"
  expect_exit 0 b alice --pod board-c exec -- true
  assert_contains "$ERR" "ignoring claim file $board_dir/board-c.7.json: it names user 'bob'"
  expect_exit 0 b alice claims
  assert_not_contains "$OUT" "board-c"

  # Release: only bob can, and then alice is free to use board-b.
  expect_exit 1 b alice release board-b
  assert_contains "$ERR" "you hold no claim on pod 'board-b' (it is claimed by bob"
  expect_exit 0 b bob release board-b
  expect_exit 0 b alice --pod board-b exec -- true
  assert_not_contains "$ERR" "claimed"
}
e2e_case claim_refuses_others "bob's claim on board-b: listed; alice's stage and exec refused unless --ignore-claim; a forged copy counts for nothing; only bob releases it"

claim_expires() {
  on_exit "b bob release board-b 2>/dev/null; b alice release board-b 2>/dev/null"
  # 20 s: long enough that the refusal below comes first on a busy machine.
  expect_exit 0 b bob claim board-b --for 20s --note short
  expect_exit 2 b alice --pod board-b exec --dry-run -- true
  assert_contains "$ERR" "claimed by bob"
  board_b_listed() { [[ $(b alice claims --json) == *'"board-b"'* ]]; }
  wait_until "bob's 20 s claim on board-b to expire" 120 eval '! board_b_listed'
  expect_exit 0 b alice claims --json
  assert_not_contains "$OUT" "board-b"
  expect_exit 0 b alice --pod board-b exec -- true
  # ... and alice can take it now.
  expect_exit 0 b alice claim board-b --for 1m
  expect_exit 0 b alice release board-b
}
e2e_case claim_expires "a claim for a few seconds ends by itself, and then another user can take the pod"

claim_race() {
  local round pa pb ra rb winner loser_err
  on_exit "b alice release board-a 2>/dev/null; b bob release board-a 2>/dev/null"
  for round in 1 2 3 4 5; do
    b alice claim board-a --for 1h >"$SCRATCH/a.out" 2>"$SCRATCH/a.err" & pa=$!
    b bob claim board-a --for 1h >"$SCRATCH/b.out" 2>"$SCRATCH/b.err" & pb=$!
    ra=0 rb=0
    wait $pa || ra=$?
    wait $pb || rb=$?
    if [[ $ra == 0 && $rb == 1 ]]; then
      winner=alice loser_err=$(cat "$SCRATCH/b.err")
    elif [[ $ra == 1 && $rb == 0 ]]; then
      winner=bob loser_err=$(cat "$SCRATCH/a.err")
    else
      fail "round $round: alice exit $ra, bob exit $rb: $(cat "$SCRATCH"/[ab].err)"
    fi
    assert_contains "$loser_err" "already claimed by $winner"
    expect_exit 0 b alice claims --json
    /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert [c["user"] for c in d if c["pod"]=="board-a"]==[sys.argv[2]], d' \
      "$OUT" "$winner" || fail "round $round: claims: $OUT"
    expect_exit 0 b "$winner" release board-a
  done
}
e2e_case claim_race "two users claiming the same pod at once: exactly one wins, the other is told who"

# The board's scans and --pod auto read the workers over ssh, not the shared
# mount: the cases below run on the plain one.
board_status_all() {
  nfs_mode && elsewhere "the board's scans read the workers over ssh, not the shared mount: they run on the plain one"
  local bob_pid
  busy_board
  expect_exit 0 b alice status --all --json
  /usr/bin/python3 - "$OUT" <<'PY' || fail "status --all --json: $OUT"
import json, sys
pods = {p["pod"]: p for p in json.loads(sys.argv[1])["pods"]}
assert {n: p["state"] for n, p in pods.items()} == \
    {"board-a": "free", "board-b": "free", "board-c": "busy", "board-d": "unreachable"}, pods
assert pods["board-b"]["claim"]["user"] == "bob" and pods["board-b"]["claim"]["note"] == "lr sweep"
assert pods["board-a"]["claim"] is None
assert [h["user"] for h in pods["board-c"]["holders"]] == ["bob"], pods["board-c"]["holders"]
assert pods["board-c"]["holders"][0]["workers"] == [0, 1]
assert [w["state"] for w in pods["board-d"]["workers"]] == ["free", "unreachable"]
assert [w["worker"] for w in pods["board-c"]["workers"]] == [0, 1]
PY
  expect_exit 0 b alice status --all
  assert_contains "$OUT" "board-c  busy"
  assert_contains "$OUT" "bob: python3 train.py"
  assert_contains "$OUT" "board-d  unreachable"
  assert_contains "$OUT" "w1 unreachable"
  assert_contains "$OUT" "claimed by bob"
  assert_eq "$(grep -c '^board-' <<<"$OUT")" "4" "one line per pod"
  fakepod exec 4 -- kill -0 "$bob_pid" || fail "status signalled bob's trainer"
}
e2e_case board_status_all "the board: a free pod, one claimed by bob, one busy with bob's job, one with a worker down"

pod_auto() {
  nfs_mode && elsewhere "--pod auto reads the workers over ssh, not the shared mount: it runs on the plain one"
  local bob_pid waiter
  busy_board
  # --pod auto skips bob's claim, bob's job and the dead worker, in config order, and says why.
  expect_exit 0 b alice -C "$proj" --pod auto stage --json -- python3 train.py --steps 1 --step-time 0.1
  assert_contains "$ERR" "--pod auto: picked 'board-a'"
  assert_contains "$ERR" "board-b: claimed by bob"
  assert_contains "$ERR" "board-c: busy by bob (python3 train.py"
  assert_contains "$ERR" "board-d: unreachable w1 not answering"
  /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["pod"]=="board-a", d' "$OUT" || fail "stage --json: $OUT"
  # A glob limits the choice; nothing free is an error that lists each pod's state.
  expect_exit 1 b alice -C "$proj" --pod 'board-[bcd]' stage -- python3 train.py --steps 1
  assert_contains "$ERR" "--pod board-[bcd]: no pod is free"
  assert_contains "$ERR" "board-b: claimed by bob"
  assert_contains "$ERR" "board-d: unreachable"
  assert_not_contains "$ERR" "board-a"
  expect_exit 2 b alice -C "$proj" --pod 'nothing*' stage -- python3 train.py --steps 1
  assert_contains "$ERR" "no pod in $cfg matches"
  # exec --pod auto: the same choice, and the command runs there only.
  expect_exit 0 b alice --pod auto exec --json -- hostname
  assert_contains "$ERR" "--pod auto: picked 'board-a'"
  assert_contains "$ERR" "board-b: claimed by bob"
  assert_contains "$ERR" "board-c: busy by bob"
  /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["pod"]=="board-a" and [w["stdout"].strip() for w in d["workers"]]==["t1v-n-fakepod-w-0","t1v-n-fakepod-w-1"], d' "$OUT" \
    || fail "exec --pod auto --json: $OUT"
  expect_exit 1 b alice --pod 'board-[cd]' exec -- true
  assert_contains "$ERR" "--pod board-[cd]: no pod is free"
  assert_contains "$ERR" "board-c: busy by bob"
  # --ignore-claim lets the pick take bob's claimed (and free) board-b, which comes first.
  expect_exit 0 b alice --pod auto exec --ignore-claim -- true
  assert_contains "$ERR" "--pod auto: picked 'board-b' (free on every worker)"
  fakepod exec 4 -- kill -0 "$bob_pid" || fail "--pod auto signalled bob's trainer"
  # --wait: nothing among board-[cd] is free until bob's trainers on board-c end;
  # alice's exec says what it waits for, then runs there.
  b alice --pod 'board-[cd]' exec --wait 1 -- hostname >"$SCRATCH/wait.out" 2>"$SCRATCH/wait.err" &
  waiter=$!
  on_exit "kill $(client_pid "$waiter") 2>/dev/null"  # should a check below fail
  wait_for "$SCRATCH/wait.err" '"waiting for one" in t'
  assert_contains "$(cat "$SCRATCH/wait.err")" "board-c: busy by bob"
  kill -0 "$waiter" || fail "exec --wait gave up: $(cat "$SCRATCH/wait.err")"
  expect_exit 0 b bob --pod board-c kill --grace 2s  # bob's trainers on both of board-c's workers
  wait "$waiter" || fail "exec --wait: $(cat "$SCRATCH/wait.err")"
  assert_contains "$(cat "$SCRATCH/wait.err")" "--pod board-[cd]: picked 'board-c'"
  assert_contains "$(cat "$SCRATCH/wait.out")" "t1v-n-fakepod-w-4"
}
e2e_case pod_auto "--pod auto and globs skip claimed, busy and unreachable pods in config order and say why; --wait waits for one to be free"

pod_wait_bad_input() {
  nfs_mode && elsewhere "with the --pod auto cases: they run on the plain shared mount"
  expect_exit 2 b alice exec --wait -- true
  assert_contains "$ERR" "--wait waits for a free pod among several"
  expect_exit 2 b alice --pod auto stage --wait 0 -- true
  assert_contains "$ERR" "--wait 0:"
}
e2e_case pod_wait_bad_input "--wait without a choice of pods, or of 0: clear errors"

e2e_run
