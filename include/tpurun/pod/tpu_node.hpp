#pragma once
// A TPU VM as `gcloud compute tpus tpu-vm describe --format=json` prints it:
// its state and health, and its workers (networkEndpoints, in worker order).
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tpurun/pod/pod.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun {

struct TpuNode {
  std::string name;                // the short name ("kmh-tpuvm-v4-32-1")
  std::string id;                  // the numeric id gcloud builds host key aliases from
  std::string state;               // READY, CREATING, STOPPED, PREEMPTED, TERMINATED, ...; NOT_FOUND when deleted
  std::string health;              // HEALTHY, TIMEOUT, UNHEALTHY_MAINTENANCE, ...
  std::string health_description;
  std::string accelerator_type;    // "v4-32"
  std::vector<Worker> workers;     // empty when the endpoints could not be read (see endpoint_error)
  std::string endpoint_error;      // why there are no workers ("" when there are)
  std::string json;                // describe's whole answer, as printed

  bool ready() const { return state == "READY"; }
};

// Throws std::runtime_error when the text is not a describe answer (not JSON,
// wrong types). Missing endpoints or addresses are not thrown: they leave
// `workers` empty and say why in `endpoint_error`.
TpuNode parse_tpu_node(const std::string& json_text, bool internal_ip);

// "PREEMPTED (health UNHEALTHY_MAINTENANCE: ...)", or just "READY".
std::string node_state_text(const TpuNode& node);

// A pod whose TPU VM is not READY (or is gone): its workers cannot be used.
// what() says what gcloud reported and what to do about it.
class TpuUnavailable : public std::runtime_error {
 public:
  TpuUnavailable(const std::string& pod, const GcloudSpec& spec, TpuNode node);
  const TpuNode& node() const { return node_; }

 private:
  TpuNode node_;
};

// Runs `gcloud ... describe` for `pod`'s TPU VM. Throws TpuUnavailable
// (state NOT_FOUND) when gcloud says there is no such TPU VM, and
// std::runtime_error naming the pod when gcloud fails or prints junk.
TpuNode describe_node(const std::string& pod, const GcloudSpec& spec, ProcessRunner& runner);
// The same, with a TPU VM that does not exist as a node in state NOT_FOUND
// rather than thrown.
TpuNode describe_node_or_gone(const std::string& pod, const GcloudSpec& spec, ProcessRunner& runner);

// gcloud's own error for a TPU VM that does not exist ("NOT_FOUND: Resource ... was not found").
bool is_not_found(const std::string& gcloud_stderr);

}  // namespace tpurun
