#!/usr/bin/env bash
# One worker's failure never stops the others: a worker that is down, one that
# accepts TCP but never speaks SSH, a changed host key, refused auth, a worker
# dying mid-command, and Ctrl-C.
source "$(dirname "$0")/lib.sh"
N=$FAKEPOD_WORKERS
mid=$((N - 3))  # worker_dies_mid_command: w5 of 8, w1 of 4
ok_count() { grep -c "\] ok$" <<<"$OUT" || true; }

# know_every_host: alice knows every host key (accept-new records them).
know_every_host() {
  expect_exit 0 tpurun_as alice exec -- true
}

down_worker() {
  know_every_host
  stop_worker 2
  expect_exit 255 tpurun_as alice exec --raw -- echo ok
  assert_eq "$(ok_count)" "$((N - 1))"
  assert_contains "$ERR" "w2 $(worker_ip 2): cannot connect to $(worker_ip 2):22"
  assert_contains "$ERR" "1 of $N workers failed"
}
e2e_case down_worker "a worker that is down: exit 255, named in the summary; the rest ran"

blackholed_worker() {
  local cfg
  know_every_host
  blackhole_worker 2
  cfg=$(scratch_dir alice)/short-timeout.json
  sed 's/"connect_timeout_s": *[0-9]*/"connect_timeout_s": 2/' "$FAKEPOD_CONFIG" >"$cfg"
  chmod 644 "$cfg"
  expect_exit 255 as_user alice "$TPURUN" --config "$cfg" exec --raw -- echo ok
  assert_eq "$(ok_count)" "$((N - 1))"
  assert_contains "$ERR" "w2 $(worker_ip 2): connect timed out after 2s"
  # Ctrl-C while doctor waits on that worker: 130 and no report (issue 39
  # finding 16: an interrupted doctor read as "doctor found errors").
  local doctor_pid rc=0
  # (libssh connects blocking: the Ctrl-C is seen when the connect times out.)
  sed 's/"connect_timeout_s": *[0-9]*/"connect_timeout_s": 20/' "$FAKEPOD_CONFIG" >"$cfg"
  as_user alice "$TPURUN" --config "$cfg" doctor >"$SCRATCH/doctor.out" 2>"$SCRATCH/doctor.err" &
  doctor_pid=$!
  on_exit "kill $doctor_pid 2>/dev/null"
  wait_until "doctor to connect to the blackholed w2" 60 doctor_dials_w2
  kill -INT "$(client_pid "$doctor_pid")"
  wait "$doctor_pid" || rc=$?
  assert_eq "$rc" 130 "doctor's exit on Ctrl-C ($(cat "$SCRATCH/doctor.err"))"
  assert_not_contains "$(cat "$SCRATCH/doctor.out")" "error" "a report after Ctrl-C"
  fakepod start-worker 2
}
doctor_dials_w2() {  # a TCP connection of tpurun doctor's to w2's sshd (the blackhole accepted it)
  ss -tnpH state established dst "$(worker_ip 2):22" | grep -q '"tpurun"'
}
e2e_case blackholed_worker "a worker that accepts TCP but never speaks SSH: the connect timeout fires; Ctrl-C there ends doctor with 130"

changed_host_key() {
  local line
  know_every_host
  # The TPU VM was recreated: refused, naming file:line.
  rekey_worker 3
  expect_exit 255 tpurun_as alice exec --raw -- echo ok
  assert_eq "$(ok_count)" "$((N - 1))"
  line=$(grep -n "^$(worker_ip 3) " /home/alice/.ssh/known_hosts | head -1 | cut -d: -f1)
  [ -n "$line" ] || fail "no known_hosts line for worker 3"
  assert_contains "$ERR" "w3 $(worker_ip 3): host key changed (~/.ssh/known_hosts:$line)"
  assert_contains "$ERR" "ssh-keygen -R $(worker_ip 3)"
  # Following the advice fixes it.
  as_user alice ssh-keygen -R "$(worker_ip 3)" -f /home/alice/.ssh/known_hosts >/dev/null 2>&1
  expect_exit 0 tpurun_as alice exec --raw -- echo ok
  assert_eq "$(ok_count)" "$N"
}
e2e_case changed_host_key "a changed host key is refused, naming file:line; following the advice fixes it"

refused_auth() {
  local cfg
  # alice's key is not in bob's authorized_keys.
  cfg=$(scratch_dir alice)/as-bob.json
  /usr/bin/python3 - "$FAKEPOD_CONFIG" "$cfg" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["pods"]["sim"]["ssh"]["user"] = "bob"
json.dump(c, open(sys.argv[2], "w"))
PY
  chmod 644 "$cfg"
  expect_exit 255 as_user alice "$TPURUN" --config "$cfg" exec --worker 0-1 -- echo ok
  assert_contains "$ERR" "w0 $(worker_ip 0): authentication as 'bob' refused"
  assert_contains "$ERR" "w1 $(worker_ip 1): authentication as 'bob' refused"
}
e2e_case refused_auth "refused auth (alice's key as bob) is reported per worker"

worker_dies_mid_command() {
  local client rc d gate
  d=$(scratch_dir alice)
  gate=$d/mid.gate
  rm -f "$gate"
  # The command runs until the gate is there, which the test makes after w$mid
  # is down: w$mid stops mid-command whatever the machine's speed (the workers
  # see the scratch dir).
  as_user alice "$TPURUN" --config "$FAKEPOD_CONFIG" exec --raw -- \
    bash -c "echo started; while [ ! -e '$gate' ]; do sleep 0.1; done; echo ok" >"$d/mid.out" 2>"$d/mid.err" &
  client=$!
  on_exit "touch '$gate'"
  wait_until "the command to start on every worker" 120 eval '[[ $(grep -c started "$d/mid.out") == "$N" ]]'
  stop_worker "$mid"
  touch "$gate"
  rc=0
  wait "$client" || rc=$?
  OUT=$(cat "$d/mid.out")
  ERR=$(cat "$d/mid.err")
  assert_eq "$rc" 255
  assert_eq "$(ok_count)" "$((N - 1))"
  assert_contains "$ERR" "w$mid $(worker_ip "$mid"):"
  fakepod start-worker "$mid"
}
e2e_case worker_dies_mid_command "a worker dying mid-command reports a lost connection; the others finish"

ctrl_c() {
  local marker="tpurun-ctrlc-$$" client rc d
  d=$(scratch_dir alice)
  # (anchored: the argv[0] of the remote command, not fakepod's own command line)
  runs_marker() { fakepod exec "$1" -- pgrep -f "^$marker" >/dev/null 2>&1; }
  every_worker_runs_marker() {
    local i
    for ((i = 0; i < N; i++)); do runs_marker "$i" || return 1; done
  }
  no_worker_runs_marker() {
    local i
    for ((i = 0; i < N; i++)); do ! runs_marker "$i" || return 1; done
  }
  as_user alice "$TPURUN" --config "$FAKEPOD_CONFIG" exec -- bash -c "exec -a $marker sleep 60" \
    >"$d/int.out" 2>"$d/int.err" &
  client=$!
  # Every worker runs it before the interrupt: none starts it after.
  wait_until "the command to run on every worker" 120 every_worker_runs_marker
  kill -INT "$(client_pid "$client")"
  rc=0
  wait "$client" || rc=$?
  ERR=$(cat "$d/int.err")
  assert_eq "$rc" 130
  assert_contains "$ERR" "interrupted"
  wait_until "the interrupted command to end on every worker" 120 no_worker_runs_marker
}
e2e_case ctrl_c "Ctrl-C: the channels are closed, the remote commands stopped, the interrupted workers reported"

e2e_run
