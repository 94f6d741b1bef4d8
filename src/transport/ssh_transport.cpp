#include "tpurun/ssh_transport.hpp"

#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <mutex>

#include "transport/known_hosts.hpp"
#include "transport/ssh_connection.hpp"

namespace tpurun {
namespace {

struct SessionOwner {
  ssh_session s;
  ~SessionOwner() {
    if (s != nullptr) ssh_free(s);
  }
  ssh_session release() { return std::exchange(s, nullptr); }
};

std::string tilde(const std::string& path) {
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0' && path.rfind(home, 0) == 0) {
    return "~" + path.substr(std::strlen(home));
  }
  return path;
}

TransportError connect_error(const Worker& w, ssh_session s, int timeout_s) {
  std::string detail = ssh_get_error(s);
  if (detail.find("imeout") != std::string::npos) {
    return {ErrorKind::timeout,
            fmt::format("connect timed out after {}s — is the worker up and its sshd answering?", timeout_s)};
  }
  return {ErrorKind::connect, fmt::format("cannot connect to {}:{}: {} — is the worker up?", w.host,
                                          w.port, detail)};
}

void apply_options(ssh_session s, const Worker& w, const SshTransportOptions& o) {
  ssh_options_set(s, SSH_OPTIONS_HOST, w.host.c_str());
  // ~/.ssh/config first, so that what tpurun was told explicitly wins, as with ssh.
  ssh_options_parse_config(s, nullptr);
  int port = w.port;
  ssh_options_set(s, SSH_OPTIONS_PORT, &port);
  if (!o.ssh.user.empty()) ssh_options_set(s, SSH_OPTIONS_USER, o.ssh.user.c_str());
  long timeout = o.ssh.connect_timeout_s;
  ssh_options_set(s, SSH_OPTIONS_TIMEOUT, &timeout);
  if (!o.ssh.known_hosts.empty()) {
    ssh_options_set(s, SSH_OPTIONS_KNOWNHOSTS, o.ssh.known_hosts[0].c_str());
    if (o.ssh.known_hosts.size() > 1) {
      ssh_options_set(s, SSH_OPTIONS_GLOBAL_KNOWNHOSTS, o.ssh.known_hosts[1].c_str());
    }
  }
  if (!o.ssh.identity_file.empty()) {
    ssh_options_set(s, SSH_OPTIONS_IDENTITY, o.ssh.identity_file.c_str());  // tried first
  }
  if (!o.key_exchange.empty()) ssh_options_set(s, SSH_OPTIONS_KEY_EXCHANGE, o.key_exchange.c_str());
  int verbosity = o.log_verbosity;
  if (verbosity > 0) {
    // -vv: libssh's log in tpurun's diagnostics format (time, pid), line by line.
    static std::once_flag routed;
    std::call_once(routed, [] {
      ssh_set_log_callback([](int, const char*, const char* message, void*) { spdlog::trace("libssh: {}", message); });
    });
  }
  ssh_options_set(s, SSH_OPTIONS_LOG_VERBOSITY, &verbosity);
}

AliasKeyCheck check_server_alias_key(ssh_session s, const std::string& file, const std::string& alias) {
  ssh_key server = nullptr;
  if (ssh_get_server_publickey(s, &server) != SSH_OK) return {};
  AliasKeyCheck check = check_alias_key(file, alias, server);
  ssh_key_free(server);
  return check;
}

std::string primary_known_hosts(const SshSettings& ssh) {
  return tilde(ssh.known_hosts.empty() ? "~/.ssh/known_hosts" : ssh.known_hosts[0]);
}

}  // namespace

SshTransport::SshTransport(SshTransportOptions options) : options_(std::move(options)) {
  ssh_init();
}

