#!/usr/bin/env bash
# tpurun top against the simulator: the fake trainer serves libtpu's metrics
# service on its worker's localhost:8431 and top reads it through each
# worker's SSH session. An idle worker says "no TPU workload"; a trainer's
# figures follow its phases (compiling at 0%, training at its duty cycle, a
# stall at 0%); the holder from the status scan sits beside the figures;
# --json; --watch piped and on a pty.
#
# Each simulated worker has its own loopback (its own network namespace), as
# a VM does. With FAKEPOD_NETNS=0 they share the host's, and one trainer's
# service would answer every worker's "localhost": the parts with several
# serving workers then skip.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/board_lib.sh"
require_tpurun
/usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null || skip "python3-grpcio/python3-protobuf missing"

cfg=$SCRATCH/top.json
cat >"$cfg" <<JSON
{ "pods": {
    $(carved_pod one 0 0),
    $(carved_pod four 0 3) } }
JSON
chmod 644 "$cfg"
chmod 755 "$SCRATCH"
w=$SCRATCH/w
install -d -m 755 -o alice "$w"

# own_loopback: true when a port listened on in worker 0's 127.0.0.1 cannot
# be reached from worker 1's. (The listener ends at its first connection, the
# one from worker 0 at the end, or after 60 s.)
own_loopback() {
  wexec 0 -- /usr/bin/python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 18499)); s.listen(1); s.settimeout(60)
try:
    s.accept()
except OSError:
    pass' &
  local listener=$! rc=0
  wait_until "the test listener on w0" 120 wexec 0 -- sh -c 'cat /proc/net/tcp /proc/net/tcp6 | grep -q ":4843 [0-9A-F:]* 0A "'
  wexec 1 -- bash -c 'exec 3<>/dev/tcp/127.0.0.1/18499' 2>/dev/null && rc=1
  wexec 0 -- bash -c 'exec 3<>/dev/tcp/127.0.0.1/18499' 2>/dev/null || true
  wait "$listener" 2>/dev/null || true
  return "$rc"
}

# top_json U POD: one `top --json` look, saved to $w/top.json (also printed).
top_json() {
  as_user "$1" "$TPURUN" --config "$cfg" --pod "$2" top --json >"$w/top.json" || true
  cat "$w/top.json"
}

# top_holds U POD EXPR: one `top --json` look; EXPR over its document d holds.
top_holds() {
  top_json "$1" "$2" >/dev/null
  /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
    "$w/top.json" "$3" 2>/dev/null
}

# wait_top U POD EXPR: `top --json` until EXPR over its document d holds.
# (On a failure, the last look is in $w/top.json.)
wait_top() {
  wait_until "top to show $3 (last: $w/top.json)" 120 top_holds "$@"
}

# stop_trainer I PID: the trainer PID on worker I ends (SIGTERM), and nothing
# holds that worker's TPU any more: the next case starts from a free TPU.
stop_trainer() {
  local worker=$1
  wexec "$worker" -- kill -TERM "$2"
  wait_until "w$worker's TPU to be free" 120 eval '[[ -z $(tpu_holders "$worker") ]]'
}

bad_input() {
  expect_exit 2 b alice --pod one top --watch 0
  assert_contains "$ERR" "--watch 0: at least 100ms between refreshes"
}
e2e_case bad_input "bad --watch"

idle_pod() {
  # libtpu serves nothing.
  expect_exit 0 b alice --pod one top
  assert_contains "$OUT" "one: duty cycle - · HBM 0.0 of 0.0 GiB · 0 of 1 workers with a TPU workload"
  assert_contains "$OUT" "w0        -          no TPU workload    free"
}
e2e_case idle_pod "nobody runs anything: libtpu serves nothing, no TPU workload"

trainer_phases() {
  local pid
  # Compiling at 0%, then training at 70%, HBM held.
  # It compiles until the test has seen it compiling (a file on worker 0 ends the phase).
  pid=$(start_trainer_on 0 alice --forever --step-time 0.3 --compile-until "/tmp/compiled.$$" --duty-cycle 70)
  on_exit "wexec 0 -- rm -f /tmp/compiled.$$"
  wait_top alice one 'd["workers"][0]["metrics"] == "figures"'
  assert_eq "$(json_file "$w/top.json" '[c["duty_cycle_pct"] for c in d["workers"][0]["chips"]]')" \
    "[0.0, 0.0, 0.0, 0.0]" "compiling"
  wexec 0 -- touch "/tmp/compiled.$$"
  wait_top alice one 'd["summary"]["duty_cycle_min_pct"] == 70.0'
  expect_exit 0 b bob --pod one top
  assert_contains "$OUT" "one: duty cycle mean 70.0%, min 70.0% on w0 ($(worker_ip 0)) · HBM 79.1 of 127.0 GiB · 1 of 1 workers with a TPU workload"
  assert_contains "$OUT" "WORKER CHIP    DUTY  HBM USED/TOTAL     HOLDER"
  assert_contains "$OUT" "w0        0   70.0%  19.7/31.7 GiB      alice $pid python3 train.py --forever"
  assert_contains "$OUT" "          3   70.0%  19.9/31.7 GiB"

  # --json: the figures, the holder and the summary.
  expect_exit 0 b bob --pod one top --json
  /usr/bin/python3 - "$OUT" "$pid" "$(worker_ip 0)" <<'PY' || fail "top --json: $OUT"
import json, sys
d = json.loads(sys.argv[1])
assert d["pod"] == "one" and d["exit_code"] == 0, d
s = d["summary"]
assert (s["workers"], s["with_figures"], s["no_workload"], s["failed"], s["chips"]) == (1, 1, 0, 0, 4), s
assert s["least_busy_worker"] == 0 and s["duty_cycle_mean_pct"] == 70.0, s
assert s["hbm_total_bytes"] == 4 * 34088157184, s
w = d["workers"][0]
assert (w["worker"], w["host"], w["state"], w["metrics"]) == (0, sys.argv[3], "busy-other", "figures"), w
assert [c["device_id"] for c in w["chips"]] == [0, 1, 2, 3], w
assert w["chips"][1]["hbm_used_bytes"] == int(0.62 * 34088157184 + (64 << 20)), w
assert w["holders"][0]["user"] == "alice" and w["holders"][0]["pid"] == int(sys.argv[2]), w
PY
  stop_trainer 0 "$pid"
}
e2e_case trainer_phases "alice's trainer: compiling at 0%, then training at 70%, HBM held; the holder beside the figures; --json"

