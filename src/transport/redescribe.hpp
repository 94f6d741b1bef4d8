#pragma once
// A gcloud pod whose workers came from a kept describe (describe_cache.hpp):
// when a worker does not answer as recorded (refused, timed out, or with
// another host key), the TPU VM is described again, once per command, and
// the worker is tried at its current address; a TPU VM that is not READY
// any more is reported as gcloud said it.
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/transport/transport.hpp"

namespace tpurun {

class RedescribeTransport : public Transport {
 public:
  using Describe = std::function<Result<std::vector<Worker>, std::string>()>;
  RedescribeTransport(std::unique_ptr<Transport> inner, Describe describe);
  Result<std::unique_ptr<Connection>, TransportError> connect(const Worker& worker,
                                                              const CancelToken& cancel) override;
  Transport* bulk() override { return inner_->bulk(); }

 private:
  Result<std::vector<Worker>, std::string> current();

  std::unique_ptr<Transport> inner_;
  Describe describe_;
  std::mutex mutex_;
  std::optional<Result<std::vector<Worker>, std::string>> current_;
  std::chrono::steady_clock::time_point described_at_;
};

}  // namespace tpurun
