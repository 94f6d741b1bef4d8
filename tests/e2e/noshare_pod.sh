# shellcheck shell=bash
# Sourced by the no-shared-mount tests, first thing: a 4-worker pod of the
# test's own (its own state dir and addresses), with no shared mount, torn
# down at the end; then lib.sh and gang_lib.sh, and the built tpurun.
#   source "$(dirname "$0")/noshare_pod.sh" NAME NET   (NET: 127.0.X)
export FAKEPOD_STATE=/var/lib/tpurun-fakepod-$1 FAKEPOD_NET=$2 FAKEPOD_NFS=/srv/tpurun-$1
export FAKEPOD_WORKERS=4 FAKEPOD_NFS_MODE=none
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/gang_lib.sh"
require_tpurun
on_exit "_E2E_READY=0; \"$FAKEPOD\" down; rm -rf '$FAKEPOD_STATE'"
