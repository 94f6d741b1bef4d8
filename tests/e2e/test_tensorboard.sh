#!/usr/bin/env bash
# tpurun tensorboard: TensorBoard on the dev VM over real runs' log dirs, named
# by their tags, with the ssh -L line; --dry-run, the errors, and that tpurun
# becomes TensorBoard (same pid, Ctrl-C stops it). TensorBoard itself is a stub
# (tests/e2e/stubs/tensorboard) that records its argv and listens on the port.
source "$(dirname "$0")/lib.sh"
proj=$(make_project alice tbproj)

stage_run() {  # TAG... -- CMD...
  expect_exit 0 tpurun_as alice -C "$proj" stage --detach --json "$@"
  /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.argv[1])["run_id"])' "$OUT"
}
succeeded() {  # RUN_ID: the watcher says succeeded
  expect_exit 0 tpurun_as alice runs --json --no-check -n 50
  /usr/bin/python3 -c 'import json,sys; r=[x for x in json.loads(sys.argv[1])["runs"] if x["run_id"]==sys.argv[2]]
sys.exit(0 if r and r[0]["verdict"]=="succeeded" else 1)' "$OUT" "$1"
}
L=$FAKEPOD_NFS/logs/alice/tbproj
rand() { cut -d_ -f3 <<<"$1"; }
# load_runs: the runs of three_runs into the caller's r1, r2, r3, and the
# logdir spec TensorBoard gets for them into its spec.
load_runs() {
  read -r r1 r2 r3 <"$SCRATCH/runs"
  spec="b1024_lr0.1:$L/$r1,b2048_$(rand "$r2"):$L/$r2/tb,b2048_$(rand "$r3"):$L/$r3"
}

stubs=$SCRATCH/stubs
install -d -m 755 "$stubs"
install -m 755 "$TPURUN_SOURCE_DIR/tests/e2e/stubs/tensorboard" "$stubs/tensorboard"
log=$(user_dir alice)/tensorboard.log
with_tb="PATH=$stubs:/usr/bin:/bin TENSORBOARD_STUB_LOG=$log"
without_tb="PATH=/usr/bin:/bin"
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fqdn=$(hostname -f)

three_runs() {
  local r1 r2 r3 r
  # Two tagged differently (the second writes a tb/ dir), and a third that
  # shares the second's tags.
  r1=$(stage_run --tag b1024 --tag lr=0.1 -- true) || fail "stage failed"
  r2=$(stage_run --tag b2048 -- sh -c 'mkdir -p "$TPURUN_LOG_DIR/tb"') || fail "stage failed"
  r3=$(stage_run --tag b2048 -- true) || fail "stage failed"
  for r in "$r1" "$r2" "$r3"; do wait_until "run $r to succeed" 120 succeeded "$r"; done
  [[ -d $L/$r2/tb ]] || fail "the job did not make $L/$r2/tb"
  echo "$r1 $r2 $r3" >"$SCRATCH/runs"
}
e2e_case three_runs "three runs for the others: two tagged differently (one with a tb/ dir), a third sharing the second's tags"

dry_run() {
  local r1 r2 r3 spec newest
  load_runs
  # --dry-run prints the exact command and the ssh line, and starts nothing; a
  # prefix names a run.
  AS_USER_ENV=$with_tb expect_exit 0 tpurun_as alice tensorboard "$r1" "${r2:0:22}" "$r3" --port "$port" --dry-run
  assert_contains "$OUT" "tensorboard --logdir_spec=$spec --port=$port --host=127.0.0.1"
  assert_contains "$OUT" "ssh -L $port:localhost:$port alice@$fqdn"
  assert_contains "$OUT" "http://localhost:$port"
  [[ ! -e $log ]] || fail "--dry-run started tensorboard"
  # The same run twice is one run; --host names the dev VM; --bind-all serves everywhere.
  AS_USER_ENV=$with_tb expect_exit 0 tpurun_as alice tensorboard "$r1" "$r1" --host devvm.example.com --bind-all --dry-run
  assert_contains "$OUT" "tensorboard --logdir_spec=b1024_lr0.1:$L/$r1 --port=6006 --bind_all"
  assert_contains "$OUT" "ssh -L 6006:localhost:6006 alice@devvm.example.com"
  # --json, for scripts.
  AS_USER_ENV=$without_tb expect_exit 0 tpurun_as alice tensorboard "$r1" "$r2" -n --json -p "$port"
  /usr/bin/python3 - "$OUT" "$r1" "$r2" "$L" "$port" <<'PY'
import json, sys
doc, r1, r2, L, port = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
assert doc["command"] == ["tensorboard", f"--logdir_spec=b1024_lr0.1:{L}/{r1},b2048:{L}/{r2}/tb", f"--port={port}",
                          "--host=127.0.0.1"], doc
assert doc["runs"] == [{"run_id": r1, "name": "b1024_lr0.1", "path": f"{L}/{r1}"},
                       {"run_id": r2, "name": "b2048", "path": f"{L}/{r2}/tb"}], doc
assert doc["port"] == port and doc["tensorboard"] is None and doc["ssh"].startswith(f"ssh -L {port}:localhost:{port} alice@")
PY
  # 'last' (or 'latest') is the newest run, as in `tpurun runs` and `tpurun logs`.
  expect_exit 0 tpurun_as alice runs --json --no-check -n 1
  newest=$(/usr/bin/python3 -c 'import json,sys; print(json.loads(sys.argv[1])["runs"][0]["run_id"])' "$OUT")
  AS_USER_ENV=$with_tb expect_exit 0 tpurun_as alice tensorboard latest --dry-run --json
  assert_contains "$OUT" "\"run_id\": \"$newest\""
}
e2e_case dry_run "--dry-run prints the exact command and the ssh line and starts nothing; prefixes, --host, --bind-all, --json, latest" --needs three_runs

