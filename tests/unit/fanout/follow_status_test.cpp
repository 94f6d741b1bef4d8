#include "tpurun/fanout/follow_status.hpp"

#include <gtest/gtest.h>

namespace tpurun {
namespace {

using std::chrono::seconds;
using S = WorkerRunState;

std::vector<WorkerActivity> pod(int n, seconds quiet, S state = S::running) {
  std::vector<WorkerActivity> workers;
  for (int i = 0; i < n; ++i) workers.push_back({i, state, quiet});
  return workers;
}

TEST(FollowStatusTest, CountsRunningExitedAndFailed) {
  auto workers = pod(8, seconds(2));
  workers[1].state = S::exited;
  workers[2].state = S::failed;
  workers[3].state = S::exited;
  EXPECT_EQ(format_follow_status(workers), "8 workers: 5 running, 2 exited, 1 failed");
}

TEST(FollowStatusTest, AllExitedStillSaysNoneRun) {
  EXPECT_EQ(format_follow_status(pod(4, seconds(0), S::exited)), "4 workers: 0 running, 4 exited");
}

TEST(FollowStatusTest, NamesAWorkerQuietMuchLongerThanItsPeers) {
  // Given 64 workers printing every few seconds, and worker 17 silent for 4 minutes,
  auto workers = pod(64, seconds(3));
  workers[17].quiet = seconds(240);
  // then it is named, with how long its peers have been quiet at most.
  EXPECT_EQ(quiet_workers(workers), std::vector<int>{17});
  EXPECT_EQ(format_follow_status(workers), "64 workers: 64 running · quiet: w17 4m (others ≤ 3s)");
}

TEST(FollowStatusTest, NobodyIsQuietWhenAllAreEquallySilent) {
  // A whole pod silent in a long compile step is not one stuck worker.
  EXPECT_TRUE(quiet_workers(pod(8, seconds(600))).empty());
}

TEST(FollowStatusTest, ShortSilencesAreNotNamed) {
  auto workers = pod(8, seconds(0));
  workers[3].quiet = seconds(20);  // 20s is under the 30s floor, however long the others' silence
  EXPECT_TRUE(quiet_workers(workers).empty());
}

TEST(FollowStatusTest, ExitedWorkersAreNeitherQuietNorPeers) {
  auto workers = pod(3, seconds(1));
  workers[0].state = S::exited;
  workers[0].quiet = seconds(900);
  workers[1].quiet = seconds(100);
  // Worker 0 has exited: it is not quiet; worker 1 is, against worker 2 alone.
  EXPECT_EQ(quiet_workers(workers), std::vector<int>{1});
  workers[2].state = S::failed;
  EXPECT_TRUE(quiet_workers(workers).empty()) << "one running worker has no peers";
}

TEST(FollowStatusTest, NamesAtMostThreeQuietWorkersQuietestFirst) {
  auto workers = pod(32, seconds(2));
  workers[5].quiet = seconds(100);
  workers[9].quiet = seconds(300);
  workers[11].quiet = seconds(200);
  workers[20].quiet = seconds(60);
  workers[21].quiet = seconds(60);
  EXPECT_EQ(quiet_workers(workers), (std::vector<int>{9, 11, 5, 20, 21}));
  EXPECT_EQ(format_follow_status(workers),
            "32 workers: 32 running · quiet: w9 5m, w11 3m, w5 1m +2 more (others ≤ 2s)");
}

}  // namespace
}  // namespace tpurun
