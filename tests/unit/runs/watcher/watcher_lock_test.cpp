// One watcher per run and host: the second one of a run finds the lock held.
#include "tpurun/runs/watcher/watcher_lock.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <optional>

#include "fakes/system_fakes.hpp"
#include "fakes/temp_dir.hpp"

namespace tpurun {
namespace {

TEST(WatcherLockTest, ASecondWatcherOfTheRunFindsItHeldAndTheFileGoesWithTheFirst) {
  testing::TempDir cache;
  testing::FakeEnvironment env({{"XDG_CACHE_HOME", cache.path()}});
  std::optional<WatcherLock> first;
  first.emplace("run1", env);
  ASSERT_TRUE(first->held()) << first->error();
  EXPECT_EQ(first->path(), cache.path() + "/tpurun/watchers/run1.lock");

  const WatcherLock second("run1", env);
  EXPECT_FALSE(second.held());
  EXPECT_TRUE(second.held_elsewhere());
  const WatcherLock other_run("run2", env);
  EXPECT_TRUE(other_run.held());

  first.reset();
  EXPECT_FALSE(std::filesystem::exists(cache.path() + "/tpurun/watchers/run1.lock"));
  const WatcherLock again("run1", env);
  EXPECT_TRUE(again.held());
}

}  // namespace
}  // namespace tpurun
