# shellcheck shell=bash
# Sourced by the no-shared-mount tests, first thing: a 4-worker pod of the
# test's own (its own state dir and addresses), with no shared mount, torn
# down at the end; then lib.sh and gang_lib.sh, and the built tpurun.
#   source "$(dirname "$0")/noshare_pod.sh" NAME NET   (NET: 127.0.X)
# E2E_NOSHARE_SUFFIX and E2E_NOSHARE_NET, when set, give the pod another
# state dir (NAME + suffix) and addresses: a second checkout's run then never
# brings up, or down, the pod of a suite that runs beside it.
export FAKEPOD_STATE=/var/lib/tpurun-fakepod-$1${E2E_NOSHARE_SUFFIX:-} FAKEPOD_NET=${E2E_NOSHARE_NET:-$2}
export FAKEPOD_NFS=/srv/tpurun-$1${E2E_NOSHARE_SUFFIX:-}
export FAKEPOD_WORKERS=4 FAKEPOD_NFS_MODE=none
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/gang_lib.sh"
require_tpurun
on_exit "_E2E_READY=0; \"$FAKEPOD\" down; rm -rf '$FAKEPOD_STATE'"
