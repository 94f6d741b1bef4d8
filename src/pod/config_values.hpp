#pragma once
// Values inside a config file: host:port strings and the SSH defaults.
#include <string>
#include <string_view>

#include "tpurun/pod/pod.hpp"
#include "tpurun/util/result.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun {

struct HostPort {
  std::string host;  // IPv6 without its brackets
  int port = 22;
};

// "host", "host:2222", "10.0.0.5", "[::1]", "[fe80::1%eth0]:22".
// The error says what is wrong, for the caller to prefix with file:line.
Result<HostPort, std::string> parse_host_port(std::string_view text);

// SSH settings before the config file has its say. gcloud pods follow
// gcloud's own defaults, so keys and known hosts made by
// `gcloud compute tpus tpu-vm ssh` keep working.
SshSettings default_ssh_settings(bool gcloud_pod, const Environment& env);

}  // namespace tpurun
