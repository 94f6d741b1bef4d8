#pragma once
// The client's side of the keeper: a Transport that asks the user's keeper
// for a kept session to each worker and falls back to its direct transport
// (as today) whenever the keeper is off, gone, wedged or of another version.
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "tpurun/transport/keeper/keeper.hpp"
#include "tpurun/transport/transport.hpp"
#include "tpurun/util/unique_fd.hpp"
#include "transport/keeper/frames.hpp"

namespace tpurun::keeper {

// What a keeper must answer its hello in; slower is taken for wedged.
constexpr int kHelloMs = 100;
// Silence from a keeper at work (it pings every second) taken for wedged.
constexpr int kSilenceMs = 15000;

struct Dialed {
  UniqueFd fd;
  std::unique_ptr<FrameReader> reader;
  std::unique_ptr<FrameWriter> writer;
  int pid = 0;
};

// Connects to the keeper's socket and reads its hello within `hello_ms`.
// nullopt (and why) when there is no keeper, or none of this version, or it
// is not the caller's own (SO_PEERCRED), or it does not answer in time.
std::optional<Dialed> dial_keeper(const std::string& socket, int hello_ms, std::string& why, bool& absent);

// Starts a keeper in the background (`tpurun _keeper`), detached.
Result<int, std::string> spawn_keeper(const KeeperPlace& place, std::chrono::milliseconds idle);

struct KeeperClientOptions {
  KeeperPlace place;
  nlohmann::json settings;  // keeper_settings.hpp
  std::chrono::milliseconds idle{0};
  int connect_timeout_s = 10;
};

std::unique_ptr<Transport> keeper_transport(std::unique_ptr<Transport> direct, KeeperClientOptions options);

}  // namespace tpurun::keeper
