# shellcheck shell=bash
# Helpers for the gang-run tests (source after lib.sh).

# run_json U RUN_ID: the run's record from `tpurun runs --json`.
run_json() {
  tpurun_as "$1" runs --json --no-check | python3 -c '
import json, sys
for r in json.load(sys.stdin)["runs"]:
    if r["run_id"] == sys.argv[1]:
        print(json.dumps(r)); break
' "$2"
}

# run_field U RUN_ID EXPR: a Python expression over the run record r.
run_field() {
  run_json "$1" "$2" | python3 -c 'import json, sys; r = json.load(sys.stdin); print(eval(sys.argv[1]))' "$3"
}

# wait_verdict U RUN_ID VERDICT...: until the run's verdict is one of them (at most ~120s).
wait_verdict() {
  local u=$1 run=$2 v
  shift 2
  for _ in $(seq 600); do
    v=$(run_field "$u" "$run" 'r["verdict"]' 2>/dev/null || true)
    for want in "$@"; do [[ $v == "$want" ]] && return 0; done
    sleep 0.2
  done
  fail "run $run: verdict '$v', expected one of: $*"
}

# stage_detached U DIR ARGS... : stage --detach --json; prints the run id.
stage_detached() {
  local u=$1 d=$2
  shift 2
  expect_exit 0 tpurun_as "$u" -C "$d" stage --detach --json "$@"
  python3 -c 'import json,sys; print(json.loads(sys.argv[1])["run_id"])' "$OUT"
}

# no_job_left U RUN_ID: no process of the run is left on any reachable worker.
no_job_left() {
  local i
  for i in $(seq 0 $((FAKEPOD_WORKERS - 1))); do
    if wexec "$i" -- sh -c "grep -lsaz '^TPURUN_RUN_ID=$2' /proc/[0-9]*/environ" 2>/dev/null | grep -q .; then
      fail "a process of run $2 is still alive on w$i"
    fi
  done
}

# A job that fails on worker $FAIL_ON (exit $FAIL_CODE after 1s) on attempt 1
# and otherwise blocks like a JAX job waiting in a collective.
fail_on_worker_job() {  # WORKER CODE
  echo "if [ \"\$TPURUN_WORKER\" = $1 ] && [ \"\$TPURUN_ATTEMPT\" = 1 ]; then echo 'w$1 broke'; sleep 1; exit $2; fi; exec python3 train.py --forever"
}

# freeze_worker I / thaw_worker I: SIGSTOP / SIGCONT every process in worker
# I's PID namespace (sshd included: TCP stays open, nothing answers).
_ns_pids() {
  local init ns p
  init=$(cat "$FAKEPOD_STATE/w$1/init.pid")
  ns=$(readlink "/proc/$init/ns/pid")
  for p in /proc/[0-9]*; do
    if [[ $(readlink "$p/ns/pid" 2>/dev/null) == "$ns" ]]; then echo "${p#/proc/}"; fi
  done
}
# One sweep is not enough: a process forked while it runs (an sshd session
# being set up) escapes it, and that session then answers the watcher's
# probes for a "frozen" worker. Sweep until every process is stopped.
freeze_worker() {
  on_exit "thaw_worker $1"
  local running p
  for _ in $(seq 100); do
    _ns_pids "$1" | xargs -r kill -STOP
    running=""
    for p in $(_ns_pids "$1"); do
      case $(ps -o stat= -p "$p" 2>/dev/null) in T* | Z* | "") ;; *) running+=" $p" ;; esac
    done
    [[ -z $running ]] && return 0
    sleep 0.1
  done
  fail "w$1 not frozen: still running after SIGSTOP:$running"
}
thaw_worker() {
  _ns_pids "$1" | xargs -r kill -CONT
}
