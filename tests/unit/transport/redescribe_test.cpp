// A kept describe that is out of date: the worker is tried where the TPU VM
// says it is now, and a TPU VM that is gone is reported as gcloud said.
#include "transport/redescribe.hpp"

#include <gmock/gmock.h>

#include <algorithm>

#include "fake_transport.hpp"

namespace tpurun {
namespace {

// Refuses every host but the ones in `up`.
class OnlyUp : public Transport {
 public:
  explicit OnlyUp(std::vector<std::string> up) : up_(std::move(up)) {}
  Result<std::unique_ptr<Connection>, TransportError> connect(const Worker& w, const CancelToken& c) override {
    tried.push_back(w.host + "/" + w.host_key_alias);
    if (std::find(up_.begin(), up_.end(), w.host) == up_.end()) {
      return unexpected(TransportError{ErrorKind::connect, "cannot connect to " + w.host});
    }
    return fake_.connect(w, c);
  }
  std::vector<std::string> tried;

 private:
  std::vector<std::string> up_;
  testing::FakeTransport fake_;
};

TEST(RedescribeTest, AWorkerThatMovedIsTriedAtItsNewAddressOnceDescribed) {
  auto inner = std::make_unique<OnlyUp>(std::vector<std::string>{"10.0.0.9"});
  OnlyUp* seen = inner.get();
  int describes = 0;
  RedescribeTransport transport(std::move(inner), [&]() -> Result<std::vector<Worker>, std::string> {
    ++describes;
    return std::vector<Worker>{{0, "10.0.0.9", 22, "tpu.2-0"}, {1, "10.0.0.3", 22, "tpu.2-1"}};
  });
  EXPECT_TRUE(transport.connect({0, "10.0.0.2", 22, "tpu.1-0"}, CancelToken()));
  EXPECT_EQ(seen->tried, (std::vector<std::string>{"10.0.0.2/tpu.1-0", "10.0.0.9/tpu.2-0"}));
  // a worker that is where it was, and down, keeps its own error; describe ran once
  auto down = transport.connect({1, "10.0.0.3", 22, "tpu.2-1"}, CancelToken());
  ASSERT_FALSE(down);
  EXPECT_EQ(down.error().message, "cannot connect to 10.0.0.3");
  EXPECT_EQ(describes, 1);
}

TEST(RedescribeTest, ATpuVmThatIsGoneIsReportedAsGcloudSaid) {
  RedescribeTransport transport(std::make_unique<OnlyUp>(std::vector<std::string>{}),
                                []() -> Result<std::vector<Worker>, std::string> {
                                  return unexpected(std::string("pod 'p': TPU VM t is PREEMPTED: ..."));
                                });
  auto gone = transport.connect({0, "10.0.0.2", 22, "tpu.1-0"}, CancelToken());
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().message, "pod 'p': TPU VM t is PREEMPTED: ... (after: cannot connect to 10.0.0.2)");
}

}  // namespace
}  // namespace tpurun