refusals() {
  local r1 r2 r3 spec
  load_runs
  # Errors: not installed (says how to install it), unknown run (did you mean),
  # bad port, --json without --dry-run.
  AS_USER_ENV=$without_tb expect_exit 1 tpurun_as alice tensorboard "$r1" --port "$port"
  assert_contains "$ERR" "tensorboard is not on PATH"
  assert_contains "$ERR" "pip install tensorboard"
  AS_USER_ENV=$with_tb expect_exit 1 tpurun_as alice tensorboard "$r1" "${r2}x" --port "$port"
  assert_contains "$ERR" "no run '${r2}x' of alice"
  assert_contains "$ERR" "did you mean '$r2'?"
  AS_USER_ENV=$with_tb expect_exit 2 tpurun_as alice tensorboard "$r1" --port 0
  assert_contains "$ERR" "--port 0: pick a port in 1-65535"
  AS_USER_ENV=$with_tb expect_exit 2 tpurun_as alice tensorboard "$r1" --json
  assert_contains "$ERR" "--json goes with --dry-run"
  # bob's runs are bob's: he has none of alice's.
  AS_USER_ENV=$with_tb expect_exit 1 tpurun_as bob tensorboard "$r1" --dry-run
  assert_contains "$ERR" "no run '$r1' of bob"
  [[ ! -e $log ]] || fail "a refused tensorboard started anyway"
}
e2e_case refusals "not installed, an unknown run, a bad port, --json without --dry-run, another user's run: refused" --needs three_runs

serve_for_real() {
  local r1 r2 r3 spec out tb_pid stub_pid reply
  load_runs
  # For real: tpurun becomes the stub (exec: no tpurun stays around as its
  # parent), which serves the port on localhost with the runs' spec.
  out=$SCRATCH/tb.out
  AS_USER_ENV=$with_tb tpurun_as alice tensorboard "$r1" "$r2" "$r3" --port "$port" >"$out" 2>&1 &
  tb_pid=$!
  on_exit "kill -9 $tb_pid"
  wait_until "tensorboard to start (its output: $out)" 120 test -s "$log"
  /usr/bin/python3 - "$log" "$spec" "$port" <<'PY'
import json, sys
doc = json.loads(open(sys.argv[1]).readline())
assert doc["event"] == "serving" and doc["parent"] != "tpurun", (doc, "tpurun must exec tensorboard, not fork it")
assert doc["argv"][1:] == [f"--logdir_spec={sys.argv[2]}", f"--port={sys.argv[3]}", "--host=127.0.0.1"], doc
PY
  stub_pid=$(/usr/bin/python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["pid"])' "$log")
  on_exit "kill -9 $stub_pid"
  assert_eq "$(client_pid "$tb_pid")" "$stub_pid" "the process the test started is tensorboard itself"
  reply=$(/usr/bin/python3 -c 'import socket,sys; s=socket.create_connection(("127.0.0.1", int(sys.argv[1]))); print(s.recv(200).decode())' "$port")
  assert_contains "$reply" "TensorBoard stub"
  assert_contains "$(cat "$out")" "ssh -L $port:localhost:$port alice@$fqdn"
  assert_contains "$(cat "$out")" "b1024_lr0.1"

  # A second one on the same port is refused before it starts anything.
  AS_USER_ENV=$with_tb expect_exit 2 tpurun_as alice tensorboard "$r1" --port "$port"
  assert_contains "$ERR" "port $port is in use on this host"
  assert_contains "$ERR" "pick another with --port N"
  assert_eq "$(wc -l <"$log")" "1" "the refused one started nothing"

  # Ctrl-C stops it.
  kill -INT "$stub_pid"
  wait "$tb_pid" || fail "tensorboard exited $? after Ctrl-C"
  assert_contains "$(tail -1 "$log")" '"event": "interrupted"'
}
e2e_case serve_for_real "tpurun becomes TensorBoard: it serves the port, a second one is refused, Ctrl-C stops it" --needs three_runs

e2e_run
