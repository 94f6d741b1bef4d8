#pragma once
// tpurun init: a first tpurun.json from what gcloud lists and the NFS mount
// this host has.
#include <string>
#include <vector>

#include "tpurun/pod/tpu_node.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun {

struct InitChoices {
  std::string zone;
  std::string project;  // "" when gcloud's configured project is meant
  std::string shared;   // the shared mount (required: the roots go there)
  std::vector<std::string> other_mounts;  // other NFS mounts, named in a comment
  std::vector<TpuNode> tpus;              // as listed, in gcloud's order
};

// The config text (JSON with comments): one gcloud pod per listed TPU VM,
// the first READY one as default_pod, roots <shared>/tpurun/{staging,logs}.
std::string init_config_text(const InitChoices& choices);

// What this host and gcloud say, where `choices` leaves it open: the zone
// (`gcloud config get-value compute/zone`), the shared mount (the first NFS
// mount, by findmnt; with none, a pod with no shared mount) and the TPU VMs
// gcloud lists in the zone. Throws UsageError when there is no zone, and
// std::runtime_error when gcloud fails or lists no TPU VM.
void discover_init_choices(InitChoices& choices, ProcessRunner& processes);

// The TPU VMs in `gcloud compute tpus tpu-vm list --format=json`'s array.
// Throws std::runtime_error when it is not one.
std::vector<TpuNode> parse_tpu_list_nodes(const std::string& json_text);

// The targets in `findmnt -J -t nfs,nfs4 -o TARGET` output, in its order.
std::vector<std::string> parse_findmnt_targets(const std::string& json_text);

}  // namespace tpurun
