# self_ids: sets uid and gid, this shell's effective ids, from the kernel's
# own record (/proc/self/status): no `id` process, which every worker would
# start on each scan and each reservation.
# shellcheck disable=SC2034 # gid: for the includers that use it (scan.sh)
self_ids() {
  uid='' gid=''
  while read -r _k _ _e _; do
    case $_k in
      Uid:) uid=$_e ;;
      Gid:) gid=$_e; break ;;
    esac
  done </proc/self/status
}
