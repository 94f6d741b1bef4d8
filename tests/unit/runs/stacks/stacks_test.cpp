// tpurun stacks: the workers' answers read, grouped, the odd one out named,
// the exit code, and the JSON and the saved captures read back.
#include <gtest/gtest.h>

#include <filesystem>

#include "fake_transport.hpp"
#include "tpurun/runs/stacks/stacks.hpp"
#include "tpurun/worker/tokens.hpp"

namespace tpurun {
namespace {

using testing::FakeBehaviour;
using testing::FakeTransport;

// worker/stacks.py's answer with one python process whose main thread is in
// `inner` (called from train_loop), and a loader thread.
std::string answer(const std::string& inner, int pid = 100) {
  nlohmann::json doc = {
      {"processes",
       {{{"pid", pid},
         {"ppid", 1},
         {"command", "/usr/bin/python3 /nfs/u/snap" + std::to_string(pid) + "/train.py --hang"},
         {"threads",
          {{{"name", "MainThread"},
            {"frames",
             {{{"function", "wait"}, {"file", "/usr/lib/python3.11/threading.py"}, {"line", 320}},
              {{"function", inner}, {"file", "/nfs/u/snap/hang.py"}, {"line", pid}},
              {{"function", "train_loop"}, {"file", "/nfs/u/snap/hang.py"}, {"line", 30}}}}},
           {{"name", "loader"},
            {"frames", {{{"function", "loader_loop"}, {"file", "/nfs/u/snap/hang.py"}, {"line", 12}}}}}}}},
        {{"pid", pid - 1}, {"ppid", 1}, {"command", "sh -c x"}, {"no_stack", "no Python stack (not Python: dash)"}}}},
      {"last_line", "worker step 3"},
      {"last_line_age_s", 12.5}};
  return std::string(worker::kStacksHeader) + "\n" + doc.dump() + "\n";
}

std::vector<Worker> pod(int n) {
  std::vector<Worker> workers;
  for (int i = 0; i < n; ++i) workers.push_back({i, "10.0.0." + std::to_string(i + 1)});
  return workers;
}

std::vector<WorkerStacks> take(FakeTransport& transport, int n) {
  CancelToken cancel;
  return take_stacks(pod(n), transport, {"run1", "/logs/run1", 2000, false, 64}, cancel);
}

TEST(StacksTest, ReadsTheWorkersAnswer) {
  const WorkerStacks s = parse_stacks_answer({2, "h"}, "noise\n" + answer("wait_for_peers"), "");
  ASSERT_TRUE(s.error.empty()) << s.error;
  EXPECT_EQ(s.worker.index, 2);
  ASSERT_EQ(s.processes.size(), 2u);
  EXPECT_EQ(s.processes[0].threads[0].frames[1].function, "wait_for_peers");
  EXPECT_EQ(s.processes[1].no_stack, "no Python stack (not Python: dash)");
  EXPECT_EQ(s.last_line, "worker step 3");
  EXPECT_TRUE(s.has_stack());
}

TEST(StacksTest, AnAnswerWithoutItsHeaderIsAnError) {
  const WorkerStacks s = parse_stacks_answer({0, "h"}, "", "python3: not found");
  EXPECT_NE(s.error.find("python3: not found"), std::string::npos);
  EXPECT_FALSE(s.has_stack());
}

TEST(StacksTest, TheOddWorkerOutOfEightIsNamedApartFromTheOtherSeven) {
  // Given seven workers in a collective and w3 in a checkpoint write (their pids differ)
  FakeTransport transport;
  for (int i = 0; i < 8; ++i) transport.behaviour[i].out = answer(i == 3 ? "write_shard" : "wait_for_peers", 100);
  transport.behaviour[5].out = answer("wait_for_peers", 200);
  // When the stacks are taken and grouped
  const std::vector<WorkerStacks> stacks = take(transport, 8);
  const std::vector<StacksGroup> groups = group_stacks(stacks);
  // Then the seven form one group, first, and w3 is named with its frames
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].workers, (std::vector<int>{0, 1, 2, 4, 5, 6, 7}));
  EXPECT_EQ(groups[1].workers, (std::vector<int>{3}));
  EXPECT_EQ(odd_ones_out(stacks, groups),
            (std::vector<std::string>{"w3 differs: MainThread in train_loop → write_shard"}));
  const std::string text = format_stacks_report("run1", stacks);
  EXPECT_NE(text.find("[w0-2,4-7] 7 workers"), std::string::npos) << text;
  EXPECT_NE(text.find("[w3] 1 worker"), std::string::npos) << text;
  EXPECT_EQ(stacks_exit_code(stacks, false), 0);
}

