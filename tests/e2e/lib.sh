# shellcheck shell=bash
# Helpers for tpurun's end-to-end tests. Source it first from tests/e2e/test_*.sh:
#
#   source "$(dirname "$0")/lib.sh"
#
# ctest runs each test as `bash tests/e2e/test_X.sh` with TPURUN_BIN (the built
# binary), TPURUN_SOURCE_DIR and FAKEPOD_WORKERS (8) set, after `fakepod up 8`.
# Sourcing this file:
#   - skips (exit 125) unless run as root;
#   - brings the pod up if needed (a no-op when it is; also revives workers an
#     earlier test left stopped or blackholed) and exports FAKEPOD_STATE,
#     FAKEPOD_NFS, FAKEPOD_WORKERS, FAKEPOD_CONFIG;
#   - installs $TPURUN_BIN as $FAKEPOD_STATE/bin/tpurun (mode 755, so alice, bob
#     and carol can run it), the fake trainer as $FAKEPOD_STATE/trainer/ and the
#     gcloud stub as $FAKEPOD_STATE/stubs/gcloud (first on as_user's PATH);
#   - makes a fresh scratch dir $SCRATCH=/var/tmp/tpurun-e2e/<test name>
#     (/var/tmp/tpurun-e2e-<state dir's name>/... for a second pod beside the default)
#     (removed at exit if the test passed);
#   - installs an EXIT trap that runs the test's registered cleanups, then kills
#     every process still holding a TPU device on any worker, removes
#     /tmp/libtpu_lockfile and /tmp/tpu_logs there, and revives dead workers, so
#     the next test starts from a clean pod. The test's exit code is kept.
set -euo pipefail
# The system's programs, not a user's shims: python3 here is Debian's
# /usr/bin/python3 (a pyenv shim on PATH costs ~0.8 CPU-seconds a start, and
# the tests read JSON with python3 all the time). Scripts name it in full.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${TPURUN_SOURCE_DIR:=$(cd "$E2E_DIR/../.." && pwd)}"
: "${FAKEPOD_WORKERS:=8}"
export TPURUN_SOURCE_DIR
FAKEPOD="$TPURUN_SOURCE_DIR/scripts/fakepod"
TEST_NAME=$(basename "${BASH_SOURCE[1]:-$0}" .sh)

# ------------------------------------------------------------------ reporting

# Where a message comes from: the test, and the case when one is running.
_e2e_where() {
  echo "$TEST_NAME${_E2E_CASE:+/$_E2E_CASE}"
}

fail() {
  echo "FAIL [$(_e2e_where)]: $*" >&2
  exit 1
}

skip() {
  echo "SKIP [$(_e2e_where)]: $*"
  exit 125
}

# elsewhere REASON: this case is not for this run of the script (the NFS
# lane's run of a case that belongs to the plain mount): it ends as "runs
# elsewhere", neither passed nor skipped. A skip says something could not
# be tested here; this says it is tested in another lane.
_E2E_ELSEWHERE=86
elsewhere() {
  echo "--   [$(_e2e_where)]: runs elsewhere: $*"
  exit $_E2E_ELSEWHERE
}

pass() {
  echo "PASS [$TEST_NAME]${*:+: $*}"
}

note() {
  echo "-- [$(_e2e_where)] $*" >&2
}

# wait_until WHAT SECONDS CMD...: runs CMD until it succeeds (every 0.1 s at
# first, then less often, at most 1 s apart); fails naming WHAT when it has
# not after SECONDS. The one way a test waits for a
# state: with a bound, never a fixed sleep.
wait_until() {
  local what=$1 bound=$2 t0=$SECONDS pause=0.1
  shift 2
  until "$@"; do
    ((SECONDS - t0 < bound)) || fail "waited ${bound}s for $what"
    sleep "$pause"
    _e2e_backoff
  done
}

# _e2e_backoff: the caller's next $pause of a poll: half as long again, at
# most 1 s (a state that comes at once is seen at once; a long wait costs little).
_e2e_backoff() {
  case $pause in
    0.1) pause=0.15 ;; 0.15) pause=0.2 ;; 0.2) pause=0.3 ;; 0.3) pause=0.5 ;; 0.5) pause=0.7 ;; *) pause=1 ;;
  esac
}

assert_eq() {  # ACTUAL EXPECTED [MSG]
  [[ $1 == "$2" ]] || fail "${3:-values differ}: got '$1', expected '$2'"
}

assert_contains() {  # HAYSTACK NEEDLE [MSG]
  if [[ $1 != *"$2"* ]]; then
    printf -- '--- text searched:\n%s\n---\n' "$1" >&2
    fail "${3:-missing text}: '$2' not found"
  fi
}

