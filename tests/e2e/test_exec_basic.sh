#!/usr/bin/env bash
# tpurun exec against the simulated pod: streaming with prefixes, exit codes,
# --gather, --json, --script, --dry-run, stderr separation.
source "$(dirname "$0")/lib.sh"
N=$FAKEPOD_WORKERS

every_worker_once() {
  local i
  expect_exit 0 tpurun_as alice exec -- bash -c 'echo "id=$TPU_WORKER_ID user=$(whoami)"'
  for i in $(seq 0 $((N - 1))); do
    assert_contains "$OUT" "[w$i $(worker_ip "$i")] id=$i user=alice"
  done
  assert_eq "$(grep -c 'id=' <<<"$OUT")" "$N"
}
e2e_case every_worker_once "every worker runs the command once, in its own namespace, and says so"

stderr_apart() {
  expect_exit 0 tpurun_as alice exec --worker 0 -- bash -c 'echo to-out; echo to-err >&2'
  assert_contains "$OUT" "[w0 $(worker_ip 0)] to-out"
  assert_not_contains "$OUT" "to-err"
  assert_contains "$ERR" "[w0 $(worker_ip 0)] to-err"
}
e2e_case stderr_apart "stderr stays on stderr, stdout on stdout"

largest_exit_code() {
  expect_exit 3 tpurun_as alice exec -- bash -c 'exit $(( TPU_WORKER_ID % 4 ))'
  assert_contains "$ERR" "w3 $(worker_ip 3): exited with code 3"
  assert_contains "$ERR" "w1 $(worker_ip 1): exited with code 1"
  assert_not_contains "$ERR" "w0 $(worker_ip 0):"
}
e2e_case largest_exit_code "the exit code is the largest remote one; each failed worker gets a summary line"

killed_by_signal() {
  expect_exit 143 tpurun_as alice exec --worker 2 -- bash -c 'kill -TERM $$'
  assert_contains "$ERR" "w2 $(worker_ip 2): killed by signal TERM"
}
e2e_case killed_by_signal "a remote command killed by a signal reports it"

worker_syntax() {
  # (--raw: one line per worker, not [w1,3-4] hi; collapsing has its own
  # test, test_output.sh.)
  expect_exit 0 tpurun_as alice exec --raw --worker 1,3-4 -- bash -c 'echo hi'
  assert_eq "$(grep -c ' hi$' <<<"$OUT")" 3
  assert_contains "$OUT" "[w4 $(worker_ip 4)] hi"
  assert_not_contains "$OUT" "[w2 "
  expect_exit 2 tpurun_as alice exec --worker 99 -- true
  assert_contains "$ERR" "0..$((N - 1))"
}
e2e_case worker_syntax "--worker takes gcloud's syntax; a worker out of range is a usage error"

gather_output() {
  expect_exit 0 tpurun_as alice exec --gather -- bash -c 'echo same; [ "$TPU_WORKER_ID" = 5 ] && echo odd-one || true'
  assert_contains "$OUT" "w[0-4,6-$((N - 1))] ($((N - 1)))"
  assert_contains "$OUT" "w5 (1)"
  assert_eq "$(grep -c '^same$' <<<"$OUT")" 2
}
e2e_case gather_output "--gather prints identical output once, with the set of workers"

json_records() {
  expect_exit 1 tpurun_as alice exec --json -- bash -c 'echo out$TPU_WORKER_ID; [ $TPU_WORKER_ID != 6 ]'
  /usr/bin/python3 - "$OUT" "$N" <<'PY'
import json, sys
doc = json.loads(sys.argv[1]); n = int(sys.argv[2])
assert doc["exit_code"] == 1, doc["exit_code"]
ws = doc["workers"]; assert len(ws) == n
for w in ws:
    for k in ("worker", "host", "exit_code", "signal", "error", "stdout", "stderr", "duration_s"):
        assert k in w, (k, w)
    assert w["stdout"] == "out%d\n" % w["worker"], w
    assert w["exit_code"] == (1 if w["worker"] == 6 else 0), w
PY
}
e2e_case json_records "--json: one record per worker with the documented fields"

script_with_args() {
  local script i
  script=$(scratch_dir alice)/setup.sh
  cat >"$script" <<'SH'
echo "setup on $TPU_WORKER_ID args=$*"
touch "/tmp/setup-ran-by-$(whoami)"
SH
  chmod 644 "$script"
  expect_exit 0 tpurun_as alice exec --script "$script" -- one 'two words'
  for i in $(seq 0 $((N - 1))); do
    assert_contains "$OUT" "setup on $i args=one two words"
  done
  assert_eq "$(fakepod exec 4 -- ls /tmp/setup-ran-by-alice)" "/tmp/setup-ran-by-alice"
}
e2e_case script_with_args "--script sends a local script to bash -s on every worker, with arguments"

dry_run_offline() {
  # It connects to nothing: it succeeds even with a worker down.
  fakepod stop-worker 7
  on_exit "fakepod start-worker 7"
  expect_exit 0 tpurun_as alice exec --dry-run -- echo "it's"
  assert_contains "$OUT" "remote command: exec 'echo' 'it'\\''s'"
  assert_contains "$OUT" "w7 $(worker_ip 7)"
  fakepod start-worker 7
}
e2e_case dry_run_offline "--dry-run shows the workers and the exact remote command, and connects to nothing"

key_exchange() {
  local home
  # ECDH on P-256 first (sshd does curve25519 in its slow portable code); a
  # KexAlgorithms line in ~/.ssh/config replaces the list.
  expect_exit 0 tpurun_as alice -vvvv exec -- true
  assert_contains "$ERR" "Negotiated ecdh-sha2-nistp256,"
  # ... and libssh's log comes in tpurun's format from every worker's thread
  # (libssh keeps its log callback per thread), never in libssh's own.
  assert_contains "$ERR" "libssh: ssh_kex_select_methods"
  assert_eq "$(grep -c '^\[20' <<<"$ERR" || true)" 0
  home=$(getent passwd alice | cut -d: -f6)
  printf 'Host *\n  KexAlgorithms curve25519-sha256\n' >"$home/.ssh/config"
  chown alice "$home/.ssh/config"
  on_exit "rm -f $home/.ssh/config"
  expect_exit 0 tpurun_as alice -vvvv exec --worker 0 -- true
  assert_contains "$ERR" "Negotiated curve25519-sha256,"
  rm -f "$home/.ssh/config"
}
e2e_case key_exchange "key exchange: ECDH on P-256 first, ~/.ssh/config's KexAlgorithms replaces it; libssh logs in tpurun's format"

usage_errors() {
  expect_exit 2 tpurun_as alice exec
  assert_contains "$ERR" "nothing to run"
  expect_exit 2 tpurun_as alice exce -- true
  assert_contains "$ERR" "did you mean 'exec'"
}
e2e_case usage_errors "usage errors are clear"

e2e_run
