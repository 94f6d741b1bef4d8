#!/usr/bin/env bash
# status --all --watch: piped, a block per refresh after a timestamp line, a
# trainer started between refreshes shows up, and the SSH connections are the
# same ones from refresh to refresh; --json gives one document per line; on a
# terminal (a pty via script) q quits with 0, Ctrl-C with 130, and the
# terminal's modes come back.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/board_lib.sh"
require_tpurun

cfg=$SCRATCH/board.json
cat >"$cfg" <<JSON
{ "pods": {
    $(carved_pod board-a 0 1),
    $(carved_pod board-b 2 3) } }
JSON
chmod 644 "$cfg"
chmod 755 "$SCRATCH"
w=$SCRATCH/w
install -d -m 755 -o alice "$w"

# bob_on_board_b: bob's trainers on w2 and w3 (board-b), for the cases that
# show board-b busy. The first case starts them (between two refreshes) and
# the next ones find them (a failed case's scrub kills them: the next case
# starts them again).
bob_on_board_b() {
  local i pid
  for i in 2 3; do
    pid=$(cat "$SCRATCH/bob.w$i" 2>/dev/null || true)
    # shellcheck disable=SC2016
    [[ -n $pid ]] && wexec "$i" -- sh -c '[ -e /proc/$1 ] && ! grep -q "^State:.*Z" /proc/$1/status' _ "$pid" 2>/dev/null &&
      continue
    start_trainer_on "$i" bob --forever >"$SCRATCH/bob.w$i"
  done
}

# watch_bg OUT ARGS...: alice's tpurun in the background; its pid in $watch_pid
# (and its subshell's in $bg: the caller's locals).
watch_bg() {
  local out=$1
  shift
  rm -f "$w/pid"
  as_user alice bash -c 'echo $$ >"$0"; exec "$@"' "$w/pid" "$TPURUN" --config "$cfg" "$@" >"$out" 2>"$out.err" &
  bg=$!
  on_exit "kill $bg 2>/dev/null; [[ -s '$w/pid' ]] && kill \$(cat '$w/pid') 2>/dev/null"
  wait_for "$w/pid" 't.strip().isdigit()'
  watch_pid=$(cat "$w/pid")
}
sockets() { find "/proc/$watch_pid/fd" -lname 'socket:*' -printf '%l\n' | sort; }
blocks() { grep -c '^--- ' "$1" || true; }

watch_bad_input() {
  expect_exit 2 b alice status --watch
  assert_contains "$ERR" "--watch refreshes the board of every pod: use it with --all"
  expect_exit 2 b alice status --all --watch 0
  assert_contains "$ERR" "--watch 0: at least 100ms between refreshes"
  expect_exit 2 b alice status --all --watch 3x
  assert_contains "$ERR" "--watch 3x: "
  assert_contains "$ERR" "e.g. --watch 5"
}
e2e_case watch_bad_input "bad input: --watch without --all, of 0, or not a duration"

watch_piped() {
  local out=$SCRATCH/watch.out bg watch_pid first_sockets rc
  watch_bg "$out" status --all --watch 1
  wait_for "$out" 't.count("\n--- ") >= 1 and t.rstrip().endswith(("free", "busy"))'
  first_sockets=$(sockets)
  assert_eq "$(wc -l <<<"$first_sockets")" "4" "one SSH connection per worker: $first_sockets"
  bob_on_board_b
  wait_for "$out" '"board-b  busy" in t.split("\n--- ")[-1] and t.count("\n--- ") >= 3'
  assert_eq "$(sockets)" "$first_sockets" "the same connections, refresh after refresh"
  kill -TERM "$watch_pid"
  rc=0
  wait "$bg" || rc=$?
  assert_eq "$rc" "130" "exit status after SIGTERM"
  /usr/bin/python3 - "$out" <<'PY' || fail "watch blocks: $(cat "$out")"
import re, sys
text = open(sys.argv[1]).read()
blocks = re.split(r"^--- (\S+) ---\n", text, flags=re.M)
assert blocks[0] == "", blocks[0]
stamps, bodies = blocks[1::2], blocks[2::2]
assert len(bodies) >= 3, bodies
for stamp in stamps:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", stamp), stamp
for body in bodies[:-1]:  # the last one may have been cut short
    lines = sorted(body.splitlines())
    assert [l.split()[0] for l in lines] == ["board-a", "board-b"], body
    assert lines[0].split()[1] == "free", body
assert bodies[0].count("board-b  free") == 1, bodies[0]
busy = [b for b in bodies if "board-b  busy" in b]
assert busy and "bob: python3 train.py" in busy[0] and "on w[0-1]" in busy[0], busy
PY
  assert_not_contains "$(cat "$out.err")" "warning"
}
e2e_case watch_piped "piped: a block per refresh after a timestamp line; bob's trainers, started after the first block, show up; the same SSH connections throughout"

