#include "tpurun/pod/placement.hpp"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdio>
#include <filesystem>

#include "tpurun/util/atomic_file.hpp"
#include "tpurun/util/identity.hpp"

namespace tpurun {
namespace {

std::string plain(const std::string& s) {
  std::string out;
  for (char c : s) out.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_');
  return out;
}

}  // namespace

std::string placement_path(const GcloudSpec& spec, const Environment& env) {
  return state_dir(env) + "/placements/" + plain(spec.project.empty() ? "-" : spec.project) + "_" + plain(spec.name) +
         ".json";
}

std::optional<Placement> read_placement(const GcloudSpec& spec, const Environment& env) {
  std::string text;
  try {
    text = read_small_file(placement_path(spec, env));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.value("zone", nlohmann::json()).is_string()) return std::nullopt;
  Placement p;
  p.zone = doc["zone"].get<std::string>();
  if (p.zone.empty()) return std::nullopt;
  if (doc.contains("queued_resource") && doc["queued_resource"].is_string()) p.queued_resource = doc["queued_resource"];
  if (doc.contains("made_at") && doc["made_at"].is_string()) p.made_at = doc["made_at"];
  return p;
}

void keep_placement(const GcloudSpec& spec, const Placement& placement, const Environment& env) {
  const std::string path = placement_path(spec, env);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const nlohmann::json doc = {{"tpu", spec.name},
                              {"project", spec.project},
                              {"zone", placement.zone},
                              {"queued_resource", placement.queued_resource},
                              {"made_at", placement.made_at}};
  write_file_atomic(path, doc.dump(2) + "\n");
}

void forget_placement(const GcloudSpec& spec, const Environment& env) {
  std::remove(placement_path(spec, env).c_str());
}

void apply_placement(PodConfig& pod, const Environment& env) {
  if (!pod.gcloud) return;
  if (auto kept = read_placement(*pod.gcloud, env)) pod.gcloud->zone = kept->zone;
}

}  // namespace tpurun
