# The F (libtpu's files), H (candidate device fds) and denied lines of the
# walk over /proc/*/fd: found=$(fd_walk_perl GLOB...) || found=$(fd_walk_find
# GLOB...), one subshell each (a process start is most of a scan's cost).
# Without perl, or when it fails, find does the same walk: it prints exact
# matches (a subset of perl's candidates) and its errors ("find:
# '/proc/PID/fd': Permission denied").
# fd_walk_perl GLOB...: the perl walk, its program on its stdin; run it in a
# subshell (it execs). PERL5OPT and friends could load code or change how
# bytes are printed.
fd_walk_perl() {
  unset PERL5OPT PERL5LIB PERLLIB PERL5DB PERL_UNICODE
  exec perl - "$@" <<'TPURUN_FD_WALK'
# tpurun-embed: include fd_walk.pl
TPURUN_FD_WALK
}
fd_walk_find() {
# tpurun-embed: include lib/device_find.sh
  find /proc/[0-9]*/fd "$LIBTPU_LOCKFILE" "$TPU_LOGS_DIR" -maxdepth 1 \
    \( -path '/tmp/*' -prune -printf 'F %p %U %u %i %D\n' \) -o \( \( "$@" \) -printf 'H %h %l\n' \) 2>&1
}
