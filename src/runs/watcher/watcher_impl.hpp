#pragma once
// The watcher of one run, as a class: watcher.cpp has its main loop, what it
// samples and records, the gang stop and the end; watcher_relaunch.cpp the
// next attempt (restarts, a recreated TPU VM, the workers' new addresses).
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runs/recreate/preemption_recovery.hpp"
#include "runs/watcher/gang.hpp"
#include "runs/watcher/liveness.hpp"
#include "runs/watcher/log_mirror.hpp"
#include "runs/watcher/stall_watch.hpp"
#include "tpurun/runs/launch/launch.hpp"
#include "tpurun/runs/watcher/watcher.hpp"

namespace tpurun {

class Watcher {
 public:
  Watcher(const WatcherSetup& setup, Transport& transport, ProcessRunner& processes, const CancelToken& cancel);
  int run();

 private:
  static int resume_attempt(const RunRecord& r);
  // One metrics round at a time (watcher/stall_watch): stop and restart fail the attempt.
  void watch_for_stall();
  // The logs root, or a worker's log dir (no shared mount), is (nearly)
  // full: the run fails as a whole, with the fix.
  void watch_space();
  // No shared mount: a worker's log dir is (nearly) full; what to say.
  std::optional<std::string> worker_out_of_space() const;
  // A file kept in the log dir while the run is watched, given back when the
  // disk is full, so that the last records still fit.
  void make_spare();
  void release_spare();
  bool run_dir_gone() const;
  // When the run has ended: its processes that still hold a TPU (a child
  // that outlived the job) are stopped, and each worker's state says so.
  void stop_leftovers();
  void say(const std::string& text);
  // The notes (stdout, watcher.log) are read by followers on other hosts
  // too. On NFS a write stays in this client's cache until close, fsync or
  // writeback (about 30 s), so each note is pushed to the server: they are few.
  static void push_notes();
  void save(bool force);
  std::vector<WorkerSample> sample(LivenessProber& prober);
  void stop_gang();
  // Waits `d` unless the run is stopped meanwhile. False when it was.
  bool pause(std::chrono::milliseconds d);
  bool restart(std::unique_ptr<LivenessProber>& prober);
  // The next attempt, once the TPU VM is READY (recreated if it was
  // preempted and --recreate allows it) and every worker is free.
  bool relaunch(std::unique_ptr<LivenessProber>& prober);
  LaunchSpec attempt_spec(int attempt) const;
  // The attempt was launched: from now on its job files are watched.
  void began(int next, const LaunchResult& launched, std::unique_ptr<LivenessProber>& prober);
  // An attempt failed with no restart left (or none allowed for its exit
  // code): was the TPU VM preempted? With --recreate that is worth an attempt
  // of its own. True when it was recreated and the run goes on.
  bool preempted_at_end();
  // The workers' current addresses (a gcloud pod's TPU VM may have new ones
  // after a stop and start): from now on the run is watched and relaunched there.
  void move_to(const std::vector<Worker>& now, std::unique_ptr<LivenessProber>& prober);
  // The TPU VM is gone and was not recreated: the run ends here, whatever
  // attempts are left (or the watcher was signalled meanwhile).
  bool preempted();
  bool stopped_during_restart();
  // `tpurun down` of the pod's TPU VM since the run was staged: an attempt
  // that failed or lost its workers, or a restart, ends the run as stopped.
  // True when it did.
  bool down_stops_run();
  // No shared mount: the snapshot pushed again where a new VM may lack it.
  // "" once every worker holds it, else what the relaunch waits for.
  std::string push_snapshot_again_to_workers();
  int finish();

  const WatcherSetup& setup_;
  Transport& transport_;
  // No shared mount: the workers' files of the run, copied here as they grow.
  std::unique_ptr<LogMirror> mirror_;
  ProcessRunner& processes_;
  const CancelToken& cancel_;
  GangMonitor monitor_;
  WatcherInfo self_;
  std::string message_;
  std::string saved_;
  std::map<int, std::string> launch_failures_;  // worker -> why this attempt's job did not start there
  bool signalled_ = false;
  std::vector<Worker> workers_;  // where the run's jobs are: the record's, moved when the TPU VM's addresses change
  PreemptionRecovery recovery_;
  bool out_of_space_ = false;
  std::vector<MissingLogs> logs_missing_;  // no shared mount: what the mirror's last round could not copy
  bool vm_checked_ = false;
  bool stopped_on_purpose_ = false;  // by a down, or a kill during a recreate: the message says which
  bool snapshot_unsure_ = false;  // the workers changed since the snapshot reached them
  bool snapshot_unreadable_ = false;  // ... and this host's copy cannot be pushed again  // the TPU VM was described after the last attempt ended
  StallWatch stall_;  // --stall-after, --on-stall, the board's idle mark
};

}  // namespace tpurun