watch_json() {
  local out=$SCRATCH/watch.json bg watch_pid
  bob_on_board_b
  watch_bg "$out" status --all --watch 1 --json
  wait_for "$out" 't.count("\n") >= 2'
  kill -TERM "$watch_pid"
  wait "$bg" || true
  /usr/bin/python3 - "$out" <<'PY' || fail "watch --json: $(cat "$out")"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
docs = [json.loads(l) for l in lines[:2]]
for d in docs:
    assert {p["pod"]: p["state"] for p in d["pods"]} == {"board-a": "free", "board-b": "busy"}, d
    assert d["time"].endswith("Z"), d
assert docs[0]["pods"][1]["holders"][0]["user"] == "bob", docs[0]
PY
}
e2e_case watch_json "--json: one document per line, with its time"

# On a terminal: q quits with 0, Ctrl-C with 130; the terminal's modes are
# restored (stty after tpurun shows icanon and echo on again).
tty_run() {  # KEY: run the board in a pty, press KEY once a frame is drawn; its output in TTY_OUT
  local key=$1 out=$SCRATCH/tty.out fifo=$w/keys bg
  rm -f "$fifo"
  mkfifo -m 600 "$fifo"
  chown alice "$fifo"
  as_user alice bash -c 'exec script -qefc "$1" /dev/null <"$2"' _ \
    "'$TPURUN' --config '$cfg' status --all --watch 1; echo exit=\$?; stty -a" "$fifo" >"$out" 2>&1 &
  bg=$!
  exec 3>"$fifo"
  wait_for "$out" '"board-a  free" in t and "board-b  busy" in t and "q quits" in t'
  printf '%b' "$key" >&3
  wait_for "$out" '"exit=" in t and "icanon" in t'
  exec 3>&-
  wait "$bg" || true
  TTY_OUT=$(cat "$out")
}

tty_quit() {
  local TTY_OUT
  bob_on_board_b
  tty_run q
  assert_contains "$TTY_OUT" "exit=0"
  assert_contains "$TTY_OUT" $'\e[?1049h' "the alternate screen"
  assert_contains "$TTY_OUT" $'\e[?25l' "the cursor hidden"
  assert_contains "$TTY_OUT" $'\e[?25h\e[?1049l' "the cursor and the main screen back"
  assert_contains "$TTY_OUT" $'\e[?25h' "the cursor back"
  assert_not_contains "$TTY_OUT" $'\e[2J' "never a whole-screen clear (flicker)"
  grep -Eq '(^|[ ;])icanon( |;|$)' <<<"$TTY_OUT" || fail "icanon not restored: $TTY_OUT"
  grep -Eq '(^|[ ;])echo( |;|$)' <<<"$TTY_OUT" || fail "echo not restored: $TTY_OUT"
}
e2e_case tty_quit "on a terminal, q quits with 0: the alternate screen and the cursor come and go, icanon and echo come back"

tty_ctrl_c() {
  local TTY_OUT
  bob_on_board_b
  tty_run '\003'
  assert_contains "$TTY_OUT" "exit=130"
  assert_contains "$TTY_OUT" $'\e[?25h' "the cursor back after Ctrl-C"
  grep -Eq '(^|[ ;])icanon( |;|$)' <<<"$TTY_OUT" || fail "icanon not restored after Ctrl-C: $TTY_OUT"
}
e2e_case tty_ctrl_c "on a terminal, Ctrl-C quits with 130, and the cursor and icanon come back"

e2e_run
