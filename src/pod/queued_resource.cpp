// The QueuedResource fields are the Cloud TPU v2 API's (gcloud 528's
// generated_clients/apis/tpu/v2/tpu_v2_messages.py); the create flags are
// `gcloud compute tpus queued-resources create`'s own.
#include "tpurun/pod/queued_resource.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace tpurun {
namespace {

using nlohmann::json;

std::string text_at(const json& doc, const json::json_pointer& at) {
  if (!doc.contains(at)) return "";
  const json& v = doc.at(at);
  if (!v.is_string()) throw std::runtime_error(fmt::format("describe printed a non-string {}", at.to_string()));
  return v.get<std::string>();
}

std::string basename(const std::string& name) {
  const size_t slash = name.rfind('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

void add_location(std::vector<std::string>& argv, const GcloudSpec& spec) {
  argv.insert(argv.end(), {"--zone", spec.zone});
  if (!spec.project.empty()) argv.insert(argv.end(), {"--project", spec.project});
}

}  // namespace

bool QueuedResource::pending() const {
  return state == "CREATING" || state == "ACCEPTED" || state == "WAITING_FOR_RESOURCES" || state == "PROVISIONING";
}

QueuedResource parse_queued_resource(const std::string& json_text) {
  const json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) throw std::runtime_error("the queued resource's describe is not a JSON object");
  QueuedResource qr;
  qr.json = json_text;
  qr.name = basename(text_at(doc, json::json_pointer("/name")));
  qr.state = text_at(doc, json::json_pointer("/state/state"));
  if (qr.state.empty()) qr.state = "STATE_UNSPECIFIED";
  qr.initiator = text_at(doc, json::json_pointer("/state/stateInitiator"));
  qr.error = text_at(doc, json::json_pointer("/state/failedData/error/message"));
  const json::json_pointer code("/state/failedData/error/code");
  if (doc.contains(code) && doc.at(code).is_number_integer()) qr.error_code = doc.at(code).get<int>();
  qr.create_time = text_at(doc, json::json_pointer("/createTime"));
  const json::json_pointer specs("/tpu/nodeSpec");
  if (doc.contains(specs) && doc.at(specs).is_array()) {
    for (const json& spec : doc.at(specs)) {
      if (!spec.is_object()) continue;
      if (spec.contains("multisliceParams")) qr.multislice = true;
      if (spec.contains("nodeId") && spec["nodeId"].is_string()) qr.node_ids.push_back(spec["nodeId"].get<std::string>());
      const json::json_pointer labels("/node/labels");
      if (qr.labels.empty() && spec.contains(labels) && spec.at(labels).is_object()) {
        for (const auto& [k, v] : spec.at(labels).items()) {
          if (v.is_string()) qr.labels[k] = v.get<std::string>();
        }
      }
    }
  }
  return qr;
}

std::vector<std::string> gcloud_qr_create_argv(const GcloudSpec& spec, const TpuVmShape& shape,
                                               const QueuedOptions& options, const std::string& metadata_dir) {
  // The node's own flags are tpu-vm create's (one builder), less what a
  // queued resource words otherwise.
  std::vector<std::string> node = gcloud_create_argv(spec, shape, metadata_dir);
  std::vector<std::string> argv = {"gcloud"};
  if (options.best_effort) argv.push_back("alpha");
  argv.insert(argv.end(), {"compute", "tpus", "queued-resources", "create", options.name.empty() ? spec.name : options.name,
                           "--node-id", spec.name});
  add_location(argv, spec);
  argv.insert(argv.end(), {"--accelerator-type", shape.accelerator_type, "--runtime-version", shape.runtime_version});
  // node[0..5] is "gcloud compute tpus tpu-vm create NAME", then the location and --accelerator-type,
  // --version; from there on its flags are the queued resource's too.
  size_t from = 6;
  while (from < node.size() && node[from] != "--version") ++from;
  from += 2;
  for (size_t i = from; i < node.size(); ++i) {
    const std::string& arg = node[i];
    if (arg == "--async" || arg == "--quiet" || arg == "--preemptible") continue;
    argv.push_back(arg);
  }
  if (options.guaranteed) argv.push_back("--guaranteed");
  if (options.best_effort) argv.push_back("--best-effort");
  if (!options.reservation_host_project.empty()) {
    argv.insert(argv.end(), {"--reservation-host-project", options.reservation_host_project});
  }
  argv.push_back("--quiet");
  return argv;
}

std::vector<std::string> gcloud_qr_describe_argv(const GcloudSpec& spec) {
  std::vector<std::string> argv = {"gcloud", "compute", "tpus", "queued-resources", "describe", spec.name};
  add_location(argv, spec);
  argv.push_back("--format=json");
  return argv;
}

std::vector<std::string> gcloud_qr_delete_argv(const GcloudSpec& spec, bool force) {
  std::vector<std::string> argv = {"gcloud", "compute", "tpus", "queued-resources", "delete", spec.name};
  add_location(argv, spec);
  if (force) argv.push_back("--force");
  argv.push_back("--quiet");
  return argv;
}

TpuVmShape shape_of_create(const GcloudSpec& spec, const CreateSpec& create,
                           const std::map<std::string, std::string>& extra_labels) {
  TpuVmShape shape;
  shape.name = spec.name;
  shape.accelerator_type = create.accelerator_type;
  shape.runtime_version = create.runtime_version;
  shape.network = create.network;
  shape.subnetwork = create.subnetwork;
  shape.external_ips = !create.internal_ips;
  shape.spot = create.spot;
  shape.reserved = create.reserved;
  shape.labels = create.labels;
  for (const auto& [k, v] : extra_labels) shape.labels[k] = v;
  shape.metadata = create.metadata;
  shape.service_account = create.service_account;
  for (const auto& [source, mode] : create.data_disks) {
    shape.data_disks.emplace_back(source, mode == "read-only" ? "READ_ONLY" : "READ_WRITE");
  }
  return shape;
}

QueuedOptions queued_options_of(const TpuVmShape& shape) {
  QueuedOptions options;
  options.name = basename(shape.queued_resource);
  return options;
}

GcloudSpec queued_resource_spec(const GcloudSpec& node, const TpuVmShape& shape) {
  GcloudSpec qr = node;
  if (!shape.queued_resource.empty()) qr.name = basename(shape.queued_resource);
  return qr;
}

QueuedOptions queued_options_of(const CreateSpec& create) {
  QueuedOptions options;
  options.guaranteed = create.guaranteed;
  options.best_effort = create.best_effort;
  options.reservation_host_project = create.reservation_host_project;
  return options;
}

}  // namespace tpurun
