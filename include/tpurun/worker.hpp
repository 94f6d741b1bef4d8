#pragma once
#include <string>

namespace tpurun {

// One host of a pod, in worker order (worker 0 is the coordinator).
struct Worker {
  int index = 0;
  std::string host;  // IP address or host name, as given or discovered
  int port = 22;

  std::string label() const { return "w" + std::to_string(index); }
  // "w3 127.0.1.4" (port shown only when it is not 22)
  std::string display() const {
    return label() + " " + host + (port == 22 ? "" : ":" + std::to_string(port));
  }
};

}  // namespace tpurun
