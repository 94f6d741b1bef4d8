#pragma once
// A Connection whose session the keeper holds: each call is sent over the
// keeper's socket and carried out there on the kept session (keeper_serve.cpp).
// A keeper that goes away mid-call ends the call with a `channel` error, and
// one that stops answering (no ping for kSilenceMs) with a `timeout`: never a hang.
#include <functional>
#include <memory>
#include <string>

#include "tpurun/transport/transport.hpp"
#include "transport/keeper/keeper_client.hpp"

namespace tpurun::keeper {

TransportError error_from_json(const nlohmann::json& head);

class KeeperConnection : public Connection {
 public:
  KeeperConnection(Dialed dialed, Worker worker) : d_(std::move(dialed)), worker_(std::move(worker)) {}

  Result<CommandExit, TransportError> run(const RemoteCommand& command, OutputSink& sink,
                                          const CancelToken& cancel) override;
  Result<std::unique_ptr<ByteStream>, TransportError> open_stream(const std::string& host, int port,
                                                                  const CancelToken& cancel) override;
  Result<std::unique_ptr<ExecStream>, TransportError> open_exec(const std::string& command_line,
                                                                const CancelToken& cancel) override;

  // One call: sends the request, waits for its answer (pings skipped); every
  // second of waiting `waiting` may ask to cancel (false: send a cancel).
  // The answer frame, or the error that ended the wait.
  Result<Frame, TransportError> call(FrameType type, const nlohmann::json& head, std::string_view data,
                                     int extra_wait_ms, const std::function<bool()>& waiting);
  // Fire and forget (a stream freed).
  void tell(FrameType type, const nlohmann::json& head);

 private:
  TransportError gone(const char* what);
  Result<int, TransportError> open_id(FrameType type, const nlohmann::json& head, const CancelToken& cancel);

  Dialed d_;
  Worker worker_;
  bool dead_ = false;
};

}  // namespace tpurun::keeper
