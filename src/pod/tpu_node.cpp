// gcloud pods: their workers are whatever `gcloud compute tpus tpu-vm
// describe` lists, so a recreated TPU VM with new addresses needs no edit.
#include "tpurun/pod/tpu_node.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tpurun/pod/config.hpp"

namespace tpurun {

namespace {

std::string string_field(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// A field that must be a string when present (a wrong type means the text is
// not a describe answer at all).
std::string checked_string(const nlohmann::json& doc, const char* key) {
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return "";
  if (!it->is_string()) throw std::runtime_error(fmt::format("gcloud printed a non-string \"{}\"", key));
  return it->get<std::string>();
}

// Worker i is networkEndpoints[i]: gcloud's --worker=i means the same host.
// An endpoint's "port" (8470) is the TPU runtime's, not SSH's. gcloud files
// each worker's host key under "tpu.<node id>-<worker>[-...]" (its tpu-vm ssh
// GetInstanceID), not under the IP.
void read_endpoints(TpuNode& node, const nlohmann::json& doc, bool internal_ip) {
  auto endpoints = doc.find("networkEndpoints");
  if (endpoints != doc.end() && !endpoints->is_null() && !endpoints->is_array())
    throw std::runtime_error("gcloud printed networkEndpoints that is not a list");
  if (endpoints == doc.end() || !endpoints->is_array() || endpoints->empty()) {
    node.endpoint_error = "the TPU VM lists no network endpoints" +
                          (node.state.empty() ? std::string() : " (state: " + node.state + ")");
    return;
  }
  for (const auto& endpoint : *endpoints) {
    if (!endpoint.is_object()) throw std::runtime_error("gcloud printed a network endpoint that is not an object");
    int index = static_cast<int>(node.workers.size());
    std::string where = "networkEndpoints[" + std::to_string(index) + "]";
    std::string ip;
    if (internal_ip) {
      if (endpoint.contains("ipAddress") && !endpoint["ipAddress"].is_string())
        throw std::runtime_error(where + ".ipAddress is not a string");
      ip = string_field(endpoint, "ipAddress");
      if (ip.empty()) {
        node.endpoint_error = "worker " + std::to_string(index) + " has no internal IP (" + where + ".ipAddress)";
      }
    } else {
      auto access = endpoint.find("accessConfig");
      if (access != endpoint.end() && !access->is_object() && !access->is_null())
        throw std::runtime_error(where + ".accessConfig is not an object");
      ip = access != endpoint.end() ? string_field(*access, "externalIp") : "";
      if (ip.empty()) {
        node.endpoint_error =
            "worker " + std::to_string(index) + " has no external IP (" + where +
            ".accessConfig.externalIp); TPU VMs created with --internal-ips have none,"
            " so set \"internal_ip\": true and connect from inside the VPC";
      }
    }
    if (!node.endpoint_error.empty()) {
      node.workers.clear();
      return;
    }
    node.workers.push_back(
        Worker{index, ip, 22, node.id.empty() ? "" : "tpu." + node.id + "-" + std::to_string(index)});
  }
}

std::string gcloud_location(const GcloudSpec& spec) {
  return "--zone " + spec.zone + (spec.project.empty() ? "" : " --project " + spec.project);
}

}  // namespace

std::vector<std::string> gcloud_describe_argv(const GcloudSpec& spec) {
  std::vector<std::string> argv = {"gcloud",   "compute", "tpus",   "tpu-vm",
                                   "describe", spec.name, "--zone", spec.zone};
  if (!spec.project.empty()) {
    argv.push_back("--project");
    argv.push_back(spec.project);
  }
  argv.push_back("--format=json");
  return argv;
}

TpuNode parse_tpu_node(const std::string& json_text, bool internal_ip) {
  auto doc = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) throw std::runtime_error("gcloud did not print a JSON object");
  TpuNode node;
  node.name = checked_string(doc, "name");
  node.name = node.name.substr(node.name.rfind('/') == std::string::npos ? 0 : node.name.rfind('/') + 1);
  node.id = checked_string(doc, "id");
  node.state = checked_string(doc, "state");
  node.health = checked_string(doc, "health");
  node.health_description = checked_string(doc, "healthDescription");
  node.accelerator_type = checked_string(doc, "acceleratorType");
  node.json = json_text;
  read_endpoints(node, doc, internal_ip);
  return node;
}

std::vector<Worker> parse_gcloud_describe(const std::string& json_text, bool internal_ip) {
  TpuNode node = parse_tpu_node(json_text, internal_ip);
  if (!node.endpoint_error.empty()) throw std::runtime_error(node.endpoint_error);
  return node.workers;
}

std::string node_state_text(const TpuNode& node) {
  std::string text = node.state.empty() ? "in an unknown state" : node.state;
  if (!node.health.empty() && node.health != "HEALTHY") {
    text += " (health " + node.health + (node.health_description.empty() ? "" : ": " + node.health_description) + ")";
  } else if (!node.health_description.empty()) {
    text += " (" + node.health_description + ")";
  }
  return text;
}

namespace {

// What gcloud reported, and what the user can do about it.
std::string unavailable_message(const std::string& pod, const GcloudSpec& spec, const TpuNode& node) {
  const std::string where = gcloud_location(spec);
  const std::string head = fmt::format("pod '{}': TPU VM {} ", pod, spec.name);
  if (node.state == "NOT_FOUND") {
    return head + fmt::format("was not found in zone {}{}: it was deleted, or the config names the wrong TPU VM, "
                              "zone or project (`gcloud compute tpus tpu-vm list {}` lists them)",
                              spec.zone, spec.project.empty() ? "" : " of project " + spec.project, where);
  }
  const std::string state = node_state_text(node);
  if (node.state == "PREEMPTED" || node.state == "TERMINATED") {
    return head + fmt::format("is {}: its workers and their jobs are gone, and it never comes back by itself. "
                              "Delete it and create it again (`gcloud compute tpus tpu-vm delete {} {}`, "
                              "then `... create`); your runs' logs stay readable (tpurun runs, tpurun logs)",
                              state, spec.name, where);
  }
  if (node.state == "STOPPED" || node.state == "STOPPING") {
    return head + fmt::format("is {}: start it with `gcloud compute tpus tpu-vm start {} {}`", state, spec.name,
                              where);
  }
  return head + fmt::format("is {}, not READY: wait until it is (`tpurun status` shows its state)", state);
}

}  // namespace

TpuUnavailable::TpuUnavailable(const std::string& pod, const GcloudSpec& spec, TpuNode node)
    : std::runtime_error(unavailable_message(pod, spec, node)), node_(std::move(node)) {}

bool is_not_found(const std::string& gcloud_stderr) {
  return gcloud_stderr.find("NOT_FOUND") != std::string::npos;
}

std::vector<std::string> gcloud_import_argv(const GcloudSpec& spec, const std::string& workers) {
  std::vector<std::string> argv = {"gcloud", "compute", "tpus", "tpu-vm", "ssh", spec.name, "--zone", spec.zone};
  if (!spec.project.empty()) {
    argv.push_back("--project");
    argv.push_back(spec.project);
  }
  if (spec.internal_ip) argv.push_back("--internal-ip");
  argv.push_back("--worker=" + workers);
  argv.push_back("--command=true");
  return argv;
}

TpuNode describe_node_or_gone(const std::string& pod, const GcloudSpec& spec, ProcessRunner& runner) {
  try {
    return describe_node(pod, spec, runner);
  } catch (const TpuUnavailable& e) {
    return e.node();
  }
}

}  // namespace tpurun
