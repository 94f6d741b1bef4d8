#pragma once
// A Connection whose session the keeper holds: each call is sent over the
// keeper's socket and carried out there on the kept session (keeper_serve.cpp).
// A keeper that goes away mid-call ends the call with a `channel` error, and
// one that stops answering (no ping for kSilenceMs) with a `timeout`: never a hang.
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
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
  // A stream's write, not waited for: its answer is taken later (settle), so
  // that the next piece travels while the keeper sends this one on (a push
  // of 40 MB is 640 writes of 64 KiB; one round trip each made a fresh
  // no-shared-mount stage 40% slower through the keeper). `waiting` is the
  // stream's hook, called while its answer is awaited.
  std::optional<TransportError> send_write(int id, std::string_view data, std::function<bool()> waiting);
  size_t unsettled_bytes() const { return unsettled_bytes_; }
  // Takes the answers of the writes sent so far, the oldest first (all of
  // them, or one); a write that failed leaves its error for its stream.
  void settle(bool one = false);
  // The first error of stream `id`'s writes, once settled (then forgotten).
  std::optional<TransportError> write_error(int id);

 private:
  TransportError gone(const char* what);
  Result<Frame, TransportError> answer(int extra_wait_ms, const std::function<bool()>& waiting);
  struct Unsettled {
    int id;
    size_t bytes;
    std::function<bool()> waiting;
  };
  Result<int, TransportError> open_id(FrameType type, const nlohmann::json& head, const CancelToken& cancel);

  Dialed d_;
  Worker worker_;
  bool dead_ = false;
  std::deque<Unsettled> unsettled_;
  size_t unsettled_bytes_ = 0;
  std::map<int, TransportError> write_errors_;
};

}  // namespace tpurun::keeper
