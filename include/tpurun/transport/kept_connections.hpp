#pragma once
// Keeps one connection per worker open across uses, for work that is repeated
// (each refresh of `status --all --watch`): only the first refresh pays for
// the TCP and SSH handshakes, later ones open a channel on the kept session.
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "tpurun/transport/transport.hpp"

namespace tpurun {

// A Transport that wraps another and hands out its kept connection to the
// same worker (index, host and port), made on first use. A connection that fails is
// dropped, so the next use reconnects. A command that fails with a broken
// session (`channel`) on a connection made by an earlier use is run once more
// on a fresh one: the worker rebooted or the idle session was cut. So use it
// only for commands that may run twice (scans). One user of a worker at a time.
class KeptConnections : public Transport {
 public:
  explicit KeptConnections(std::unique_ptr<Transport> inner) : inner_(std::move(inner)) {}
  Result<std::unique_ptr<Connection>, TransportError> connect(const Worker& worker,
                                                              const CancelToken& cancel) override;

  struct Slot {
    std::unique_ptr<Connection> connection;
  };

 private:
  std::unique_ptr<Transport> inner_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Slot>> slots_;
};

}  // namespace tpurun
