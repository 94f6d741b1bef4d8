# The scan's walk over every process's open files (/proc/PID/fd), run by
# lib/fd_walk.sh with this program on perl's stdin. On a busy host (data
# loaders: hundreds of processes, thousands of fds each) it is almost all of
# the scan's cost, and the kernel's cost per fd is all of it. perl (perl-base
# is Essential on Debian and Ubuntu, so it is on every TPU VM image) makes the
# fewest system calls a walk can: one readdir per process and one readlink
# per fd, relative to the fd directory so the kernel looks up one name, not
# four (find also lstats every fd; lsof makes about eight calls per fd).
#
# Args: GLOB... Prints, each on one line:
#   F PATH UID USER INODE DEV   libtpu's lockfile and log dir, when present (lstat)
#   H /proc/PID/fd TARGET       a candidate: TARGET starts with some glob's literal
#                               start (up to its first [ ] * ? \) and has no newline
#   D /proc/PID/fd Permission denied   its fd dir, or one of its fds, could not be read
# Candidates are matched against the globs by the caller, so the shell's own
# pattern matching (fnmatch's) decides, as with find -lname. A link target
# with a newline (another user can make one: a file opened in their own mount
# namespace) could forge records in this line output; no real device name has
# one, so such targets are never printed. Errno 13 is EACCES on every Linux.
# Processes are shared out by their number of open fds (st_size of
# /proc/PID/fd since Linux 6.2; before, each counts as 100), biggest first to
# the least loaded, one share per CPU, at most 16 and at least 10,000 fds per
# share: a fork costs about as much as reading 300 links. Each child ends its
# output with "ok"; when one cannot start or does not end so, the parent walks
# its share itself. Nothing is printed before the children start (they would
# inherit it unflushed).
# tpurun-embed: tokens
my @lit = map { /^([^\]\[*?\\]*)/; quotemeta $1 } @ARGV;
my $re = @lit ? join("|", @lit) : "(?!)";
$re = qr/^(?:$re)/;
sub walk {
  for my $pid (@{$_[0]}) {
    my $d = "/proc/$pid/fd";
    my $h;
    unless (chdir $d and opendir $h, ".") {
      print "D $d Permission denied\n" if $! == 13;
      next;
    }
    my $denied = 0;
    for my $f (readdir $h) {
      my $t = readlink $f;
      if (!defined $t) {
        $denied = 1 if $! == 13;
      } elsif ($t =~ $re and index($t, "\n") < 0) {
        print "H $d $t\n";
      }
    }
    closedir $h;
    print "D $d Permission denied\n" if $denied;
  }
}
sub cpus {
  open(my $s, "<", "/proc/self/status") or return 1;
  while (<$s>) {
    next unless /^Cpus_allowed_list:\s*(\S+)/;
    my $c = 0;
    for (split /,/, $1) { $c += /^(\d+)-(\d+)\z/ ? $2 - $1 + 1 : 1 }
    return $c;
  }
  return 1;
}
opendir(my $p, "/proc") or exit 1;
my @pids = grep { /^[0-9]+\z/ } readdir $p;
closedir $p;
my %cost;
my $counted = ((stat "/proc/self/fd")[7] || 0) > 0;
$cost{$_} = $counted ? 1 + ((stat "/proc/$_/fd")[7] || 0) : 100 for @pids;
my $total = 0;
$total += $_ for values %cost;
my $n = cpus();
$n = 16 if $n > 16;
$n = int($total / 10000) if $n > $total / 10000;
$n = 1 if $n < 1;
my @share = map { [] } 1 .. $n;
my @load = (0) x $n;
for my $pid (sort { $cost{$b} <=> $cost{$a} } @pids) {
  my $m = 0;
  for (1 .. $n - 1) { $m = $_ if $load[$_] < $load[$m] }
  push @{$share[$m]}, $pid;
  $load[$m] += $cost{$pid};
}
my @kids;
for my $i (1 .. $n - 1) {
  pipe(my $r, my $w) or last;
  my $k = fork;
  last unless defined $k;
  if ($k == 0) {
    close $r;
    open(STDOUT, ">&", $w) or exit 1;
    walk($share[$i]);
    print "ok\n";
    exit 0;
  }
  close $w;
  push @kids, [$i, $r, $k];
}
walk($share[$_]) for 0, @kids + 1 .. $n - 1;
for my $c (@kids) {
  my ($i, $r, $k) = @$c;
  my $out = do { local $/; <$r> };
  waitpid $k, 0;
  if ($? == 0 and defined $out and $out =~ s/ok\n\z//) { print $out } else { walk($share[$i]) }
}
for my $f ($LIBTPU_LOCKFILE, $TPU_LOGS_DIR) {
  my @s = lstat $f or next;
  my $u = getpwuid $s[4];
  $u = $s[4] unless defined $u;
  print "F $f $s[4] $u $s[1] $s[0]\n";
}
exit 0;
