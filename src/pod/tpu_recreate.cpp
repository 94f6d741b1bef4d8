// The Node fields are the Cloud TPU v2 API's (gcloud 528's
// generated_clients/apis/tpu/v2/tpu_v2_messages.py), and each flag is the
// one that `gcloud compute tpus tpu-vm create` maps onto that field
// (command_lib/compute/tpus/tpu_vm/flags.yaml: api_field).
#include "tpurun/pod/tpu_recreate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace tpurun {
namespace {

using nlohmann::json;

const json& member(const json& doc, const char* key) {
  static const json null;
  if (!doc.is_object()) return null;
  auto it = doc.find(key);
  return it == doc.end() ? null : *it;
}

std::string text(const json& doc, const char* key) {
  const json& v = member(doc, key);
  if (v.is_null()) return "";
  if (!v.is_string()) throw std::runtime_error(fmt::format("describe printed a non-string \"{}\"", key));
  return v.get<std::string>();
}

bool flag(const json& doc, const char* key) {
  const json& v = member(doc, key);
  return v.is_boolean() && v.get<bool>();
}

std::map<std::string, std::string> string_map(const json& doc, const char* key) {
  std::map<std::string, std::string> out;
  const json& v = member(doc, key);
  if (v.is_null()) return out;
  if (!v.is_object()) throw std::runtime_error(fmt::format("describe printed \"{}\" that is not an object", key));
  for (const auto& [k, value] : v.items()) {
    if (!value.is_string()) throw std::runtime_error(fmt::format("describe printed {}.{} that is not a string", key, k));
    out[k] = value.get<std::string>();
  }
  return out;
}

std::vector<std::string> string_list(const json& doc, const char* key) {
  std::vector<std::string> out;
  const json& v = member(doc, key);
  if (v.is_null()) return out;
  if (!v.is_array()) throw std::runtime_error(fmt::format("describe printed \"{}\" that is not a list", key));
  for (const json& item : v) {
    if (!item.is_string()) throw std::runtime_error(fmt::format("describe printed a non-string in \"{}\"", key));
    out.push_back(item.get<std::string>());
  }
  return out;
}

// Compute Engine's metadata keys are [a-zA-Z0-9-_]{1,128}; each becomes a
// file name here, so anything else is refused rather than written.
bool valid_metadata_key(const std::string& key) {
  if (key.empty() || key.size() > 128) return false;
  return std::all_of(key.begin(), key.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; });
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

// gcloud's dict and list flags split on ','; a value that has one is passed
// with gcloud's own escape, `^DELIM^k=v<DELIM>k=v` (gcloud topic escaping).
std::string list_value(const std::vector<std::string>& items) {
  const std::string all = join(items, "");
  if (all.find(',') == std::string::npos) return join(items, ",");
  for (const char* delim : {";", ":", "|", "@", "#", "%", "+"}) {
    if (all.find(delim) == std::string::npos) return fmt::format("^{}^{}", delim, join(items, delim));
  }
  throw std::runtime_error("cannot pass the metadata file paths to gcloud: they contain every delimiter");
}

void add_location(std::vector<std::string>& argv, const GcloudSpec& spec) {
  argv.insert(argv.end(), {"--zone", spec.zone});
  if (!spec.project.empty()) argv.insert(argv.end(), {"--project", spec.project});
}

}  // namespace

TpuVmShape read_tpu_vm_shape(const std::string& describe_json) {
  json doc = json::parse(describe_json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) throw std::runtime_error("the recorded describe is not a JSON object");
  TpuVmShape shape;
  shape.name = text(doc, "name");
  if (auto slash = shape.name.rfind('/'); slash != std::string::npos) shape.name = shape.name.substr(slash + 1);
  shape.id = text(doc, "id");
  shape.accelerator_type = text(doc, "acceleratorType");
  shape.runtime_version = text(doc, "runtimeVersion");
  const json& net = member(doc, "networkConfig");
  shape.network = text(net, "network");
  shape.subnetwork = text(net, "subnetwork");
  if (member(net, "enableExternalIps").is_boolean()) shape.external_ips = flag(net, "enableExternalIps");
  const json& scheduling = member(doc, "schedulingConfig");
  shape.spot = flag(scheduling, "spot");
  shape.preemptible = flag(scheduling, "preemptible");
  shape.reserved = flag(scheduling, "reserved");
  shape.labels = string_map(doc, "labels");
  shape.metadata = string_map(doc, "metadata");
  for (const auto& [key, value] : shape.metadata) {
    if (!valid_metadata_key(key)) throw std::runtime_error(fmt::format("metadata key '{}' is not a valid key", key));
  }
  shape.tags = string_list(doc, "tags");
  const json& account = member(doc, "serviceAccount");
  shape.service_account = text(account, "email");
  shape.scopes = string_list(account, "scope");
  shape.description = text(doc, "description");
  shape.secure_boot = flag(member(doc, "shieldedInstanceConfig"), "enableSecureBoot");
  const json& disks = member(doc, "dataDisks");
  if (disks.is_array()) {
    for (const json& disk : disks) shape.data_disks.emplace_back(text(disk, "sourceDisk"), text(disk, "mode"));
  }
  shape.queued_resource = text(doc, "queuedResource");
  shape.multislice_node = flag(doc, "multisliceNode");
  return shape;
}

