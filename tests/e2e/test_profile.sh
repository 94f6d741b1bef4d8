#!/usr/bin/env bash
# tpurun profile against the simulator: alice's run on 4 workers, whose fake
# trainers serve the profiler's Profile call (examples/trainer/profiler_server.py,
# a real grpcio server) on 9999, except worker 3's, which started none. One
# capture writes w0..w2's traces (valid XSpace) under the run's
# plugins/profile/<session>/, all starting at the one start time; worker 3
# gets the line to add. bob's listener on worker 3's port and bob's own run
# (with its own server) are never called. tensorboard RUN serves the log dir.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/board_lib.sh"
require_tpurun
/usr/bin/python3 -c 'import grpc, google.protobuf' 2>/dev/null || skip "python3-grpcio/python3-protobuf missing"
[[ ${FAKEPOD_NETNS:-1} != 0 ]] || skip "FAKEPOD_NETNS=0: the workers share one localhost"

cfg=$SCRATCH/profile.json
cat >"$cfg" <<JSON
{ "pods": {
    $(carved_pod four 0 3),
    $(carved_pod two 4 5) } }
JSON
chmod 644 "$cfg"
chmod 755 "$SCRATCH"
proj=$(make_project alice profproj)
bproj=$(make_project bob profproj)

# listening I PORT: something listens on worker I's PORT.
listening() {
  local hex
  hex=$(printf '%04X' "$2")
  wexec "$1" -- sh -c "cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | grep -q ':$hex [0-9A-F:]* 0A '"
}
# wait_listening I PORT: until something listens on worker I's PORT.
wait_listening() {
  wait_until "something to listen on worker $1's port $2" 120 listening "$1" "$2"
}

# The runs of start_runs, alice's (ra) and bob's (rb), stopped at the test's end.
stop_runs() {
  [[ -s $SCRATCH/runs ]] || return 0
  local ra rb
  read -r ra rb <"$SCRATCH/runs"
  b alice --pod four kill --run "$ra" >/dev/null 2>&1 || true
  b bob --pod two kill --run "$rb" >/dev/null 2>&1 || true
}
on_exit stop_runs
# load_runs: ra, rb and their log dirs LA, LB into the caller's variables.
load_runs() {
  read -r ra rb <"$SCRATCH/runs"
  LA=$FAKEPOD_NFS/logs/alice/profproj/$ra
  LB=$FAKEPOD_NFS/logs/bob/profproj/$rb
}

bad_input() {
  expect_exit 2 b alice --pod four profile --duration 0
  assert_contains "$ERR" "--duration 0: pick 1ms to 10m"
  expect_exit 2 b alice --pod four profile --port 70000
  assert_contains "$ERR" "--port 70000: pick a port in 1-65535"
  expect_exit 2 b alice --pod four profile --host-tracer-level 4
  assert_contains "$ERR" "--host-tracer-level 4: pick 0 to 3"
}
e2e_case bad_input "bad --duration, --port and --host-tracer-level, before any run"

# ---- the runs: alice's on four (no server on worker 3), bob's on two; they go
# on for the cases after this one.
stage_runs() {
  local ra rb i
  expect_exit 0 b alice -C "$proj" --pod four stage --detach --json -- \
    sh -c 'p=9999; [ "$TPURUN_WORKER" = 3 ] && p=none; exec python3 train.py --forever --step-time 0.1 --profiler-port $p'
  ra=$(json_get "$OUT" 'd["run_id"]')
  echo "$ra" >"$SCRATCH/runs"
  expect_exit 0 b bob -C "$bproj" --pod two stage --detach --json -- \
    python3 train.py --forever --step-time 0.1 --profiler-port 9999
  rb=$(json_get "$OUT" 'd["run_id"]')
  echo "$ra $rb" >"$SCRATCH/runs"
  for i in 0 1 2 4 5; do wait_listening "$i" 9999; done
}
start_runs() {
  stage_runs
}
e2e_case start_runs "alice's run on four (no profiler server on w3) and bob's on two, their servers listening"

# ensure_runs: load_runs, after staging the runs again if they are gone (the
# scrub after a failed case stops every job of the test users).
ensure_runs() {
  local i
  for i in 0 1 2 4 5; do
    if ! listening "$i" 9999; then
      note "the runs of start_runs are gone (w$i serves no profiler): staging them again"
      stop_runs
      stage_runs
      break
    fi
  done
  load_runs
}

dry_run_paths() {
  local ra rb LA LB
  ensure_runs
  # Where each trace would go; nothing asked.
  expect_exit 0 b alice --pod four profile "$ra" --dry-run --json
  json_get "$OUT" '[w["path"] for w in d["workers"]]' | grep -q "$LA/plugins/profile/.*/w3.xplane.pb" ||
    fail "dry run: $OUT"
  [[ ! -e $(srv "$LA/plugins") ]] || fail "--dry-run made $LA/plugins"
}
e2e_case dry_run_paths "--dry-run: where each trace would go; nothing asked" --needs start_runs

