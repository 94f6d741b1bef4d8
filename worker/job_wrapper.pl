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
# Args: TITLE LOG PIDFILE EXITFILE PENDINGFILE COMMAND... In the environment
# (launch.sh's): job_env (export lines, evaluated in the job's shell only);
# logdir, worker, attempt and max_attempts; and, under a reservation
# (reserve.sh), record, tpurun_reserved, tpurun_me, tpurun_since and run_id:
# the holder record, which this writes once the job runs (naming this
# wrapper) and removes when the job ends if it still names it. Fd 9, when
# open, is the reservation's lock: kept here while the job runs, never given
# to the job. Fd 3: where "<wrapper pid> <job pid>" goes once the job has
# started, or "WRAPPER_REFUSED CODE WHY" when it will not start (CODE is
# launch.sh's exit code). Its stdout and stderr are /dev/null until it has
# checked the log dir, then the log.
#
# Before the job it does what launch.sh would otherwise start five processes
# for (find, mkdir, cat, mv and mv): it checks that the log dir is the user's
# own and closed to other users' writes, makes its temp dir (.tpurun-tmp in
# the log dir, which the log mirror leaves out) and this worker's dir of
# tpurun stacks' bootstrap in it, writes the bootstrap (sitecustomize.py, on
# its fd 4 from launch.sh), and puts that dir first on the job's
# PYTHONPATH (docs/stacks.md); where the dirs cannot be made, the job runs
# without them, as in launch.sh's own path where perl is missing.
#
# It loads no module on the way to the job's start: every worker starts one
# on the launch, and perl's modules cost more than the rest of the launch
# (POSIX, IO::Handle and Fcntl took 14 ms of CPU a worker on the simulator's
# hosts, the launch script's other processes about 10). So the numbers are
# Linux's own (the same on every architecture: asm-generic/fcntl.h and
# wait.h): F_SETFD 2, FD_CLOEXEC 1, WNOHANG 1; fsync comes with IO::Handle,
# loaded at the first output to sync. strict and warnings are the linter's
# (perl -Mstrict -Mwarnings -c, worker/tests), not loaded here.
# tpurun-embed: tokens
my ($title, $log, $pidf, $exitf, $reserved, @cmd) = @ARGV;
$0 = $title;
my $bootstrap;
if (open(my $b, "<&=", 4)) { $bootstrap = do { local $/; <$b> }; close $b; }
open(STDIN, "<", "/dev/null");
my %from = map { $_ => delete $ENV{$_} }
  qw(record logdir worker attempt max_attempts run_id tpurun_reserved tpurun_me tpurun_since);
my $record = $from{record};
my $me = $from{tpurun_me} || $ENV{LOGNAME} || $ENV{USER} || "uid $>";
$SIG{$_} = "IGNORE" for qw(HUP INT TERM PIPE);
sub refuse { my ($code, $why) = @_;
  if (open(my $f, ">&=", 3)) { print $f "$WRAPPER_REFUSED $code $why\n"; close $f; }
  exit 1; }
sub utc { my @t = gmtime; sprintf("%04d-%02d-%02dT%02d:%02d:%02dZ", $t[5] + 1900, $t[4] + 1, @t[3, 2, 1, 0]) }
# mkdirs BASE PART...: BASE/PART/... made one level at a time from BASE (which
# exists), not from /: on a shared mount each mkdir is a round trip.
sub mkdirs { my $p = shift; for (@_) { $p .= "/$_"; mkdir $p; } -d $p }
my $logdir = $from{logdir};
my @st = lstat($logdir);
refuse($LAUNCH_LOG_DIR_UNSAFE, "log dir $logdir is not ${me}'s own, or others may write to it: refusing to write there")
  if !@st or -l _ or $st[4] != $> or ($st[2] & 022);
