// parse_config: the schema of tpurun.json (see docs/config.md), checked key by
// key so that every mistake is reported at its own file:line.
#include "tpurun/pod/config.hpp"

#include <arpa/inet.h>
#include <netdb.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>

#include "config_create.hpp"
#include "config_node.hpp"
#include "config_slices.hpp"
#include "config_values.hpp"
#include "jsonc.hpp"
#include "tpurun/util/suggest.hpp"

namespace tpurun {

namespace {

const std::vector<std::string> kTopKeys = {"default_pod", "pods", "board"};
const std::vector<std::string> kBoardGcloudKeys = {"project", "zones", "internal_ip", "ssh"};
const std::vector<std::string> kPodKeys = {
    "workers", "gcloud", "ssh", "staging_root", "logs_root", "local_root", "device_globs", "stage_size_limit",
    "slices", "megascale_port", "setup", "create"};
const std::vector<std::string> kSshKeys = {"user", "identity_file", "known_hosts",
                                           "host_key_policy", "connect_timeout_s"};
const std::vector<std::string> kGcloudKeys = {"name", "zone", "project", "internal_ip"};
constexpr int kMaxConnectTimeout = 86400;

// Pod names end up on command lines, in environment variables and in paths.
bool valid_pod_name(const std::string& name) {
  if (name.empty() || !std::isalnum(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
      return false;
  }
  return true;
}

// Where a worker's address leads: a numeric address as the resolver reads it
// (127.0.2.01 and 127.0.2.1 are one host; 127.0.2.010 is 127.0.2.8), a name
// in lower case, and the port.
std::string host_key(const std::string& host, int port) {
  std::string canonical = host;
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) == 0 && found != nullptr) {
    char text[INET6_ADDRSTRLEN] = {};
    const void* address = found->ai_family == AF_INET
                              ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr)
                              : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(found->ai_addr)->sin6_addr);
    if (::inet_ntop(found->ai_family, address, text, sizeof text) != nullptr) canonical = text;
    ::freeaddrinfo(found);
  } else {
    std::transform(canonical.begin(), canonical.end(), canonical.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  }
  return canonical + ":" + std::to_string(port);
}

std::vector<Worker> read_workers(const ConfigNode& node) {
  std::vector<Worker> workers;
  std::map<std::string, int> seen;  // host_key -> worker index
  for (const ConfigNode& item : node.elements()) {
    auto address = parse_host_port(item.as_string());
    if (!address) item.fail(address.error());
    const int index = static_cast<int>(workers.size());
    const std::string key = host_key(address->host, address->port);
    if (auto [it, fresh] = seen.emplace(key, index); !fresh) {
      item.fail(fmt::format("\"{}\" is the same host as worker {} (\"{}\", port {}): each worker is listed once, or "
                            "its job would run twice there", item.as_string(), it->second,
                            workers[static_cast<size_t>(it->second)].host, address->port));
    }
    workers.push_back(Worker{index, address->host, address->port, "", -1, 0});
  }
  if (workers.empty()) node.fail("a pod needs at least one worker");
  return workers;
}

GcloudSpec read_gcloud(const ConfigNode& node) {
  node.allow_only(kGcloudKeys);
  GcloudSpec spec;
  spec.name = node.require("name").as_nonempty_string();
  spec.zone = node.require("zone").as_nonempty_string();
  if (auto project = node.get("project")) spec.project = project->as_nonempty_string();
  if (auto internal = node.get("internal_ip")) spec.internal_ip = internal->as_bool();
  return spec;
}

std::vector<std::string> read_known_hosts(const ConfigNode& node, const Environment& env) {
  std::vector<std::string> files;
  if (node.json().is_string()) {
    files.push_back(expand_home(node.as_nonempty_string(), env));
    return files;
  }
  if (!node.json().is_array())
    node.fail("expected a file name or an array of them, found " + node.value_text());
  for (const ConfigNode& item : node.elements())
    files.push_back(expand_home(item.as_nonempty_string(), env));
  if (files.empty()) node.fail("list at least one known_hosts file");
  return files;
}

