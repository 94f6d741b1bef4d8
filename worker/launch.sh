# shellcheck shell=sh
# shellcheck disable=SC2154 # run_id, logdir, log, snapshot, worker, attempt, ...: the header tpurun writes
# The launch of a job on a worker (runs/launch/launch.hpp; docs/protocols.md),
# run by `sh -s` as the login user, the script on its stdin (so nothing in it
# shows in any process's argv). tpurun writes a header before it: set -u;
# run_id logdir log snapshot worker attempt max_attempts pidf exitf pendingf;
# job_env (export lines, values quoted: the --env values live only there and
# in the job's environment, never in an argv); and "$@", the command. The
# processes it leaves behind:
#   wrapper  (setsid: own session, no run id in its environment, so
#             `tpurun kill` spares it; job_wrapper.pl relaying the job's output
#             to the log, else job_wrapper.sh; it shows in ps as
#             "tpurun-job RUN_ID wN")
#     └ job  (setsid again: pid = pgid = sid; what `tpurun kill` signals)
# The wrapper waits for the job and records its exit code, even when the job
# is killed by a signal, so the log dir always says how each worker ended.
# It writes only inside the log dir, and only once this has checked that the
# dir is the user's own and closed to other users' writes. Prints LAUNCHED
# and the job's pid once it runs; else exits with a LAUNCH_* code and says why
# on stderr.
# tpurun-embed: tokens
# unreachable WHAT PATH CODE: why PATH cannot be seen. A dir above it that
# exists but cannot be entered is the same user with another uid here than on
# the dev VM (NFS owns files by number), not a missing mount.
unreachable() {
  _d=$2
  while [ "$_d" != / ] && [ ! -e "$_d" ]; do _d=${_d%/*}; [ -n "$_d" ] || _d=/; done
  if [ -d "$_d" ] && [ ! -x "$_d" ]; then
    echo "$1 $2 cannot be reached on this worker: $_d belongs to uid $(stat -c %u "$_d") (mode $(stat -c %a "$_d")), and you are uid $(id -u) here; the same user has another uid on the dev VM, and NFS owns files by number (tpurun doctor; docs/cloud.md)" >&2
  else
    echo "$1 $2 is not visible on this worker: is the shared (NFS) mount there?" >&2
  fi
  exit "$3"
}
# revalidate PATH: opens each dir on the way to PATH, from the top. On NFS
# this worker's client may keep a stale view of a dir that another host made,
# removed or renamed (cached lookups, found or not, for a minute and more);
# opening a dir is NFS's close-to-open check of it, and a changed dir drops
# the names cached in it. Only on the way to an error, so it costs nothing.
revalidate() {
  _rest=${1#/} _p=
  while [ -n "$_rest" ]; do
    _p=$_p/${_rest%%/*}
    case $_rest in */*) _rest=${_rest#*/} ;; *) _rest= ;; esac
    true <"$_p" 2>/dev/null || return 0
  done
}
# perl_wrapper COMMAND...: job_wrapper.pl, detached, its program on its stdin.
# It says "<its pid> <the job's pid>" on fd 3 once the job has started, and
# closes it: $(perl_wrapper ...) reads that at once, with no polling.
# The wrapper checks the log dir itself before it writes there: until then
# its output goes nowhere (never to this script's: the channel would wait for
# it), and a refusal comes back on fd 3.
perl_wrapper() {
  setsid perl - "tpurun-job $run_id w$worker" "$log" "$pidf" "$exitf" "$pendingf" "$@" \
    3>&1 >/dev/null 2>&1 <<'TPURUN_JOB_WRAPPER' &
# tpurun-embed: include job_wrapper.pl
TPURUN_JOB_WRAPPER
}
# with_bootstrap COMMAND...: COMMAND with tpurun stacks' bootstrap
# (sitecustomize.py; docs/stacks.md) on its fd 4, for either wrapper's path:
# the script carries it once.
with_bootstrap() {
  "$@" 4<<'TPURUN_SITECUSTOMIZE'
# tpurun-embed: include sitecustomize.py
TPURUN_SITECUSTOMIZE
}
# write_bootstrap PATH: fd 4 (with_bootstrap) into PATH.
write_bootstrap() { cat <&4 >"$1"; }
# sh_wrapper COMMAND...: job_wrapper.sh, detached (where perl is missing).
sh_wrapper() {
  setsid sh -s "tpurun-job $run_id w$worker" "$@" >>"$log" 2>&1 <<'TPURUN_JOB_WRAPPER' &
# tpurun-embed: include job_wrapper.sh
TPURUN_JOB_WRAPPER
}
[ -d "$logdir" ] || revalidate "$logdir"
[ -d "$logdir" ] || unreachable "log dir" "$logdir" "$LAUNCH_NO_LOG_DIR"
cd "$snapshot" 2>/dev/null || { revalidate "$snapshot"; cd "$snapshot" 2>/dev/null; } ||
  unreachable snapshot "$snapshot" "$LAUNCH_NO_SNAPSHOT"
command -v setsid >/dev/null 2>&1 || { echo "setsid (util-linux) is missing on this worker" >&2; exit "$LAUNCH_NO_SETSID"; }
# Fd 9, when open, is this worker's reservation (reserve.sh): the wrapper
# keeps it while the job runs, and the job does not get it.
if command -v perl >/dev/null 2>&1; then
  # job_wrapper.pl does the rest itself (the log dir's check, its dirs, the
  # stacks bootstrap, the attempt's banner, the holder record): one process
  # where this shell would start six.
  # shellcheck disable=SC2090 # job_env is evaluated by the job's shell, quotes and all
  export pidf exitf job_env logdir worker attempt max_attempts run_id
  launched=$(with_bootstrap perl_wrapper "$@")
  case $launched in
    *[0-9]\ [0-9]*) wrapper=${launched%% *} pid=${launched#* } ;;
    "$WRAPPER_REFUSED "[0-9]*\ *)
      _why=${launched#"$WRAPPER_REFUSED "}
      echo "${_why#* }" >&2
      exit "${_why%% *}" ;;
    *) echo "the job did not start (its wrapper did not start: is perl whole?); see $log" >&2; exit "$LAUNCH_NOT_STARTED" ;;
  esac
