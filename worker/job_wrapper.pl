# The job's wrapper (launch.sh starts it detached, this program on its stdin;
# perl-base is Essential on Debian and Ubuntu). It shows in ps as its TITLE
# ("tpurun-job RUN_ID wN"). The job's output reaches the log through a pipe,
# and the wrapper fsyncs the log within a second of new output (at once when
# the job pauses). On NFS a writer's data otherwise stays in its client's
# cache until close, fsync or writeback (about 30 s), so lines would reach
# the dev VM late. Bytes pass verbatim (\r, long lines: the follower's rules
# apply). Once the job has exited and its output is drained (EOF, or 0.2 s
# quiet while a child of the job still holds the pipe), the exit record is
# written; such a child's later output is still relayed until it closes the
# pipe.
#
# Args: TITLE LOG PIDFILE EXITFILE PENDINGFILE COMMAND... In the environment:
# job_env (export lines, evaluated in the job's shell only) and, under a
# reservation (reserve.sh), record: its holder record, removed when the job
# ends if it still names this wrapper. Fd 9, when open, is the reservation's
# lock: kept here while the job runs, never given to the job. Fd 3: where
# "<wrapper pid> <job pid>" goes once the job has started. tmpd (in the
# environment, from launch.sh): the dir for its temp files, .tpurun-tmp in
# the log dir, which the log mirror leaves out.
use strict; use warnings; use POSIX (); use IO::Handle; use Fcntl qw(F_SETFD FD_CLOEXEC);
my ($title, $log, $pidf, $exitf, $reserved, @cmd) = @ARGV;
$0 = $title;
open(STDIN, "<", "/dev/null");
my $record = delete $ENV{record};
my $tmpd = delete $ENV{tmpd};
delete @ENV{qw(tpurun_reserved tpurun_me tpurun_since)};
my $reservation;
fcntl($reservation, F_SETFD, FD_CLOEXEC) if open($reservation, "<&=", 9);
$SIG{$_} = "IGNORE" for qw(HUP INT TERM PIPE);
sub put { my ($p, $t) = @_; my ($name) = $p =~ m{([^/]*)$};
  my $tmp = defined $tmpd ? "$tmpd/$name.$$" : "$p.tmp$$";
  if (open(my $f, ">", $tmp)) { print $f $t; return 1 if close($f) and rename($tmp, $p); }
  unlink($tmp); return 0; }
# The exit record's place is taken while the disk has room (PENDINGFILE): a
# job that fills the logs disk still gets its exit record, written over the
# reserved bytes (no new block) and renamed into place.
if (open(my $rf, ">", $reserved)) { print $rf ("pending" . (" " x 57) . "\n"); close($rf) or unlink($reserved); }
sub put_exit { my ($t) = @_;
  if (open(my $f, "+<", $reserved)) {
    print $f $t; truncate($f, length($t));
    return if close($f) and rename($reserved, $exitf);
  }
  put($exitf, $t) and unlink($reserved); }
open(my $out, ">>", $log) or die "tpurun: cannot open $log: $!\n";
binmode $out;
pipe(my $r, my $w) or die "tpurun: pipe: $!\n";
my $job = fork;
die "tpurun: fork: $!\n" unless defined $job;
if ($job == 0) {
  $SIG{$_} = "DEFAULT" for qw(HUP INT TERM PIPE);
  close $r; close $out; POSIX::close(3);
  open(STDIN, "<", "/dev/null"); open(STDOUT, ">&", $w); open(STDERR, ">&", $w); close $w;
  { exec("sh", "-c", q{eval "$job_env"; unset job_env pidf exitf; exec setsid "$@"}, "tpurun-job", @cmd) }
  POSIX::_exit(127);
}
close $w;
put($pidf, "$job $job\n");
if (open(my $started, ">&=", 3)) { print $started "$$ $job\n"; close $started; }
my $rin = ""; vec($rin, fileno($r), 1) = 1;
my ($dirty, $synced, $code, $eof) = (0, time, undef, 0);
for (;;) {
  if (!defined $code and waitpid($job, POSIX::WNOHANG()) == $job) {
    $code = ($? & 127) ? 128 + ($? & 127) : $? >> 8;
  }
  my $n = select(my $ready = $rin, undef, undef, defined $code || $dirty ? 0.2 : 0.5);
  if ($n > 0) {
    my $got = sysread($r, my $buf, 65536);
    if ($got) { syswrite($out, $buf); $dirty = 1; } elsif (defined $got) { $eof = 1; }
  }
  if ($dirty and ($n <= 0 or time != $synced)) { $out->sync; $dirty = 0; $synced = time; }
  last if defined $code and ($eof or $n <= 0);
}
$out->sync;
put_exit("$code\n");
if ($record and open(my $rf, "<", $record)) {
  my ($holder) = split(" ", scalar(<$rf>) // "");
  close($rf);
  unlink($record) if $holder and $holder == $$;
}
while (!$eof) {
  my $got = sysread($r, my $buf, 65536);
  last unless $got;
  syswrite($out, $buf); $out->sync;
}
