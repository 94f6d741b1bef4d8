#pragma once
// A TPU VM created again as it was: what `describe` said when a run started
// (accelerator, runtime version, network, scheduling, labels, metadata, ...)
// turned back into gcloud's own commands (`tpu-vm delete`, `tpu-vm create`).
// Pure: no gcloud is run here (runs/recreate does that).
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tpurun/pod/pod.hpp"

namespace tpurun {

// The parts of a Node (Cloud TPU v2) that `tpu-vm create` can set again.
struct TpuVmShape {
  std::string name;  // short name
  std::string id;
  std::string accelerator_type;  // "v4-32"
  std::string runtime_version;   // "tpu-ubuntu2204-base"
  std::string network;           // networkConfig.network, as describe printed it
  std::string subnetwork;
  bool external_ips = true;  // networkConfig.enableExternalIps
  bool spot = false;
  bool preemptible = false;
  bool reserved = false;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> metadata;  // startup-script, ssh-keys, ...
  std::vector<std::string> tags;
  std::string service_account;
  std::vector<std::string> scopes;
  std::string description;
  bool secure_boot = false;
  std::vector<std::pair<std::string, std::string>> data_disks;  // sourceDisk, mode (READ_WRITE, READ_ONLY)
  std::string queued_resource;  // the queued resource that made it, when one did
  bool multislice_node = false;
};

// Throws std::runtime_error when the text is not a describe answer.
TpuVmShape read_tpu_vm_shape(const std::string& describe_json);

// Why tpurun cannot create this TPU VM again by itself, or nullopt when it can:
// one of a multislice queued resource, one without an accelerator type or
// runtime version on record. (One made by a queued resource comes back through
// it: queued_resource.hpp.)
std::optional<std::string> why_not_recreatable(const TpuVmShape& shape);

// gcloud compute tpus tpu-vm delete NAME --zone Z [--project P] --quiet
std::vector<std::string> gcloud_delete_argv(const GcloudSpec& spec);

// gcloud compute tpus tpu-vm create NAME --zone Z [--project P]
//   --accelerator-type T --version V [--network N] [--subnetwork S]
//   [--spot | --preemptible] [--reserved] [--internal-ips] [--labels k=v,...]
//   [--metadata-from-file k=DIR/k,...] [--tags ...] [--service-account E]
//   [--scopes ...] [--description D] [--shielded-secure-boot]
//   [--data-disk source=S,mode=M]... --async --quiet
// Metadata values go through files in `metadata_dir` (metadata_files()):
// values hold newlines and commas (ssh-keys, startup-script), which
// `--metadata k=v,...` cannot carry.
std::vector<std::string> gcloud_create_argv(const GcloudSpec& spec, const TpuVmShape& shape,
                                            const std::string& metadata_dir);

// Each metadata key's file under `metadata_dir` and what goes in it.
std::vector<std::pair<std::string, std::string>> metadata_files(const TpuVmShape& shape,
                                                                const std::string& metadata_dir);

}  // namespace tpurun
