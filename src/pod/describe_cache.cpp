#include "tpurun/pod/describe_cache.hpp"

#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <filesystem>

#include "tpurun/util/atomic_file.hpp"
#include "tpurun/util/identity.hpp"

namespace tpurun {
namespace {

long long unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string plain(const std::string& s) {
  std::string out;
  for (char c : s) out.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_');
  return out;
}

// The cache is the caller's own: a file (or the dir it would go in) that
// another user owns is neither trusted nor written, e.g. under someone
// else's HOME.
bool owned_by_me(const std::filesystem::path& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && st.st_uid == ::geteuid();
}

std::filesystem::path existing_ancestor(std::filesystem::path p) {
  std::error_code ec;
  while (!p.empty() && p != p.root_path() && !std::filesystem::exists(p, ec)) p = p.parent_path();
  return p;
}

// Which gcloud configuration answered: another one (a private CLOUDSDK_CONFIG,
// another active configuration or endpoint) may see another TPU VM of the
// same name, so its answers are kept apart.
std::string gcloud_identity(const Environment& env) {
  std::string id;
  for (const char* name : {"CLOUDSDK_CONFIG", "CLOUDSDK_ACTIVE_CONFIG_NAME", "CLOUDSDK_CORE_PROJECT",
                           "CLOUDSDK_API_ENDPOINT_OVERRIDES_TPU"}) {
    id += env.get(name).value_or("") + "\n";
  }
  if (id == std::string(4, '\n')) return "";
  unsigned long long h = 1469598103934665603ULL;  // FNV-1a: a short, stable tag, not a secret
  for (unsigned char c : id) h = (h ^ c) * 1099511628211ULL;
  char tag[20];
  std::snprintf(tag, sizeof tag, ".%012llx", h & 0xffffffffffffULL);
  return tag;
}

}  // namespace

std::chrono::seconds describe_max_age(const Environment& env) {
  if (auto text = env.get("TPURUN_DESCRIBE_MAX_AGE")) {
    try {
      return std::chrono::seconds(std::max(0L, std::stol(*text)));
    } catch (const std::exception&) {
    }
  }
  return std::chrono::seconds(600);
}

std::string describe_cache_path(const GcloudSpec& spec, const Environment& env) {
  return cache_dir(env) + "/describe/" + plain(spec.project) + "_" + plain(spec.zone) + "_" + plain(spec.name) +
         (spec.internal_ip ? "" : ".external") + gcloud_identity(env) + ".json";
}

std::optional<TpuNode> read_kept_describe(const GcloudSpec& spec, const Environment& env) {
  const auto max_age = describe_max_age(env).count();
  if (max_age <= 0) return std::nullopt;
  const std::string path = describe_cache_path(spec, env);
  if (!owned_by_me(path)) return std::nullopt;
  const std::string text = read_small_file(path);
  if (text.empty()) return std::nullopt;
  auto doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("node") || !doc["node"].is_string()) return std::nullopt;
  const long long age = unix_now() - doc.value("fetched", 0LL);
  if (age < 0 || age > max_age) return std::nullopt;
  try {
    TpuNode node = parse_tpu_node(doc["node"].get<std::string>(), spec.internal_ip);
    if (node.ready() && node.endpoint_error.empty() && !node.workers.empty()) return node;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

void keep_describe(const GcloudSpec& spec, const TpuNode& node, const Environment& env) {
  if (describe_max_age(env).count() <= 0 || !node.ready()) return;
  const std::string path = describe_cache_path(spec, env);
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (!owned_by_me(existing_ancestor(dir))) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  try {
    write_file_atomic(path, nlohmann::json{{"fetched", unix_now()}, {"node", node.json}}.dump() + "\n");
  } catch (const std::exception&) {
  }
}

void forget_describe(const GcloudSpec& spec, const Environment& env) {
  std::remove(describe_cache_path(spec, env).c_str());
}

Result<std::vector<Worker>, std::string> describe_again(const PodConfig& pod, const Environment& env,
                                                        ProcessRunner& processes) {
  forget_describe(*pod.gcloud, env);
  try {
    TpuNode node = describe_node(pod.name, *pod.gcloud, processes);
    if (!node.ready()) throw TpuUnavailable(pod.name, *pod.gcloud, node);
    if (!node.endpoint_error.empty()) return unexpected("pod '" + pod.name + "': " + node.endpoint_error);
    keep_describe(*pod.gcloud, node, env);
    return node.workers;
  } catch (const std::exception& e) {
    return unexpected(std::string(e.what()));
  }
}

}  // namespace tpurun
