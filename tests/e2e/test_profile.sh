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
json_get() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$@"; }

# wait_listening I PORT: until something listens on worker I's PORT.
wait_listening() {
  local hex _
  hex=$(printf '%04X' "$2")
  for _ in $(seq 100); do
    wexec "$1" -- sh -c "cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | grep -q ':$hex [0-9A-F:]* 0A '" && return 0
    sleep 0.1
  done
  fail "nothing listens on worker $1's port $2"
}

# --- bad input, before any run
expect_exit 2 b alice --pod four profile --duration 0
assert_contains "$ERR" "--duration 0: pick 1ms to 10m"
expect_exit 2 b alice --pod four profile --port 70000
assert_contains "$ERR" "--port 70000: pick a port in 1-65535"
expect_exit 2 b alice --pod four profile --host-tracer-level 4
assert_contains "$ERR" "--host-tracer-level 4: pick 0 to 3"

# --- the runs: alice's on four (no server on worker 3), bob's on two
expect_exit 0 b alice -C "$proj" --pod four stage --detach --json -- \
  sh -c 'p=9999; [ "$TPURUN_WORKER" = 3 ] && p=none; exec python3 train.py --forever --step-time 0.1 --profiler-port $p'
ra=$(json_get "$OUT" 'd["run_id"]')
expect_exit 0 b bob -C "$bproj" --pod two stage --detach --json -- \
  python3 train.py --forever --step-time 0.1 --profiler-port 9999
rb=$(json_get "$OUT" 'd["run_id"]')
on_exit "b alice --pod four kill --run $ra >/dev/null 2>&1; b bob --pod two kill --run $rb >/dev/null 2>&1"
for i in 0 1 2 4 5; do wait_listening "$i" 9999; done
LA=$FAKEPOD_NFS/logs/alice/profproj/$ra
LB=$FAKEPOD_NFS/logs/bob/profproj/$rb

# --dry-run: where each trace would go; nothing asked.
expect_exit 0 b alice --pod four profile "$ra" --dry-run --json
json_get "$OUT" '[w["path"] for w in d["workers"]]' | grep -q "$LA/plugins/profile/.*/w3.xplane.pb" ||
  fail "dry run: $OUT"
[[ ! -e $(srv "$LA/plugins") ]] || fail "--dry-run made $LA/plugins"

# --- the capture: 3 traces, worker 3 says what to add; exit 1
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

# The text form: one line per worker.
expect_exit 1 b alice --pod four profile "$ra" -d 200ms
assert_contains "$OUT" "w0 $(worker_ip 0)  trace written, "
assert_contains "$OUT" "w3 $(worker_ip 3)  no profiler server on port 9999"
assert_contains "$OUT" "3 of 4 workers traced (200ms each) into session"
assert_contains "$OUT" "tpurun tensorboard $ra"

# --- bob listens on worker 3's port: alice's profile does not call him
wexec 3 --user bob -- /usr/bin/python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 9999)); s.listen(4); s.settimeout(8)
try:
    c, _ = s.accept(); open("/tmp/bob-was-called", "w").write("yes")
except OSError:
    pass' &
bobl=$!
on_exit "kill $bobl 2>/dev/null"
wait_listening 3 9999
expect_exit 1 b alice --pod four profile "$ra" -d 100ms --worker 3
assert_contains "$OUT" "w3 $(worker_ip 3)  not asked: port 9999 is served by bob's process, not by this run's job"
kill "$bobl" 2>/dev/null
wait "$bobl" 2>/dev/null || true
wexec 3 -- test ! -e /tmp/bob-was-called || fail "alice's profile connected to bob's port"

# bob's run: never called (no session in its log, no trace of alice's in it);
# and alice cannot name it.
[[ ! -e $(srv "$LB/plugins") ]] || fail "bob's run got a profile"
expect_exit 1 b alice --pod two profile "$rb"
assert_contains "$ERR" "$rb"

# --- tensorboard RUN serves the log dir, so that its Profile tab sees the traces
expect_exit 0 b alice --pod four tensorboard "$ra" --dry-run --json
assert_eq "$(json_get "$OUT" 'd["runs"][0]["path"]')" "$LA"

pass
