# shellcheck shell=bash
# Debian 11 (bullseye) roots for scripts/package and tests/package/smoke.sh.
#
# The roots live outside the repo, in $TPURUN_PKG_CACHE (default
# /var/cache/tpurun-package), so every later run and every clone reuses them:
#   base/   debootstrap --variant=minbase bullseye: the "fresh minimal Debian 11"
#           that the smoke test copies before installing the .deb into it;
#   build/  a copy of base plus the build packages (a stamp records which).
# A root is made in NAME.tmp and renamed when complete, so an interrupted run
# leaves nothing half-made behind. Needs root, debootstrap and Debian's archive.

: "${TPURUN_PKG_CACHE:=/var/cache/tpurun-package}"
: "${TPURUN_DEBIAN_MIRROR:=http://deb.debian.org/debian}"
: "${TPURUN_DEBIAN_SECURITY:=http://deb.debian.org/debian-security}"
DEBROOT_SUITE=bullseye

debroot_log() { printf 'package: %s\n' "$*" >&2; }

# debroot_sources DIR: bullseye, its updates and security fixes, so the roots
# get the libraries a user of Debian 11 gets from apt.
debroot_sources() {
  cat >"$1/etc/apt/sources.list" <<SRC
deb $TPURUN_DEBIAN_MIRROR $DEBROOT_SUITE main
deb $TPURUN_DEBIAN_MIRROR $DEBROOT_SUITE-updates main
deb $TPURUN_DEBIAN_SECURITY $DEBROOT_SUITE-security main
SRC
  cp /etc/resolv.conf "$1/etc/resolv.conf" 2>/dev/null || true
  # No recommends, no docs: roots stay small and apt calls stay quick.
  cat >"$1/etc/apt/apt.conf.d/90tpurun" <<'APT'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Retries "3";
APT
}

# debroot_base: prints the path of the cached minimal root, making it once.
debroot_base() {
  local dir=$TPURUN_PKG_CACHE/base
  if [[ ! -e $dir/.tpurun-complete ]]; then
    command -v debootstrap >/dev/null || { debroot_log "debootstrap is missing (apt-get install debootstrap)"; return 1; }
    debroot_log "making a Debian 11 root with debootstrap (once; cached in $dir)"
    rm -rf "$dir.tmp"
    mkdir -p "$TPURUN_PKG_CACHE"
    debootstrap --variant=minbase "$DEBROOT_SUITE" "$dir.tmp" "$TPURUN_DEBIAN_MIRROR" >"$TPURUN_PKG_CACHE/debootstrap.log" 2>&1 || {
      tail -n 20 "$TPURUN_PKG_CACHE/debootstrap.log" >&2
      debroot_log "debootstrap failed (full log: $TPURUN_PKG_CACHE/debootstrap.log)"
      return 1
    }
    debroot_sources "$dir.tmp"
    rm -rf "$dir.tmp/var/cache/apt/archives/"*.deb
    touch "$dir.tmp/.tpurun-complete"
    rm -rf "$dir"
    mv "$dir.tmp" "$dir"
  fi
  printf '%s\n' "$dir"
}

# debroot_copy SRC DST: a fresh copy of a root (DST is replaced).
debroot_copy() {
  rm -rf "$2"
  cp -a --reflink=auto "$1" "$2"
}

# debroot_run ROOT [--bind HOSTDIR:ROOTDIR[:ro]]... -- CMD...: runs CMD chrooted
# in ROOT with /proc, /dev and /sys, in a private mount namespace, so every
# mount disappears with the command, whatever way it ends. The network is the
# host's (a chroot shares it).
debroot_run() {
  local root=$1 binds=()
  shift
  while [[ $# -gt 0 && $1 != -- ]]; do
    [[ $1 == --bind ]] && { binds+=("$2"); shift 2; continue; }
    debroot_log "debroot_run: bad argument $1"; return 2
  done
  shift
  local script='set -e; r=$1; shift
mount -t proc proc "$r/proc"
mount --rbind /dev "$r/dev"
mount --rbind /sys "$r/sys"
while [ "$1" != -- ]; do
  spec=$1; shift
  src=${spec%%:*}; rest=${spec#*:}; dst=${rest%%:*}; opt=${rest#"$dst"}
  mkdir -p "$r$dst"
  mount --bind "$src" "$r$dst"
  [ "$opt" = ":ro" ] && mount -o remount,bind,ro "$r$dst"
done
shift
exec chroot "$r" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" "$@"'
  unshare --mount --propagation private -- /bin/sh -c "$script" debroot "$root" "${binds[@]}" -- "$@"
}
