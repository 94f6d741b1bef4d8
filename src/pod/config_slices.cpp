#include "config_slices.hpp"

#include "tpurun/pod/slices.hpp"
#include "tpurun/util/suggest.hpp"

namespace tpurun {
namespace {

std::vector<std::string> slice_names(const ConfigNode& node) {
  for (const auto& [key, child] : node.members()) {
    if (key != "slices" && key != "megascale_port") {
      child.fail("not allowed here" + did_you_mean(key, {"slices", "megascale_port"}) + ": a pod with \"slices\" takes its workers, roots and SSH settings from its slices; only "
                 "\"megascale_port\" may go with it");
    }
  }
  std::vector<std::string> names;
  for (const ConfigNode& item : node.require("slices").elements()) names.push_back(item.as_nonempty_string());
  return names;
}

int read_megascale_port(const ConfigNode& node) {
  const std::int64_t port = node.as_integer();
  if (port < 1 || port > 65535) node.fail("must be a port number from 1 to 65535");
  return static_cast<int>(port);
}

}  // namespace

bool has_slices(const ConfigNode& pod_node) { return pod_node.json().is_object() && pod_node.get("slices"); }

void read_slices_pods(const std::vector<std::pair<std::string, ConfigNode>>& nodes,
                      std::map<std::string, PodConfig>& pods) {
  // Every multi-slice pod is known (by its slice names) before any is
  // checked, so that nesting is reported as such whatever the file's order.
  std::vector<std::vector<std::string>> names;
  for (const auto& [name, node] : nodes) {
    names.push_back(slice_names(node));
    PodConfig placeholder;
    placeholder.name = name;
    for (const std::string& slice : names.back()) placeholder.slices.push_back(Slice{slice, {}, 0, 0});
    pods[name] = placeholder;
  }
  std::map<std::string, PodConfig> built;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto& [name, node] = nodes[i];
    const ConfigNode list = node.require("slices");
    if (auto problem = check_slices(names[i], pods)) {
      if (problem->index < 0) list.fail(problem->message);
      list.elements().at(static_cast<size_t>(problem->index)).fail(problem->message);
    }
    PodConfig pod = make_slices_pod(name, names[i], pods);
    if (auto port = node.get("megascale_port")) pod.megascale_port = read_megascale_port(*port);
    built[name] = pod;
  }
  for (auto& [name, pod] : built) pods[name] = std::move(pod);
}

}  // namespace tpurun
