// state.json round trip, the stop marker and per-attempt job files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "runs/record/log_dir_layout.hpp"
#include "tpurun/runs/record/run_state.hpp"

namespace tpurun {
namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/tpurun-run-state-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

TEST(RunState, RoundTrips) {
  TempDir dir;
  RunState s;
  s.verdict = RunVerdict::restarting;
  s.attempt = 2;
  s.max_attempts = 4;
  s.workers = {{0, WorkerState::stopped, 12, 143, "stopped by tpurun"}, {1, WorkerState::lost, 13, {}, "gone"}};
  s.first_failure = GangFailure{1, "lost", 0, "", "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "gone"};
  s.watcher = {4242, "devvm", 777, 1700000000};
  s.logs_missing = {{2, "10.0.0.4", "/home/u/.tpurun/logs/u/p/r", "connection refused"}};
  write_run_state(dir.path, s);
  auto back = read_run_state(dir.path);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->verdict, RunVerdict::restarting);
  EXPECT_EQ(back->attempt, 2);
  EXPECT_EQ(back->workers[0].exit_code, 143);
  EXPECT_FALSE(back->workers[1].exit_code);
  EXPECT_EQ(back->workers[1].state, WorkerState::lost);
  EXPECT_EQ(back->first_failure->since, "2026-01-01T00:00:00Z");
  EXPECT_EQ(back->watcher.host, "devvm");
  ASSERT_EQ(back->logs_missing.size(), 1u);
  EXPECT_EQ(back->logs_missing[0].worker, 2);
  EXPECT_EQ(back->logs_missing[0].path, "/home/u/.tpurun/logs/u/p/r");
  EXPECT_EQ(missing_logs_text(back->logs_missing[0]),
            "w2 10.0.0.4: not every file of the run was copied here (connection refused); they are still in "
            "/home/u/.tpurun/logs/u/p/r there");
}

TEST(RunState, CorruptOrMissingIsNone) {
  TempDir dir;
  EXPECT_FALSE(read_run_state(dir.path));
  std::ofstream(dir.path + "/state.json") << "{\"verdict\": \"maybe\"}";
  EXPECT_FALSE(read_run_state(dir.path));
}

TEST(RunState, AnOlderTpurunsSupervisorIsItsWatcher) {
  // Given a state.json that a watcher of an older tpurun wrote, under its old name
  TempDir dir;
  std::ofstream(dir.path + "/state.json")
      << R"({"verdict": "running", "attempt": 1, "max_attempts": 1, "workers": [],)"
      << R"( "supervisor": {"pid": 77, "host": "devvm", "started": 5, "heartbeat": 1000}})";
  // Then it is read as the run's watcher
  auto back = read_run_state(dir.path);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->watcher.pid, 77);
  EXPECT_EQ(back->watcher.host, "devvm");
  EXPECT_EQ(back->watcher.heartbeat, 1000);
}

TEST(RunState, WatcherOnAnotherHostIsJudgedByItsHeartbeat) {
  RunState s;
  s.watcher = {1, "some-other-dev-vm", 1, 1000};
  EXPECT_TRUE(watcher_alive(s, 1000 + kHeartbeatSeconds));
  EXPECT_FALSE(watcher_alive(s, 1000 + 4 * kHeartbeatSeconds));
}

TEST(RunState, StopMarkerAndJobFiles) {
  TempDir dir;
  EXPECT_FALSE(stop_requested(dir.path));
  std::ofstream(stop_marker_path(dir.path)) << "";
  EXPECT_TRUE(stop_requested(dir.path));
  EXPECT_EQ(job_file("/l", 3, 1, "exit"), "/l/worker3.exit");
  EXPECT_EQ(job_file("/l", 3, 2, "pid"), "/l/worker3.a2.pid");
}

}  // namespace
}  // namespace tpurun
