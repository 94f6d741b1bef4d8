#include "tpurun/util/local_programs.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fmt/format.h>
#include <sstream>

#include "tpurun/util/unique_fd.hpp"

namespace tpurun {

std::optional<std::string> find_on_path(const std::string& name, const Environment& env) {
  std::stringstream path(env.get("PATH").value_or("/usr/local/bin:/usr/bin:/bin"));
  std::string dir;
  while (std::getline(path, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

std::string port_problem(int port, bool all_interfaces) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return fmt::format("cannot make a socket to check port {}: {}", port, std::strerror(errno));
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // as TensorBoard's server does
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(all_interfaces ? INADDR_ANY : INADDR_LOOPBACK);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return "";
  if (errno == EADDRINUSE) return fmt::format("port {} is in use on this host (another TensorBoard?)", port);
  if (errno == EACCES) return fmt::format("port {} needs root; pick one above 1023", port);
  return fmt::format("cannot use port {}: {}", port, std::strerror(errno));
}

std::string host_fqdn() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  addrinfo hints{};
  hints.ai_flags = AI_CANONNAME;
  addrinfo* info = nullptr;
  std::string fqdn = name;
  if (::getaddrinfo(name, nullptr, &hints, &info) == 0) {
    if (info && info->ai_canonname && std::strchr(info->ai_canonname, '.')) fqdn = info->ai_canonname;
    ::freeaddrinfo(info);
  }
  return fqdn;
}

std::string exec_program(const std::string& path, const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::fflush(nullptr);
  // tpurun ignores SIGPIPE, and an ignored signal stays ignored across exec.
  ::signal(SIGPIPE, SIG_DFL);
  ::execv(path.c_str(), args.data());
  return fmt::format("cannot run {}: {}", path, std::strerror(errno));
}

}  // namespace tpurun