my $tmpd = "$logdir/$LOG_TMP_DIR";
my $stacksd = "$tmpd/stacks/w$from{worker}";
unless (mkdirs($logdir, $LOG_TMP_DIR, "stacks", "w$from{worker}", "py")) {
  $tmpd = $logdir unless -d $tmpd;
  $stacksd = "$tmpd/stacks/w$from{worker}";
  undef $stacksd unless mkdirs($tmpd, "stacks", "w$from{worker}", "py");
}
# The exit record's reserved bytes wait in tmpd too (renamed into place at
# the end: the same filesystem), never mirrored.
$reserved = "$tmpd/" . ($reserved =~ m{([^/]*)$})[0] if $tmpd ne $logdir;
if (defined $stacksd) {
  my $f = "$stacksd/py/sitecustomize.py";
  my $o;
  if (defined $bootstrap and open($o, ">", "$f.$$") and print $o $bootstrap and close $o and rename("$f.$$", $f)) {
    (my $quoted = $stacksd) =~ s/'/'\\''/g;  # for the job's shell, which evals job_env
    $ENV{job_env} .= "\n$STACKS_DIR_VARIABLE='$quoted'; export $STACKS_DIR_VARIABLE\n"
      . "PYTHONPATH=\$$STACKS_DIR_VARIABLE/py\${PYTHONPATH:+:\$PYTHONPATH}; export PYTHONPATH";
  } else {
    unlink("$f.$$");
  }
}
open(STDOUT, ">>", $log) and open(STDERR, ">&", \*STDOUT);
if ($from{max_attempts} > 1 and open(my $b, ">>", $log)) {
  my $host = "";
  if (open(my $h, "<", "/proc/sys/kernel/hostname")) { $host = <$h> // ""; chomp $host; }
  print $b "==== tpurun: attempt $from{attempt} of $from{max_attempts} on $host at " . utc() . " ====\n";
  close $b;
}
my $reservation;
fcntl($reservation, 2, 1) if open($reservation, "<&=", 9);
my $synced_once = 0;
sub sync_log { unless ($synced_once) { require IO::Handle; $synced_once = 1; } $_[0]->sync; }
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
  close $r; close $out;
  if (open(my $fd3, ">&=", 3)) { close $fd3; }
  open(STDIN, "<", "/dev/null"); open(STDOUT, ">&", $w); open(STDERR, ">&", $w); close $w;
  { exec("sh", "-c", q{eval "$job_env"; unset job_env pidf exitf; exec setsid "$@"}, "tpurun-job", @cmd) }
  exit 127;  # nothing is buffered here: $out is closed, STDOUT and STDERR new
}
close $w;
put($pidf, "$job $job\n");
# The reservation's holder is this wrapper from now on: it keeps the lock.
# Its temp file is a new name (O_WRONLY|O_CREAT|O_EXCL: 1|64|128, the same on
# every architecture), so that a file or symlink another user put there first
# in /tmp is never written through; rename replaces a symlink at $record.
if ($from{tpurun_reserved} and $record and sysopen(my $hf, "$record.tmp$$", 1 | 64 | 128, 0644)) {
  print $hf "$$ $from{run_id} $me " . ($from{tpurun_since} || utc()) . "\n";
  close($hf) and rename("$record.tmp$$", $record) or unlink("$record.tmp$$");
}
if (open(my $started, ">&=", 3)) { print $started "$$ $job\n"; close $started; }
my $rin = ""; vec($rin, fileno($r), 1) = 1;
my ($dirty, $synced, $code, $eof) = (0, time, undef, 0);
for (;;) {
  if (!defined $code and waitpid($job, 1) == $job) {
    $code = ($? & 127) ? 128 + ($? & 127) : $? >> 8;
  }
  my $n = select(my $ready = $rin, undef, undef, defined $code || $dirty ? 0.2 : 0.5);
  if ($n > 0) {
    my $got = sysread($r, my $buf, 65536);
    if ($got) { syswrite($out, $buf); $dirty = 1; } elsif (defined $got) { $eof = 1; }
  }
  if ($dirty and ($n <= 0 or time != $synced)) { sync_log($out); $dirty = 0; $synced = time; }
  last if defined $code and ($eof or $n <= 0);
}
sync_log($out) if $synced_once or $dirty;
put_exit("$code\n");
if ($record and open(my $rf, "<", $record)) {
  my ($holder) = split(" ", scalar(<$rf>) // "");
  close($rf);
  unlink($record) if $holder and $holder == $$;
}
while (!$eof) {
  my $got = sysread($r, my $buf, 65536);
  last unless $got;
  syswrite($out, $buf); sync_log($out);
}
