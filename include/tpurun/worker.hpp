#pragma once
#include <string>

namespace tpurun {

// One host of a pod, in worker order (worker 0 is the coordinator).
struct Worker {
  int index = 0;
  std::string host;  // IP address or host name, as given or discovered
  int port = 22;
  // gcloud pods: the name gcloud files this host's key under in
  // ~/.ssh/google_compute_known_hosts, "tpu.<node id>-<index>" (gcloud may
  // append "-<6 characters of the key>"). Empty for other pods.
  std::string host_key_alias;

  std::string label() const { return "w" + std::to_string(index); }
  // "w3 127.0.1.4" (port shown only when it is not 22)
  std::string display() const {
    return label() + " " + host + (port == 22 ? "" : ":" + std::to_string(port));
  }
};

}  // namespace tpurun
