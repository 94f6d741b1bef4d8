// From command-line flags to one pod with workers: where the config file is,
// which pod is meant, and what gcloud says its workers are.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "config_values.hpp"
#include "tpurun/pod/config.hpp"
#include "tpurun/pod/describe_cache.hpp"
#include "tpurun/pod/placement.hpp"
#include "tpurun/pod/slices.hpp"
#include "tpurun/pod/tpu_node.hpp"
#include "tpurun/util/suggest.hpp"

namespace tpurun {

namespace {

namespace fs = std::filesystem;

const char* const kLocalConfig = "tpurun.json";

std::optional<std::string> user_config_path(const Environment& env) {
  // The XDG spec says a relative XDG_CONFIG_HOME is invalid and is ignored.
  auto xdg = env.get("XDG_CONFIG_HOME");
  if (xdg && !xdg->empty() && xdg->front() == '/') return *xdg + "/tpurun/config.json";
  auto home = env.get("HOME");
  if (home && !home->empty()) return *home + "/.config/tpurun/config.json";
  return std::nullopt;
}

bool is_file(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in) throw ConfigError(path, 0, std::string("cannot read: ") + std::strerror(errno));
  return text.str();
}

struct PodChoice {
  std::string name;
  std::string source;  // "--pod" or "TPURUN_POD", for messages
};

std::optional<PodChoice> requested_pod(const PodRequest& request, const Environment& env) {
  if (request.pod) return PodChoice{*request.pod, "--pod"};
  auto from_env = env.get("TPURUN_POD");
  if (from_env && !from_env->empty()) return PodChoice{*from_env, "TPURUN_POD"};
  return std::nullopt;
}

std::string choose_pod(const ConfigFile& config, const std::optional<PodChoice>& requested) {
  std::vector<std::string> names;
  for (const auto& entry : config.pods) names.push_back(entry.first);
  if (requested) {
    if (config.pods.count(requested->name)) return requested->name;
    throw ConfigError(config.path, 0,
                      "no pod named '" + requested->name + "' (from " + requested->source + ")" +
                          did_you_mean(requested->name, names) + "; pods: " + join(names, ", "));
  }
  if (!config.default_pod.empty()) return config.default_pod;
  if (names.size() == 1) return names.front();
  throw ConfigError(
      config.path, 0,
      "several pods (" + join(names, ", ") +
          ") and none chosen: pass --pod NAME, set TPURUN_POD, or add \"default_pod\"");
}

// --pod A,B: a multi-slice pod made on the spot of the config's pods A and B.
PodConfig slice_list_pod(const ConfigFile& config, const PodChoice& requested) {
  const std::vector<std::string> names = split_slice_list(requested.name);
  if (auto problem = check_slices(names, config.pods)) {
    throw ConfigError(config.path, 0, requested.source + " " + requested.name + ": " + problem->message);
  }
  return make_slices_pod(requested.name, names, config.pods);
}

// This host alone: code and logs on its own disk (~/.tpurun), which is its
// one worker's disk too, so nothing is copied anywhere.
PodConfig local_pod(const Environment& env) {
  PodConfig pod;
  pod.name = kLocalPodName;
  pod.local = true;
  pod.workers = {Worker{0, "localhost", 22, "", -1, 0}};
  pod.ssh = default_ssh_settings(false, env);
  set_local_roots(pod, kDefaultLocalRoot, env);
  pod.shared_mount = true;  // the worker is this host
  return pod;
}

std::vector<Worker> ready_workers(const PodConfig& pod, TpuNode node);

// The workers of a READY TPU VM; TpuUnavailable when it is not READY or gone.
std::vector<Worker> describe_workers(const PodConfig& pod, ProcessRunner& runner) {
  const auto start = std::chrono::steady_clock::now();
  TpuNode node = describe_node(pod.name, *pod.gcloud, runner);
  spdlog::debug("pod '{}': gcloud describe {} took {} ms", pod.name, pod.gcloud->name,
                std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count());
  return ready_workers(pod, node);
}

std::vector<Worker> ready_workers(const PodConfig& pod, TpuNode node) {
  if (!node.ready()) throw TpuUnavailable(pod.name, *pod.gcloud, std::move(node));
  if (!node.endpoint_error.empty()) {
    throw std::runtime_error("pod '" + pod.name + "': `" + join(gcloud_describe_argv(*pod.gcloud), " ") +
                             "`: " + node.endpoint_error);
  }
  return node.workers;
}

// -v: the pod as resolved, so "why did it connect there?" has an answer.
void log_resolved(const PodConfig& pod, const std::string& from) {
  if (!spdlog::default_logger_raw()->should_log(spdlog::level::debug)) return;
  std::string hosts;
  for (size_t i = 0; i < pod.workers.size() && i < 8; ++i) hosts += (i ? ", " : "") + pod.workers[i].display();
  if (pod.workers.size() > 8) hosts += ", ...";
  spdlog::debug("pod '{}' from {}: {} worker(s){}{}", pod.name, from, pod.workers.size(), hosts.empty() ? "" : ": ",
                hosts);
  if (pod.local) return;
  const SshSettings& ssh = pod.ssh;
  const char* policy = ssh.host_key_policy == HostKeyPolicy::strict ? "strict"
                       : ssh.host_key_policy == HostKeyPolicy::off  ? "off"
                                                                    : "accept-new";
  spdlog::debug("ssh: user {}, key {}, known_hosts {}, host keys {}, connect timeout {}s", ssh.user,
                ssh.identity_file.empty() ? "(agent, then default keys)" : ssh.identity_file,
                ssh.known_hosts.empty() ? "(default)" : ssh.known_hosts.front(), policy, ssh.connect_timeout_s);
  spdlog::debug("staging_root {}, logs_root {}", pod.staging_root.empty() ? "(none)" : pod.staging_root,
                pod.logs_root.empty() ? "(none)" : pod.logs_root);
}

// A multi-slice pod's workers: each slice's, described one by one.
void resolve_slices(PodConfig& pod, const ConfigFile& config, ProcessRunner& runner) {
  std::vector<std::vector<Worker>> per_slice;
  for (const Slice& slice : pod.slices) {
    const PodConfig& part = config.pods.at(slice.pod);
    per_slice.push_back(part.gcloud ? describe_workers(part, runner) : part.workers);
  }
  join_slice_workers(pod, per_slice);
}

void apply_overrides(PodConfig& pod, const PodOverrides& overrides, const Environment& env) {
  if (overrides.user) pod.ssh.user = *overrides.user;
  if (overrides.identity_file) pod.ssh.identity_file = expand_home(*overrides.identity_file, env);
  if (overrides.host_key_policy) pod.ssh.host_key_policy = *overrides.host_key_policy;
  if (overrides.connect_timeout_s) pod.ssh.connect_timeout_s = *overrides.connect_timeout_s;
}

}  // namespace

