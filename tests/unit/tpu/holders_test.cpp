#include "tpurun/tpu/holders.hpp"

#include <gtest/gtest.h>

namespace tpurun {
namespace {

TEST(TpuExitCodeTest, FreeBusyUnreachable) {
  EXPECT_EQ(tpu_exit_code({TpuState::free, TpuState::free}), 0);
  EXPECT_EQ(tpu_exit_code({TpuState::free, TpuState::partial}), 1);
  EXPECT_EQ(tpu_exit_code({TpuState::busy_self, TpuState::stale_lock}), 1);
  EXPECT_EQ(tpu_exit_code({TpuState::busy_other, TpuState::unreachable}), 255);
  EXPECT_EQ(tpu_exit_code({TpuState::error}), 255);
}

}  // namespace
}  // namespace tpurun
