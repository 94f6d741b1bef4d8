#pragma once
// gc on a worker of a pod with no shared mount: the same rules as gc here
// (staging/gc.hpp) applied to the worker's own copies (staging/push.hpp),
// by worker/worker_gc.py there, over the worker's session.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tpurun/staging/gc.hpp"
#include "tpurun/transport/transport.hpp"
#include "tpurun/util/cancel.hpp"

namespace tpurun {

struct WorkerGcReport {
  std::vector<std::string> snapshots_removed;  // names (or that would be, with dry_run)
  std::size_t objects_removed = 0;
  std::uint64_t bytes_freed = 0;
  std::vector<std::string> runs_removed;  // "PROJECT/RUN": old log dirs of ended runs (request.worker_runs_done)
  std::uint64_t run_bytes_freed = 0;
  std::string error;  // the worker could not be cleaned (then nothing else is known)
};

// `staging_root` as the workers have it ("~/..." allowed). Snapshots named in
// request.in_use are kept, whatever their age.
// `logs_root` likewise: the runs' log dirs there (request.worker_runs_done).
WorkerGcReport collect_garbage_on(Connection& connection, const std::string& staging_root,
                                  const std::string& logs_root, const GcRequest& request, const CancelToken& cancel);

// The same on every worker of `workers` at once (at most 64), each on its own
// connection: one report per worker, in their order.
std::vector<std::pair<Worker, WorkerGcReport>> collect_garbage_on_workers(const std::vector<Worker>& workers,
                                                                          Transport& transport,
                                                                          const std::string& staging_root,
                                                                          const std::string& logs_root,
                                                                          const GcRequest& request,
                                                                          const CancelToken& cancel);

}  // namespace tpurun
