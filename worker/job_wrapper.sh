# shellcheck shell=sh
# shellcheck disable=SC2154 # job_env, pidf, exitf, tmpd: exported by launch.sh
# The job's wrapper where perl is missing (launch.sh starts it with this
# program on its stdin; job_wrapper.pl is the usual one): the job's output
# goes straight to the log (this sh's stdout), without the relay's syncs.
# Args: TITLE COMMAND... (the title only shows in ps). Writes the pid record
# "<job> <job>" and, once the job has ended, its exit record, each through a
# temp file in tmpd (.tpurun-tmp in the log dir, which the mirror leaves out).
shift
trap ":" HUP INT TERM
( eval "$job_env"; unset job_env pidf exitf tmpd record tpurun_reserved tpurun_me tpurun_since; exec 9<&-; exec setsid "$@" ) </dev/null &
job=$!
echo "$job $job" > "$tmpd/${pidf##*/}.$$" && mv -f "$tmpd/${pidf##*/}.$$" "$pidf"
while :; do
  wait "$job"; code=$?
  kill -0 "$job" 2>/dev/null || break
done
echo "$code" > "$tmpd/${exitf##*/}.$$" && mv -f "$tmpd/${exitf##*/}.$$" "$exitf"
if [ -n "${record:-}" ] && read -r holder _ <"$record" 2>/dev/null && [ "$holder" = $$ ]; then rm -f "$record"; fi
