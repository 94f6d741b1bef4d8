#pragma once
// Where a host's entries sit in known_hosts files, so that a changed key can be
// reported as "file:line — remove that line".
#include <libssh/libssh.h>

#include <optional>
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

// A host key filed under a gcloud HostKeyAlias: lines of `file` whose host
// field is `alias` or `alias-SUFFIX`, compared with the server's key of the
// same type. Keys of other types do not count (the server may offer several).
struct AliasKeyCheck {
  enum Kind { unknown, match, mismatch } kind = unknown;
  KnownHostsLine line;  // the matching or the differing entry
};
AliasKeyCheck check_alias_key(const std::string& file, const std::string& alias, ssh_key server_key);
// Entries for `alias` in `file` (any key type), for `tpurun hostkeys`.
std::vector<KnownHostsLine> find_alias_lines(const std::string& file, const std::string& alias);

// Appends `line` to a known_hosts file, creating it (0600, its dir 0700) if
// needed; the error text when that fails.
std::optional<std::string> append_known_host(const std::string& file, const std::string& line);

// The name libssh and OpenSSH use for a host in known_hosts.
std::string known_hosts_name(const std::string& host, int port);

}  // namespace tpurun
