# lock_state INODE DEV: is a lock held on that file (DEV: st_dev, decimal)?
# /proc/locks names files as MAJOR:MINOR:INODE (hex, hex, decimal) and is
# world-readable, so this works without root. Sets held=0|1 and lpid (the
# holder, or -).
lock_state() {
  held=0 lpid=-
  case $1 in ''|*[!0-9]*) return ;; esac
  case $2 in ''|*[!0-9]*) return ;; esac
  _maj=$(( ($2 >> 8) & 0xfff )) _min=$(( ($2 & 0xff) | (($2 >> 12) & 0xfff00) ))
  while read -r _ _kind _ _ _pid _where _; do
    [ "$_kind" = '->' ] && continue
    case $_where in
      *:*:"$1")
        _m=${_where%%:*} _r=${_where#*:}
        _r=${_r%%:*}
        case $_m in ''|*[!0-9a-f]*) continue ;; esac
        case $_r in ''|*[!0-9a-f]*) continue ;; esac
        case $_pid in ''|*[!0-9]*) continue ;; esac
        if [ $((0x$_m)) = "$_maj" ] && [ $((0x$_r)) = "$_min" ]; then
          held=1 lpid=$_pid
          return
        fi ;;
    esac
  done </proc/locks
}
