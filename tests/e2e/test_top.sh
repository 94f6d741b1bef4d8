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
# be reached from worker 1's.
own_loopback() {
  wexec 0 -- /usr/bin/python3 -c '
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 18499)); s.listen(1); time.sleep(3)' &
  local listener=$! rc=0
  sleep 0.5
  wexec 1 -- bash -c 'exec 3<>/dev/tcp/127.0.0.1/18499' 2>/dev/null && rc=1
  kill "$listener" 2>/dev/null
  wait "$listener" 2>/dev/null || true
  return "$rc"
}

# top_json U POD: one `top --json` look, saved to $w/top.json (also printed).
top_json() {
  as_user "$1" "$TPURUN" --config "$cfg" --pod "$2" top --json >"$w/top.json" || true
  cat "$w/top.json"
}

# wait_top U POD EXPR: `top --json` until EXPR over its document d holds.
wait_top() {
  local _
  for _ in $(seq 100); do
    top_json "$1" "$2" >/dev/null
    /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
      "$w/top.json" "$3" 2>/dev/null && return 0
    sleep 0.2
  done
  fail "top never showed $3: $(cat "$w/top.json")"
}

# --- bad input
expect_exit 2 b alice --pod one top --watch 0
assert_contains "$ERR" "--watch 0: at least 100ms between refreshes"

# --- nobody runs anything: libtpu serves nothing
expect_exit 0 b alice --pod one top
assert_contains "$OUT" "one: duty cycle - · HBM 0.0 of 0.0 GiB · 0 of 1 workers with a TPU workload"
assert_contains "$OUT" "w0        -          no TPU workload    free"

# --- alice's trainer: compiling at 0%, then training at 70%, HBM held
pid=$(start_trainer_on 0 alice --forever --step-time 0.3 --compile-time 2 --duty-cycle 70)
wait_top alice one 'd["workers"][0]["metrics"] == "figures"'
assert_eq "$(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print([c["duty_cycle_pct"] for c in d["workers"][0]["chips"]])' "$w/top.json")" \
  "[0.0, 0.0, 0.0, 0.0]" "compiling"
wait_top alice one 'd["summary"]["duty_cycle_min_pct"] == 70.0'
expect_exit 0 b bob --pod one top
assert_contains "$OUT" "one: duty cycle mean 70.0%, min 70.0% on w0 (127.0.1.1) · HBM 79.1 of 127.0 GiB · 1 of 1 workers with a TPU workload"
assert_contains "$OUT" "WORKER CHIP    DUTY  HBM USED/TOTAL     HOLDER"
assert_contains "$OUT" "w0        0   70.0%  19.7/31.7 GiB      alice $pid python3 train.py --forever"
assert_contains "$OUT" "          3   70.0%  19.9/31.7 GiB"

# --json: the figures, the holder and the summary.
expect_exit 0 b bob --pod one top --json
/usr/bin/python3 - "$OUT" "$pid" <<'PY' || fail "top --json: $OUT"
import json, sys
d = json.loads(sys.argv[1])
assert d["pod"] == "one" and d["exit_code"] == 0, d
s = d["summary"]
assert (s["workers"], s["with_figures"], s["no_workload"], s["failed"], s["chips"]) == (1, 1, 0, 0, 4), s
assert s["least_busy_worker"] == 0 and s["duty_cycle_mean_pct"] == 70.0, s
assert s["hbm_total_bytes"] == 4 * 34088157184, s
w = d["workers"][0]
assert (w["worker"], w["host"], w["state"], w["metrics"]) == (0, "127.0.1.1", "busy-other", "figures"), w
assert [c["device_id"] for c in w["chips"]] == [0, 1, 2, 3], w
assert w["chips"][1]["hbm_used_bytes"] == int(0.62 * 34088157184 + (64 << 20)), w
assert w["holders"][0]["user"] == "alice" and w["holders"][0]["pid"] == int(sys.argv[2]), w
PY

# --- piped --watch: a block per refresh; the trainer's end shows up
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

# --- --stall: the TPU held at 0% duty cycle, HBM kept
pid=$(start_trainer_on 0 bob --stall --step-time 0.2)
wait_top alice one 'd["workers"][0]["metrics"] == "figures" and d["workers"][0]["chips"][0]["hbm_used_bytes"] == int(0.62 * 34088157184)'
sleep 1
expect_exit 0 b alice --pod one top
assert_contains "$OUT" "duty cycle mean 0.0%, min 0.0% on w0 (127.0.1.1)"
assert_contains "$OUT" "w0        0    0.0%  19.7/31.7 GiB      bob $pid python3 train.py --stall"

# --- on a pty: redrawn in place, q quits with 0
tty_out=$w/tty.out
fifo=$w/keys
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
wexec 0 -- kill -TERM "$pid"

# --- several serving workers: two users' jobs, and an idle worker beside them
if ! own_loopback; then
  note "workers share the host's loopback (FAKEPOD_NETNS=0?): the multi-worker part needs their own"
  pass "single-worker parts"
  exit 0
fi
a=$(start_trainer_on 0 alice --forever --duty-cycle 80)
b=$(start_trainer_on 1 bob --forever --duty-cycle 40)
wait_top carol four 'd["summary"]["chips"] == 8 and d["summary"]["duty_cycle_min_pct"] == 40.0 and d["summary"]["duty_cycle_mean_pct"] == 60.0'
expect_exit 0 b carol --pod four top
assert_contains "$OUT" "four: duty cycle mean 60.0%, min 40.0% on w1 (127.0.1.2)"
assert_contains "$OUT" "2 of 4 workers with a TPU workload"
assert_contains "$OUT" "w0        0   80.0%"
assert_contains "$OUT" "alice $a python3 train.py --forever"
assert_contains "$OUT" "w1        0   40.0%"
assert_contains "$OUT" "bob $b python3 train.py --forever"
# carol has no passwordless sudo: the scan cannot vouch for "free" (docs/ownership.md).
assert_contains "$OUT" "w2        -          no TPU workload    partial"
pass