TEST(StacksTest, AllAlikeIsOneGroupAndNoOddOne) {
  FakeTransport transport;
  for (int i = 0; i < 4; ++i) transport.behaviour[i].out = answer("wait_for_peers", 100 + i);
  const std::vector<WorkerStacks> stacks = take(transport, 4);
  EXPECT_EQ(group_stacks(stacks).size(), 1u);
  EXPECT_TRUE(odd_ones_out(stacks, group_stacks(stacks)).empty());
}

TEST(StacksTest, ExitCodes) {
  FakeTransport transport;
  for (int i = 0; i < 3; ++i) transport.behaviour[i].out = answer("wait_for_peers");
  transport.behaviour[1].out = std::string(worker::kStacksHeader) + "\n{\"processes\": []}\n";
  EXPECT_EQ(stacks_exit_code(take(transport, 3), false), 1);  // w1 had no process of the run
  transport.behaviour[2].connect_error = TransportError{ErrorKind::connect, "connect refused"};
  const std::vector<WorkerStacks> stacks = take(transport, 3);
  EXPECT_EQ(stacks_exit_code(stacks, false), 255);
  EXPECT_EQ(stacks_exit_code(stacks, true), 130);
  EXPECT_EQ(group_stacks(stacks).size(), 2u);  // the unreachable w2 is in no group
}

TEST(StacksTest, JsonHasTheFramesPerWorkerAndReadsBack) {
  FakeTransport transport;
  for (int i = 0; i < 2; ++i) transport.behaviour[i].out = answer(i == 1 ? "write_shard" : "wait_for_peers");
  const std::vector<WorkerStacks> stacks = take(transport, 2);
  const nlohmann::json doc = stacks_to_json("run1", stacks);
  EXPECT_EQ(doc["run_id"], "run1");
  EXPECT_EQ(doc["workers"][1]["processes"][0]["threads"][0]["frames"][1]["function"], "write_shard");
  EXPECT_EQ(doc["workers"][1]["host"], "10.0.0.2");
  EXPECT_EQ(doc["groups"].size(), 2u);
  const std::vector<WorkerStacks> back = stacks_from_json(doc);
  EXPECT_EQ(stacks_to_json("run1", back), doc);
}

TEST(StacksTest, SavedCapturesReadBack) {
  const std::string dir = ::testing::TempDir() + "/stacks_saved_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  EXPECT_FALSE(has_capture(dir));
  FakeTransport transport;
  transport.behaviour[0].out = answer("write_shard");
  const std::string saved = save_capture(dir, "run1", "stalled", std::chrono::system_clock::now(), take(transport, 1));
  EXPECT_TRUE(std::filesystem::exists(saved + "/w0.txt"));
  EXPECT_TRUE(has_capture(dir));
  const std::vector<SavedCapture> captures = read_captures(dir);
  ASSERT_EQ(captures.size(), 1u);
  EXPECT_EQ(captures[0].reason, "stalled");
  EXPECT_EQ(captures[0].stacks[0].processes[0].threads[0].frames[1].function, "write_shard");
  std::filesystem::remove_all(dir);
}

// A run's processes: its id and its worker's log; none running (no run id):
// "-" for both, then the TPU's device globs, each one word.
TEST(StacksTest, TheCommandNamesTheRunOrTheDeviceGlobs) {
  const Worker w = pod(1).front();
  StacksRequest run;
  run.run_id = "r1";
  run.workers_log_dir = "/nfs/logs/r1";
  const std::string for_run = stacks_command(run, w).command_line;
  EXPECT_NE(for_run.find(" 'r1' '/nfs/logs/r1/worker0.log' 2000 0 3<<"), std::string::npos) << for_run;
  EXPECT_EQ(for_run.find("/dev/accel"), std::string::npos) << for_run;

  StacksRequest holders;
  holders.device_globs = {"/dev/accel*", "/dev/vfio/[0-9]*"};
  const std::string for_holders = stacks_command(holders, w).command_line;
  EXPECT_NE(for_holders.find(" - - 2000 0 '/dev/accel*' '/dev/vfio/[0-9]*' 3<<"), std::string::npos) << for_holders;
}

}  // namespace
}  // namespace tpurun
