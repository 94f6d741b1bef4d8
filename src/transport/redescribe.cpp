#include "transport/redescribe.hpp"

#include <fmt/format.h>

namespace tpurun {

RedescribeTransport::RedescribeTransport(std::unique_ptr<Transport> inner, Describe describe)
    : inner_(std::move(inner)), describe_(std::move(describe)) {}

// Once per command; a long-lived user (the run's watcher) asks again after a minute.
Result<std::vector<Worker>, std::string> RedescribeTransport::current() {
  std::lock_guard lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (!current_ || now - described_at_ > std::chrono::minutes(1)) {
    current_ = describe_();
    described_at_ = now;
  }
  return *current_;
}

Result<std::unique_ptr<Connection>, TransportError> RedescribeTransport::connect(const Worker& worker,
                                                                                const CancelToken& cancel) {
  auto connection = inner_->connect(worker, cancel);
  if (connection || cancel.cancelled()) return connection;
  const ErrorKind kind = connection.error().kind;
  if (kind != ErrorKind::connect && kind != ErrorKind::timeout && kind != ErrorKind::hostkey) return connection;
  auto now = current();
  if (!now) {
    // What gcloud says explains it; what failed first says what was tried.
    return unexpected(TransportError{ErrorKind::connect,
                                     fmt::format("{} (after: {})", now.error(), connection.error().message)});
  }
  for (const Worker& fresh : *now) {
    if (fresh.index != worker.index) continue;
    if (fresh.host == worker.host && fresh.host_key_alias == worker.host_key_alias) return connection;
    Worker moved = worker;  // keeps its slice and name; only where it is changed
    moved.host = fresh.host;
    moved.host_key_alias = fresh.host_key_alias;
    return inner_->connect(moved, cancel);
  }
  return unexpected(TransportError{ErrorKind::connect,
                                   connection.error().message + " (the TPU VM has no worker " +
                                       std::to_string(worker.index) + " any more)"});
}

}  // namespace tpurun
