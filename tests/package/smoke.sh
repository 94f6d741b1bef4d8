#!/usr/bin/env bash
# The release .deb as a user of an older system gets it: a fresh minimal
# Debian 11 root (a copy of scripts/package's cached debootstrap base) installs
# dist/tpurun_*.deb with apt, which fetches its Depends from Debian's archive;
# then tpurun runs there: --version (the package's own version and commit),
# --help, exec on the local host (no config), and exec on the pod simulator's
# workers as alice, with her key and the simulator's config.
#
#   tests/package/smoke.sh [DEB]     (default: dist/tpurun_*.deb from scripts/package)
# Needs root. Exit status 0 only if every check passed.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=scripts/lib/debroot.sh
source "$root/scripts/lib/debroot.sh"

fail() { echo "FAIL [package smoke]: $*" >&2; exit 1; }
step() { printf 'smoke: %s\n' "$*" >&2; }
expect_in() {  # TEXT NEEDLE WHAT
  [[ $1 == *"$2"* ]] || { printf -- '--- output:\n%s\n---\n' "$1" >&2; fail "$3: '$2' not found"; }
}

[[ $(id -u) -eq 0 ]] || { echo "SKIP [package smoke]: needs root (chroot)"; exit 125; }
shopt -s nullglob
debs=("${1:-}")
[[ -n ${debs[0]} ]] || debs=("$root"/dist/tpurun_*.deb)
[[ ${#debs[@]} -eq 1 && -f ${debs[0]} ]] || fail "expected one .deb (run scripts/package first), found: ${debs[*]:-none}"
deb=${debs[0]}
deb_version=$(dpkg-deb -f "$deb" Version)
step "$(basename "$deb"): Version $deb_version; Depends: $(dpkg-deb -f "$deb" Depends)"

mkdir -p "$TPURUN_PKG_CACHE"
exec 9>"$TPURUN_PKG_CACHE/.lock"
flock 9  # the base root is scripts/package's
t0=$SECONDS
base=$(debroot_base)
smoke=$TPURUN_PKG_CACHE/smoke
debroot_copy "$base" "$smoke"
exec 9>&-
cp "$deb" "$smoke/tmp/"
in_root() { debroot_run "$smoke" -- "$@"; }
in_root sh -c 'export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
  apt-get update -qq && apt-get install -y -qq /tmp/tpurun_*.deb >/dev/null' ||
  fail "apt could not install $(basename "$deb") in a fresh Debian 11 root"
step "fresh Debian 11 root + apt install: $((SECONDS - t0))s"

t1=$SECONDS
out=$(in_root tpurun --version)
printf '%s\n' "$out" >&2
expect_in "$out" "tpurun $deb_version (commit " "--version names the package's version"
sha=$(git -C "$root" rev-parse HEAD 2>/dev/null || true)
[[ -z $sha || $deb_version == *.dirty ]] || expect_in "$out" "$sha" "--version names the commit"
out=$(in_root tpurun --help)
expect_in "$out" "Usage: tpurun [OPTIONS] SUBCOMMAND" "--help"
for f in /usr/bin/tpurun /usr/share/man/man1/tpurun.1.gz /usr/share/bash-completion/completions/tpurun \
  /usr/share/zsh/vendor-completions/_tpurun; do
  in_root test -f "$f" || fail "the package did not install $f"
done
# The tarball, unpacked as README.md says.
tarballs=("$(dirname "$deb")"/tpurun-*-linux-x86_64.tar.gz)
if [[ ${#tarballs[@]} -eq 1 ]]; then
  cp "${tarballs[0]}" "$smoke/tmp/"
  in_root sh -c 'tar -C /usr/local --strip-components=1 -xzf /tmp/tpurun-*-linux-x86_64.tar.gz'
  out=$(in_root /usr/local/bin/tpurun --version)
  expect_in "$out" "tpurun $deb_version (commit " "the tarball's tpurun --version"
  for f in /usr/local/share/man/man1/tpurun.1.gz /usr/local/share/bash-completion/completions/tpurun \
    /usr/local/share/zsh/site-functions/_tpurun; do
    in_root test -f "$f" || fail "the tarball did not hold $f"
  done
fi
# No config anywhere: the pod is this host. A chroot shares the kernel, so
# uname -r must match the host's.
out=$(in_root sh -c 'cd /tmp && tpurun exec -- uname -r')
printf '%s\n' "$out" >&2
expect_in "$out" "$(uname -r)" "exec on the local host"
step "--version, --help, tarball, local exec: ok ($((SECONDS - t1))s)"

# The simulator's workers, reached from inside the root as alice would on her
# dev VM. The default pod is shared with other test runs: hold its lock.
t2=$SECONDS
workers=8  # what the e2e tests use, so they need no restart
sim() {
  "$root/scripts/fakepod" up "$workers" >/dev/null
  eval "$("$root/scripts/fakepod" env)"
  local home=/home/alice uid gid
  uid=$(id -u alice) gid=$(id -g alice)
  in_root sh -c "getent passwd alice >/dev/null || { groupadd -g $gid alice && useradd -m -u $uid -g $gid -s /bin/bash alice; }"
  install -d -m 700 -o "$uid" -g "$gid" "$smoke$home/.ssh"
  install -m 600 -o "$uid" -g "$gid" "$home/.ssh/id_ed25519" "$smoke$home/.ssh/id_ed25519"
  install -m 644 -o "$uid" -g "$gid" "$FAKEPOD_CONFIG" "$smoke$home/tpurun.json"
  local out rc=0
  out=$(in_root runuser -l alice -c 'tpurun exec -- sh -c "echo \$(id -un)@\$(hostname)"' 2>&1) || rc=$?
  printf '%s\n' "$out" >&2
  [[ $rc == 0 ]] || fail "exec on the simulator exited $rc"
  local i
  for ((i = 0; i < workers; i++)); do
    expect_in "$out" "alice@t1v-n-fakepod-w-$i" "exec reached worker $i"
  done
}
export -f sim in_root debroot_run debroot_log expect_in fail
export root smoke workers
flock -o /tmp/fakepod-e2e.lock bash -c 'set -euo pipefail; sim'
step "exec on $workers simulator workers from the Debian 11 root: ok ($((SECONDS - t2))s)"
echo "1 passed, 0 failed: package smoke (install $((t1 - t0))s, checks $((SECONDS - t1))s)"
