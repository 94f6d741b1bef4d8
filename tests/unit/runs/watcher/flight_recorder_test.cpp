// The flight recorder: the stacks of the workers that still answer, saved in
// the run's log dir before the stop, and what the watcher says of them.
#include "runs/watcher/flight_recorder.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "fake_transport.hpp"
#include "tpurun/runs/stacks/stacks.hpp"
#include "tpurun/worker/tokens.hpp"

namespace tpurun {
namespace {

TEST(FlightRecorderTest, SavesTheStacksOfTheWorkersLeftAndSkipsTheLostOne) {
  // Given a run of 4 workers whose w2 is lost, the others in one function
  const std::string log_dir = ::testing::TempDir() + "/flight_recorder_test";
  std::filesystem::remove_all(log_dir);
  std::filesystem::create_directories(log_dir);
  RunRecord record;
  record.run_id = "run1";
  record.log_dir = log_dir;
  for (int i = 0; i < 4; ++i) record.workers.push_back({i, "10.0.0." + std::to_string(i + 1)});
  testing::FakeTransport transport;
  const std::string answer = std::string(worker::kStacksHeader) +
                             "\n{\"processes\": [{\"pid\": 7, \"command\": \"python3 train.py\", \"threads\": "
                             "[{\"name\": \"MainThread\", \"frames\": [{\"function\": \"wait_for_peers\", "
                             "\"file\": \"hang.py\", \"line\": 27}]}]}]}\n";
  for (int i = 0; i < 4; ++i) transport.behaviour[i].out = answer;
  // When the watcher is about to stop the rest of the gang
  CancelToken cancel;
  const std::string note = record_flight(record, record.workers, 2, "lost", transport, 64, cancel);
  // Then w2 was not asked, and the others' stacks are in the log dir, said so
  for (const auto& ran : transport.commands_ran()) EXPECT_NE(ran.worker, 2);
  EXPECT_EQ(note.find("stacks of w0-1,3 saved in stacks/"), 0u) << note;
  const std::vector<SavedCapture> saved = read_captures(log_dir);
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_EQ(saved[0].reason, "lost");
  EXPECT_TRUE(std::filesystem::exists(saved[0].dir + "/w3.txt"));
  EXPECT_FALSE(std::filesystem::exists(saved[0].dir + "/w2.txt"));
  std::filesystem::remove_all(log_dir);
}

}  // namespace
}  // namespace tpurun
