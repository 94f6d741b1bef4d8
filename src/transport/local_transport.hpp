#pragma once
// The "pod" of a single-host TPU VM: commands run here, without SSH.
#include "tpurun/transport/transport.hpp"

namespace tpurun {

class LocalTransport : public Transport {
 public:
  Result<std::unique_ptr<Connection>, TransportError> connect(const Worker& worker,
                                                              const CancelToken& cancel) override;
};

}  // namespace tpurun
