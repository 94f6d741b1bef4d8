#include "transport/known_hosts.hpp"

#include <libssh/libssh.h>

#include <fstream>

namespace tpurun {

std::string known_hosts_name(const std::string& host, int port) {
  if (port == 22) return host;
  return "[" + host + "]:" + std::to_string(port);
}

std::vector<KnownHostsLine> find_known_host_lines(const std::vector<std::string>& files,
                                                  const std::string& host_entry) {
  std::vector<KnownHostsLine> found;
  for (const std::string& file : files) {
    std::ifstream in(file);
    std::string text;
    int number = 0;
    while (std::getline(in, text)) {
      ++number;
      if (text.empty() || text[0] == '#') continue;
      ssh_knownhosts_entry* entry = nullptr;
      // libssh matches plain, comma-separated and hashed (|1|) host patterns.
      if (ssh_known_hosts_parse_line(host_entry.c_str(), text.c_str(), &entry) == SSH_OK &&
          entry != nullptr) {
        found.push_back({file, number});
      }
      ssh_knownhosts_entry_free(entry);
    }
  }
  return found;
}

}  // namespace tpurun