piped_watch() {
  local pid out bg rc
  # A block per refresh; the trainer's end shows up.
  pid=$(start_trainer_on 0 alice --forever --step-time 0.3 --duty-cycle 70)
  out=$w/watch.out
  as_user alice bash -c 'echo $$ >"$0"; exec "$@"' "$w/pid" "$TPURUN" --config "$cfg" --pod one top --watch 1 \
    >"$out" 2>"$out.err" &
  bg=$!
  on_exit "kill $bg 2>/dev/null; [[ -s '$w/pid' ]] && kill \$(cat '$w/pid') 2>/dev/null"
  wait_for "$w/pid" 't.strip().isdigit()'
  wait_for "$out" 't.count("--- ") >= 1 and "70.0%" in t'
  wexec 0 -- kill -TERM "$pid"
  wait_for "$out" '"no TPU workload" in t.split("--- ")[-1] and "free" in t.split("--- ")[-1]'
  kill -TERM "$(cat "$w/pid")"
  rc=0
  wait "$bg" || rc=$?
  assert_eq "$rc" 130 "exit status after SIGTERM"
  assert_not_contains "$(cat "$out.err")" "error"
}
e2e_case piped_watch "piped --watch: a block per refresh; the trainer's end shows up; SIGTERM ends it"

stalled_trainer() {
  local pid stall_seen_at
  # The TPU held at 0% duty cycle, HBM kept.
  pid=$(start_trainer_on 0 bob --stall --step-time 0.2)
  wait_top alice one 'd["workers"][0]["metrics"] == "figures" and d["workers"][0]["chips"][0]["hbm_used_bytes"] == int(0.62 * 34088157184)'
  # Clock time, not synchronization: a second of what would be several steps,
  # were the trainer stepping.
  stall_seen_at=$(date +%s%3N)
  wait_until "1 s to pass" 120 eval '(($(date +%s%3N) >= stall_seen_at + 1000))'
  expect_exit 0 b alice --pod one top
  assert_contains "$OUT" "duty cycle mean 0.0%, min 0.0% on w0 ($(worker_ip 0))"
  assert_contains "$OUT" "w0        0    0.0%  19.7/31.7 GiB      bob $pid python3 train.py --stall"
  stop_trainer 0 "$pid"
}
e2e_case stalled_trainer "--stall: the TPU held at 0% duty cycle, HBM kept, bob beside it"

pty_watch() {
  local pid tty_out fifo bg tty_text
  # bob's stalled trainer to show.
  pid=$(start_trainer_on 0 bob --stall --step-time 0.2)
  tty_out=$w/tty.out
  fifo=$w/keys
  rm -f "$fifo"
  mkfifo -m 600 "$fifo"
  chown alice "$fifo"
  as_user alice bash -c 'exec script -qefc "$1" /dev/null <"$2"' _ \
    "'$TPURUN' --config '$cfg' --pod one top --watch 1; echo exit=\$?" "$fifo" >"$tty_out" 2>&1 &
  bg=$!
  exec 3>"$fifo"
  wait_for "$tty_out" '"q quits" in t and "0.0%" in t and "bob" in t'
  printf q >&3
  wait_for "$tty_out" '"exit=" in t'
  exec 3>&-
  wait "$bg" || true
  tty_text=$(cat "$tty_out")
  assert_contains "$tty_text" "exit=0"
  assert_contains "$tty_text" $'\e[?1049h' "the alternate screen"
  assert_not_contains "$tty_text" $'\e[2J' "never a whole-screen clear (flicker)"
  stop_trainer 0 "$pid"
}
e2e_case pty_watch "on a pty: redrawn in place (the alternate screen, no whole-screen clear), q quits with 0"

several_workers() {
  local a b
  own_loopback || skip "workers share the host's loopback (FAKEPOD_NETNS=0?): the multi-worker part needs their own"
  # Two users' jobs, and an idle worker beside them.
  a=$(start_trainer_on 0 alice --forever --duty-cycle 80)
  b=$(start_trainer_on 1 bob --forever --duty-cycle 40)
  wait_top carol four 'd["summary"]["chips"] == 8 and d["summary"]["duty_cycle_min_pct"] == 40.0 and d["summary"]["duty_cycle_mean_pct"] == 60.0'
  expect_exit 0 b carol --pod four top
  assert_contains "$OUT" "four: duty cycle mean 60.0%, min 40.0% on w1 ($(worker_ip 1))"
  assert_contains "$OUT" "2 of 4 workers with a TPU workload"
  assert_contains "$OUT" "w0        0   80.0%"
  assert_contains "$OUT" "alice $a python3 train.py --forever"
  assert_contains "$OUT" "w1        0   40.0%"
  assert_contains "$OUT" "bob $b python3 train.py --forever"
  # carol has no passwordless sudo: the scan cannot vouch for "free" (docs/ownership.md).
  assert_contains "$OUT" "w2        -          no TPU workload    partial"
}
e2e_case several_workers "several serving workers: two users' jobs, and an idle worker beside them"

e2e_run
