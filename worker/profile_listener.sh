# Who serves the profiler port on a worker, asked before `tpurun profile`
# calls it (docs/protocols.md): the kernel's socket table gives the
# listener's owner to anyone (/proc/net/tcp{,6}: local address, state 0A =
# LISTEN, uid, inode); for the user's own listener, the process holding that
# socket and its run (RUN_ID_VARIABLE in its environment, readable by its
# owner). Runs as the login user: sudo would make every listener "other".
#
# Args: PORT. Answers one line: "none", "listener UID USER other", or
# "listener UID USER mine PID|- RUN_ID|-".
# tpurun-embed: tokens
PATH=/usr/sbin:/usr/bin:/sbin:/bin; LC_ALL=C; export PATH LC_ALL
hex=$(printf '%04X' "$1")
line=$(cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
  awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { print $8, $10; exit }')
if [ -z "$line" ]; then echo none; exit 0; fi
# shellcheck disable=SC2086 # uid and inode: two words
set -- $line
uid=$1 inode=$2
user=$(getent passwd "$uid" | cut -d: -f1)
if [ "$uid" != "$(id -u)" ]; then echo "listener $uid ${user:--} other"; exit 0; fi
# shellcheck disable=SC2012 # ls -l is the one listing that names each fd's socket
pid=$(ls -l /proc/[0-9]*/fd 2>/dev/null | awk -v s="socket:[$inode]" '
  /^\/proc\/[0-9]+\/fd:$/ { split($0, a, "/"); p = a[3]; next }
  $NF == s { print p; exit }')
run=
[ -n "$pid" ] && run=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | sed -n "s/^$RUN_ID_VARIABLE=//p" | head -n 1)
echo "listener $uid ${user:--} mine ${pid:--} ${run:--}"
