#pragma once
// Running work on many workers at once: one connection per worker, at most
// `fanout` in flight, one outcome per worker, in worker order.
#include <functional>
#include <optional>
#include <vector>

#include "tpurun/transport/outcome.hpp"
#include "tpurun/transport/transport.hpp"

namespace tpurun {

// Calls fn(i) for every i in [0, n) on at most `width` threads; returns when all are done.
void run_parallel(size_t n, int width, const std::function<void(size_t)>& fn);

struct FanoutPlan {
  std::vector<Worker> workers;
  RemoteCommand command;
  int fanout = 64;
  bool capture = false;  // keep each worker's output in its outcome
  // When set, each worker gets its own command (e.g. its worker number).
  std::function<RemoteCommand(const Worker&)> command_for;
};

// Runs plan.command on every worker. live[i] (may be null) receives worker i's
// output as it streams. on_done (optional) is called as each worker finishes.
std::vector<WorkerOutcome> run_on_workers(const FanoutPlan& plan, Transport& transport,
                                          const std::vector<OutputSink*>& live,
                                          const CancelToken& cancel,
                                          const std::function<void(const WorkerOutcome&)>& on_done = {});

// For multi-step work (scan, then act, then scan again) on one connection per
// worker. fn is not called for workers that could not be reached.
template <typename T>
std::vector<Result<T, TransportError>> for_each_connection(
    const std::vector<Worker>& workers, Transport& transport, int fanout, const CancelToken& cancel,
    const std::function<Result<T, TransportError>(Connection&, const Worker&)>& fn) {
  std::vector<std::optional<Result<T, TransportError>>> slots(workers.size());
  run_parallel(workers.size(), fanout, [&](size_t i) {
    auto conn = transport.connect(workers[i], cancel);
    if (!conn) {
      slots[i].emplace(unexpected(conn.error()));
    } else {
      slots[i].emplace(fn(**conn, workers[i]));
    }
  });
  std::vector<Result<T, TransportError>> results;
  results.reserve(slots.size());
  for (auto& s : slots) results.push_back(std::move(*s));
  return results;
}

}  // namespace tpurun
