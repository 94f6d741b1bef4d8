# shellcheck shell=bash
# What the simulator benches share (source it after setting root, WORKERS and
# TPURUN_BIN): bring the simulator to WORKERS workers and, at exit, put it back
# as it was found (down stays down, another size comes back).

FAKEPOD=$root/scripts/fakepod

# bench_pod_up NAME: checks root and the binary, remembers the simulator's
# state, brings it up with WORKERS workers, loads its env (FAKEPOD_*), installs
# the binary where the simulated users can run it ($bin) and makes a scratch
# dir ($work, /var/tmp/tpurun-bench-NAME.*).
bench_pod_up() {
  [[ $(id -u) == 0 ]] || { echo "run as root (it drives scripts/fakepod)" >&2; exit 2; }
  [[ -x $TPURUN_BIN ]] || { echo "no tpurun binary at $TPURUN_BIN (set TPURUN_BIN)" >&2; exit 2; }
  if "$FAKEPOD" status 2>/dev/null | grep -q '^pod down'; then
    bench_previous=0
  else
    bench_previous=$("$FAKEPOD" env | sed -n 's/^FAKEPOD_WORKERS=//p')
  fi
  "$FAKEPOD" up "$WORKERS" >&2
  eval "$("$FAKEPOD" env)"
  bin=$FAKEPOD_STATE/bin/tpurun-bench
  install -m 755 "$TPURUN_BIN" "$bin"
  work=$(mktemp -d "/var/tmp/tpurun-bench-$1.XXXXXX")
  chmod 755 "$work"
}

# bench_pod_restore: removes $bin and $work, then the simulator goes back to
# how bench_pod_up found it. Call it last in the bench's EXIT trap.
bench_pod_restore() {
  rm -f "$bin"
  rm -rf "$work"
  if [[ $bench_previous == 0 ]]; then
    "$FAKEPOD" down >&2
  elif [[ -n $bench_previous && $bench_previous != "$WORKERS" ]]; then
    "$FAKEPOD" up "$bench_previous" >&2
  fi
}

# timed LABEL FUNCTION: runs FUNCTION and appends "LABEL MICROSECONDS" to $results.
timed() {  # LABEL FUNCTION
  local start end
  start=$(date +%s%N)
  "$2"
  end=$(date +%s%N)
  echo "$1 $(((end - start) / 1000))" >>"$results"
}
