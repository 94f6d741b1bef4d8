#pragma once
// A scratch project, staging root and stat cache dir per test, with helpers
// to write files, run git and look at what a snapshot holds.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "staging/fs_util.hpp"
#include "tpurun/staging/snapshot.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun::testing_staging {

namespace fs = std::filesystem;

class StagingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/tpurun-staging-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    scratch_ = pattern;
    project_ = scratch_ + "/project";
    staging_ = scratch_ + "/staging";
    cache_ = scratch_ + "/cache";
    fs::create_directories(project_);
    fs::create_directories(staging_);
  }

  void TearDown() override {
    // Snapshots are read-only: remove_tree_at makes directories writable first.
    staging::remove_tree_at(AT_FDCWD, scratch_);
  }

  // Writes project/<path> (making parents), with an mtime an hour ago so the
  // stat cache trusts it at once (fresher files count as "racy").
  void write(const std::string& path, const std::string& content, mode_t mode = 0644) {
    fs::path full = fs::path(project_) / path;
    fs::create_directories(full.parent_path());
    std::ofstream(full, std::ios::binary | std::ios::trunc) << content;
    ::chmod(full.c_str(), mode);
    backdate(full.string());
  }

  static void backdate(const std::string& path, std::chrono::seconds age = std::chrono::hours(1)) {
    timespec times[2];
    ::clock_gettime(CLOCK_REALTIME, &times[0]);
    times[0].tv_sec -= age.count();
    times[1] = times[0];
    ::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW);
  }

  void git(std::vector<std::string> args) {
    std::vector<std::string> argv = {"git",
                                     "-C",
                                     project_,
                                     "-c",
                                     "user.name=t",
                                     "-c",
                                     "user.email=t@example.com",
                                     "-c",
                                     "init.defaultBranch=main"};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessResult r = processes_.run(argv);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  void git_init_and_commit_all() {
    git({"init", "-q"});
    git({"add", "-A"});
    git({"commit", "-qm", "initial"});
  }

  SnapshotRequest request() const {
    SnapshotRequest r;
    r.source_dir = project_;
    r.staging_root = staging_;
    r.user = "alice";
    r.stat_cache_dir = cache_;
    r.now = std::chrono::system_clock::now();
    return r;
  }

  Result<StagedSnapshot, StageError> snapshot(const SnapshotRequest& r) {
    return create_snapshot(r, processes_, CancelToken());
  }
  StagedSnapshot snapshot_ok() {
    auto staged = snapshot(request());
    EXPECT_TRUE(staged.ok()) << (staged.ok() ? "" : staged.error().message);
    return staged.ok() ? *staged : StagedSnapshot{};
  }

  // Every file and symlink of a snapshot, relative to it.
  static std::vector<std::string> paths_in(const std::string& dir) {
    std::vector<std::string> paths;
    for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator();
         ++it) {
      if (!it->is_directory() || it->is_symlink())
        paths.push_back(it->path().lexically_relative(dir).string());
    }
    std::sort(paths.begin(), paths.end());
    return paths;
  }

  static std::string read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  static struct stat lstat_of(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st;
  }

  // Names in the user's staging dir (snapshots, and anything left behind).
  std::vector<std::string> user_dir_entries(const std::string& user = "alice") const {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(staging_ + "/" + user, ec)) {
      const std::string name = entry.path().filename().string();
      if (!name.starts_with(".tree-")) names.push_back(name);  // the index of snapshots by tree
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string scratch_, project_, staging_, cache_;
  SystemProcessRunner processes_;
};

}  // namespace tpurun::testing_staging
