// KeeperTransport: connect() leases a session from the keeper, or connects
// directly. Nothing waits on a keeper that is not there: a missing socket is
// one failed connect(2), after which this process starts one for the next
// command and goes direct.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "tpurun/util/daemon.hpp"
#include "tpurun/util/version.hpp"
#include "transport/keeper/keeper_client.hpp"
#include "transport/keeper/keeper_connection.hpp"
#include "transport/keeper/keeper_settings.hpp"

namespace tpurun::keeper {

std::optional<Dialed> dial_keeper(const std::string& socket, int hello_ms, std::string& why, bool& absent) {
  absent = false;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket.size() >= sizeof address.sun_path) {
    why = "socket path too long";
    return std::nullopt;
  }
  std::memcpy(address.sun_path, socket.c_str(), socket.size() + 1);
  Dialed d;
  d.fd.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!d.fd || ::connect(d.fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    absent = errno == ENOENT || errno == ECONNREFUSED;
    why = fmt::format("no keeper at {}: {}", socket, std::strerror(errno));
    return std::nullopt;
  }
  struct ucred cred {};
  socklen_t length = sizeof cred;
  if (getsockopt(d.fd.get(), SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0 || cred.uid != ::getuid()) {
    why = fmt::format("the process at {} is not yours (uid {})", socket, cred.uid);
    return std::nullopt;
  }
  d.reader = std::make_unique<FrameReader>(d.fd.get());
  d.writer = std::make_unique<FrameWriter>(d.fd.get());
  // Blocking from here: every wait below is a poll with its own bound.
  (void)!::fcntl(d.fd.get(), F_SETFL, 0);
  Frame hello;
  if (d.reader->next(hello, hello_ms) != ReadStatus::ok || hello.type != FrameType::hello) {
    why = fmt::format("the keeper at {} did not say hello within {} ms", socket, hello_ms);
    return std::nullopt;
  }
  if (hello.head.value("version", "") != version_line()) {
    why = "the keeper is of another tpurun version";
    return std::nullopt;
  }
  d.pid = hello.head.value("pid", 0);
  return d;
}

Result<int, std::string> spawn_keeper(const KeeperPlace& place, std::chrono::milliseconds idle) {
  return spawn_detached_self({"_keeper", "--idle-ms", std::to_string(idle.count())}, place.log);
}

namespace {

class KeeperTransport : public Transport {
 public:
  KeeperTransport(std::unique_ptr<Transport> direct, KeeperClientOptions options)
      : direct_(std::move(direct)), options_(std::move(options)) {}

  Result<std::unique_ptr<Connection>, TransportError> connect(const Worker& worker,
                                                              const CancelToken& cancel) override {
    if (!unusable_) {
      if (auto kept = through_keeper(worker, cancel)) return std::move(*kept);
    }
    return direct_->connect(worker, cancel);
  }
  Transport* bulk() override { return direct_.get(); }

 private:
  // The keeper's answer, or nullopt to go direct.
  std::optional<Result<std::unique_ptr<Connection>, TransportError>> through_keeper(const Worker& worker,
                                                                                    const CancelToken& cancel) {
    std::string why;
    bool absent = false;
    std::optional<Dialed> d = dial_keeper(options_.place.socket, kHelloMs, why, absent);
    if (!d) {
      if (!unusable_.exchange(true)) spdlog::debug("keeper: {}; connecting directly", why);
      if (absent) std::call_once(spawned_, [this] { start_one(); });
      return std::nullopt;
    }
    nlohmann::json open = {{"settings", options_.settings}, {"worker", worker_json(worker)},
                           {"idle_ms", options_.idle.count()}};
    if (!d->writer->send(FrameType::open, open)) return std::nullopt;
    // The keeper probes a kept session (half a second at most) or connects anew
    // (connect_timeout): that, and a margin, is the whole wait.
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::seconds(options_.connect_timeout_s + kReuseWaitS + 1);
    Frame f;
    while (true) {
      const ReadStatus status = d->reader->next(f, 100);
      if (status == ReadStatus::ok && f.type == FrameType::ping) continue;
      if (status == ReadStatus::ok) break;
      if (status != ReadStatus::timeout) return std::nullopt;  // gone before it started anything
      if (cancel.cancelled()) {
        return Result<std::unique_ptr<Connection>, TransportError>(
            unexpected(TransportError{ErrorKind::interrupted, interrupted_by() + " before connecting"}));
      }
      if (std::chrono::steady_clock::now() > deadline) {
        return Result<std::unique_ptr<Connection>, TransportError>(unexpected(TransportError{
            ErrorKind::timeout, fmt::format("connect timed out after {}s (through the connection keeper)",
                                            options_.connect_timeout_s)}));
      }
    }
    if (f.type == FrameType::error) {
      return Result<std::unique_ptr<Connection>, TransportError>(unexpected(error_from_json(f.head)));
    }
    if (f.type != FrameType::ready) return std::nullopt;
    spdlog::debug("keeper: {} {}:{} on a {} session of keeper pid {}", worker.label(), worker.host, worker.port,
                  f.head.value("reused", false) ? "kept" : "new", d->pid);
    return Result<std::unique_ptr<Connection>, TransportError>(
        std::unique_ptr<Connection>(new KeeperConnection(std::move(*d), worker)));
  }

  void start_one() {
    auto pid = spawn_keeper(options_.place, options_.idle);
    if (pid) {
      spdlog::debug("keeper: started pid {} for the next commands", *pid);
    } else {
      spdlog::debug("keeper: cannot start one: {}", pid.error());
    }
  }

  static constexpr int kReuseWaitS = 1;
  std::unique_ptr<Transport> direct_;
  KeeperClientOptions options_;
  std::atomic<bool> unusable_{false};
  std::once_flag spawned_;
};

}  // namespace

std::unique_ptr<Transport> keeper_transport(std::unique_ptr<Transport> direct, KeeperClientOptions options) {
  return std::make_unique<KeeperTransport>(std::move(direct), std::move(options));
}

}  // namespace tpurun::keeper