else
  if [ -L "$logdir" ] || [ ! -O "$logdir" ] || [ -n "$(find "$logdir" -maxdepth 0 -perm /022 2>/dev/null)" ]; then
    echo "log dir $logdir is not ${tpurun_me:-${LOGNAME:-$(id -un)}}'s own, or others may write to it: refusing to write there" >&2
    exit "$LAUNCH_LOG_DIR_UNSAFE"
  fi
  if [ "$max_attempts" -gt 1 ]; then
    printf '==== tpurun: attempt %s of %s on %s at %s ====\n' "$attempt" "$max_attempts" "$(hostname)" \
      "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$log"
  fi
  # The wrapper's temp files go into a dir of their own (the log mirror leaves
  # out that name only, never a job's file for its spelling), and in it tpurun
  # stacks' bootstrap (sitecustomize.py; docs/stacks.md): first on the job's
  # PYTHONPATH, its dumps beside it, this worker's own dir (a shared log dir is
  # every worker's). Where it cannot be written, the job runs without it.
  # (job_wrapper.pl does the same where perl is.)
  tmpd=$logdir/$LOG_TMP_DIR
  stacksd=$tmpd/stacks/w$worker
  if ! mkdir -p "$stacksd/py" 2>/dev/null; then
    mkdir -p "$tmpd" 2>/dev/null || tmpd=$logdir
    stacksd=$tmpd/stacks/w$worker
    mkdir -p "$stacksd/py" 2>/dev/null || stacksd=
  fi
  # The exit record's reserved bytes wait in tmpd too: renamed into place at
  # the end (the same filesystem), and never mirrored, so a pod with no shared
  # mount leaves no stale workerN.exit.pending on the dev VM.
  [ "$tmpd" = "$logdir" ] || pendingf=$tmpd/${pendingf##*/}
  if [ -n "$stacksd" ] && with_bootstrap write_bootstrap "$stacksd/py/sitecustomize.py.$$" &&
    mv -f "$stacksd/py/sitecustomize.py.$$" "$stacksd/py/sitecustomize.py"; then
    # The dir, single-quoted for the job's shell (the wrappers do not pass tmpd
    # on): each ' becomes '\''.
    quoted='' _rest=$stacksd
    while :; do
      case $_rest in
        *\'*) quoted=$quoted${_rest%%\'*}"'\\''"; _rest=${_rest#*\'} ;;
        *) quoted=$quoted$_rest; break ;;
      esac
    done
    # shellcheck disable=SC2089 # its quotes are for the job's shell, which evals job_env
    job_env="$job_env
$STACKS_DIR_VARIABLE='$quoted'; export $STACKS_DIR_VARIABLE
PYTHONPATH=\$$STACKS_DIR_VARIABLE/py\${PYTHONPATH:+:\$PYTHONPATH}; export PYTHONPATH"
  fi
  # shellcheck disable=SC2090 # job_env is evaluated by the job's shell, quotes and all
  export pidf exitf job_env tmpd
  sh_wrapper "$@"
  wrapper=$!
  pid=
  if [ -n "${tpurun_reserved:-}" ]; then
    printf '%s %s %s %s\n' "$wrapper" "$run_id" "${tpurun_me:-$(id -un)}" "${tpurun_since:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}" \
      >"$record.tmp$$" && mv -f "$record.tmp$$" "$record"
  fi
fi
exec 9<&-
tries=0
while [ -z "$pid" ] && [ ! -s "$pidf" ]; do
  tries=$((tries + 1))
  if [ "$tries" -gt 200 ]; then echo "the job did not start within 20s; see $log" >&2; exit "$LAUNCH_NOT_STARTED"; fi
  sleep 0.1
done
[ -n "$pid" ] || read -r pid _ < "$pidf"
echo "$LAUNCHED $pid"
