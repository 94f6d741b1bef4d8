#pragma once
// Freeing the TPU: which processes may be signalled (the caller's own job
// trees, never another user's unless --force --yes), the kill itself (TERM,
// grace, KILL, then a fresh scan), and removing a stale lockfile only once no
// process holds a device.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/tpu/scan.hpp"

namespace tpurun {

struct KillOptions {
  // Only this tpurun run's processes. A unique prefix of a run id is enough.
  std::optional<std::string> run_id;
  bool force = false;  // also other users' holders, via sudo -n (admins)
  // Only the trees of the processes that hold the TPU (stage --kill-previous),
  // not every job of a tpurun run (a run that does not use the TPU goes on).
  bool tpu_holders_only = false;
};

struct Victim {
  ScannedProcess process;
  std::string reason;  // why it is signalled: "holds /dev/accel0", "run R", "child of 123", "in group 123"
};

struct KillPlan {
  std::vector<Victim> victims;           // every process to signal, by pid
  std::vector<int> groups;               // process groups signalled as a whole: all their members are victims
  std::vector<ScannedProcess> spared;    // other users' holders, never signalled without --force
  std::vector<ScannedProcess> kept_own;  // the caller's holders outside --run
  bool needs_root = false;               // a victim belongs to another user (--force)
  std::vector<std::string> ambiguous_runs;  // --run is a prefix of several run ids: nothing planned
  bool empty() const { return victims.empty(); }
};

// Pure: from one scan made with ScanRequest::process_table, what to signal.
// Targets are the caller's processes holding a device and the caller's tpurun
// jobs (TPURUN_RUN_ID set; only options.run_id's with --run), each taken as a
// tree: its process group plus all its descendants, filtered to its owner's
// uid. The scanning shell and its ancestors are never targets.
KillPlan plan_kill(const LockScan& scan, const KillOptions& options);

// The remote command that carries out a plan: SIGTERM, up to grace_ms for
// the victims to exit, SIGKILL for the rest. Runs as the login user unless
// the plan needs root (--force).
RemoteCommand build_kill_command(const KillPlan& plan, int grace_ms);

struct CleanupPlan {
  bool remove_lockfile = false;
  std::uint64_t lock_inode = 0;  // removed only if the file is still this one
  bool remove_tpu_logs = false;
  bool needs_root = false;  // a file to remove belongs to another user
  std::string blocked;      // why a lockfile or tpu_logs that exists is kept
  bool empty() const { return !remove_lockfile && !remove_tpu_logs; }
};

// Pure: what may be removed after a scan. Nothing while any process holds a
// device or the lock. Another user's files only with a root view (the scan
// ran as root), since only then is "nobody holds a device" known.
CleanupPlan plan_cleanup(const LockScan& scan);

// The scan as it would look once every victim is gone (for --dry-run).
LockScan assume_killed(const LockScan& scan, const KillPlan& plan);

struct CleanupResult {
  std::vector<std::string> removed;  // paths
  std::vector<std::string> kept;     // "path: reason"
  std::string error;                 // e.g. sudo refused
};

// Runs a cleanup plan on the worker. The remote side checks again, right
// before removing, that no process has a device open, that /proc/locks shows
// no lock on the file and that it is still the same file.
Result<CleanupResult, TransportError> run_cleanup(Connection& connection, const CleanupPlan& plan,
                                                  const std::vector<std::string>& device_globs,
                                                  const CancelToken& cancel);

// For stage's preflight on a worker whose verdict is stale-lock: plans and
// runs the cleanup. Returns the new verdict (free when it worked).
struct StaleLockCleanup {
  CleanupResult result;
  TpuState state = TpuState::stale_lock;
};
Result<StaleLockCleanup, TransportError> clean_stale_lock(Connection& connection, const LockScan& scan,
                                                          const std::vector<std::string>& device_globs,
                                                          const CancelToken& cancel);

// The scan as it is after a cleanup removed files (for the verdict).
LockScan after_cleanup(const LockScan& scan, const CleanupResult& result);

struct WorkerKill {
  Worker worker;
  std::optional<LockScan> before;
  KillPlan plan;
  CleanupPlan cleanup;               // dry run: what would be removed
  bool signalled = false;            // false: dry run, nothing to do, or refused
  std::vector<int> gone_before;      // exited before the signal
  std::vector<int> gone_term;        // gone within the grace period after SIGTERM
  std::vector<int> gone_kill;        // needed SIGKILL
  std::vector<int> survivors;        // still alive after SIGKILL
  std::vector<std::string> skipped;  // "PID: reason" (changed owner, pid reused, audit refused)
  bool audit_failed = false;         // --force: the worker's syslog refused the record; nothing signalled
  CleanupResult cleaned;
  std::optional<LockScan> after;           // the scan after the kill and cleanup
  TpuState state = TpuState::unreachable;  // final verdict (dry run: predicted)
  std::string error;                       // unreachable, failed scan, sudo refused, refused by before_signal
};

// --grace (kill's, and stage's for the run's gang stops): SIGTERM, then this
// long for the job to exit on its own, then SIGKILL.
inline constexpr int kDefaultGraceMs = 10 * 1000;
// At most an hour: a job still running an hour after SIGTERM is hung, not
// saving a checkpoint, and meanwhile the kill's connection to each worker
// (and a run's watcher, before it can restart or end the run) waits on it.
inline constexpr int kMaxGraceMs = 3600 * 1000;

struct KillRequest {
  std::vector<std::string> device_globs;
  KillOptions options;
  int grace_ms = kDefaultGraceMs;
  bool dry_run = false;
  // Called with each worker's plan before any of its processes is signalled
  // (from worker threads). Returning an error message skips that worker.
  std::function<std::optional<std::string>(const Worker&, const LockScan&, const KillPlan&)> before_signal;
};

// Scan, plan, signal, wait, scan again and clean up: on one connection per worker.
std::vector<WorkerKill> kill_on_workers(const std::vector<Worker>& workers, Transport& transport, int fanout,
                                        const CancelToken& cancel, const KillRequest& request);

}  // namespace tpurun
