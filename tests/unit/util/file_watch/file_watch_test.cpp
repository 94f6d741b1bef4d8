// FileWatch on a real temporary directory: inotify and polling report the
// files that were created, appended to or renamed over, and not the others.
#include "tpurun/util/file_watch/file_watch.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "fakes/temp_dir.hpp"
#include "util/file_watch/file_watch_inotify.hpp"

namespace tpurun {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Everything the watch reports until `id` shows up (or 10 s pass: a failure).
std::set<int> changes_until(FileWatch& watch, int id) {
  std::set<int> seen;
  const auto give_up = Clock::now() + 10s;
  while (!seen.count(id) && Clock::now() < give_up) {
    for (int changed : watch.wait(200ms)) seen.insert(changed);
  }
  return seen;
}

void append(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::app) << text; }

class FileWatchTest : public ::testing::TestWithParam<WatchMethod> {
 protected:
  std::unique_ptr<FileWatch> make() {
    return make_file_watch(dir_.path(), GetParam(), BackoffOptions{10ms, 50ms, 1.5});
  }
  testing::TempDir dir_;
};

TEST_P(FileWatchTest, ReportsTheFileThatWasAppendedToOnly) {
  dir_.write("worker0.log", "a\n");
  dir_.write("worker1.log", "b\n");
  auto watch = make();
  const int w0 = watch->add("worker0.log");
  const int w1 = watch->add("worker1.log");
  EXPECT_EQ(w0, 0);
  EXPECT_EQ(w1, 1);
  watch->wait(0ms);  // a polling watch reports what exists on its first look

  append(dir_.path() + "/worker1.log", "more\n");
  const std::set<int> seen = changes_until(*watch, w1);
  EXPECT_TRUE(seen.count(w1));
  EXPECT_FALSE(seen.count(w0));
}

TEST_P(FileWatchTest, ReportsAFileCreatedAfterTheWatchStarted) {
  auto watch = make();
  const int id = watch->add("worker3.log");
  watch->wait(0ms);
  dir_.write("worker3.log", "hello\n");
  EXPECT_TRUE(changes_until(*watch, id).count(id));
}

TEST_P(FileWatchTest, ReportsAFileReplacedByARename) {
  dir_.write("state.json", "{}");
  auto watch = make();
  const int id = watch->add("state.json");
  watch->wait(0ms);
  const std::string temp = dir_.write(".state.json.tmp", "{\"verdict\": \"succeeded\"}");
  ASSERT_EQ(std::rename(temp.c_str(), (dir_.path() + "/state.json").c_str()), 0);
  EXPECT_TRUE(changes_until(*watch, id).count(id));
}

TEST_P(FileWatchTest, IgnoresFilesItDoesNotWatch) {
  auto watch = make();
  const int log = watch->add("worker0.log");
  watch->wait(0ms);
  dir_.write("worker0.pid", "123\n");
  dir_.write("worker0.log", "line\n");
  const std::set<int> seen = changes_until(*watch, log);
  EXPECT_EQ(seen, std::set<int>{log});
}

INSTANTIATE_TEST_SUITE_P(Methods, FileWatchTest, ::testing::Values(WatchMethod::inotify, WatchMethod::poll),
                         [](const auto& info) { return info.param == WatchMethod::poll ? "poll" : "inotify"; });

// inotify listening to another directory hears nothing of `dir`, as on NFS
// for writes made by other clients: its sweeps find the writes, and after two
// such misses it polls.
TEST(InotifySweepTest, TurnsToPollingWhenInotifyMissesWrites) {
  testing::TempDir dir, elsewhere;
  auto watch = make_inotify_watch(dir.path(), elsewhere.path(), BackoffOptions{10ms, 50ms, 1.5}, 20ms);
  ASSERT_NE(watch, nullptr);
  const int id = watch->add("worker0.log");
  watch->wait(0ms);
  for (int write = 1; write <= 2; ++write) {
    EXPECT_EQ(watch->method(), "inotify");
    append(dir.path() + "/worker0.log", "line\n");
    EXPECT_TRUE(changes_until(*watch, id).count(id)) << "the sweep finds write " << write;
  }
  EXPECT_EQ(watch->method(), "poll (inotify saw nothing)");
  append(dir.path() + "/worker0.log", "more\n");
  EXPECT_TRUE(changes_until(*watch, id).count(id));
}

TEST(InotifySweepTest, KeepsInotifyWhileItHearsEveryWrite) {
  testing::TempDir dir;
  auto watch = make_inotify_watch(dir.path(), dir.path(), BackoffOptions{10ms, 50ms, 1.5}, 1ms);
  ASSERT_NE(watch, nullptr);
  const int id = watch->add("worker0.log");
  watch->wait(0ms);
  for (int write = 0; write < 5; ++write) {
    append(dir.path() + "/worker0.log", "line\n");
    EXPECT_TRUE(changes_until(*watch, id).count(id));
    watch->wait(5ms);  // past the next sweep
  }
  EXPECT_EQ(watch->method(), "inotify");
}

TEST(FileWatchChoiceTest, UsesInotifyOnALocalDirectoryAndPollingWhenAsked) {
  testing::TempDir dir;
  EXPECT_EQ(make_file_watch(dir.path(), WatchMethod::automatic)->method(), "inotify");
  EXPECT_EQ(make_file_watch(dir.path(), WatchMethod::poll)->method(), "poll");
}

TEST(FileWatchChoiceTest, NetworkFilesystemsAreThoseInotifyCannotHear) {
  EXPECT_TRUE(is_network_filesystem(0x6969));      // NFS
  EXPECT_TRUE(is_network_filesystem(0x65735546));  // FUSE (gcsfuse)
  EXPECT_TRUE(is_network_filesystem(static_cast<long>(0xFF534D42)));  // CIFS
  EXPECT_FALSE(is_network_filesystem(0xEF53));     // ext4
  EXPECT_FALSE(is_network_filesystem(0x01021994)); // tmpfs
  EXPECT_FALSE(on_network_filesystem(testing::TempDir().path()));
}

TEST(FileWatchChoiceTest, ParsesTheEnvironmentToggle) {
  WatchMethod method = WatchMethod::automatic;
  EXPECT_TRUE(parse_watch_method("poll", method));
  EXPECT_EQ(method, WatchMethod::poll);
  EXPECT_TRUE(parse_watch_method("inotify", method));
  EXPECT_EQ(method, WatchMethod::inotify);
  EXPECT_TRUE(parse_watch_method("auto", method));
  EXPECT_EQ(method, WatchMethod::automatic);
  EXPECT_FALSE(parse_watch_method("fast", method));
}

}  // namespace
}  // namespace tpurun
