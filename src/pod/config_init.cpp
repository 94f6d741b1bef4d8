#include "tpurun/pod/config_init.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tpurun/pod/tpu_recreate.hpp"
#include "tpurun/util/usage_error.hpp"

namespace tpurun {
namespace {

std::string json_string(const std::string& s) { return nlohmann::json(s).dump(); }

void collect_targets(const nlohmann::json& list, std::vector<std::string>& out) {
  if (!list.is_array()) return;
  for (const auto& fs : list) {
    if (!fs.is_object()) continue;
    if (auto t = fs.find("target"); t != fs.end() && t->is_string()) out.push_back(t->get<std::string>());
    if (auto kids = fs.find("children"); kids != fs.end()) collect_targets(*kids, out);
  }
}

// "create" from the VM's describe, so that `tpurun up` can make it again;
// none when describe does not say enough (or it is one of a multislice group).
std::string create_block(const TpuNode& t) {
  TpuVmShape shape;
  try {
    shape = read_tpu_vm_shape(t.json);
  } catch (const std::exception&) {
    return "";
  }
  if (shape.accelerator_type.empty() || shape.runtime_version.empty() || shape.multislice_node) return "";
  std::string tier = shape.spot || shape.preemptible ? ", \"spot\": true" : shape.reserved ? ", \"reserved\": true" : "";
  return fmt::format("      // How `tpurun up` makes it (docs/config.md, \"create\")\n"
                     "      \"create\": {{ \"accelerator_type\": {}, \"runtime_version\": {}{}, \"queued\": {} }},\n",
                     json_string(shape.accelerator_type), json_string(shape.runtime_version), tier,
                     shape.queued_resource.empty() ? "false" : "true");
}

}  // namespace

std::vector<TpuNode> parse_tpu_list_nodes(const std::string& json_text) {
  auto doc = nlohmann::json::parse(json_text, nullptr, false);
  if (doc.is_discarded() || !doc.is_array()) throw std::runtime_error("gcloud did not print a JSON array");
  std::vector<TpuNode> nodes;
  for (const auto& node : doc) {
    if (node.is_object()) nodes.push_back(parse_tpu_node(node.dump(), true));
  }
  return nodes;
}

std::vector<std::string> parse_findmnt_targets(const std::string& json_text) {
  std::vector<std::string> out;
  auto doc = nlohmann::json::parse(json_text, nullptr, false);
  if (!doc.is_discarded() && doc.is_object()) collect_targets(doc.value("filesystems", nlohmann::json()), out);
  return out;
}

std::string init_config_text(const InitChoices& c) {
  std::string def;
  for (const TpuNode& t : c.tpus) {
    if (def.empty() && t.ready()) def = t.name;
  }
  if (def.empty() && !c.tpus.empty()) def = c.tpus.front().name;
  std::string text = fmt::format(
      "// Written by `tpurun init` from `gcloud compute tpus tpu-vm list --zone {}{}`.\n"
      "// Every key is described in docs/config.md; `tpurun doctor` checks that it works.\n"
      "{{\n  \"default_pod\": {},\n  \"pods\": {{\n",
      c.zone, c.project.empty() ? "" : " --project " + c.project, json_string(def));
  std::string roots = c.shared.empty()
                          ? std::string("      // No shared (NFS) mount: each worker keeps code and logs on its own disk,\n"
                                        "      // under ~/.tpurun (\"local_root\"); see docs/config.md.\n")
                          : fmt::format("      // On the shared mount {}: every worker must see it at the same path.\n"
                                  "      \"staging_root\": {},\n      \"logs_root\": {},\n",
                                  c.shared, json_string(c.shared + "/tpurun/staging"),
                                  json_string(c.shared + "/tpurun/logs"));
  for (const std::string& other : c.other_mounts) roots += "      // (another NFS mount here: " + other + ")\n";
  for (size_t i = 0; i < c.tpus.size(); ++i) {
    const TpuNode& t = c.tpus[i];
    text += fmt::format("    // {}, {} worker{}, {} when listed\n", t.accelerator_type.empty() ? "TPU VM" : t.accelerator_type,
                        t.workers.size(), t.workers.size() == 1 ? "" : "s", t.state.empty() ? "state unknown" : t.state);
    text += fmt::format("    {}: {{\n      \"gcloud\": {{ \"name\": {}, \"zone\": {}{} }},\n", json_string(t.name),
                        json_string(t.name), json_string(c.zone), c.project.empty() ? "" : ", \"project\": " + json_string(c.project));
    text += create_block(t);
    text += roots;
    text += i + 1 < c.tpus.size() ? "    },\n" : "    }\n";
  }
  text += "  }\n}\n";
  return text;
}

namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// `gcloud config get-value KEY`: "" when unset (gcloud then prints "(unset)" on stderr).
std::string gcloud_value(const std::string& key, ProcessRunner& processes) {
  ProcessResult r = processes.run({"gcloud", "config", "get-value", key});
  return r.exit_code == 0 ? trimmed(r.out) : "";
}

}  // namespace

void discover_init_choices(InitChoices& c, ProcessRunner& processes) {
  if (c.zone.empty()) c.zone = gcloud_value("compute/zone", processes);
  if (c.zone.empty()) {
    throw UsageError("no zone: pass --zone ZONE (gcloud config get-value compute/zone is unset)");
  }
  if (c.shared.empty()) {
    ProcessResult mounts = processes.run({"findmnt", "-J", "-t", "nfs,nfs4", "-o", "TARGET"});
    auto targets = parse_findmnt_targets(mounts.out);
    // None: a pod with no shared mount (code and logs on each worker's disk).
    if (!targets.empty()) {
      c.shared = targets.front();
      c.other_mounts.assign(targets.begin() + 1, targets.end());
    }
  }
  std::vector<std::string> argv = {"gcloud", "compute", "tpus", "tpu-vm", "list", "--zone", c.zone, "--format=json"};
  if (!c.project.empty()) argv.insert(argv.end() - 1, {"--project", c.project});
  ProcessResult listed = processes.run(argv);
  if (listed.exit_code != 0) {
    throw std::runtime_error(fmt::format("`{}` failed (exit {}):\n{}", fmt::join(argv, " "), listed.exit_code,
                                         trimmed(listed.err)));
  }
  c.tpus = parse_tpu_list_nodes(listed.out);
  if (c.tpus.empty()) {
    throw std::runtime_error(fmt::format("gcloud lists no TPU VM in zone {}{}: create one, or pick another zone",
                                         c.zone, c.project.empty() ? "" : " of project " + c.project));
  }
}

}  // namespace tpurun
