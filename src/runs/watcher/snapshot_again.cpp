#include "runs/watcher/snapshot_again.hpp"

#include <fmt/format.h>

#include <atomic>

#include "tpurun/fanout/fanout.hpp"
#include "tpurun/staging/push.hpp"

namespace tpurun {

SnapshotAgain push_snapshot_again(const RunRecord& record, const PodConfig& pod, const std::vector<Worker>& workers,
                                  Transport& transport, int fanout, const CancelToken& cancel) {
  SnapshotAgain out;
  auto snapshot = read_snapshot(record.staged_dir, cancel);
  if (!snapshot) {
    out.error = snapshot.error().message;
    return out;
  }
  if (!record.tree_hash.empty() && snapshot->tree_hash != record.tree_hash) {
    out.error = fmt::format("the snapshot {} is not what the run staged (its tree hash is {}, the run's {})",
                            record.staged_dir, snapshot->tree_hash, record.tree_hash);
    return out;
  }
  const PushTarget target{pod.worker_root + "/staging", pod.worker_root + "/logs", record.user, record.project,
                          record.run_id};
  const PushContent content(*snapshot);
  std::vector<std::string> why(workers.size());
  std::vector<char> sent(workers.size(), 0);  // not vector<bool>: its bits share bytes across threads
  std::atomic<std::uint64_t> bytes{0};
  run_parallel(workers.size(), fanout, [&](size_t i) {
    auto connection = transport.connect(workers[i], cancel);
    if (!connection) {
      why[i] = connection.error().message;
      return;
    }
    auto pushed = push_snapshot(**connection, content, target, cancel);
    if (!pushed) {
      why[i] = pushed.error();
    } else if (pushed->staged_dir != workers_staged_dir(record) || pushed->log_dir != workers_log_dir(record)) {
      why[i] = fmt::format("it keeps the run under {}, not {} as the other workers did", pushed->log_dir,
                           workers_log_dir(record));
    } else {
      sent[i] = !pushed->had;
      bytes += pushed->bytes_sent;
    }
  });
  for (size_t i = 0; i < workers.size(); ++i) {
    if (!why[i].empty()) out.failed.push_back(fmt::format("{}: {}", workers[i].display(), why[i]));
    if (sent[i]) ++out.sent_to;
  }
  out.bytes = bytes;
  return out;
}

}  // namespace tpurun
