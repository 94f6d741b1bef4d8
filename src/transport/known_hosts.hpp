#pragma once
// Where a host's entries sit in known_hosts files, so that a changed key can be
// reported as "file:line — remove that line".
#include <string>
#include <vector>

namespace tpurun {

struct KnownHostsLine {
  std::string file;
  int line = 0;
};

// Lines in `files` whose host pattern matches `host_entry` ("host" or
// "[host]:port"), hashed entries included.
std::vector<KnownHostsLine> find_known_host_lines(const std::vector<std::string>& files,
                                                  const std::string& host_entry);

// The name libssh and OpenSSH use for a host in known_hosts.
std::string known_hosts_name(const std::string& host, int port);

}  // namespace tpurun
