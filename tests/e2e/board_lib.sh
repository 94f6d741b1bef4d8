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
# true (at most 120 s); fails with the file's text otherwise.
_file_holds() {
  /usr/bin/python3 -c 'import sys; t = open(sys.argv[1], errors="replace").read(); sys.exit(0 if eval(sys.argv[2]) else 1)' \
    "$1" "$2" 2>/dev/null
}
wait_for() {
  (wait_until "$2 in $1" 120 _file_holds "$1" "$2") || fail "waited for $2 in $1: $(cat "$1")"
}