std::optional<std::string> why_not_recreatable(const TpuVmShape& shape) {
  if (shape.multislice_node) {
    return fmt::format("it is a node of the multislice queued resource {}, and tpurun recreates one TPU VM, not "
                       "a group of slices: delete and create the queued resource (gcloud compute tpus "
                       "queued-resources ...), then stage again",
                       shape.queued_resource.empty() ? "(unnamed)" : shape.queued_resource);
  }
  if (shape.accelerator_type.empty()) return std::string("describe recorded no acceleratorType");
  if (shape.runtime_version.empty()) return std::string("describe recorded no runtimeVersion");
  return std::nullopt;
}

std::vector<std::string> gcloud_delete_argv(const GcloudSpec& spec) {
  std::vector<std::string> argv = {"gcloud", "compute", "tpus", "tpu-vm", "delete", spec.name};
  add_location(argv, spec);
  argv.push_back("--quiet");  // no "Do you want to continue (Y/n)?"
  return argv;
}

std::vector<std::pair<std::string, std::string>> metadata_files(const TpuVmShape& shape,
                                                                const std::string& metadata_dir) {
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& [key, value] : shape.metadata) files.emplace_back(metadata_dir + "/" + key, value);
  return files;
}

std::vector<std::string> gcloud_create_argv(const GcloudSpec& spec, const TpuVmShape& shape,
                                            const std::string& metadata_dir) {
  std::vector<std::string> argv = {"gcloud", "compute", "tpus", "tpu-vm", "create", spec.name};
  add_location(argv, spec);
  argv.insert(argv.end(), {"--accelerator-type", shape.accelerator_type, "--version", shape.runtime_version});
  if (!shape.network.empty()) argv.insert(argv.end(), {"--network", shape.network});
  if (!shape.subnetwork.empty()) argv.insert(argv.end(), {"--subnetwork", shape.subnetwork});
  // A Spot VM is the newer kind of preemptible one: --spot alone says it.
  if (shape.spot) {
    argv.push_back("--spot");
  } else if (shape.preemptible) {
    argv.push_back("--preemptible");
  }
  if (shape.reserved) argv.push_back("--reserved");
  if (!shape.external_ips) argv.push_back("--internal-ips");
  if (!shape.labels.empty()) {
    std::vector<std::string> pairs;
    for (const auto& [k, v] : shape.labels) pairs.push_back(k + "=" + v);
    argv.push_back("--labels=" + list_value(pairs));
  }
  if (!shape.metadata.empty()) {
    std::vector<std::string> pairs;
    for (const auto& [k, v] : shape.metadata) pairs.push_back(k + "=" + metadata_dir + "/" + k);
    argv.push_back("--metadata-from-file=" + list_value(pairs));
  }
  if (!shape.tags.empty()) argv.push_back("--tags=" + list_value(shape.tags));
  if (!shape.service_account.empty()) argv.insert(argv.end(), {"--service-account", shape.service_account});
  if (!shape.scopes.empty()) argv.push_back("--scopes=" + list_value(shape.scopes));
  if (!shape.description.empty()) argv.insert(argv.end(), {"--description", shape.description});
  if (shape.secure_boot) argv.push_back("--shielded-secure-boot");
  for (const auto& [source, mode] : shape.data_disks) {
    std::string arg = "source=" + source;
    if (mode == "READ_ONLY") arg += ",mode=read-only";
    if (mode == "READ_WRITE") arg += ",mode=read-write";
    argv.insert(argv.end(), {"--data-disk", arg});
  }
  // --async: tpurun polls describe itself and prints the state as it changes.
  argv.insert(argv.end(), {"--async", "--quiet"});
  return argv;
}

}  // namespace tpurun
