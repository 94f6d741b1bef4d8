#pragma once
// The keeper process: its state, shared by the accept loop (keeper_server.cpp)
// and the thread serving each client connection (keeper_serve.cpp).
#include <atomic>
#include <chrono>
#include <string>

#include "tpurun/util/unique_fd.hpp"
#include "transport/keeper/keeper_pool.hpp"

namespace tpurun::keeper {

struct Server {
  SessionPool pool;
  std::chrono::milliseconds idle{0};
  std::atomic<int> active{0};        // client connections being served
  std::atomic<bool> stopping{false};  // `tpurun agent stop`
  std::atomic<long long> last_activity_ms{0};  // steady clock

  void touch();
};

// One line to the keeper's log (its stderr), with the time and pid.
void keeper_log(const std::string& line);

// Serves one client connection until it closes: the hello, then status, stop
// or a lease and the calls on it. Runs on its own thread.
void serve_client(UniqueFd fd, Server& server);

}  // namespace tpurun::keeper
