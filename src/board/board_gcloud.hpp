#pragma once
// board.gcloud: the TPU VMs that gcloud lists in the configured zones, for
// `status --all`, besides the config's own pods.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/pod/config.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun {

struct ListedTpu {
  std::string name;         // the TPU VM's name, or "gcloud:<zone>" when listing the zone failed
  std::string zone;
  std::string accelerator;  // e.g. "v4-32"
  std::string state;        // gcloud's: READY, PREEMPTED, CREATING, ...
  std::optional<PodConfig> pod;  // READY with workers: a pod to scan
  std::string error;             // the zone could not be listed, or its workers not read
};

// Runs `gcloud compute tpus tpu-vm list --project P --zone Z --format=json`
// for each zone, in order. TPU VMs that the config already has (a pod of that
// name, or a gcloud pod of that TPU) are left out.
std::vector<ListedTpu> list_board_tpus(const ConfigFile& config, ProcessRunner& runner);

// The TPU VMs in the JSON array that `tpu-vm list --format=json` prints
// (each element is what `describe` prints). Throws std::runtime_error.
std::vector<ListedTpu> parse_tpu_list(const std::string& json_text, const std::string& zone,
                                      const BoardGcloud& board);

// A pod's TPU VM that is not READY, as the board says it (issue 27): its
// queued resource's state ("WAITING_FOR_RESOURCES", with " for 2h13m (queued
// resource q)"; "FAILED" with its reason; PROVISIONING, SUSPENDED, ...), or
// "no VM" when there is neither. `node_state` is describe's (NOT_FOUND when
// gone); `state` stays "" when describe's own words say it better.
struct CloudState {
  std::string state;
  std::string detail;
};
CloudState board_cloud_state(const GcloudSpec& spec, const std::string& node_state, ProcessRunner& runner,
                             std::chrono::system_clock::time_point now);

}  // namespace tpurun
