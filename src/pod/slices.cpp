// Multi-slice pods: which pods may be slices of one run, and the pod they make.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "tpurun/pod/slices.hpp"
#include "tpurun/util/suggest.hpp"

namespace tpurun {
namespace {

// The first SSH setting on which two pods differ, or "".
std::string ssh_difference(const SshSettings& a, const SshSettings& b) {
  if (a.user != b.user) return "ssh.user";
  if (a.identity_file != b.identity_file) return "ssh.identity_file";
  if (a.known_hosts != b.known_hosts) return "ssh.known_hosts";
  if (a.host_key_policy != b.host_key_policy) return "ssh.host_key_policy";
  if (a.connect_timeout_s != b.connect_timeout_s) return "ssh.connect_timeout_s";
  if (a.alias_known_hosts != b.alias_known_hosts) return "the gcloud known_hosts file (mixing gcloud and other pods)";
  return "";
}

// Why slice `b` cannot run with slice `a`, or "".
std::string mismatch(const PodConfig& a, const PodConfig& b) {
  auto differ = [&](const char* what, const std::string& x, const std::string& y) {
    return fmt::format("slices '{}' and '{}' have different {} ({} and {}): one run has one snapshot and one log "
                       "dir, so its slices must share staging_root and logs_root",
                       a.name, b.name, what, x, y);
  };
  if (a.staging_root != b.staging_root) return differ("staging_root", a.staging_root, b.staging_root);
  if (a.logs_root != b.logs_root) return differ("logs_root", a.logs_root, b.logs_root);
  if (a.worker_root != b.worker_root) return differ("local_root", a.worker_root, b.worker_root);
  if (std::string field = ssh_difference(a.ssh, b.ssh); !field.empty()) {
    return fmt::format("slices '{}' and '{}' have different {}: tpurun reaches every worker of a run the same way, "
                       "so give the slices the same \"ssh\" settings",
                       a.name, b.name, field);
  }
  if (a.device_globs != b.device_globs) {
    return fmt::format("slices '{}' and '{}' have different device_globs: give them the same TPU device patterns",
                       a.name, b.name);
  }
  return "";
}

}  // namespace

bool is_slice_list(const std::string& pod) { return pod.find(',') != std::string::npos; }

std::vector<std::string> split_slice_list(const std::string& pod) {
  std::vector<std::string> names;
  std::string::size_type start = 0;
  for (;;) {
    const auto comma = pod.find(',', start);
    names.push_back(pod.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return names;
    start = comma + 1;
  }
}

std::optional<SliceProblem> check_slices(const std::vector<std::string>& names,
                                         const std::map<std::string, PodConfig>& pods) {
  if (names.size() < 2) {
    return SliceProblem{-1, "list at least two slices (a single pod needs no \"slices\": use its name)"};
  }
  std::vector<std::string> known;
  for (const auto& [name, pod] : pods) known.push_back(name);
  std::set<std::string> seen;
  for (size_t i = 0; i < names.size(); ++i) {
    const int at = static_cast<int>(i);
    const std::string& name = names[i];
    if (name.empty()) return SliceProblem{at, fmt::format("slice {} has no name", i)};
    auto it = pods.find(name);
    if (it == pods.end()) {
      return SliceProblem{at, fmt::format("no pod named '{}'{}; pods: {}", name, did_you_mean(name, known),
                                          fmt::join(known, ", "))};
    }
    if (!seen.insert(name).second) return SliceProblem{at, fmt::format("slice '{}' is listed twice", name)};
    if (!it->second.slices.empty()) {
      std::vector<std::string> inner;
      for (const Slice& s : it->second.slices) inner.push_back(s.pod);
      return SliceProblem{at, fmt::format("'{}' is itself made of slices; list its slices ({}) instead", name,
                                          fmt::join(inner, ", "))};
    }
  }
  const PodConfig& first = pods.at(names[0]);
  for (size_t i = 1; i < names.size(); ++i) {
    std::string why = mismatch(first, pods.at(names[i]));
    if (!why.empty()) return SliceProblem{static_cast<int>(i), why};
  }
  return std::nullopt;
}

PodConfig make_slices_pod(const std::string& name, const std::vector<std::string>& names,
                          const std::map<std::string, PodConfig>& pods) {
  const PodConfig& first = pods.at(names.at(0));
  PodConfig pod;
  pod.name = name;
  pod.ssh = first.ssh;
  pod.staging_root = first.staging_root;
  pod.logs_root = first.logs_root;
  pod.shared_mount = first.shared_mount;
  pod.worker_root = first.worker_root;
  pod.device_globs = first.device_globs;
  pod.stage_size_limit = first.stage_size_limit;
  for (const std::string& slice : names) {
    const PodConfig& p = pods.at(slice);
    pod.stage_size_limit = std::min(pod.stage_size_limit, p.stage_size_limit);
    pod.slices.push_back(Slice{slice, p.gcloud, 0, static_cast<int>(p.workers.size())});
  }
  return pod;
}

void join_slice_workers(PodConfig& pod, const std::vector<std::vector<Worker>>& per_slice) {
  pod.workers.clear();
  std::map<std::pair<std::string, int>, std::string> owner;  // host:port -> "w3 s0w3"
  for (size_t s = 0; s < per_slice.size(); ++s) {
    Slice& slice = pod.slices.at(s);
    slice.first_worker = static_cast<int>(pod.workers.size());
    slice.num_workers = static_cast<int>(per_slice[s].size());
    for (size_t i = 0; i < per_slice[s].size(); ++i) {
      Worker w = per_slice[s][i];
      w.index = static_cast<int>(pod.workers.size());
      w.slice = static_cast<int>(s);
      w.slice_worker = static_cast<int>(i);
      auto [it, fresh] = owner.emplace(std::make_pair(w.host, w.port), fmt::format("{} of slice '{}'", w.name(), slice.pod));
      if (!fresh) {
        throw std::runtime_error(fmt::format("pod '{}': {} and {} of slice '{}' are the same host {}: a host can "
                                             "be in one slice only",
                                             pod.name, it->second, w.name(), slice.pod, w.host));
      }
      pod.workers.push_back(w);
    }
  }
}

std::optional<MultiSlice> multislice_of(const PodConfig& pod, int port) {
  if (pod.slices.empty() || pod.workers.empty()) return std::nullopt;
  return MultiSlice{static_cast<int>(pod.slices.size()), pod.workers.front().host, port};
}

}  // namespace tpurun
