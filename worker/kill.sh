# The remote half of `tpurun kill` (docs/protocols.md). It re-checks on the
# worker, at the last moment, what the plan assumed: a pid is signalled only
# while it is still the same process (start time) with the same owner, a
# group only while one of its planned members is alive in it.
#
# Args: GRACE_CENTISECONDS AUDIT(0|1) ITEM...
#   ITEM: g:PGID (signal that group) | PID:UID:PGID:START (a victim; START: its start time)
#   AUDIT=1 (--force, as root): one syslog record per victim (`logger -t tpurun`) before
#   any signal; if one cannot be written, nothing is signalled.
# Output (KILL_HEADER first), one record per line:
#   signal SIG TARGET ok|failed     TARGET: -PGID or PID
#   gone PID before|term|kill
#   alive PID                       survived SIGKILL
#   skipped PID REASON
#   end
# tpurun-embed: tokens
# tpurun-embed: include lib/prelude.sh
# tpurun-embed: include lib/pstat.sh
echo "$KILL_HEADER"
grace=$1 audit=$2
shift 2
case $grace in ''|*[!0-9]*) grace=0 ;; esac
# now: centiseconds since boot, into $t (no fork).
now() {
  read -r t _ </proc/uptime
  t=${t%%.*}${t#*.}
  while :; do case $t in 0?*) t=${t#0} ;; *) break ;; esac; done
  case $t in ''|*[!0-9]*) t=0 ;; esac
}
# ident PID: sets st (start time), eu (effective uid), pg (pgid); fails when
# the process is gone or a zombie.
ident() {
  pstat "$1" || return 1
  eu=
  while read -r _k _a _b _; do
    if [ "$_k" = Uid: ]; then eu=$_b; break; fi
  done </proc/"$1"/status
  [ -n "$eu" ]
}
# alive PID:START: that pid is still the process we were asked about.
alive() { ident "${1%%:*}" && [ "$st" = "${1#*:}" ]; }
# send SIG: each planned group that still has a live victim in it, then each
# live victim outside the groups just signalled.
send() {
  sent=
  for g in $groups; do
    for v in $victims; do
      if alive "$v" && [ "$pg" = "$g" ]; then
        if kill -s "$1" -- "-$g"; then r=ok; else r=failed; fi
        echo "signal $1 -$g $r"
        sent="$sent $g"
        break
      fi
    done
  done
  for v in $victims; do
    alive "$v" || continue
    case " $sent " in *" $pg "*) continue ;; esac
    if kill -s "$1" "${v%%:*}"; then r=ok; else r=failed; fi
    echo "signal $1 ${v%%:*} $r"
  done
}
# wait_gone CENTISECONDS: until every victim is gone or time is up; the
# survivors are left in $left.
wait_gone() {
  now
  _end=$((t + $1))
  while :; do
    left=
    for v in $victims; do alive "$v" && left="$left $v"; done
    [ -z "$left" ] && return
    now
    [ "$t" -ge "$_end" ] && return
    sleep 0.1
  done
}
# audit_all: one syslog record per victim, as root (--force). The journal
# stamps each record with the sender's uid, which no user can forge.
audit_all() {
  for v in $victims; do
    p=${v%%:*}
    ident "$p" || continue
    cmd=$(tr '\0' ' ' </proc/"$p"/cmdline | tr -c ' -~' '?' | cut -c1-300)
    logger --socket-errors=on -t tpurun -p auth.notice -- \
      "kill --force by ${SUDO_USER:-root} (uid ${SUDO_UID:-0}): pid=$p uid=$eu start=$st pgid=$pg cmd=$cmd" ||
      return 1
  done
}

set -f
victims='' groups=''
for it do
  case $it in
    g:*)
      g=${it#g:}
      case $g in ''|*[!0-9]*) echo "skipped $g bad-group"; continue ;; esac
      groups="$groups $g" ;;
    *)
      case $it in *[!0-9:]*|:*|*::*|*:|*:*:*:*:*) echo 'skipped 0 bad-item'; continue ;; *:*:*:*) ;;
        *) echo 'skipped 0 bad-item'; continue ;; esac
      p=${it%%:*} r=${it#*:}
      u=${r%%:*} want_st=${r##*:}
      if ! ident "$p"; then echo "gone $p before"; continue; fi
      if [ "$st" != "$want_st" ]; then echo "skipped $p pid-reused"; continue; fi
      if [ "$eu" != "$u" ]; then echo "skipped $p owner-changed"; continue; fi
      victims="$victims $p:$st" ;;
  esac
done

if [ "$audit" = 1 ] && [ -n "$victims" ] && ! audit_all; then
  for v in $victims; do echo "skipped ${v%%:*} audit-failed"; done
  echo end
  exit 0
fi
send TERM
wait_gone "$grace"
for v in $victims; do
  case " $left " in *" $v "*) ;; *) echo "gone ${v%%:*} term" ;; esac
done
if [ -n "$left" ]; then
  victims=$left
  send KILL
  wait_gone 500
  for v in $victims; do
    case " $left " in *" $v "*) echo "alive ${v%%:*}" ;; *) echo "gone ${v%%:*} kill" ;; esac
  done
fi
echo end
