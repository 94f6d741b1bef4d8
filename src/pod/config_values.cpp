#include "config_values.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "tpurun/pod/config.hpp"
#include "tpurun/util/parse_double.hpp"

namespace tpurun {

namespace {

std::string location(const std::string& file, int line, int column) {
  std::string where = file;
  if (line > 0) where += ":" + std::to_string(line);
  if (line > 0 && column > 0) where += ":" + std::to_string(column);
  return where.empty() ? "" : where + ": ";
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Result<int, std::string> parse_port(std::string_view text) {
  int port = 0;
  if (!all_digits(text) || text.size() > 5 || (port = std::stoi(std::string(text))) < 1 ||
      port > 65535)
    return unexpected("port '" + std::string(text) + "' is not a number from 1 to 65535");
  return port;
}

std::string check_host_chars(std::string_view host, bool ipv6) {
  for (char c : host) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ||
              (ipv6 && (c == ':' || c == '%'));
    if (ok) continue;
    if (c == '@') return "put the user in ssh.user, not in the host";
    if (!std::isprint(static_cast<unsigned char>(c)))
      return "control and non-ASCII characters are not allowed in a host name or address";
    return "'" + std::string(1, c) + "' is not allowed in a host name or address";
  }
  return "";
}

}  // namespace

ConfigError::ConfigError(std::string file, int line, const std::string& message)
    : ConfigError(std::move(file), line, 0, message) {}

ConfigError::ConfigError(std::string file, int line, int column, const std::string& message)
    : std::runtime_error(location(file, line, column) + message),
      file_(std::move(file)),
      line_(line),
      column_(column) {}

std::optional<HostKeyPolicy> parse_host_key_policy(const std::string& s) {
  if (s == "strict") return HostKeyPolicy::strict;
  if (s == "accept-new") return HostKeyPolicy::accept_new;
  if (s == "off") return HostKeyPolicy::off;
  return std::nullopt;
}

const char* to_string(HostKeyPolicy p) {
  switch (p) {
    case HostKeyPolicy::strict:
      return "strict";
    case HostKeyPolicy::accept_new:
      return "accept-new";
    case HostKeyPolicy::off:
      return "off";
  }
  return "?";
}

std::optional<std::uint64_t> parse_byte_size(const std::string& s) {
  std::string_view text = s;
  auto is_space = [](char c) { return c == ' ' || c == '\t'; };
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  size_t number_end = 0;
  while (number_end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[number_end])) || text[number_end] == '.'))
    ++number_end;
  std::string_view number = text.substr(0, number_end);
  std::string_view unit = text.substr(number_end);
  while (!unit.empty() && is_space(unit.front())) unit.remove_prefix(1);

  if (unit.empty() && all_digits(number)) {  // exact, even above 2^53
    std::uint64_t bytes = 0;
    if (std::from_chars(number.data(), number.data() + number.size(), bytes).ec != std::errc())
      return std::nullopt;
    return bytes;
  }
  static const std::pair<const char*, double> units[] = {
      {"", 1},      {"b", 1},        {"kb", 1e3},     {"mb", 1e6},     {"gb", 1e9},
      {"tb", 1e12}, {"kib", 0x1p10}, {"mib", 0x1p20}, {"gib", 0x1p30}, {"tib", 0x1p40}};
  std::string u = lowercase(unit);
  auto it =
      std::find_if(std::begin(units), std::end(units), [&](const auto& p) { return u == p.first; });
  if (it == std::end(units)) return std::nullopt;
  // A fraction needs digits on both sides of the point: "1.5GiB", not "1.GiB" or ".5GiB".
  size_t dot = number.find('.');
  if (!all_digits(number.substr(0, dot)) ||
      (dot != std::string_view::npos && !all_digits(number.substr(dot + 1))))
    return std::nullopt;
  std::optional<double> value = parse_double(number);
  if (!value) return std::nullopt;
  double bytes = std::floor(*value * it->second);
  if (!(bytes < 0x1p64)) return std::nullopt;
  return static_cast<std::uint64_t>(bytes);
}

Result<HostPort, std::string> parse_host_port(std::string_view text) {
  if (text.empty()) return unexpected(std::string("empty host"));
  if (text.find("://") != std::string_view::npos)
    return unexpected(std::string("write \"host\" or \"host:port\", not a URL"));
  HostPort hp;
  std::string_view port;
  bool ipv6 = text.front() == '[';
  if (ipv6) {
    size_t close = text.find(']');
    if (close == std::string_view::npos)
      return unexpected(std::string("missing ']' after IPv6 address"));
    hp.host = std::string(text.substr(1, close - 1));
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty() && rest.front() != ':')
      return unexpected("unexpected '" + std::string(rest) + "' after ']'");
    if (!rest.empty()) port = rest.substr(1);
    if (hp.host.find(':') == std::string::npos)
      return unexpected(std::string("brackets are only for IPv6 addresses"));
    if (!rest.empty() && port.empty()) return unexpected(std::string("missing port after ':'"));
  } else {
    size_t colon = text.find(':');
    if (colon != text.rfind(':'))
      return unexpected(std::string("write IPv6 addresses in brackets, e.g. \"[::1]:22\""));
    hp.host = std::string(text.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = text.substr(colon + 1);
      if (port.empty()) return unexpected(std::string("missing port after ':'"));
    }
  }
  if (hp.host.empty()) return unexpected(std::string("empty host"));
  if (auto bad = check_host_chars(hp.host, ipv6); !bad.empty()) return unexpected(bad);
  if (!port.empty()) {
    auto p = parse_port(port);
    if (!p) return unexpected(p.error());
    hp.port = *p;
  }
  return hp;
}

SshSettings default_ssh_settings(bool gcloud_pod, const Environment& env) {
  SshSettings ssh;
  // cron and some containers set LOGNAME but not USER.
  ssh.user = env.get("USER").value_or(env.get("LOGNAME").value_or(""));
  if (gcloud_pod) {
    ssh.identity_file = expand_home("~/.ssh/google_compute_engine", env);
    ssh.known_hosts = {expand_home("~/.ssh/google_compute_known_hosts", env),
                       expand_home("~/.ssh/known_hosts", env)};
    ssh.alias_known_hosts = expand_home("~/.ssh/google_compute_known_hosts", env);
    ssh.identities_only = true;
  } else {
    ssh.known_hosts = {expand_home("~/.ssh/known_hosts", env)};
  }
  return ssh;
}

}  // namespace tpurun
