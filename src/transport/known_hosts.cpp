#include "tpurun/transport/known_hosts.hpp"

#include <libssh/libssh.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

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

namespace tpurun {
namespace {

// Calls visit(line number, key type, base64) for each plain entry naming `alias`.
template <typename Visit>
void each_alias_entry(const std::string& file, const std::string& alias, const Visit& visit) {
  std::ifstream in(file);
  std::string text;
  for (int number = 1; std::getline(in, text); ++number) {
    std::istringstream fields(text);
    std::string hosts, type, base64;
    if (!(fields >> hosts >> type >> base64) || hosts[0] == '#' || hosts[0] == '@') continue;
    std::istringstream patterns(hosts);
    for (std::string p; std::getline(patterns, p, ',');) {
      if (p == alias || p.rfind(alias + "-", 0) == 0) {
        visit(number, type, base64);
        break;
      }
    }
  }
}

}  // namespace

AliasKeyCheck check_alias_key(const std::string& file, const std::string& alias, ssh_key server_key) {
  AliasKeyCheck result;
  if (alias.empty() || server_key == nullptr) return result;
  each_alias_entry(file, alias, [&](int number, const std::string& type, const std::string& base64) {
    if (result.kind == AliasKeyCheck::match) return;
    ssh_key key = nullptr;
    const ssh_keytypes_e kind = ssh_key_type_from_name(type.c_str());
    if (kind != ssh_key_type(server_key) || ssh_pki_import_pubkey_base64(base64.c_str(), kind, &key) != SSH_OK) {
      return;
    }
    const bool same = ssh_key_cmp(key, server_key, SSH_KEY_CMP_PUBLIC) == 0;
    ssh_key_free(key);
    if (same) {
      result = {AliasKeyCheck::match, {file, number}};
    } else if (result.kind == AliasKeyCheck::unknown) {
      result = {AliasKeyCheck::mismatch, {file, number}};
    }
  });
  return result;
}

std::vector<KnownHostsLine> find_alias_lines(const std::string& file, const std::string& alias) {
  std::vector<KnownHostsLine> found;
  if (alias.empty()) return found;
  each_alias_entry(file, alias, [&](int number, const std::string&, const std::string&) {
    found.push_back({file, number});
  });
  return found;
}

}  // namespace tpurun

namespace tpurun {

std::optional<std::string> append_known_host(const std::string& file, const std::string& line) {
  std::filesystem::path dir = std::filesystem::path(file).parent_path();
  std::error_code ec;
  if (!dir.empty() && !std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    ::chmod(dir.c_str(), 0700);
  }
  int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return std::string(std::strerror(errno));
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string error = std::strerror(errno);
      ::close(fd);
      return error;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return std::string(std::strerror(errno));
  return std::nullopt;
}

}  // namespace tpurun
