// `tpurun agent`'s calls to the keeper: its status, stop, and a start that
// waits until the new keeper answers.
#include <chrono>
#include <thread>

#include "tpurun/transport/keeper/keeper.hpp"
#include "transport/keeper/keeper_client.hpp"

namespace tpurun {
namespace {

// The keeper's answer to a one-frame request, or nullopt when none answers.
std::optional<keeper::Frame> ask_keeper(const KeeperPlace& place, keeper::FrameType type) {
  std::string why;
  bool absent = false;
  auto d = keeper::dial_keeper(place.socket, 2000, why, absent);
  if (!d || !d->writer->send(type)) return std::nullopt;
  keeper::Frame f;
  if (d->reader->next(f, 5000) != keeper::ReadStatus::ok || f.type != keeper::FrameType::done) return std::nullopt;
  f.head["pid"] = d->pid;
  return f;
}

}  // namespace

std::optional<KeeperInfo> keeper_status(const KeeperPlace& place) {
  auto f = ask_keeper(place, keeper::FrameType::status);
  if (!f) return std::nullopt;
  KeeperInfo info;
  info.pid = f->head.value("pid", 0);
  info.version = f->head.value("version", "");
  info.idle_limit_s = f->head.value("idle_limit_s", 0.0);
  for (const auto& s : f->head.value("sessions", nlohmann::json::array())) {
    KeptSessionInfo k;
    k.host = s.value("host", "");
    k.port = s.value("port", 22);
    k.user = s.value("user", "");
    k.alias = s.value("alias", "");
    k.age_s = s.value("age_s", 0.0);
    k.idle_s = s.value("idle_s", 0.0);
    k.in_use = s.value("in_use", false);
    k.peak_channels = s.value("peak_channels", 0);
    info.sessions.push_back(k);
  }
  return info;
}

std::optional<int> keeper_stop(const KeeperPlace& place) {
  auto f = ask_keeper(place, keeper::FrameType::stop);
  if (!f) return std::nullopt;
  return f->head.value("closed", 0);
}

Result<int, std::string> keeper_start(const KeeperPlace& place, std::chrono::milliseconds idle) {
  if (auto info = keeper_status(place)) return info->pid;
  auto spawned = keeper::spawn_keeper(place, idle);
  if (!spawned) return unexpected(spawned.error());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto info = keeper_status(place)) return info->pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return unexpected("the keeper did not answer within 10 s; see " + place.log);
}

}  // namespace tpurun