# ---- the capture
capture() {
  local ra rb LA LB doc session start
  ensure_runs
  # 3 traces, worker 3 says what to add; exit 1.
  expect_exit 1 b alice --pod four profile --duration 500ms --json
  doc=$OUT
  assert_eq "$(json_get "$doc" 'd["run_id"]')" "$ra" "RUN defaults to the latest run"
  assert_eq "$(json_get "$doc" '[w["outcome"] for w in d["workers"]]')" \
    "['written', 'written', 'written', 'no_server']"
  assert_contains "$(json_get "$doc" 'd["workers"][3]["message"]')" "jax.profiler.start_server(9999)"
  session=$(json_get "$doc" 'd["session_id"]')
  start=$(json_get "$doc" 'd["start_timestamp_ns"]')
  /usr/bin/python3 - "$(srv "$LA/plugins/profile/$session")" "$start" "$doc" \
    "$TPURUN_SOURCE_DIR/examples/trainer" <<'PY' || fail "the traces"
import json, os, sys
d, start, doc = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
sys.path.insert(0, sys.argv[4])
from tpu_info.proto import xplane_pb2
assert sorted(os.listdir(d)) == ["w0.xplane.pb", "w1.xplane.pb", "w2.xplane.pb"], os.listdir(d)
for i in range(3):
    path = os.path.join(d, "w%d.xplane.pb" % i)
    assert doc["workers"][i]["bytes"] == os.path.getsize(path), (doc["workers"][i], os.path.getsize(path))
    space = xplane_pb2.XSpace.FromString(open(path, "rb").read())
    assert space.hostnames == ["t1v-n-fakepod-w-%d" % i], space.hostnames
    env = [p for p in space.planes if p.name == "Task Environment"][0]
    names = {m.id: m.name for m in env.stat_metadata.values()}
    stats = {names[s.metadata_id]: s.uint64_value for s in env.stats}
    # Each server waited for the one start time before tracing.
    assert stats["profile_start_time"] >= start, (i, stats, start)
    host = [p for p in space.planes if p.name == "/host:CPU"][0]
    assert any(e.name == "train" for e in host.event_metadata.values()), host.event_metadata
PY
}
e2e_case capture "one capture: w0..w2's traces (valid XSpace, one start time) in the run's session; w3 gets the line to add" --needs start_runs

text_form() {
  local ra rb LA LB
  ensure_runs
  # One line per worker.
  expect_exit 1 b alice --pod four profile "$ra" -d 200ms
  assert_contains "$OUT" "w0 $(worker_ip 0)  trace written, "
  assert_contains "$OUT" "w3 $(worker_ip 3)  no profiler server on port 9999"
  assert_contains "$OUT" "3 of 4 workers traced (200ms each) into session"
  assert_contains "$OUT" "tpurun tensorboard $ra"
}
e2e_case text_form "the text form: one line per worker, and the tensorboard line" --needs start_runs

# ---- bob listens on worker 3's port: alice's profile does not call him
bob_listener() {
  local ra rb LA LB bobl
  ensure_runs
  # bob's listener goes on until the test tells it to stop (a file on w3):
  # alive whatever the time alice's profile takes.
  wexec 3 -- rm -f /tmp/bob-was-called /tmp/bob-stop-listening
  wexec 3 --user bob -- /usr/bin/python3 -c '
import os, socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 9999)); s.listen(4); s.settimeout(0.2)
deadline = time.time() + 170
while time.time() < deadline and not os.path.exists("/tmp/bob-stop-listening"):
    try:
        c, _ = s.accept(); open("/tmp/bob-was-called", "w").write("yes")
    except OSError:
        pass' &
  bobl=$!
  on_exit "wexec 3 -- touch /tmp/bob-stop-listening; kill $bobl 2>/dev/null"
  wait_listening 3 9999
  expect_exit 1 b alice --pod four profile "$ra" -d 100ms --worker 3
  assert_contains "$OUT" "w3 $(worker_ip 3)  not asked: port 9999 is served by bob's process, not by this run's job"
  wexec 3 -- touch /tmp/bob-stop-listening
  wait "$bobl" 2>/dev/null || true
  wexec 3 -- rm -f /tmp/bob-stop-listening
  wexec 3 -- test ! -e /tmp/bob-was-called || fail "alice's profile connected to bob's port"
}
e2e_case bob_listener "bob's listener on w3's port: alice's profile names it and never connects to it" --needs start_runs

bobs_run() {
  local ra rb LA LB
  ensure_runs
  # Never called (no session in its log, no trace of alice's in it); and
  # alice cannot name it.
  [[ ! -e $(srv "$LB/plugins") ]] || fail "bob's run got a profile"
  expect_exit 1 b alice --pod two profile "$rb"
  assert_contains "$ERR" "$rb"
}
e2e_case bobs_run "bob's run is never called, and alice cannot name it" --needs start_runs capture

tensorboard_log_dir() {
  local ra rb LA LB
  ensure_runs
  # So that its Profile tab sees the traces.
  expect_exit 0 b alice --pod four tensorboard "$ra" --dry-run --json
  assert_eq "$(json_get "$OUT" 'd["runs"][0]["path"]')" "$LA"
}
e2e_case tensorboard_log_dir "tensorboard RUN serves the run's log dir, so that its Profile tab sees the traces" --needs start_runs

e2e_run