Result<std::unique_ptr<Connection>, TransportError> SshTransport::connect(const Worker& worker,
                                                                         const CancelToken& cancel) {
  if (cancel.cancelled()) return unexpected(TransportError{ErrorKind::interrupted, "interrupted before connecting"});
  SessionOwner owner{ssh_new()};
  ssh_session s = owner.s;
  if (s == nullptr) return unexpected(TransportError{ErrorKind::local, "out of memory creating an SSH session"});
  apply_options(s, worker, options_);

  if (ssh_connect(s) != SSH_OK) return unexpected(connect_error(worker, s, options_.ssh.connect_timeout_s));

  if (auto err = verify_host_key(s, worker)) return unexpected(*err);

  int rc = ssh_userauth_publickey_auto(s, nullptr, nullptr);
  if (rc != SSH_AUTH_SUCCESS) {
    char* user = nullptr;
    ssh_options_get(s, SSH_OPTIONS_USER, &user);
    std::string who = user ? user : "?";
    ssh_string_free_char(user);
    std::string tried = "ssh-agent and the default keys";
    if (!options_.ssh.identity_file.empty()) {
      tried = std::filesystem::exists(options_.ssh.identity_file)
                  ? "ssh-agent and " + tilde(options_.ssh.identity_file)
                  : "ssh-agent; identity file " + tilde(options_.ssh.identity_file) + " does not exist";
    }
    return unexpected(TransportError{
        ErrorKind::auth,
        fmt::format("authentication as '{}' refused (tried {}) — is your public key in ~{}/.ssh/authorized_keys "
                    "on the worker? For gcloud pods, `gcloud compute tpus tpu-vm ssh NAME --worker=all` pushes it",
                    who, tried, who)});
  }
  return std::unique_ptr<Connection>(new SshConnection(owner.release(), worker));
}

std::optional<TransportError> SshTransport::verify_host_key(ssh_session s, const Worker& worker) {
  if (options_.ssh.host_key_policy == HostKeyPolicy::off) return std::nullopt;
  // gcloud pods: a key gcloud recorded under the worker's HostKeyAlias
  // decides. Nothing there (or only other key types): the address check follows.
  if (!worker.host_key_alias.empty() && !options_.ssh.alias_known_hosts.empty()) {
    const AliasKeyCheck alias = check_server_alias_key(s, options_.ssh.alias_known_hosts, worker.host_key_alias);
    if (alias.kind == AliasKeyCheck::match) return std::nullopt;
    if (alias.kind == AliasKeyCheck::mismatch) {
      return TransportError{
          ErrorKind::hostkey,
          fmt::format("host key differs from the one gcloud recorded for {} ({}:{}) — if the TPU VM was "
                      "recreated, remove that line and run `tpurun hostkeys --import`; otherwise someone may be "
                      "intercepting the connection",
                      worker.host_key_alias, tilde(alias.line.file), alias.line.line)};
    }
  }
  const std::string name = known_hosts_name(worker.host, worker.port);
  switch (ssh_session_is_known_server(s)) {
    case SSH_KNOWN_HOSTS_OK:
      return std::nullopt;
    case SSH_KNOWN_HOSTS_CHANGED:
    case SSH_KNOWN_HOSTS_OTHER: {
      auto lines = find_known_host_lines(options_.ssh.known_hosts, name);
      std::string file = lines.empty() ? primary_known_hosts(options_.ssh) : tilde(lines[0].file);
      std::string where = lines.empty() ? file : fmt::format("{}:{}", file, lines[0].line);
      return TransportError{ErrorKind::hostkey,
                            fmt::format("host key changed ({}) — if the TPU VM was recreated, remove that line "
                                        "(ssh-keygen -R {} -f {}) and retry; otherwise someone may be "
                                        "intercepting the connection",
                                        where, name, file)};
    }
    case SSH_KNOWN_HOSTS_UNKNOWN:
    case SSH_KNOWN_HOSTS_NOT_FOUND:
      if (options_.ssh.host_key_policy == HostKeyPolicy::strict) {
        return TransportError{ErrorKind::hostkey,
                              fmt::format("host key not known and host_key_policy is strict — add it to {} "
                                          "(e.g. ssh-keyscan {} >> {}) or use accept-new",
                                          primary_known_hosts(options_.ssh), worker.host,
                                          primary_known_hosts(options_.ssh))};
      }
      return record_host_key(s);
    case SSH_KNOWN_HOSTS_ERROR:
      break;
  }
  return TransportError{ErrorKind::hostkey, fmt::format("cannot check the host key: {}", ssh_get_error(s))};
}

std::optional<TransportError> SshTransport::record_host_key(ssh_session s) {
  std::lock_guard lock(known_hosts_write_);
  if (!options_.ssh.known_hosts.empty()) {
    std::filesystem::path dir = std::filesystem::path(options_.ssh.known_hosts[0]).parent_path();
    std::error_code ec;
    if (!dir.empty() && !std::filesystem::exists(dir, ec)) {
      std::filesystem::create_directories(dir, ec);
      ::chmod(dir.c_str(), 0700);
    }
  }
  if (ssh_session_update_known_hosts(s) != SSH_OK) {
    return TransportError{ErrorKind::hostkey, fmt::format("cannot record the new host key: {}", ssh_get_error(s))};
  }
  return std::nullopt;
}

}  // namespace tpurun
