#pragma once
// Who holds the TPU on a worker: one scan (a POSIX sh script run as root when
// passwordless sudo allows, else as the login user) that finds every process
// with a TPU device file open, the libtpu lockfile and whether anyone holds
// its lock, and /tmp/tpu_logs. status, kill and stage's preflight share it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tpurun/pod/worker.hpp"
#include "tpurun/transport/outcome.hpp"
#include "tpurun/transport/transport.hpp"
#include "tpurun/util/cancel.hpp"
#include "tpurun/util/result.hpp"
#include "tpurun/worker/tokens.hpp"

namespace tpurun {

// libtpu's lock and log dir on a TPU VM (worker/protocol.tokens).
using worker::kLibtpuLockfile;
using worker::kTpuLogsDir;

// A process as the scan saw it.
struct ScannedProcess {
  int pid = 0;
  int uid = -1;
  std::string user;  // the remote name of uid ("" when unknown)
  int pgid = 0;
  int sid = 0;
  int ppid = 0;
  long elapsed_s = 0;
  std::uint64_t start_time = 0;       // clock ticks after boot (/proc/PID/stat field 22); 0: unknown
  std::string command;                // argv joined by spaces, control characters escaped
  std::optional<std::string> run_id;  // TPURUN_RUN_ID from its environment (when readable)
  std::vector<std::string> devices;   // TPU device files it has open (empty: none)
};

struct FileOwner {
  int uid = -1;
  std::string user;
};

struct LockfileState {
  bool exists = false;
  std::optional<FileOwner> owner;
  std::uint64_t inode = 0;
  bool held = false;              // /proc/locks has a lock on it (world-readable: works without root)
  std::optional<int> holder_pid;  // who holds that lock (in the worker's PID namespace)
};

// One worker's scan.
struct LockScan {
  int caller_uid = -1;  // the login user, whoever the scan ran as
  std::string caller_user;
  int caller_gid = -1;  // their primary group; -1 when the scan did not say
  bool privileged = false;                    // ran as root: every process was visible
  int self_pid = 0;                           // the scanning shell (kill never signals it or its ancestors)
  std::vector<ScannedProcess> holders;        // processes with a TPU device open, by pid
  std::optional<ScannedProcess> lock_holder;  // the lockfile's holder when it is not among holders
  LockfileState lockfile;
  std::optional<FileOwner> tpu_logs;      // set when /tmp/tpu_logs exists
  int denied = 0;                         // processes whose open files could not be read
  // TPU device files on the worker (the globs' matches); unset from a scan
  // that did not count them.
  std::optional<int> device_files;
  std::vector<ScannedProcess> processes;  // the whole process table (only when asked: kill)
};

// One verdict per worker.
enum class TpuState {
  free,         // no process holds a device, no lockfile left (root view)
  busy_self,    // only the caller's processes hold it
  busy_other,   // another user's process holds a device or the lock
  stale_lock,   // nobody holds it, but a lockfile is left (blocks users other than its owner)
  partial,      // no root view and nothing conclusive seen: maybe free, maybe not
  no_device,    // no TPU device file on the worker at all (not a TPU VM), and no lock held
  unreachable,  // the worker could not be reached
  error,        // the scan ran but failed or printed something unreadable
};
const char* to_string(TpuState state);
// True for the states in which the caller may start a job (free only).
inline bool is_free(TpuState state) { return state == TpuState::free; }

// The worker's TPU state from one scan of it (docs/ownership.md: who holds
// the TPU, and what an unprivileged scan can and cannot prove).
TpuState state_from_scan(const LockScan& scan);

struct ScanRequest {
  std::vector<std::string> device_globs;  // e.g. "/dev/accel*", "/dev/vfio/[0-9]*"
  bool process_table = false;             // also list every process (kill needs the trees)
};

// The remote command: the script on stdin, run by `sudo -n sh -s` when
// passwordless sudo works, else by `sh -s` as the login user.
RemoteCommand build_scan_command(const ScanRequest& request);

// Parses the script's output. Never throws; a malformed line gives an error
// naming the line.
Result<LockScan, std::string> parse_scan(std::string_view output);

struct WorkerScanResult {
  Worker worker;
  TpuState state = TpuState::unreachable;
  std::optional<LockScan> scan;  // absent when unreachable or error
  std::string error;             // what went wrong, for unreachable and error
};

// Runs the scan on an open connection (for multi-step work: scan, act, scan).
// Transport failures come back as the error; a failed or unreadable scan gives
// a result in state `error`.
Result<WorkerScanResult, TransportError> scan_connection(Connection& connection, const Worker& worker,
                                                         const ScanRequest& request,
                                                         const CancelToken& cancel);

// Scans every worker in parallel (one connection each, at most `fanout` at once).
// Results in worker order; unreachable workers get state `unreachable`.
std::vector<WorkerScanResult> scan_workers(const std::vector<Worker>& workers, Transport& transport,
                                           int fanout, const CancelToken& cancel,
                                           const std::vector<std::string>& device_globs);

}  // namespace tpurun
