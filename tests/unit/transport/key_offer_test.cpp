// First use of a gcloud pod: one offer to put the key on the TPU VM, on the
// first refused login, then every worker is tried again.
#include "tpurun/transport/key_offer.hpp"

#include <gmock/gmock.h>

#include <atomic>
#include <thread>

#include "fake_transport.hpp"

namespace tpurun {
namespace {

using ::testing::HasSubstr;


// A transport that forwards to a FakeTransport owned by the test, refusing
// every login while `refuse` is set.
class Forward : public Transport {
 public:
  explicit Forward(testing::FakeTransport& fake, std::atomic<bool>* refuse = nullptr) : fake_(fake), refuse_(refuse) {}
  Result<std::unique_ptr<Connection>, TransportError> connect(const Worker& w, const CancelToken& c) override {
    if (refuse_ && *refuse_) return unexpected(TransportError{ErrorKind::auth, "authentication as 'alice' refused"});
    return fake_.connect(w, c);
  }

 private:
  testing::FakeTransport& fake_;
  std::atomic<bool>* refuse_;
};

TEST(KeyOfferTest, TheFirstRefusalGetsOneOfferAndEveryWorkerIsTriedAgain) {
  // Given 8 workers that refuse the key until the offer puts it there
  testing::FakeTransport fake;
  std::atomic<bool> refuse{true};
  int offers = 0;
  KeyOfferTransport transport(std::make_unique<Forward>(fake, &refuse), [&] {
    ++offers;
    refuse = false;  // the key is on the TPU VM now
    return true;
  }, "hint");
  // When all of them connect at once
  std::vector<std::thread> threads;
  std::vector<char> ok(8);  // not vector<bool>: its bits share words across threads
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] { ok[static_cast<size_t>(i)] = bool(transport.connect({i, "h", 22}, CancelToken())); });
  }
  for (auto& t : threads) t.join();
  // Then the user was asked once, and every worker got in
  EXPECT_EQ(offers, 1);
  for (char b : ok) EXPECT_TRUE(b);
}

TEST(KeyOfferTest, ADeclinedOfferLeavesTheRefusalWithTheHint) {
  testing::FakeTransport fake;
  fake.behaviour[0].connect_error = TransportError{ErrorKind::auth, "authentication as 'alice' refused"};
  fake.behaviour[1].connect_error = TransportError{ErrorKind::connect, "connection refused"};
  int offers = 0;
  KeyOfferTransport transport(std::make_unique<Forward>(fake), [&] { return ++offers, false; },
                              "run tpurun hostkeys --import");
  auto refused = transport.connect({0, "h", 22}, CancelToken());
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message, HasSubstr("refused — run tpurun hostkeys --import"));
  EXPECT_FALSE(transport.connect({0, "h", 22}, CancelToken()));
  EXPECT_EQ(offers, 1);  // asked once per command, not per worker
  // a worker that is down is no key problem: no hint, no offer
  auto down = transport.connect({1, "h", 22}, CancelToken());
  EXPECT_EQ(down.error().message, "connection refused");
  EXPECT_EQ(fake.connects(), 3);
}

}  // namespace
}  // namespace tpurun
