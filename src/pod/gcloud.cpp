// gcloud pods: their workers are whatever `gcloud compute tpus tpu-vm
// describe` lists, so a recreated TPU VM with new addresses needs no edit.
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tpurun/config.hpp"

namespace tpurun {

namespace {

std::string string_field(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
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

std::vector<Worker> parse_gcloud_describe(const std::string& json_text, bool internal_ip) {
  auto doc = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    throw std::runtime_error("gcloud did not print a JSON object");

  auto endpoints = doc.find("networkEndpoints");
  if (endpoints == doc.end() || !endpoints->is_array() || endpoints->empty()) {
    std::string state = string_field(doc, "state");
    throw std::runtime_error("the TPU VM lists no network endpoints" +
                             (state.empty() ? std::string() : " (state: " + state + ")"));
  }

  // Worker i is networkEndpoints[i]: gcloud's --worker=i means the same host.
  // An endpoint's "port" (8470) is the TPU runtime's, not SSH's.
  // gcloud files each worker's host key under "tpu.<node id>-<worker>[-...]"
  // (its tpu-vm ssh GetInstanceID), not under the IP.
  const std::string node_id = string_field(doc, "id");
  std::vector<Worker> workers;
  for (const auto& endpoint : *endpoints) {
    int index = static_cast<int>(workers.size());
    std::string where = "networkEndpoints[" + std::to_string(index) + "]";
    std::string ip;
    if (internal_ip) {
      ip = string_field(endpoint, "ipAddress");
      if (ip.empty())
        throw std::runtime_error("worker " + std::to_string(index) + " has no internal IP (" +
                                 where + ".ipAddress)");
    } else {
      ip = endpoint.is_object()
               ? string_field(endpoint.value("accessConfig", nlohmann::json()), "externalIp")
               : "";
      if (ip.empty())
        throw std::runtime_error(
            "worker " + std::to_string(index) + " has no external IP (" + where +
            ".accessConfig.externalIp); TPU VMs created with --internal-ips have none,"
            " so set \"internal_ip\": true and connect from inside the VPC");
    }
    workers.push_back(Worker{index, ip, 22, node_id.empty() ? "" : "tpu." + node_id + "-" + std::to_string(index)});
  }
  return workers;
}

}  // namespace tpurun
