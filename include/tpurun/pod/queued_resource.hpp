#pragma once
// Queued resources (Cloud TPU v2): what `gcloud compute tpus queued-resources
// describe --format=json` says, and gcloud's create, describe and delete
// commands for one, built from a TPU VM's shape (tpu_recreate.hpp) or from a
// pod's "create" block. Pure: no gcloud is run here (cloud/ does that).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/pod/pod.hpp"
#include "tpurun/pod/tpu_recreate.hpp"

namespace tpurun {

struct QueuedResource {
  std::string name;         // short name
  std::string state;        // WAITING_FOR_RESOURCES, PROVISIONING, ACTIVE, FAILED, SUSPENDED, ...; NOT_FOUND when gone
  std::string error;        // FAILED: failedData.error.message ("" otherwise)
  int error_code = 0;       // FAILED: failedData.error.code
  std::string initiator;    // state.stateInitiator (SERVICE, USER)
  std::string create_time;  // createTime, as printed
  std::vector<std::string> node_ids;  // tpu.nodeSpec[].nodeId
  bool multislice = false;            // a nodeSpec with multisliceParams
  std::map<std::string, std::string> labels;  // the first node spec's node.labels
  std::string json;

  // The states in which the queue is still working on it.
  bool pending() const;
};

// Throws std::runtime_error when the text is not a describe answer.
QueuedResource parse_queued_resource(const std::string& json_text);

// A queued resource's tier and policy beyond what a node's shape says.
struct QueuedOptions {
  std::string name;  // the queued resource's name; "" names it after its node
  bool guaranteed = false;
  bool best_effort = false;  // v2alpha1: `gcloud alpha`
  std::string reservation_host_project;
};

// gcloud [alpha] compute tpus queued-resources create NAME --node-id NAME
//   --zone Z [--project P] --accelerator-type T --runtime-version V
//   [--spot | --reserved | --guaranteed | --best-effort] [network, labels,
//   metadata-from-file, data disks ...] --quiet
// The queued resource is options.name, else named after its node (spec.name).
std::vector<std::string> gcloud_qr_create_argv(const GcloudSpec& spec, const TpuVmShape& shape,
                                               const QueuedOptions& options, const std::string& metadata_dir);
// gcloud compute tpus queued-resources describe NAME --zone Z [--project P] --format=json
std::vector<std::string> gcloud_qr_describe_argv(const GcloudSpec& spec);
// gcloud compute tpus queued-resources delete NAME --zone Z [--project P] [--force] --quiet
// (--force: its node goes too; a queued resource that has one needs it).
std::vector<std::string> gcloud_qr_delete_argv(const GcloudSpec& spec, bool force);

// A recorded node's queued resource as QueuedOptions (its short name), from its shape.
QueuedOptions queued_options_of(const TpuVmShape& shape);
// The queued resource a node's shape names, as a GcloudSpec (short name, same zone and project).
GcloudSpec queued_resource_spec(const GcloudSpec& node, const TpuVmShape& shape);

// A pod's "create" block as the shape of the TPU VM to make, with
// `extra_labels` (tpurun's own: who made it) added.
TpuVmShape shape_of_create(const GcloudSpec& spec, const CreateSpec& create,
                           const std::map<std::string, std::string>& extra_labels);
QueuedOptions queued_options_of(const CreateSpec& create);

}  // namespace tpurun
