# shellcheck shell=bash
# Helpers for the gang-run tests (source after lib.sh).

# run_json U RUN_ID: the run's record from `tpurun runs --json` (fails when
# it is not among the user's newest 20).
run_json() {
  run_field "$1" "$2" 'json.dumps(r)'
}

# run_field U RUN_ID EXPR: a Python expression over the run record r (one
# tpurun and one python3: the tests poll with it).
run_field() {
  tpurun_as "$1" runs --json --no-check | /usr/bin/python3 -c '
import json, sys
runs = [r for r in json.load(sys.stdin)["runs"] if r["run_id"] == sys.argv[1]]
if not runs:
    sys.exit("no run " + sys.argv[1])
r = runs[0]
print(eval(sys.argv[2]))' "$2" "$3"
}

# verdict_is U RUN_ID VERDICT...: the run's verdict is one of them; its
# verdict is in $VERDICT.
verdict_is() {
  local u=$1 run=$2 want
  shift 2
  VERDICT=$(run_field "$u" "$run" 'r["verdict"]' 2>/dev/null || true)
  for want in "$@"; do [[ $VERDICT == "$want" ]] && return 0; done
  return 1
}

# wait_verdict U RUN_ID VERDICT...: until the run's verdict is one of them
# (at most 300 s; polled every 0.2 s, then less often).
wait_verdict() {
  local u=$1 run=$2 t0=$SECONDS pause=0.2
  shift 2
  until verdict_is "$u" "$run" "$@"; do
    ((SECONDS - t0 < 300)) || fail "run $run: verdict '$VERDICT' after 300 s, expected one of: $*"
    sleep "$pause"
    _e2e_backoff
  done
}

# stage_detached U DIR ARGS... : stage --detach --json; prints the run id.
stage_detached() {
  local u=$1 d=$2
  shift 2
  expect_exit 0 tpurun_as "$u" -C "$d" stage --detach --json "$@"
  /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.argv[1])["run_id"])' "$OUT"
}

# no_job_left U RUN_ID: no process of the run is left on any of the pod's
# workers (one look at the host's /proc: every worker's processes are there).
no_job_left() {
  local left
  left=$(/usr/bin/python3 - "$FAKEPOD_STATE" "$2" <<'PY'
import glob, os, sys
state, run = sys.argv[1], sys.argv[2].encode()
slots = {}
for f in glob.glob(os.path.join(state, "w*", "pidns")):
    try:
        slots[open(f).read().strip()] = os.path.basename(os.path.dirname(f))
    except OSError:
        pass
for d in os.listdir("/proc"):
    if not d.isdigit():
        continue
    try:
        ns = os.readlink("/proc/%s/ns/pid" % d)
        env = open("/proc/%s/environ" % d, "rb").read().split(b"\0")
        cmd = open("/proc/%s/cmdline" % d, "rb").read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        continue
    if ns in slots and b"TPURUN_RUN_ID=" + run in env:
        print("%s: pid %s (host) %s" % (slots[ns], d, cmd[:120]))
PY
)
  [[ -z $left ]] || fail "processes of run $2 are still alive: $left"
}

# A job that fails on worker $FAIL_ON (exit $FAIL_CODE after 1s) on attempt 1
# and otherwise blocks like a JAX job waiting in a collective.
fail_on_worker_job() {  # WORKER CODE
  echo "if [ \"\$TPURUN_WORKER\" = $1 ] && [ \"\$TPURUN_ATTEMPT\" = 1 ]; then echo 'w$1 broke'; sleep 1; exit $2; fi; exec python3 train.py --forever --metrics-addr none"
}

# freeze_worker I / thaw_worker I: SIGSTOP / SIGCONT every process in worker
# I's PID namespace (sshd included: TCP stays open, nothing answers). One sweep
# is not enough: a process forked while it runs (an sshd session being set up)
# escapes it, and that session then answers the watcher's probes for a
# "frozen" worker; procs.py sweeps until every process is stopped (bounded).
freeze_worker() {
  on_exit "thaw_worker $1"
  local why
  why=$("$E2E_DIR/procs.py" freeze "$(cat "$FAKEPOD_STATE/w$1/init.pid")") || fail "w$1 not frozen: $why"
}
thaw_worker() {
  "$E2E_DIR/procs.py" thaw "$(cat "$FAKEPOD_STATE/w$1/init.pid")"
}
