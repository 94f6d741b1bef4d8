#pragma once
// Asking workers, in the background, whether their jobs are still alive: one
// kept-open connection per worker, so a probe is one small command, and a
// worker that hangs or vanishes never delays the others or the caller.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tpurun/transport/transport.hpp"
#include "tpurun/util/cancel.hpp"

namespace tpurun {

// The latest liveness probe of a worker's job.
enum class Probe { none, alive, dead, unreachable };

struct ProbeResult {
  Probe probe = Probe::none;
  std::string error;              // for unreachable
  std::optional<int> exit_code;   // the job's exit record, as the worker itself sees it
};

// What to ask a worker about one job: its pid, and where its exit record goes.
struct ProbeJob {
  int pid = 0;
  std::string exit_path;
};

class LivenessProber {
 public:
  LivenessProber(Transport& transport, std::vector<Worker> workers, int fanout, std::chrono::milliseconds every);
  ~LivenessProber();
  LivenessProber(const LivenessProber&) = delete;
  LivenessProber& operator=(const LivenessProber&) = delete;

  // The jobs to probe from now on: worker index -> job (others are not probed).
  // A job whose pid is gone is reported with its exit record when the worker
  // sees one: the worker wrote it, so its own view is the authority, whatever
  // this host's NFS client still has cached (a remembered "no such file").
  void set_jobs(std::map<int, ProbeJob> jobs);
  // Results that arrived since the last call.
  std::map<int, ProbeResult> take();

 private:
  void loop();
  ProbeResult probe_one(size_t slot, const ProbeJob& job);

  Transport& transport_;
  std::vector<Worker> workers_;
  int fanout_;
  std::chrono::milliseconds every_;
  std::vector<std::unique_ptr<Connection>> connections_;  // by slot; used by one thread at a time
  std::mutex mutex_;
  std::condition_variable wake_;
  std::map<int, ProbeJob> jobs_;
  std::map<int, ProbeResult> fresh_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Asks each worker which of its given pids are still alive: one short command
// per worker. Result: worker index -> pid -> alive; a worker that could not be
// asked is absent. (`runs`, for runs made before the watcher existed.)
using PidsByWorker = std::map<int, std::vector<int>>;
std::map<int, std::map<int, bool>> pids_alive(Transport& transport, const std::vector<Worker>& workers,
                                              const PidsByWorker& pids, int fanout, const CancelToken& cancel);

}  // namespace tpurun
