// CancelToken: Ctrl-C's flag, and a second one a sibling's failure sets.
#include "tpurun/util/cancel.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>

namespace tpurun {
namespace {

TEST(CancelTokenTest, OrWhenFiresOnEitherFlagAndLeavesTheOriginalAlone) {
  std::atomic<bool> ctrl_c{false}, refused{false};
  const CancelToken base(&ctrl_c);
  const CancelToken both = base.or_when(&refused);
  EXPECT_FALSE(both.cancelled());

  refused = true;
  EXPECT_TRUE(both.cancelled());
  EXPECT_FALSE(base.cancelled());  // a refusal is not an interrupt

  refused = false;
  ctrl_c = true;
  EXPECT_TRUE(both.cancelled());
  EXPECT_TRUE(base.cancelled());
}

TEST(CancelTokenTest, UntilFiresAtItsDeadlineAndKeepsTheOtherFlags) {
  using std::chrono::steady_clock;
  std::atomic<bool> ctrl_c{false};
  const CancelToken base(&ctrl_c);
  const CancelToken later = base.until(steady_clock::now() + std::chrono::hours(1));
  EXPECT_FALSE(later.cancelled());
  EXPECT_FALSE(later.expired());
  ctrl_c = true;
  EXPECT_TRUE(later.cancelled());  // Ctrl-C still counts
  EXPECT_FALSE(later.expired());
  ctrl_c = false;
  const CancelToken past = base.until(steady_clock::now() - std::chrono::seconds(1));
  EXPECT_TRUE(past.cancelled());
  EXPECT_TRUE(past.expired());
  EXPECT_FALSE(base.cancelled());
  EXPECT_FALSE(CancelToken().expired());  // no deadline: never
}

TEST(CancelTokenTest, ADefaultTokenWithASiblingFlag) {
  std::atomic<bool> refused{false};
  const CancelToken t = CancelToken().or_when(&refused);
  EXPECT_FALSE(t.cancelled());
  refused = true;
  EXPECT_TRUE(t.cancelled());
}

TEST(InterruptHandlerTest, SighupCancelsAndASecondSignalExitsSayingWhatMayBeLeft) {
  // (in a child process: the handler is process-wide)
  EXPECT_EXIT(
      {
        const auto* flag = install_interrupt_handler();
        set_interrupt_last_words("tpurun: queued resource q may be left: `gcloud ... delete q` deletes it\n");
        std::raise(SIGHUP);  // a closed terminal: cancels, as Ctrl-C does
        if (!flag->load() || interrupt_exit_code() != 129 || interrupted_by() != "interrupted by SIGHUP") _exit(3);
        std::raise(SIGINT);  // the second: out at once, with the last words
        _exit(4);
      },
      ::testing::ExitedWithCode(130), "queued resource q may be left: `gcloud ... delete q` deletes it");
}

}  // namespace
}  // namespace tpurun
