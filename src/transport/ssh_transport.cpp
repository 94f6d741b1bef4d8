#include "transport/ssh_transport.hpp"

#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string.h>  // explicit_bzero
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <fmt/format.h>
#include <mutex>
#include <vector>

#include "tpurun/transport/known_hosts.hpp"
#include "transport/rsa_crt_key.hpp"
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

// libssh's list with ECDH on P-256 moved first. sshd (OpenSSH up to at least
// 9.2, the TPU VMs' Ubuntu included) computes curve25519 with its portable
// reference code, P-256 through OpenSSL: measured, P-256 costs a worker's sshd
// about 6 ms less CPU per connection (32-worker exec on the simulator). Both
// are in OpenSSH's default KexAlgorithms; a worker that allows only
// curve25519 still gets it, and a KexAlgorithms line in ~/.ssh/config (or
// TPURUN_SSH_KEX) replaces the list.
constexpr const char* kKeyExchange =
    "ecdh-sha2-nistp256,curve25519-sha256,curve25519-sha256@libssh.org,ecdh-sha2-nistp384,ecdh-sha2-nistp521,"
    "diffie-hellman-group18-sha512,diffie-hellman-group16-sha512,diffie-hellman-group14-sha256";

void apply_options(ssh_session s, const Worker& w, const SshTransportOptions& o) {
  ssh_options_set(s, SSH_OPTIONS_HOST, w.host.c_str());
  ssh_options_set(s, SSH_OPTIONS_KEY_EXCHANGE, kKeyExchange);  // before the config, which may replace it
  // ~/.ssh/config first, so that what tpurun was told explicitly wins, as with ssh.
  ssh_options_parse_config(s, nullptr);
  int port = w.port;
  ssh_options_set(s, SSH_OPTIONS_PORT, &port);
  if (!o.ssh.user.empty()) ssh_options_set(s, SSH_OPTIONS_USER, o.ssh.user.c_str());
  // No Nagle: a command is a few small packets written back to back (the
  // exec request, stdin, EOF), and Nagle holds each one after the first
  // until the worker ACKs, which a worker with nothing to say may delay by
  // up to 40 ms. ssh does the same for interactive sessions.
  int nodelay = 1;
  ssh_options_set(s, SSH_OPTIONS_NODELAY, &nodelay);
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
    // libssh keeps the callback per thread, and every worker has its own.
    thread_local bool routed = false;
    if (!routed) {
      ssh_set_log_callback([](int, const char*, const char* message, void*) { spdlog::trace("libssh: {}", message); });
      routed = true;
    }
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

std::string SshTransport::host_key_inputs(ssh_session session) const {
  std::vector<std::string> files = {tilde("~/.ssh/known_hosts"), "/etc/ssh/ssh_known_hosts", tilde("~/.ssh/config")};
  for (const std::string& file : options_.ssh.known_hosts) files.push_back(tilde(file));
  if (!options_.ssh.alias_known_hosts.empty()) files.push_back(tilde(options_.ssh.alias_known_hosts));
  if (session != nullptr) {
    for (const ssh_options_e which : {SSH_OPTIONS_KNOWNHOSTS, SSH_OPTIONS_GLOBAL_KNOWNHOSTS}) {
      char* path = nullptr;
      if (ssh_options_get(session, which, &path) == SSH_OK && path != nullptr) files.emplace_back(path);
      ssh_string_free_char(path);
    }
  }
  std::string inputs;
  for (const std::string& file : files) {
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) {
      inputs += fmt::format("{}:-{};", file, errno);
      continue;
    }
    inputs += fmt::format("{}:{}:{}:{}:{}.{}:{}.{};", file, st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec,
                          st.st_mtim.tv_nsec, st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
  }
  return inputs;
}

SshTransport::SshTransport(SshTransportOptions options) : options_(std::move(options)) {
  ssh_init();
}

Result<std::unique_ptr<Connection>, TransportError> SshTransport::connect(const Worker& worker,
                                                                         const CancelToken& cancel) {
  if (cancel.cancelled()) return unexpected(TransportError{ErrorKind::interrupted, interrupted_by() + " before connecting"});
  SessionOwner owner{ssh_new()};
  ssh_session s = owner.s;
  if (s == nullptr) return unexpected(TransportError{ErrorKind::local, "out of memory creating an SSH session"});
  apply_options(s, worker, options_);

  if (ssh_connect(s) != SSH_OK) return unexpected(connect_error(worker, s, options_.ssh.connect_timeout_s));

  if (auto err = verify_host_key(s, worker)) return unexpected(*err);

  if (auto err = authenticate(s)) return unexpected(*err);
  return std::unique_ptr<Connection>(new SshConnection(owner.release(), worker));
}

// The configured key, read once for all the workers (libssh only reads a
// shared key when it signs). An OpenSSH-format RSA key goes through
// rsa_pkcs1_pem so that OpenSSL signs with its CRT exponents (rsa_crt_key.hpp).
// A passphrase-protected key does not load here: ssh-agent may hold it.
ssh_key SshTransport::identity_key() {
  std::call_once(identity_loaded_, [this] {
    const std::string& file = options_.ssh.identity_file;
    std::ifstream in(file, std::ios::binary | std::ios::ate);
    std::string text(in ? static_cast<size_t>(std::max<std::streamoff>(in.tellg(), 0)) : 0, '\0');
    in.seekg(0);
    in.read(text.data(), static_cast<std::streamsize>(text.size()));  // sized first: no stray copies to wipe
    text.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
    ssh_key key = nullptr;
    if (auto pem = rsa_pkcs1_pem(text)) {
      if (ssh_pki_import_privkey_base64(pem->str().c_str(), nullptr, nullptr, nullptr, &key) != SSH_OK) key = nullptr;
    }
    explicit_bzero(text.data(), text.size());
    if (key == nullptr && ssh_pki_import_privkey_file(file.c_str(), nullptr, nullptr, nullptr, &key) != SSH_OK) {
      key = nullptr;
    }
    identity_ = key;
  });
  return identity_;
}

SshTransport::~SshTransport() {
  if (identity_ != nullptr) ssh_key_free(identity_);
}

// The configured key first: ssh_userauth_publickey_auto tries ssh-agent's keys
// before it, and sshd's MaxAuthTries (6) cuts the connection after as many
// refusals, blaming authorized_keys for what is the agent's crowd of keys.
std::optional<TransportError> SshTransport::authenticate(ssh_session s) {
  const std::string& file = options_.ssh.identity_file;
  const bool have_file = !file.empty() && std::filesystem::exists(file);
  int rc = SSH_AUTH_DENIED;
  bool file_loaded = false;
  if (have_file) {
    if (ssh_key key = identity_key()) {
      file_loaded = true;
      rc = ssh_userauth_publickey(s, nullptr, key);
    }
  }
  if (rc != SSH_AUTH_SUCCESS && !(options_.ssh.identities_only && file_loaded)) {
    rc = ssh_userauth_publickey_auto(s, nullptr, nullptr);
  }
  if (rc == SSH_AUTH_SUCCESS) return std::nullopt;
  char* user = nullptr;
  ssh_options_get(s, SSH_OPTIONS_USER, &user);
  std::string who = user ? user : "?";
  ssh_string_free_char(user);
  std::string tried = "ssh-agent and the default keys";
  if (!file.empty()) {
    if (!have_file) {
      tried = "ssh-agent; identity file " + tilde(file) + " does not exist";
    } else if (options_.ssh.identities_only && file_loaded) {
      tried = tilde(file) + " only";
    } else {
      tried = tilde(file) + (file_loaded ? ", then ssh-agent" : " (could not load it: a passphrase? then ssh-agent)");
    }
  }
  return TransportError{ErrorKind::auth,
                        fmt::format("authentication as '{}' refused (tried {}) — is the public key in ~{}/.ssh/"
                                    "authorized_keys on the worker?",
                                    who, tried, who)};
}

std::optional<TransportError> SshTransport::verify_host_key(ssh_session s, const Worker& worker) {
  if (options_.ssh.host_key_policy == HostKeyPolicy::off) return std::nullopt;
  // gcloud pods: the worker's HostKeyAlias alone decides, as for gcloud's own
  // ssh (HostKeyAlias, CheckHostIP=no). Addresses are never consulted nor
  // recorded: a recreated TPU VM reuses them with new keys and a new alias.
  if (!worker.host_key_alias.empty() && !options_.ssh.alias_known_hosts.empty()) {
    const std::string& file = options_.ssh.alias_known_hosts;
    const AliasKeyCheck alias = check_server_alias_key(s, file, worker.host_key_alias);
    switch (alias.kind) {
      case AliasKeyCheck::match:
        return std::nullopt;
      case AliasKeyCheck::mismatch:
        return TransportError{
            ErrorKind::hostkey,
            fmt::format("host key differs from the one gcloud recorded for {} ({}:{}) — if the TPU VM was "
                        "recreated, remove that line and run `tpurun hostkeys --import`; otherwise someone may be "
                        "intercepting the connection",
                        worker.host_key_alias, tilde(alias.line.file), alias.line.line)};
      case AliasKeyCheck::unknown:
        if (options_.ssh.host_key_policy == HostKeyPolicy::strict) {
          return TransportError{ErrorKind::hostkey,
                                fmt::format("host key not known: gcloud has recorded none for {} in {} and "
                                            "host_key_policy is strict — run `tpurun hostkeys --import`",
                                            worker.host_key_alias, tilde(file))};
        }
        return record_alias_key(s, worker.host_key_alias);
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

// accept-new on a gcloud pod: the key goes under the worker's alias, the way
// gcloud files it ("ALIAS TYPE BASE64"), never under the address.
std::optional<TransportError> SshTransport::record_alias_key(ssh_session s, const std::string& alias) {
  ssh_key server = nullptr;
  if (ssh_get_server_publickey(s, &server) != SSH_OK) {
    return TransportError{ErrorKind::hostkey, fmt::format("cannot read the host key: {}", ssh_get_error(s))};
  }
  char* base64 = nullptr;
  const int exported = ssh_pki_export_pubkey_base64(server, &base64);
  const std::string type = ssh_key_type_to_char(ssh_key_type(server)) ? ssh_key_type_to_char(ssh_key_type(server)) : "";
  ssh_key_free(server);
  if (exported != SSH_OK || base64 == nullptr || type.empty()) {
    ssh_string_free_char(base64);
    return TransportError{ErrorKind::hostkey, "cannot export the host key to record it"};
  }
  const std::string line = alias + " " + type + " " + base64 + "\n";
  ssh_string_free_char(base64);
  std::lock_guard lock(known_hosts_write_);
  if (auto error = append_known_host(options_.ssh.alias_known_hosts, line)) {
    return TransportError{ErrorKind::hostkey, fmt::format("cannot record the new host key in {}: {}",
                                                          tilde(options_.ssh.alias_known_hosts), *error)};
  }
  return std::nullopt;
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
