// "create": { "accelerator_type": "v4-32", "runtime_version": "...", "spot": true,
// "queued": true, "zones": [...], ... }, checked key by key at file:line.
#include "config_create.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "tpurun/util/duration.hpp"
#include "tpurun/util/usage_error.hpp"

namespace tpurun {
namespace {

const std::vector<std::string> kCreateKeys = {
    "accelerator_type", "runtime_version", "queued", "zones", "spot", "reserved", "guaranteed", "best_effort",
    "reservation_host_project", "network", "subnetwork", "service_account", "internal_ips", "labels",
    "metadata", "data_disks", "max_queued"};

std::map<std::string, std::string> read_string_map(const ConfigNode& node) {
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : node.members()) {
    if (key.empty()) value.fail("an empty key");
    out[key] = value.as_string();
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> read_data_disks(const ConfigNode& node) {
  std::vector<std::pair<std::string, std::string>> disks;
  for (const ConfigNode& item : node.elements()) {
    item.allow_only({"source", "mode"});
    std::string mode = "read-write";
    if (auto m = item.get("mode")) {
      mode = m->as_string();
      if (mode != "read-write" && mode != "read-only") m->fail("must be \"read-write\" or \"read-only\"");
    }
    disks.emplace_back(item.require("source").as_nonempty_string(), mode);
  }
  return disks;
}

std::chrono::seconds read_max_queued(const ConfigNode& node) {
  if (node.json().is_number_integer()) {
    const auto s = node.as_integer();
    if (s < 0) node.fail("must not be negative");
    return std::chrono::seconds(s);
  }
  try {
    const auto d = parse_duration(node.as_nonempty_string());
    // Under a second would round to 0, which means "no limit": the opposite.
    if (d.count() > 0 && d < std::chrono::seconds(1)) node.fail("must be 0 (no limit) or at least 1s");
    return std::chrono::duration_cast<std::chrono::seconds>(d);
  } catch (const UsageError& e) {
    node.fail(fmt::format("{} (a duration such as \"30m\" or \"2h\"; 0 waits as long as it takes)", e.what()));
  }
}

}  // namespace

CreateSpec read_create(const ConfigNode& node, const GcloudSpec& gcloud) {
  node.allow_only(kCreateKeys);
  CreateSpec spec;
  spec.accelerator_type = node.require("accelerator_type").as_nonempty_string();
  spec.runtime_version = node.require("runtime_version").as_nonempty_string();
  if (auto q = node.get("queued")) spec.queued = q->as_bool();
  if (auto zones = node.get("zones")) {
    for (const ConfigNode& zone : zones->elements()) {
      std::string name = zone.as_nonempty_string();
      if (std::find(spec.zones.begin(), spec.zones.end(), name) != spec.zones.end()) zone.fail("listed twice");
      spec.zones.push_back(name);
    }
    if (spec.zones.empty()) zones->fail("list at least one zone, or leave \"zones\" out for gcloud.zone");
  } else {
    spec.zones = {gcloud.zone};
  }
  std::vector<std::string> tiers;
  for (auto [key, flag] : {std::pair{"spot", &spec.spot}, {"reserved", &spec.reserved},
                           {"guaranteed", &spec.guaranteed}, {"best_effort", &spec.best_effort}}) {
    if (auto v = node.get(key)) {
      *flag = v->as_bool();
      if (*flag) tiers.push_back(key);
      if (*flag && tiers.size() > 1) {
        v->fail(fmt::format("\"{}\" and \"{}\" are two tiers; a TPU VM has one (spot, reserved, guaranteed "
                            "or best_effort, or none for on demand)", tiers.front(), key));
      }
      if (*flag && !spec.queued && (spec.guaranteed || spec.best_effort)) {
        v->fail(fmt::format("\"{}\" is a queued resource's tier; it needs \"queued\": true", key));
      }
    }
  }
  if (auto v = node.get("reservation_host_project")) {
    spec.reservation_host_project = v->as_nonempty_string();
    if (!spec.reserved) v->fail("is where a shared reservation lives; it needs \"reserved\": true");
  }
  if (auto v = node.get("network")) spec.network = v->as_nonempty_string();
  if (auto v = node.get("subnetwork")) spec.subnetwork = v->as_nonempty_string();
  if (auto v = node.get("service_account")) spec.service_account = v->as_nonempty_string();
  if (auto v = node.get("internal_ips")) spec.internal_ips = v->as_bool();
  if (auto v = node.get("labels")) spec.labels = read_string_map(*v);
  if (auto v = node.get("metadata")) spec.metadata = read_string_map(*v);
  if (auto v = node.get("data_disks")) spec.data_disks = read_data_disks(*v);
  if (auto v = node.get("max_queued")) {
    spec.max_queued = read_max_queued(*v);
    if (!spec.queued && spec.max_queued.count() > 0) v->fail("bounds a queued resource's wait; it needs \"queued\": true");
  }
  return spec;
}

}  // namespace tpurun
