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

# bench_pod_restore: kills the run bench_trainer_run staged, removes $bin and
# $work, then the simulator goes back to how bench_pod_up found it. Call it
# last in the bench's EXIT trap.
bench_pod_restore() {
  [[ -z ${bench_run:-} ]] || tp kill --run "$bench_run" >/dev/null 2>&1 || true
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

# tp ARGS...: tpurun as alice in $work/proj with her gcloud config, the
# config $CONFIG (default: the simulator's) and her state (audit log,
# placements) in $work/state.
tp() {
  (cd "$work/proj" && setpriv --reuid=alice --regid="$(id -g alice)" --init-groups -- \
    env -i HOME="$(getent passwd alice | cut -d: -f6)" USER=alice LOGNAME=alice PATH=/usr/bin:/bin \
    CLOUDSDK_CONFIG="$FAKEPOD_GCLOUD_CONFIGS/alice" XDG_STATE_HOME="$work/state" \
    "$bin" --config "${CONFIG:-$FAKEPOD_CONFIG}" "$@" </dev/null)
}

# bench_trainer_run TRAIN_ARGS...: alice's copy of the fake trainer
# (examples/trainer) in $work/proj, staged detached on every worker as
# `python3 train.py TRAIN_ARGS...`; the run's id in $bench_run
# (bench_pod_restore kills the run).
bench_trainer_run() {
  install -d -o alice -g "$(id -g alice)" "$work/proj"
  cp -r "$root/examples/trainer/." "$work/proj"
  chown -R alice:"$(id -g alice)" "$work/proj"
  bench_run=$(tp stage --detach --json -- /usr/bin/python3 train.py "$@" |
    /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["run_id"])')
}

# bench_as USER COMMAND...: runs COMMAND as USER (setpriv, no sudo), with a
# clean login environment (HOME, USER, LOGNAME, PATH, LANG) plus the NAME=VALUE
# words in $BENCH_ENV.
bench_as() {
  local user=$1
  shift
  # shellcheck disable=SC2086
  setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups -- env -i HOME="$(getent passwd "$user" | cut -d: -f6)" \
    USER="$user" LOGNAME="$user" PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 ${BENCH_ENV:-} "$@"
}

# bench_tree DIR MODE [USER]: makes, once, the deterministic tree of $FILES
# files / $BYTES bytes at DIR (bench/gen_tree.py), owned by USER (default: the
# caller). MODE git makes it a git work tree whose repository lives beside it
# (DIR.git; DIR/.git is a "gitdir:" file), so cp and rsync copy the files that
# tpurun stages, not git's object database too; MODE plain leaves it outside git.
bench_tree() {
  local dir=$1 mode=$2 user=${3:-}
  [[ -d $dir ]] && return 0
  local as=()
  [[ -n $user ]] && as=(bench_as "$user")
  echo "generating $dir ..." >&2
  rm -rf "$dir.partial" "$dir.git"
  install -d ${user:+-o "$user" -g "$(id -g "$user")"} "$dir.partial" "$dir.git"
  "${as[@]}" python3 "$root/bench/gen_tree.py" "$dir.partial" --files "$FILES" --bytes "$BYTES"
  if [[ $mode == git ]]; then
    "${as[@]}" git init -q --separate-git-dir="$dir.git" "$dir.partial"
    "${as[@]}" git -C "$dir.partial" add -A
    "${as[@]}" git -C "$dir.partial" -c user.name=bench -c user.email=bench@example.com commit -qm tree
    # shellcheck disable=SC2016 # (sh expands them)
    "${as[@]}" sh -c 'echo "gitdir: $1" >"$2/.git"' sh "$dir.git" "$dir.partial"
  fi
  [[ $mode == git ]] || rmdir "$dir.git"
  mv "$dir.partial" "$dir"
  sleep 2 # let the files age past the stat cache's racy window
}
