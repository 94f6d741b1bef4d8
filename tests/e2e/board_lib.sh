# shellcheck shell=bash
# Helpers for the board tests (source after lib.sh): pods carved out of the
# simulated one, all on the shared mount.

# b U [-C DIR] ARGS...: tpurun --config $cfg ARGS... as user U.
b() {
  local u=$1 cd=()
  shift
  if [[ ${1:-} == -C ]]; then
    cd=(-C "$2")
    shift 2
  fi
  as_user "$u" "${cd[@]+"${cd[@]}"}" "$TPURUN" --config "$cfg" "$@"
}

# wait_for FILE PYTHON-EXPR: until the expression over the file's text t is
# true (at most ~60s); fails with the file's text otherwise.
wait_for() {
  local _
  for _ in $(seq 600); do
    python3 -c 'import sys; t = open(sys.argv[1], errors="replace").read(); sys.exit(0 if eval(sys.argv[2]) else 1)' \
      "$1" "$2" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "waited for $2 in $1: $(cat "$1")"
}
