#include "tpurun/transport/key_offer.hpp"

namespace tpurun {

KeyOfferTransport::KeyOfferTransport(std::unique_ptr<Transport> inner, std::function<bool()> offer, std::string hint)
    : inner_(std::move(inner)), offer_(std::move(offer)), hint_(std::move(hint)) {}

bool KeyOfferTransport::key_pushed() {
  std::lock_guard lock(mutex_);
  if (!asked_) {
    asked_ = true;
    pushed_ = offer_ && offer_();
  }
  return pushed_;
}

Result<std::unique_ptr<Connection>, TransportError> KeyOfferTransport::connect(const Worker& worker,
                                                                              const CancelToken& cancel) {
  auto connection = inner_->connect(worker, cancel);
  if (connection || connection.error().kind != ErrorKind::auth || cancel.cancelled()) return connection;
  if (key_pushed()) connection = inner_->connect(worker, cancel);
  if (!connection && connection.error().kind == ErrorKind::auth && !hint_.empty()) {
    TransportError error = connection.error();
    error.message += " — " + hint_;
    return unexpected(error);
  }
  return connection;
}

}  // namespace tpurun
