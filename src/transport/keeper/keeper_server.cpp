// The keeper's main loop: one listening socket in the user's private dir, a
// thread per client connection from the user's own uid (SO_PEERCRED), the
// idle sessions reaped every half second, and an exit once nothing has been
// kept or asked for during its idle time, or when its socket is taken away
// (the runtime dir removed at logout, `agent stop`, another keeper).
#include <fcntl.h>
#include <pwd.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>

#include <fmt/format.h>

#include "tpurun/transport/keeper/keeper.hpp"
#include "tpurun/util/duration.hpp"
#include "transport/keeper/keeper_server.hpp"

namespace tpurun::keeper {
namespace {

long long steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
}

std::string user_of(uid_t uid) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  char buffer[4096];
  if (getpwuid_r(uid, &pw, buffer, sizeof buffer, &found) == 0 && found != nullptr) return found->pw_name;
  return std::to_string(uid);
}

// Only the keeper's own user: another user who reaches the socket (a dir
// made reachable by mistake, root's tools) is refused and logged.
bool peer_allowed(int fd) {
  struct ucred cred {};
  socklen_t length = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) {
    keeper_log(fmt::format("refused a connection: cannot read its credentials: {}", std::strerror(errno)));
    return false;
  }
  if (cred.uid == ::getuid()) return true;
  keeper_log(fmt::format("refused a connection from uid {} ({}), pid {}: this keeper serves uid {} ({}) only",
                         cred.uid, user_of(cred.uid), cred.pid, ::getuid(), user_of(::getuid())));
  return false;
}

struct Listener {
  UniqueFd fd;
  ino_t inode = 0;
};

Result<Listener, std::string> listen_on(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) return unexpected("socket path too long: " + path);
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return unexpected(fmt::format("socket: {}", std::strerror(errno)));
  ::unlink(path.c_str());  // a dead keeper's; the lock says no live one has it
  const mode_t old = ::umask(077);
  const int bound = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address);
  ::umask(old);
  if (bound != 0) return unexpected(fmt::format("bind {}: {}", path, std::strerror(errno)));
  if (::listen(fd.get(), 256) != 0) return unexpected(fmt::format("listen: {}", std::strerror(errno)));
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return unexpected(fmt::format("{}: {}", path, std::strerror(errno)));
  return Listener{std::move(fd), st.st_ino};
}

bool still_ours(const std::string& path, ino_t inode) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && st.st_ino == inode;
}

}  // namespace

void Server::touch() { last_activity_ms = steady_ms(); }

void keeper_log(const std::string& line) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm tm {};
  gmtime_r(&now, &tm);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
  std::fprintf(stderr, "%s keeper[%d]: %s\n", stamp, static_cast<int>(::getpid()), line.c_str());
  std::fflush(stderr);
}

}  // namespace tpurun::keeper

namespace tpurun {

int run_keeper(const KeeperPlace& place, std::chrono::milliseconds idle) {
  std::signal(SIGPIPE, SIG_IGN);
  // One keeper per socket: a second one started at the same moment finds
  // the lock taken and leaves the first one to serve.
  const std::string lock_path = place.socket + ".lock";
  UniqueFd lock(::open(lock_path.c_str(), O_CREAT | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600));
  // A keeper whose socket was taken away exits within half a second (below):
  // wait that long, and a bit, before leaving the place to it.
  bool locked = false;
  for (int i = 0; lock && i < 60 && !(locked = ::flock(lock.get(), LOCK_EX | LOCK_NB) == 0); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!locked) {
    keeper::keeper_log("another keeper serves " + place.socket + "; exiting");
    return 0;
  }
  auto listener = keeper::listen_on(place.socket);
  if (!listener) {
    keeper::keeper_log("cannot listen: " + listener.error());
    return 1;
  }
  static keeper::Server server;  // outlives detached client threads at exit
  server.idle = idle;
  server.touch();
  keeper::keeper_log(fmt::format("serving {} for uid {}; sessions kept {} unused", place.socket, ::getuid(),
                         format_duration_ms(idle.count())));
  std::string why;
  while (true) {
    pollfd p{listener->fd.get(), POLLIN, 0};
    if (::poll(&p, 1, 500) > 0) {
      UniqueFd client(::accept4(listener->fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (client && keeper::peer_allowed(client.get())) {
        ++server.active;
        std::thread([fd = std::move(client)]() mutable { keeper::serve_client(std::move(fd), server); }).detach();
      }
    }
    server.pool.reap();
    if (server.stopping) {
      why = "stopped by tpurun agent stop";
      break;
    }
    if (!keeper::still_ours(place.socket, listener->inode)) {
      why = "its socket is gone or another one took its place (logout, or the dir removed)";
      break;
    }
    if (server.active == 0 && server.pool.empty() && keeper::steady_ms() - server.last_activity_ms > idle.count()) {
      why = fmt::format("nothing kept or asked for {}", format_duration_ms(idle.count()));
      break;
    }
  }
  if (keeper::still_ours(place.socket, listener->inode)) ::unlink(place.socket.c_str());
  const size_t closed = server.pool.close_all();
  keeper::keeper_log(fmt::format("exiting: {}; closed {} idle session(s)", why, closed));
  // Clients still being served see their connection end and go direct.
  std::_Exit(0);
}

}  // namespace tpurun