void read_ssh(const ConfigNode& node, const Environment& env, SshSettings& ssh) {
  node.allow_only(kSshKeys);
  if (auto user = node.get("user")) ssh.user = user->as_nonempty_string();
  // An explicit "" is allowed: it means ssh-agent, then the default keys.
  if (auto identity = node.get("identity_file"))
    ssh.identity_file = expand_home(identity->as_string(), env);
  if (auto known = node.get("known_hosts")) ssh.known_hosts = read_known_hosts(*known, env);
  if (auto policy = node.get("host_key_policy")) {
    std::string text = policy->as_string();
    auto parsed = parse_host_key_policy(text);
    if (!parsed)
      policy->fail("unknown policy '" + text + "'" +
                   did_you_mean(text, {"strict", "accept-new", "off"}) +
                   "; use strict, accept-new or off");
    ssh.host_key_policy = *parsed;
  }
  if (auto timeout = node.get("connect_timeout_s")) {
    std::int64_t seconds = timeout->as_integer();
    if (seconds <= 0) timeout->fail("must be a positive number of seconds");
    if (seconds > kMaxConnectTimeout)
      timeout->fail("must be at most " + std::to_string(kMaxConnectTimeout));
    ssh.connect_timeout_s = static_cast<int>(seconds);
  }
}

// Remote directories are used verbatim on every worker, where a relative
// path or "~" would depend on each login's home directory.
std::string read_remote_dir(const ConfigNode& node) {
  std::string dir = node.as_nonempty_string();
  if (dir.front() != '/') node.fail("must be an absolute path (it is used as-is on every worker)");
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

}  // namespace

void set_local_roots(PodConfig& pod, const std::string& root, const Environment& env) {
  pod.shared_mount = false;
  pod.worker_root = root;
  const std::string here = expand_home(root, env);
  pod.staging_root = here + "/staging";
  pod.logs_root = here + "/logs";
}

namespace {

// "staging_root" and "logs_root" on a shared mount; neither: no shared mount,
// code and logs on each worker's own disk under "local_root" (docs/config.md).
void read_roots(const ConfigNode& node, const Environment& env, PodConfig& pod) {
  auto staging = node.get("staging_root");
  auto logs = node.get("logs_root");
  auto local = node.get("local_root");
  if (staging && logs) {
    if (local) local->fail("\"local_root\" is for a pod with no shared mount; this one has staging_root and logs_root");
    pod.staging_root = read_remote_dir(*staging);
    pod.logs_root = read_remote_dir(*logs);
    return;
  }
  if (staging || logs) {
    (staging ? *staging : *logs)
        .fail("give both staging_root and logs_root (dirs on a shared mount), or neither (code and logs then stay on "
              "each worker's own disk, under \"local_root\")");
  }
  std::string root = kDefaultLocalRoot;
  if (local) {
    root = local->as_nonempty_string();
    if (root.front() != '/' && !root.starts_with("~/")) local->fail("must be an absolute path or start with ~/");
    while (root.size() > 2 && root.back() == '/') root.pop_back();
  }
  set_local_roots(pod, root, env);
}

std::vector<std::string> read_device_globs(const ConfigNode& node) {
  std::vector<std::string> globs;
  for (const ConfigNode& item : node.elements()) {
    std::string glob = item.as_nonempty_string();
    if (glob.front() != '/') item.fail("must be an absolute path pattern such as \"/dev/accel*\"");
    globs.push_back(glob);
  }
  // An empty list would make every TPU look free, and free TPUs get used.
  if (globs.empty()) node.fail("list at least one device pattern");
  return globs;
}

std::uint64_t read_byte_size(const ConfigNode& node) {
  const auto& v = node.json();
  std::optional<std::uint64_t> bytes;
  if (v.is_number_unsigned()) {
    bytes = v.get<std::uint64_t>();
  } else if (v.is_number_integer()) {
    if (v.get<std::int64_t>() >= 0) bytes = static_cast<std::uint64_t>(v.get<std::int64_t>());
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    if (d >= 0 && d < 0x1p63 && std::floor(d) == d) bytes = static_cast<std::uint64_t>(d);
  } else if (v.is_string()) {
    bytes = parse_byte_size(v.get<std::string>());
  }
  if (!bytes)
    node.fail("expected a number of bytes or a size such as \"500MB\" or \"1GiB\", found " +
              node.value_text());
  if (*bytes == 0) node.fail("must be positive");
  return *bytes;
}

// "setup": a local script, relative to the config file's directory (so a
// project's tpurun.json can name its own scripts/setup.sh). Its existence is
// checked when it is used (stage --recreate), not by every command.
std::string read_setup_script(const ConfigNode& node, const std::string& config_path, const Environment& env) {
  std::string path = node.as_nonempty_string();
  if (path.front() == '~') return expand_home(path, env);
  std::filesystem::path p(path);
  // absolute() of the config file itself, then its dir: "tpurun.json" (found
  // in the current dir) has an empty parent path, which absolute() refuses.
  if (p.is_relative()) p = std::filesystem::absolute(config_path).parent_path() / p;
  return p.lexically_normal().string();
}

PodConfig read_pod(const std::string& name, const ConfigNode& node, const std::string& config_path,
                   const Environment& env) {
  node.allow_only(kPodKeys);
  if (auto port = node.get("megascale_port")) {
    port->fail("megascale_port is for a multi-slice pod (one with \"slices\"); see docs/multislice.md");
  }
  auto workers = node.get("workers");
  auto gcloud = node.get("gcloud");
  if (workers && gcloud) gcloud->fail("a pod has either \"workers\" or \"gcloud\", not both");
  if (!workers && !gcloud)
    node.fail("missing \"workers\" (a list of hosts) or \"gcloud\" (a TPU VM to describe)");

  PodConfig pod;
  pod.name = name;
  pod.ssh = default_ssh_settings(gcloud.has_value(), env);
  if (workers) pod.workers = read_workers(*workers);
  if (gcloud) pod.gcloud = read_gcloud(*gcloud);
  if (auto ssh = node.get("ssh")) read_ssh(*ssh, env, pod.ssh);
  read_roots(node, env, pod);
  if (auto globs = node.get("device_globs")) pod.device_globs = read_device_globs(*globs);
  if (auto limit = node.get("stage_size_limit")) pod.stage_size_limit = read_byte_size(*limit);
  if (auto setup = node.get("setup")) pod.setup_script = read_setup_script(*setup, config_path, env);
  if (auto create = node.get("create")) {
    if (!pod.gcloud) create->fail("a pod made by `tpurun up` is a gcloud pod: it needs \"gcloud\": {\"name\", \"zone\"}");
    pod.create = read_create(*create, *pod.gcloud);
  }
  return pod;
}

// "board": { "gcloud": { "project": P, "zones": [Z, ...] } }
std::optional<BoardGcloud> read_board(const ConfigNode& node, const Environment& env) {
  node.allow_only({"gcloud"});
  auto gcloud = node.get("gcloud");
  if (!gcloud) return std::nullopt;
  gcloud->allow_only(kBoardGcloudKeys);
  BoardGcloud board;
  board.project = gcloud->require("project").as_nonempty_string();
  ConfigNode zones = gcloud->require("zones");
  for (const ConfigNode& zone : zones.elements()) {
    std::string name = zone.as_nonempty_string();
    if (std::find(board.zones.begin(), board.zones.end(), name) != board.zones.end()) zone.fail("listed twice");
    board.zones.push_back(name);
  }
  if (board.zones.empty()) zones.fail("list at least one zone, e.g. [\"us-central2-b\"]");
  if (auto internal = gcloud->get("internal_ip")) board.internal_ip = internal->as_bool();
  board.ssh = default_ssh_settings(true, env);
  if (auto ssh = gcloud->get("ssh")) read_ssh(*ssh, env, board.ssh);
  return board;
}

}  // namespace