assert_not_contains() {  # HAYSTACK NEEDLE [MSG]
  if [[ $1 == *"$2"* ]]; then
    printf -- '--- text searched:\n%s\n---\n' "$1" >&2
    fail "${3:-unexpected text}: '$2' found"
  fi
}

# expect_exit CODE CMD...: runs CMD, keeps its stdout in $OUT and stderr in $ERR,
# and fails (printing both) unless it exits with CODE. CODE may be "nonzero".
OUT=""
ERR=""
RC=0
expect_exit() {
  local want=$1
  shift
  # Files of this process's own ($BASHPID), read without cat and kept for
  # the next call: no mktemp, cat or rm to start (docs/testing.md).
  local of=${SCRATCH:-/tmp}/.expect-$BASHPID.out ef=${SCRATCH:-/tmp}/.expect-$BASHPID.err
  RC=0
  "$@" >"$of" 2>"$ef" || RC=$?
  OUT=$(<"$of")
  ERR=$(<"$ef")
  local ok=0
  if [[ $want == nonzero ]]; then
    ((RC != 0)) && ok=1
  elif [[ $RC == "$want" ]]; then
    ok=1
  fi
  if ((ok == 0)); then
    {
      echo "--- command: $*"
      echo "--- stdout:"
      printf '%s\n' "$OUT"
      echo "--- stderr:"
      printf '%s\n' "$ERR"
      echo "---"
    } >&2
    fail "exit code $RC, expected $want: $*"
  fi
  return 0
}

