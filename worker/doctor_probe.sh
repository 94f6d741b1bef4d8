# What `tpurun doctor` asks each worker, as the login user (docs/protocols.md):
# ids, sudo, devices, the shared roots and the probe file, the clock, /tmp,
# the Python stack. The TPU scan follows on the same connection.
#
# Args: PROBE TOKEN NROOTS ROOT... GLOB...; localroot=DIR in the environment
# (no shared mount: the worker's own root for snapshots).
# Output, one record per line: uid N | gid N | user NAME | sudo yes|no |
# root PRESENT FSTYPE PATH | device PATH | probe seen|different|unreadable|missing |
# localroot WRITABLE FREE_KIB | localuse STAGING_KIB LOGS_KIB | time NANOSECONDS | tmpfree KIB |
# versions PYTHON JAX JAXLIB LIBTPU | end
probe=$1 token=$2 nroots=$3
shift 3
echo "uid $(id -u)"
echo "gid $(id -g)"
echo "user $(id -un)"
if sudo -n true 2>/dev/null; then echo "sudo yes"; else echo "sudo no"; fi
i=0
while [ "$i" -lt "$nroots" ]; do
  r=$1; shift; i=$((i + 1))
  if [ -d "$r" ]; then echo "root 1 $(stat -f -c %T "$r" 2>/dev/null || echo ?) $r"; else echo "root 0 - $r"; fi
done
for g in "$@"; do
  for f in $g; do [ -e "$f" ] && echo "device $f"; done
done
if [ -n "$probe" ]; then
  if [ -r "$probe" ]; then
    if [ "$(cat "$probe")" = "$token" ]; then echo "probe seen"; else echo "probe different"; fi
  elif [ -e "$probe" ]; then echo "probe unreadable"
  else
    d=${probe%/*}
    while [ -n "$d" ] && [ ! -e "$d" ]; do d=${d%/*}; done
    if [ -n "$d" ] && [ -d "$d" ] && [ ! -x "$d" ]; then echo "probe unreadable"; else echo "probe missing"; fi
  fi
fi
if [ -n "${localroot:-}" ]; then
  mkdir -p "$localroot" 2>/dev/null
  if [ -d "$localroot" ] && [ -w "$localroot" ]; then w=1; else w=0; fi
  echo "localroot $w $(df -Pk "$localroot" 2>/dev/null | awk 'NR == 2 { print $4 }')"
  # what tpurun keeps there: snapshots, and the runs' log dirs (gc frees both)
  s=$(du -sk "$localroot/staging" 2>/dev/null | awk '{ print $1 }')
  l=$(du -sk "$localroot/logs" 2>/dev/null | awk '{ print $1 }')
  echo "localuse ${s:-0} ${l:-0}"
fi
echo "time $(date +%s%N)"
df -Pk /tmp 2>/dev/null | awk 'NR == 2 { print "tmpfree", $4 }'
command -v python3 >/dev/null 2>&1 && python3 - 2>/dev/null <<'TPURUN_VERSIONS'
# tpurun-embed: include doctor_versions.py
TPURUN_VERSIONS
echo end