ConfigFile parse_config(const std::string& text, const std::string& path, const Environment& env) {
  jsonc::Document doc = jsonc::parse(text, path);
  ConfigSource source{path, std::move(doc.lines)};
  ConfigNode root(doc.value, source);
  if (!doc.value.is_object())
    root.fail("the top level must be an object, found " + root.value_text());
  root.allow_only(kTopKeys);

  ConfigFile config;
  config.path = path;
  ConfigNode pods = root.require("pods");
  std::vector<std::string> names;
  std::vector<std::pair<std::string, ConfigNode>> multislice;
  for (const auto& [name, node] : pods.members()) {
    if (!valid_pod_name(name))
      node.fail(
          "pod names may contain only letters, digits, '.', '_' and '-', and start with a letter "
          "or digit");
    names.push_back(name);
    if (has_slices(node)) {
      multislice.emplace_back(name, node);
    } else {
      config.pods.emplace(name, read_pod(name, node, path, env));
    }
  }
  read_slices_pods(multislice, config.pods);
  if (names.empty()) pods.fail("no pods defined");
  config.order = names;
  if (auto board = root.get("board")) config.board_gcloud = read_board(*board, env);

  if (auto default_pod = root.get("default_pod")) {
    config.default_pod = default_pod->as_nonempty_string();
    if (!config.pods.count(config.default_pod)) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      default_pod->fail("no pod named '" + config.default_pod + "'" +
                        did_you_mean(config.default_pod, names) + "; pods: " + list);
    }
  }
  return config;
}

}  // namespace tpurun