TpuNode describe_node(const std::string& pod, const GcloudSpec& spec, ProcessRunner& runner) {
  std::vector<std::string> argv = gcloud_describe_argv(spec);
  std::string command = join(argv, " ");
  // describe answers in seconds; one that hangs (an API or a proxy that never
  // answers) would hold every command, and the run's unattended watcher.
  constexpr std::chrono::seconds kDescribeLimit{120};
  ProcessResult result = runner.run_bounded(argv, kDescribeLimit, CancelToken());
  std::string err = result.err;
  while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
  std::string prefix = "pod '" + pod + "': ";
  if (result.timed_out) {
    throw std::runtime_error(fmt::format("{}`{}` gave no answer in {}s: is the Cloud TPU API reachable from here? "
                                         "(run it by hand to see what it waits for)",
                                         prefix, command, kDescribeLimit.count()));
  }
  if (result.exit_code == 127 && result.out.empty())
    throw std::runtime_error(
        prefix + "cannot run gcloud; is the Google Cloud SDK installed and on PATH? " + err);
  if (result.exit_code != 0 && is_not_found(err)) {
    TpuNode gone;
    gone.name = spec.name;
    gone.state = "NOT_FOUND";
    throw TpuUnavailable(pod, spec, gone);
  }
  if (result.exit_code != 0)
    throw std::runtime_error(prefix + "`" + command + "` failed (exit " +
                             std::to_string(result.exit_code) + "):\n" + err);
  try {
    return parse_tpu_node(result.out, spec.internal_ip);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(prefix + "`" + command + "`: " + e.what());
  }
}

std::optional<std::string> find_config_file(const std::optional<std::string>& explicit_path,
                                            const Environment& env) {
  if (explicit_path) {
    std::error_code ec;
    auto status = fs::status(*explicit_path, ec);
    if (!fs::exists(status))
      throw ConfigError(*explicit_path, 0, "no such config file (given with --config)");
    if (!fs::is_regular_file(status)) throw ConfigError(*explicit_path, 0, "not a regular file");
    return *explicit_path;
  }
  if (is_file(kLocalConfig)) return std::string(kLocalConfig);
  auto user_config = user_config_path(env);
  if (user_config && is_file(*user_config)) return user_config;
  return std::nullopt;
}

