#pragma once
#include <string>
#include <vector>

namespace tpurun {

// One host of a pod, in worker order (worker 0 is the coordinator).
struct Worker {
  // The worker's number in its pod: in a multi-slice pod, global across the
  // slices (slice 0's workers first), so workerN.log, --worker N and "wN"
  // always mean the same host.
  int index = 0;
  std::string host;  // IP address or host name, as given or discovered
  int port = 22;
  // gcloud pods: the name gcloud files this host's key under in
  // ~/.ssh/google_compute_known_hosts, "tpu.<node id>-<index>" (gcloud may
  // append "-<6 characters of the key>"). Empty for other pods.
  std::string host_key_alias;
  // Multi-slice pods (docs/multislice.md): the slice this worker belongs to
  // and its number within that slice. -1: not part of a multi-slice pod.
  int slice = -1;
  int slice_worker = 0;

  std::string label() const { return "w" + std::to_string(index); }
  // "w5", or "w5 s1w1" (global w5 is worker 1 of slice 1) in a multi-slice pod
  std::string name() const {
    if (slice < 0) return label();
    return label() + " s" + std::to_string(slice) + "w" + std::to_string(slice_worker);
  }
  // "w3 127.0.1.4", "w5 s1w1 127.0.1.6" (port shown only when it is not 22)
  std::string display() const {
    return name() + " " + host + (port == 22 ? "" : ":" + std::to_string(port));
  }
};

// The name() of worker `index` among `workers` ("w5 s1w1"), or "wN" when it is not there.
inline std::string worker_name(const std::vector<Worker>& workers, int index) {
  for (const Worker& w : workers) {
    if (w.index == index) return w.name();
  }
  return "w" + std::to_string(index);
}

}  // namespace tpurun
