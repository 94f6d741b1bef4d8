#pragma once
// First use of a gcloud pod: the TPU VM does not know the user's key yet
// (gcloud puts keys on TPU VMs through their metadata, and a fresh user has
// never run gcloud's ssh). The first refused login, on any worker, gets one
// offer to do it; the workers are then tried again.
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "tpurun/transport/transport.hpp"

namespace tpurun {

class KeyOfferTransport : public Transport {
 public:
  // `offer` is called at most once, by the first thread whose login is
  // refused; the others wait for its answer. True: the key is on the TPU VM
  // now. `hint` is added to every refusal when there was no offer or it failed.
  KeyOfferTransport(std::unique_ptr<Transport> inner, std::function<bool()> offer, std::string hint);
  Result<std::unique_ptr<Connection>, TransportError> connect(const Worker& worker,
                                                              const CancelToken& cancel) override;
  Transport* bulk() override { return inner_->bulk(); }

 private:
  bool key_pushed();

  std::unique_ptr<Transport> inner_;
  std::function<bool()> offer_;
  std::string hint_;
  std::mutex mutex_;
  bool asked_ = false;
  bool pushed_ = false;
};

}  // namespace tpurun
