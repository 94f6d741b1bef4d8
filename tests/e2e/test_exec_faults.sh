#!/usr/bin/env bash
# One worker's failure never stops the others: a worker that is down, one that
# accepts TCP but never speaks SSH, a changed host key, refused auth, a worker
# dying mid-command, and Ctrl-C.
source "$(dirname "$0")/lib.sh"
N=$FAKEPOD_WORKERS
ok_count() { grep -c "\] ok$" <<<"$OUT" || true; }

# Make sure alice knows every host key first (accept-new records them).
expect_exit 0 tpurun_as alice exec -- true

# A worker that is down: exit 255, named in the summary; the rest ran.
stop_worker 2
expect_exit 255 tpurun_as alice exec --raw -- echo ok
assert_eq "$(ok_count)" "$((N - 1))"
assert_contains "$ERR" "w2 $(worker_ip 2): cannot connect to $(worker_ip 2):22"
assert_contains "$ERR" "1 of $N workers failed"

# A worker that accepts TCP but never speaks SSH: the connect timeout fires.
fakepod blackhole 2
cfg=$(scratch_dir alice)/short-timeout.json
sed 's/"connect_timeout_s": *[0-9]*/"connect_timeout_s": 2/' "$FAKEPOD_CONFIG" >"$cfg"
chmod 644 "$cfg"
expect_exit 255 as_user alice "$TPURUN" --config "$cfg" exec --raw -- echo ok
assert_eq "$(ok_count)" "$((N - 1))"
assert_contains "$ERR" "w2 $(worker_ip 2): connect timed out after 2s"
fakepod start-worker 2

# A changed host key (the TPU VM was recreated): refused, naming file:line.
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

# Refused auth: alice's key is not in bob's authorized_keys.
cfg=$(scratch_dir alice)/as-bob.json
python3 - "$FAKEPOD_CONFIG" "$cfg" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["pods"]["sim"]["ssh"]["user"] = "bob"
json.dump(c, open(sys.argv[2], "w"))
PY
chmod 644 "$cfg"
expect_exit 255 as_user alice "$TPURUN" --config "$cfg" exec --worker 0-1 -- echo ok
assert_contains "$ERR" "w0 $(worker_ip 0): authentication as 'bob' refused"
assert_contains "$ERR" "w1 $(worker_ip 1): authentication as 'bob' refused"

# A worker dying mid-command: that worker reports a lost connection, the others finish.
as_user alice "$TPURUN" --config "$FAKEPOD_CONFIG" exec --raw -- bash -c 'sleep 3; echo ok' \
  >"$(scratch_dir alice)/mid.out" 2>"$(scratch_dir alice)/mid.err" &
client=$!
sleep 1.5
stop_worker 5
set +e; wait $client; rc=$?; set -e
OUT=$(cat "$(scratch_dir alice)/mid.out"); ERR=$(cat "$(scratch_dir alice)/mid.err")
assert_eq "$rc" 255
assert_eq "$(ok_count)" "$((N - 1))"
assert_contains "$ERR" "w5 $(worker_ip 5):"
fakepod start-worker 5

# Ctrl-C: the channels are closed, the remote commands are stopped, and the
# interrupted workers are reported.
marker="tpurun-ctrlc-$$"
as_user alice "$TPURUN" --config "$FAKEPOD_CONFIG" exec -- bash -c "exec -a $marker sleep 60" \
  >"$(scratch_dir alice)/int.out" 2>"$(scratch_dir alice)/int.err" &
client=$!
# (anchored: the argv[0] of the remote command, not fakepod's own command line)
for _ in $(seq 100); do
  fakepod exec 0 -- pgrep -f "^$marker" >/dev/null 2>&1 && break
  sleep 0.2
done
# $client is the subshell of as_user; the tpurun process is its child.
kill -INT "$(pgrep -P "$client" | head -1)"
set +e; wait $client; rc=$?; set -e
ERR=$(cat "$(scratch_dir alice)/int.err")
assert_eq "$rc" 130
assert_contains "$ERR" "interrupted"
sleep 0.5
for i in $(seq 0 $((N - 1))); do
  if fakepod exec "$i" -- pgrep -f "^$marker" >/dev/null 2>&1; then
    fail "worker $i still runs the interrupted command"
  fi
done
pass