# json_get JSON EXPR / json_file FILE EXPR: a Python expression over the
# parsed document d, printed (Debian's python3).
json_get() {
  /usr/bin/python3 -c 'import json, sys; d = json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"
}
json_file() {
  /usr/bin/python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# ------------------------------------------------------------------ cleanup

_E2E_CLEANUPS=()

# on_exit CMD: register a shell command (a string, eval'd) to run when the test
# exits, pass or fail. They run in reverse order of registration; their errors
# are ignored.
on_exit() {
  _E2E_CLEANUPS+=("$*")
}

_e2e_exit() {
  local rc=$?
  set +e
  trap - EXIT
  local i
  for ((i = ${#_E2E_CLEANUPS[@]} - 1; i >= 0; i--)); do
    eval "${_E2E_CLEANUPS[i]}" >/dev/null
  done
  if [[ ${_E2E_READY:-0} == 1 ]]; then
    "$FAKEPOD" up "${_E2E_POD_SIZE:-$FAKEPOD_WORKERS}" >/dev/null 2>&1
    reset_tpus >/dev/null 2>&1
  fi
  [[ ${E2E_PRIVATE_HOMES:-0} == 1 ]] && rm -f "$FAKEPOD_STATE/homes.d/$TEST_NAME"
  # gcloud's key and known hosts that this test made (tpu-vm ssh creates
  # them) go, so the next test starts as a first-time gcloud user again.
  # (Only once the test got as far as noting which of them were there.)
  local u f
  for u in alice bob carol; do
    [[ -n ${_E2E_GCLOUD_FILES+x} ]] || break
    for f in google_compute_engine google_compute_engine.pub google_compute_known_hosts; do
      [[ " ${_E2E_GCLOUD_FILES:-} " == *" $u/$f "* ]] || rm -f "$(user_home "$u")/.ssh/$f"
    done
  done
  # Keep the scratch dir of a failed test for debugging.
  if [[ -n ${SCRATCH:-} && $rc == 0 && ${E2E_KEEP_SCRATCH:-0} != 1 ]]; then
    rm -rf "$SCRATCH"
  fi
  exit "$rc"
}
trap _e2e_exit EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# ------------------------------------------------------------------ cases
# A test script is a list of named cases, as ccache's test suite is. A case is
# a function; e2e_case registers it with what it shows and the cases whose
# state it needs; e2e_run runs them in order, each in a subshell of its own.
# A failure (fail, an assert, a command under set -e) ends that case only: its
# own cleanups (on_exit inside it) run, the pod is scrubbed (no TPU holder, no
# job or watcher of the test users), and every case that does not need it
# still runs. Then a summary line, and the exit code: 1 if a case failed,
# else 125 (ctest's skip) if a case skipped or none passed: a script that
# could not test everything it holds says so, whatever else passed. A case
# that runs `elsewhere` (and those that need it) counts as neither.
#
#   verbatim() { ...; }
#   e2e_case verbatim "hostile arguments arrive verbatim on every worker"
#   e2e_case again "the same, from the dev VM" --needs verbatim
#   e2e_run
#
# E2E_CASES=REGEX runs only the cases whose names match, with what they need.
_E2E_CASE_NAMES=()
declare -A _E2E_CASE_DESC=() _E2E_CASE_NEEDS=()
_E2E_CASE=""

e2e_case() {  # NAME DESCRIPTION [--needs NAME...]
  local name=$1 desc=$2 n
  shift 2
  declare -F "$name" >/dev/null || fail "e2e_case: no function named $name"
  [[ -z $(type -P "$name") ]] || fail "e2e_case: $name is also a program on PATH; name the case otherwise"
  [[ -z ${_E2E_CASE_DESC[$name]+x} ]] || fail "e2e_case: $name registered twice"
  if [[ ${1:-} == --needs ]]; then
    shift
    for n in "$@"; do
      [[ -n ${_E2E_CASE_DESC[$n]+x} ]] || fail "e2e_case $name: it needs $n, which is not registered before it"
    done
  fi
  _E2E_CASE_NAMES+=("$name")
  _E2E_CASE_DESC[$name]=$desc
  _E2E_CASE_NEEDS[$name]="$*"
}

# _e2e_selected NAME: E2E_CASES is unset, or NAME or a case that needs it
# (directly or not) matches it.
_e2e_selected() {
  [[ -z ${E2E_CASES:-} || $1 =~ $E2E_CASES ]] && return 0
  local other
  for other in "${_E2E_CASE_NAMES[@]}"; do
    [[ " ${_E2E_CASE_NEEDS[$other]} " == *" $1 "* ]] && _e2e_selected "$other" && return 0
  done
  return 1
}

_e2e_case_exit() {
  local rc=$? i
  set +e
  trap - EXIT
  for ((i = ${#_E2E_CLEANUPS[@]} - 1; i >= _E2E_CASE_FROM; i--)); do
    eval "${_E2E_CLEANUPS[i]}" >/dev/null
  done
  exit "$rc"
}

_e2e_case_body() {  # NAME: the case in a subshell; its exit code
  (
    _E2E_CASE=$1
    _E2E_CASE_FROM=${#_E2E_CLEANUPS[@]}
    trap _e2e_case_exit EXIT
    trap 'exit 143' TERM
    trap 'exit 130' INT
    set -euo pipefail
    "$1"
  )
}

e2e_run() {
  local name need rc t0 failed=() passed=0 skipped=() elsewhere=0
  declare -A result=()
  for name in "${_E2E_CASE_NAMES[@]}"; do
    _e2e_selected "$name" || continue
    for need in ${_E2E_CASE_NEEDS[$name]}; do
      if [[ ${result[$need]:-} == "runs elsewhere" ]]; then
        echo "--   [$TEST_NAME/$name]: runs elsewhere, with $need"
        result[$name]="runs elsewhere"
        elsewhere=$((elsewhere + 1))
        continue 2
      fi
      if [[ ${result[$need]:-} != ok ]]; then
        echo "SKIP [$TEST_NAME/$name]: it needs $need, which ${result[$need]:-did not run}"
        result[$name]="was skipped"
        skipped+=("$name")
        continue 2
      fi
    done
    note "case $name: ${_E2E_CASE_DESC[$name]}"
    t0=$SECONDS
    set +e
    _e2e_case_body "$name"
    rc=$?
    set -e
    case $rc in
      0)
        echo "ok   [$TEST_NAME/$name] ($((SECONDS - t0)) s) ${_E2E_CASE_DESC[$name]}"
        result[$name]=ok
        passed=$((passed + 1))
        ;;
      125)
        result[$name]="was skipped"
        skipped+=("$name")
        ;;
      "$_E2E_ELSEWHERE")
        result[$name]="runs elsewhere"
        elsewhere=$((elsewhere + 1))
        ;;
      *)
        echo "FAIL [$TEST_NAME/$name] (exit $rc after $((SECONDS - t0)) s) ${_E2E_CASE_DESC[$name]}"
        result[$name]=failed
        failed+=("$name")
        _e2e_scrub
        ;;
    esac
  done
  local also=""
  ((elsewhere == 0)) || also=", $elsewhere elsewhere"
  echo "== [$TEST_NAME] $passed passed, ${#failed[@]} failed${failed[*]:+ (${failed[*]})}," \
    "${#skipped[@]} skipped${skipped[*]:+ (${skipped[*]})}$also"
  ((${#failed[@]} == 0)) || exit 1
  ((${#skipped[@]} == 0 && passed > 0)) || exit 125
  return 0
}

# _e2e_scrub: after a failed case, the pod as the next case expects it: every
# worker up, no TPU holder, no watcher of this pod's runs and no process of
# the test users on its workers.
_e2e_scrub() {
  {
    _e2e_kill_leftovers
    "$FAKEPOD" up "${_E2E_POD_SIZE:-$FAKEPOD_WORKERS}"
    reset_tpus
  } >/dev/null 2>&1 || true
}

# ------------------------------------------------------------------ setup

[[ $(id -u) == 0 ]] || skip "the e2e tests need root (they drive scripts/fakepod)"
[[ -x $FAKEPOD ]] || fail "$FAKEPOD not found"

# A test that ctest killed at its timeout may have left a worker frozen
# (freeze_worker: every process SIGSTOPped, its thaw never run): thaw it.
for _f in "${FAKEPOD_STATE:-/var/lib/tpurun-fakepod}"/w*/init.pid; do
  [[ -f $_f ]] || continue
  _init=$(cat "$_f")
  [[ $(ps -o stat= -p "$_init" 2>/dev/null) == T* ]] || continue
  _ns=$(readlink "/proc/$_init/ns/pid") || continue
  note "a worker left frozen by an earlier test ($_f): thawing it"
  for _p in /proc/[0-9]*; do
    [[ $(readlink "$_p/ns/pid" 2>/dev/null) == "$_ns" ]] && kill -CONT "${_p#/proc/}" 2>/dev/null
  done
done
"$FAKEPOD" up "$FAKEPOD_WORKERS" >&2 || fail "fakepod up $FAKEPOD_WORKERS failed"
eval "$("$FAKEPOD" env)"
# _e2e_kill_leftovers: the watchers of this pod's runs (only this pod's, by its
# NFS dir: other pods may be in use by other tests), then every process of the
# test users on this pod's workers (their wrappers, trainers, sessions).
_e2e_kill_leftovers() {
  local p
  for p in $(pgrep -u alice,bob,carol -f -- " _watcher $FAKEPOD_NFS/" || true); do
    note "a watcher left behind: $(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null); stopping it"
    kill -9 "$p" 2>/dev/null || true
  done
  "$FAKEPOD" scrub --users alice,bob,carol >/dev/null 2>&1 || true
}
# A test that ctest killed at its timeout leaves its runs' watchers behind
# (they are detached): they would go on acting on pods the next test reuses.
if pgrep -u alice,bob,carol -f -- " _watcher $FAKEPOD_NFS/" >/dev/null; then
  _e2e_kill_leftovers
fi
export FAKEPOD_STATE FAKEPOD_NFS FAKEPOD_NET FAKEPOD_WORKERS FAKEPOD_CONFIG FAKEPOD_API FAKEPOD_GCLOUD_CONFIGS \
  FAKEPOD_NFS_MODE FAKEPOD_NFS_EXPORT FAKEPOD_NFS_OPTIONS
_E2E_READY=1

TPURUN="$FAKEPOD_STATE/bin/tpurun"
if [[ -n ${TPURUN_BIN:-} ]]; then
  [[ -x $TPURUN_BIN ]] || fail "TPURUN_BIN=$TPURUN_BIN is not an executable"
  install -d -m 755 "$FAKEPOD_STATE/bin"
  install -m 755 "$TPURUN_BIN" "$FAKEPOD_STATE/bin/.tpurun.$$"
  mv -f "$FAKEPOD_STATE/bin/.tpurun.$$" "$TPURUN"
fi

# install_trainer DIR [OWNER]: the fake trainer's files into DIR: train.py,
# README.md, its copy of libtpu's metrics service (libtpu_metrics.py), its
# profiler server (profiler_server.py) and their message classes in tpu_info/proto/.
install_trainer() {
  local d=$1 own=()
  [[ -n ${2:-} ]] && own=(-o "$2" -g "$(id -gn "$2")")
  local src=$TPURUN_SOURCE_DIR/examples/trainer
  install -d -m 755 "${own[@]}" "$d" "$d/tpu_info" "$d/tpu_info/proto"
  install -m 644 "${own[@]}" "$src/train.py" "$src/README.md" "$src/libtpu_metrics.py" "$src/profiler_server.py" \
    "$src/hang.py" "$d/"
  install -m 644 "${own[@]}" "$src/tpu_info/__init__.py" "$d/tpu_info/"
  install -m 644 "${own[@]}" "$src"/tpu_info/proto/*.py "$d/tpu_info/proto/"
}

install -d -m 755 "$FAKEPOD_STATE/trainer" "$FAKEPOD_STATE/stubs"
install_trainer "$FAKEPOD_STATE/trainer"
chmod 755 "$FAKEPOD_STATE/trainer/train.py"
install -m 755 "$E2E_DIR/stubs/gcloud" "$FAKEPOD_STATE/stubs/gcloud"

# Which gcloud the tests run: the real Google Cloud CLI when it is installed
# (E2E_GCLOUD=real), else the stub (E2E_GCLOUD=stub; TPURUN_E2E_GCLOUD=stub
# forces it). Both talk to the simulator's API through each user's private
# CLOUDSDK_CONFIG ($FAKEPOD_GCLOUD_CONFIGS/<user>, from `fakepod env`).
if [[ ${TPURUN_E2E_GCLOUD:-} != stub ]] && E2E_GCLOUD_BIN=$(PATH=/usr/local/bin:/usr/bin:/bin command -v gcloud); then
  E2E_GCLOUD=real
  E2E_GCLOUD_PATH=/usr/local/bin:/usr/bin:/bin
  _sdk=$(readlink -f "$E2E_GCLOUD_BIN")
  note "gcloud: the real one ($E2E_GCLOUD_BIN, Google Cloud SDK $(cat "${_sdk%/bin/gcloud}/VERSION" 2>/dev/null || echo '?')) against $FAKEPOD_API"
else
  E2E_GCLOUD=stub
  E2E_GCLOUD_PATH=$FAKEPOD_STATE/stubs:/usr/local/bin:/usr/bin:/bin
  note "gcloud: the stub (tests/e2e/stubs/gcloud) against $FAKEPOD_API"
fi
export E2E_GCLOUD

if [[ ${E2E_PRIVATE_HOMES:-0} != 1 ]]; then
  _E2E_GCLOUD_FILES=""
  for _u in alice bob carol; do
    for _f in google_compute_engine google_compute_engine.pub google_compute_known_hosts; do
      [[ -e $(getent passwd "$_u" | cut -d: -f6)/.ssh/$_f ]] && _E2E_GCLOUD_FILES+=" $_u/$_f"
    done
  done
fi

_scratch_root=/var/tmp/tpurun-e2e
[[ $FAKEPOD_STATE == /var/lib/tpurun-fakepod ]] || _scratch_root+=-$(basename "$FAKEPOD_STATE")
SCRATCH=$_scratch_root/$TEST_NAME
rm -rf "$SCRATCH"
install -d -m 755 "$_scratch_root" "$SCRATCH"
: >"$SCRATCH/.trainers"

# Private homes (E2E_PRIVATE_HOMES=1: tests/e2e/CMakeLists.txt sets it for the
# tests that run gcloud). Each user's HOME is then $SCRATCH/.home/<user>,
# with a copy of their ~/.ssh (key, known_hosts): gcloud's key and known hosts
# (~/.ssh/google_compute_*, which its first `tpu-vm ssh` makes) and tpurun's
# ~/.tpurun are this test's own, so tests on different pods run beside each
# other, each as a first-time gcloud user. The link in $FAKEPOD_STATE/homes.d
# has the pod's simulator settle these known_hosts as it does the real ones
# (sim/fakepod/host.py, user_homes) when `up` or a restored VM brings new keys.
if [[ ${E2E_PRIVATE_HOMES:-0} == 1 ]]; then
  install -d -m 755 "$SCRATCH/.home" "$FAKEPOD_STATE/homes.d"
  ln -sfn "$SCRATCH/.home" "$FAKEPOD_STATE/homes.d/$TEST_NAME"
fi

# ------------------------------------------------------------------ pod

worker_ip() {  # I (FAKEPOD_NET: 127.X gives 127.X.<1+I/250>.<1+I%250>, 127.X.Y gives 127.X.Y.<1+I>)
  local net=${FAKEPOD_NET:-127.0}
  if [[ $net == *.*.* ]]; then
    printf '%s.%d\n' "$net" $((1 + $1))
  else
    printf '%s.%d.%d\n' "$net" $((1 + $1 / 250)) $((1 + $1 % 250))
  fi
}

# carved_pod NAME FIRST LAST [LOGS_ROOT]: a config entry for a pod made of
# workers FIRST..LAST of the simulator, on its shared mount (for tests that
# need several pods: board, multi-slice).
carved_pod() {
  local ips="" i
  for ((i = $2; i <= $3; i++)); do ips+="${ips:+, }\"$(worker_ip "$i")\""; done
  printf '"%s": { "workers": [%s], "ssh": { "identity_file": "~/.ssh/id_ed25519", "known_hosts": "~/.ssh/known_hosts", "host_key_policy": "accept-new", "connect_timeout_s": 5 }, "staging_root": "%s/staging", "logs_root": "%s" }' \
    "$1" "$ips" "$FAKEPOD_NFS" "${4:-$FAKEPOD_NFS/logs}"
}

# E2E_POD_WORKERS=K (tests/e2e/CMakeLists.txt sets it for the tests that
# only need "the pod", not eight workers): the test's pod is the lane pod's
# first K workers (its config, FAKEPOD_CONFIG, and N=FAKEPOD_WORKERS), the
# same pod "sim" the simulator's config names, only smaller. The other
# workers stay up and idle, so the lane's next test finds the pod as it was.
# Nearly all of an e2e test's CPU grows with the workers a command meets
# (docs/testing.md: test_tensorboard took 29.8 CPU-s on eight, 17.6 on four).
_E2E_POD_SIZE=$FAKEPOD_WORKERS
if [[ -n ${E2E_POD_WORKERS:-} ]] && ((E2E_POD_WORKERS < FAKEPOD_WORKERS)); then
  printf '{ "default_pod": "sim",\n  "pods": { %s } }\n' "$(carved_pod sim 0 $((E2E_POD_WORKERS - 1)))" >"$SCRATCH/pod.json"
  chmod 644 "$SCRATCH/pod.json"
  FAKEPOD_CONFIG=$SCRATCH/pod.json
  FAKEPOD_WORKERS=$E2E_POD_WORKERS
  note "the test's pod: workers 0-$((FAKEPOD_WORKERS - 1)) of the lane's $_E2E_POD_SIZE (E2E_POD_WORKERS)"
fi

worker_hostname() {  # I
  echo "t1v-n-fakepod-w-$1"
}

# srv PATH: where root, the test's observer, reads or changes PATH, a path on
# the shared mount ($FAKEPOD_NFS/...): the same path on a plain shared dir; in
# NFS mode (FAKEPOD_NFS_MODE=fuse) the file as the NFS server has it, in
# $FAKEPOD_NFS_EXPORT: root on a client is squashed to nobody, and a client's
# caches would make the test's own checks stale. tpurun and the users always
# go through the clients.
srv() {
  case $1 in
    "$FAKEPOD_NFS" | "$FAKEPOD_NFS"/*) printf '%s\n' "$FAKEPOD_NFS_EXPORT${1#"$FAKEPOD_NFS"}" ;;
    *) printf '%s\n' "$1" ;;
  esac
}

# mount_path PATH: the inverse of srv: the path on the shared mount of a file in
# $FAKEPOD_NFS_EXPORT (what tpurun and the jobs name it).
mount_path() {
  case $1 in
    "$FAKEPOD_NFS_EXPORT" | "$FAKEPOD_NFS_EXPORT"/*) printf '%s\n' "$FAKEPOD_NFS${1#"$FAKEPOD_NFS_EXPORT"}" ;;
    *) printf '%s\n' "$1" ;;
  esac
}

# nfs_mode: true when the pod's shared dir is NFS-like client mounts.
nfs_mode() {
  [[ ${FAKEPOD_NFS_MODE:-bind} == fuse ]]
}

# fakepod ARGS...: scripts/fakepod (e.g. `fakepod stop-worker 3`,
# `on_exit "fakepod start-worker 3"`, `fakepod exec 2 -- ls /tmp`).
fakepod() {
  "$FAKEPOD" "$@"
}

# wexec I [--user U] -- CMD...: run CMD inside worker I (see fakepod exec).
wexec() {
  "$FAKEPOD" exec "$@"
}

# _e2e_user U: U's home and group id in _E2E_HOME[U] and _E2E_GID[U], read
# once per process (as_user runs for every tpurun call, and on this kind of
# machine each process start costs milliseconds of CPU: docs/testing.md).
declare -A _E2E_HOME=() _E2E_GID=()
_e2e_user() {
  [[ -n ${_E2E_HOME[$1]:-} ]] && return 0
  local entry gid home
  entry=$(getent passwd "$1") || return 0
  IFS=: read -r _ _ _ gid _ home _ <<<"$entry"
  if [[ ${E2E_PRIVATE_HOMES:-0} == 1 ]]; then
    local private=$SCRATCH/.home/$1 f
    install -d -m 755 -o "$1" -g "$gid" "$private"
    install -d -m 700 -o "$1" -g "$gid" "$private/.ssh"
    for f in id_ed25519 id_ed25519.pub known_hosts config; do
      [[ -e $home/.ssh/$f && ! -e $private/.ssh/$f ]] && cp -p "$home/.ssh/$f" "$private/.ssh/$f"
    done
    home=$private
  fi
  _E2E_HOME[$1]=$home
  _E2E_GID[$1]=$gid
}

user_home() {  # U: U's home on the dev VM (this host): with E2E_PRIVATE_HOMES, the test's own
  _e2e_user "$1"
  echo "${_E2E_HOME[$1]:-}"
}

# worker_home U: U's home on the workers, where a login lands (their passwd's,
# on each worker's own disk: the same path on two workers is two dirs). The
# private homes are the dev VM's only: they live in the scratch dir, which
# every worker sees, so a worker's files never go there.
worker_home() {
  getent passwd "$1" | cut -d: -f6
}

# _e2e_user_dir U: makes the per-test scratch dir of U ($SCRATCH/U) if needed.
_e2e_user_dir() {
  [[ -d $SCRATCH/$1 ]] && return 0
  _e2e_user "$1"
  install -d -m 755 -o "$1" -g "${_E2E_GID[$1]}" "$SCRATCH/$1"
}

# user_dir U: the per-test scratch dir owned by U ($SCRATCH/U). Prints it.
user_dir() {
  _e2e_user_dir "$1"
  echo "$SCRATCH/$1"
}

# scratch_dir U: the same as user_dir.
scratch_dir() {
  user_dir "$@"
}

# make_project U [NAME]: a project dir owned by U holding the fake trainer
# (train.py, README.md, its metrics service). Prints its path.
make_project() {
  local u=$1 name=${2:-proj} d
  d=$(user_dir "$u")/$name
  install_trainer "$d" "$u"
  echo "$d"
}

# as_user U [-C DIR] CMD...: run CMD as local user U with a clean login-like
# environment (HOME, USER, LOGNAME, SHELL, LANG, PATH with gcloud on it (the
# real one, or the stub first), CLOUDSDK_CONFIG (U's private gcloud config for
# the simulator), XDG_CACHE_HOME=$SCRATCH/U/.cache (tpurun's cache, per test),
# plus the words of $AS_USER_ENV, e.g. AS_USER_ENV="TPURUN_X=1"),
# in DIR (default: $SCRATCH/U), stdin from $AS_USER_STDIN (default /dev/null),
# under a bound (tests/e2e/bound): TERM after $E2E_TIMEOUT seconds (default
# 300), so a command that hangs (a `logs -f` whose gang never stops) fails its
# case in minutes, not at ctest's timeout. The bound ignores INT and TERM and
# forwards nothing: a signal for the command goes to `client_pid $!` when it
# was started in the background (`as_user ... &`).
as_user() {
  local u=$1
  shift
  local dir=""
  if [[ ${1:-} == -C ]]; then
    dir=$2
    shift 2
  fi
  _e2e_user "$u"
  _e2e_user_dir "$u"
  [[ -n $dir ]] || dir=$SCRATCH/$u
  local home=${_E2E_HOME[$u]:-} extra=() cache
  # tpurun's cache (kept describe answers, --env values) per test and user:
  # a describe kept by another test, or by a pod beside this one with the
  # same TPU name, never answers for this one.
  cache=$SCRATCH/$u/.cache
  [[ -n $home ]] || fail "no such user: $u"
  # shellcheck disable=SC2206
  [[ -n ${AS_USER_ENV:-} ]] && extra=($AS_USER_ENV)
  (
    cd "$dir"
    exec "$E2E_DIR/bound" "${E2E_TIMEOUT:-300}" setpriv --reuid="$u" --regid="${_E2E_GID[$u]}" --init-groups -- \
      env -i HOME="$home" USER="$u" LOGNAME="$u" SHELL=/bin/bash LANG=C.UTF-8 \
      PATH="$E2E_GCLOUD_PATH" CLOUDSDK_CONFIG="$FAKEPOD_GCLOUD_CONFIGS/$u" XDG_CACHE_HOME="$cache" \
      TPURUN_KEEP="${E2E_KEEP:-0}" FAKEPOD_STATE="$FAKEPOD_STATE" "${extra[@]+"${extra[@]}"}" "$@" <"${AS_USER_STDIN:-/dev/null}"
  )
}

# client_pid PID: the pid of the command that `as_user ... &` (or tpurun_as)
# started in the background, $! given as PID: under that subshell the bound,
# under the bound the command. For signals meant for tpurun itself.
client_pid() {
  local b c t0=$SECONDS
  until b=$(pgrep -P "$1" | head -1) && [[ -n $b ]] && c=$(pgrep -P "$b" | head -1) && [[ -n $c ]]; do
    ((SECONDS - t0 < 30)) || fail "no command under the background client $1"
    sleep 0.05
  done
  echo "$c"
}

require_tpurun() {
  [[ -x $TPURUN ]] || skip "no tpurun binary (set TPURUN_BIN)"
}

# tpurun_as U [-C DIR] ARGS...: tpurun --config $FAKEPOD_CONFIG ARGS... as user U.
tpurun_as() {
  local u=$1
  shift
  [[ -x $TPURUN ]] || fail "no tpurun binary at $TPURUN (set TPURUN_BIN)"
  local cd=()
  if [[ ${1:-} == -C ]]; then
    cd=(-C "$2")
    shift 2
  fi
  as_user "$u" "${cd[@]+"${cd[@]}"}" "$TPURUN" --config "$FAKEPOD_CONFIG" "$@"
}

# ssh_as U I CMD...: plain OpenSSH from local user U to worker I with the
# user's simulator key and a per-test known_hosts file, 5s connect timeout.
ssh_as() {
  local u=$1 i=$2
  shift 2
  local home
  home=$(user_home "$u")
  as_user "$u" ssh -i "$home/.ssh/id_ed25519" -o IdentitiesOnly=yes \
    -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile="$(user_dir "$u")/known_hosts" \
    -o BatchMode=yes -o ConnectTimeout=5 -o GSSAPIAuthentication=no -o LogLevel=ERROR \
    "$u@$(worker_ip "$i")" -- "$@"
}

# forget_host_key I: drop worker I's key from every simulator user's
# ~/.ssh/known_hosts (after a rekey, so later tests don't trip over it).
forget_host_key() {
  local u home ip
  ip=$(worker_ip "$1")
  for u in root alice bob carol; do
    home=$(user_home "$u") || continue
    [[ -f $home/.ssh/known_hosts ]] || continue
    ssh-keygen -q -R "$ip" -f "$home/.ssh/known_hosts" >/dev/null 2>&1 || true
    rm -f "$home/.ssh/known_hosts.old"
    chown "$u:" "$home/.ssh/known_hosts" 2>/dev/null || true
  done
}

# rekey_worker I: fakepod rekey I, and forget the old key at exit.
rekey_worker() {
  "$FAKEPOD" rekey "$1" >&2
  on_exit "forget_host_key $1"
}

# stop_worker I / blackhole_worker I: also restore the worker at exit.
stop_worker() {
  on_exit "\"\$FAKEPOD\" start-worker $1"
  "$FAKEPOD" stop-worker "$1" >&2
}

blackhole_worker() {
  on_exit "\"\$FAKEPOD\" start-worker $1"
  "$FAKEPOD" blackhole "$1" >&2
}

# ------------------------------------------------------------------ trainer

trainer_path() {
  echo "$FAKEPOD_STATE/trainer/train.py"
}

# start_trainer_on I U [ARGS...]: start the fake trainer detached (own session,
# output to /tmp/fake-trainer.<pid>.log on that worker) on worker I as user U,
# wait until it holds the lock and the devices (and its --children K are up),
# and print its pid as seen inside the worker. It is killed at test exit.
start_trainer_on() {
  local w=$1 u=$2
  shift 2
  local kids=0 a prev=""
  for a in "$@"; do
    [[ $prev == --children ]] && kids=$a
    [[ $a == --children=* ]] && kids=${a#--children=}
    prev=$a
  done
  local pid
  # The subshell's pid is $!; `exec setsid` keeps it (a non-leader calls
  # setsid() without forking), so $! is the trainer's pid.
  # shellcheck disable=SC2016
  pid=$("$FAKEPOD" exec "$w" --user "$u" -- bash -c \
    '( exec setsid python3 "$0" "$@" >"/tmp/fake-trainer.$BASHPID.log" 2>&1 </dev/null ) & echo $!' \
    "$(trainer_path)" "$@") || fail "could not start the trainer on worker $w"
  [[ $pid =~ ^[0-9]+$ ]] || fail "bad trainer pid '$pid'"
  echo "$w $pid" >>"$SCRATCH/.trainers"
  # shellcheck disable=SC2016
  "$FAKEPOD" exec "$w" -- bash -c '
    pid=$1 want=$(($2 + 1)) log=/tmp/fake-trainer.$1.log
    for _ in $(seq 200); do
      if [[ $(cat /tmp/libtpu_lockfile 2>/dev/null) == "$pid" ]] &&
         (( $(grep -c " holds " "$log" 2>/dev/null || true) >= want )); then
        exit 0
      fi
      if ! kill -0 "$pid" 2>/dev/null; then
        echo "trainer $pid died:" >&2; cat "$log" >&2; exit 1
      fi
      sleep 0.05
    done
    echo "trainer $pid did not take the TPU in 10s:" >&2; cat "$log" >&2; exit 1' _ "$pid" "$kids" \
    >&2 || fail "trainer on worker $w (user $u, args: $*) did not start"
  echo "$pid"
}

# trainer_log I PID: the output of a trainer started by start_trainer_on.
trainer_log() {
  "$FAKEPOD" exec "$1" -- cat "/tmp/fake-trainer.$2.log"
}

# tpu_holders I: "pid user path" for every process on worker I with a TPU
# device open (the way tpu-info and lsof find them), sorted by pid.
tpu_holders() {
  # One find over every fd (not a readlink per fd), then a stat per holder.
  # shellcheck disable=SC2016
  "$FAKEPOD" exec "$1" -- bash -c '
    find /proc/[0-9]*/fd -mindepth 1 -maxdepth 1 \( -lname "/dev/accel*" -o -lname "/dev/vfio/[0-9]*" \) \
        -printf "%h %l\n" 2>/dev/null | sort -u | while read -r dir t; do
      p=${dir#/proc/}; p=${p%%/*}
      echo "$p $(stat -c %U "/proc/$p" 2>/dev/null) $t"
    done | sort -n | uniq'
}

# reset_tpus: on every worker, SIGKILL each process group holding a TPU device
# (the trainers this test started among them), then remove /tmp/libtpu_lockfile,
# /tmp/tpu_logs and the trainer logs: `fakepod scrub`, one pass from the host.
# The EXIT trap calls it.
reset_tpus() {
  "$FAKEPOD" scrub >/dev/null 2>&1 || true
  : >"$SCRATCH/.trainers"
}