namespace {

// The pod's "create" zones other than the one its gcloud spec names now.
std::vector<std::string> other_zones(const PodConfig& pod) {
  std::vector<std::string> zones;
  if (!pod.create) return zones;
  for (const std::string& z : pod.create->zones) {
    if (z != pod.gcloud->zone) zones.push_back(z);
  }
  return zones;
}

// A kept describe in the pod's zone, else in another of its "create" zones
// (the pod's spec moved there).
std::optional<TpuNode> read_kept_describe_in_zones(PodConfig& pod, const Environment& env) {
  if (auto kept = read_kept_describe(*pod.gcloud, env)) return kept;
  for (const std::string& zone : other_zones(pod)) {
    GcloudSpec there = *pod.gcloud;
    there.zone = zone;
    if (auto kept = read_kept_describe(there, env)) {
      pod.gcloud->zone = zone;
      return kept;
    }
  }
  return std::nullopt;
}

// One VM per pod, wherever its "create" zones put it: not found in the pod's
// zone (the config's, or where this user's `up` made it), the other zones
// are asked in order. Another user's `up` may have made it there (a shared
// config: issue 39, finding 8). Not found anywhere: the first zone's answer.
TpuNode describe_in_zones(PodConfig& pod, ProcessRunner& runner, const Environment& env) {
  try {
    return describe_node(pod.name, *pod.gcloud, runner);
  } catch (const TpuUnavailable&) {
    forget_describe(*pod.gcloud, env);  // deleted: nothing kept may say otherwise
    for (const std::string& zone : other_zones(pod)) {
      GcloudSpec there = *pod.gcloud;
      there.zone = zone;
      try {
        TpuNode node = describe_node(pod.name, there, runner);
        pod.gcloud->zone = zone;
        return node;
      } catch (const TpuUnavailable&) {
      }
    }
    throw;
  }
}

}  // namespace

PodConfig load_pod(const PodRequest& request, const Environment& env, ProcessRunner& runner) {
  auto path = find_config_file(request.config_path, env);
  auto requested = requested_pod(request, env);
  if (!path) {
    // "local" is the pod of this host, the one a run gets when there is no
    // config: its watcher is started with --pod local, and finds it here.
    if (requested && requested->name != kLocalPodName) {
      std::string looked = std::string("./") + kLocalConfig;
      if (auto user_config = user_config_path(env)) looked += " and " + *user_config;
      throw ConfigError("", 0,
                        "pod '" + requested->name + "' requested (" + requested->source +
                            ") but there is no config file; looked for " + looked);
    }
    PodConfig pod = local_pod(env);
    apply_overrides(pod, request.overrides, env);
    log_resolved(pod, "no config file (the pod is this host)");
    return pod;
  }

  ConfigFile config = parse_config(read_file(*path), *path, env);
  PodConfig pod = requested && is_slice_list(requested->name) ? slice_list_pod(config, *requested)
                                                              : config.pods.at(choose_pod(config, requested));
  apply_placement(pod, env);  // where `tpurun up` made its TPU VM, when not in gcloud.zone
  if (!request.need_workers) {
    // the roots and SSH settings only; a multi-slice pod's workers come from its slices
  } else if (!pod.slices.empty()) {
    resolve_slices(pod, config, runner);
  } else if (pod.gcloud) {
    if (auto kept = request.describe_fresh ? std::nullopt : read_kept_describe_in_zones(pod, env)) {
      pod.workers = kept->workers;
      pod.describe_json = kept->json;
      pod.workers_from_cache = true;
    } else {
      TpuNode node = describe_in_zones(pod, runner, env);
      if (!node.ready()) forget_describe(*pod.gcloud, env);
      pod.workers = ready_workers(pod, node);
      pod.describe_json = node.json;
      keep_describe(*pod.gcloud, node, env);
    }
  }
  apply_overrides(pod, request.overrides, env);
  if (pod.ssh.user.empty())
    throw ConfigError(*path, 0,
                      "pod '" + pod.name + "': no SSH user; set \"ssh\": {\"user\": ...} or $USER");
  log_resolved(pod, *path);
  return pod;
}

}  // namespace tpurun
