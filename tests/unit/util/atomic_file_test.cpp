// write_file_atomic: the new text whole, or the old file untouched and no temp left.
#include "tpurun/util/atomic_file.hpp"

#include <gmock/gmock.h>

#include <cerrno>
#include <filesystem>

#include "fakes/temp_dir.hpp"
#include "util/atomic_file_io.hpp"

namespace tpurun {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override { path_ = temp_.write("run.json", "old\n"); }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& entry : fs::directory_iterator(temp_.path()))
      out.push_back(entry.path().filename());
    return out;
  }

  // Expects write_file_atomic with `io` to throw mentioning `text`, and to
  // leave the old file as the only one.
  void expect_failure_keeps_old(const detail::FileIo& io, const std::string& text) {
    try {
      detail::write_file_atomic(path_, "new text\n", io);
      ADD_FAILURE() << "no error";
    } catch (const std::runtime_error& e) {
      EXPECT_THAT(e.what(), HasSubstr(path_));
      EXPECT_THAT(e.what(), HasSubstr(text));
    }
    EXPECT_EQ(read_small_file(path_), "old\n");
    EXPECT_THAT(names(), ::testing::ElementsAre("run.json"));
  }

  testing::TempDir temp_;
  std::string path_;
};

TEST_F(AtomicFileTest, ReplacesTheFileAndLeavesNoTemp) {
  write_file_atomic(path_, "new\n");
  EXPECT_EQ(read_small_file(path_), "new\n");
  EXPECT_THAT(names(), ::testing::ElementsAre("run.json"));
}

TEST_F(AtomicFileTest, AFailedWriteKeepsTheOldFile) {
  detail::FileIo io;
  io.write = [](int, const void*, size_t) -> ssize_t { return errno = ENOSPC, -1; };
  expect_failure_keeps_old(io, "No space left on device");
}

TEST_F(AtomicFileTest, AShortWriteIsNeverRenamedIntoPlace) {
  // A write that stores 3 bytes, then nothing more.
  detail::FileIo io;
  int calls = 0;
  io.write = [&calls](int fd, const void* data, size_t) -> ssize_t {
    return ++calls == 1 ? ::write(fd, data, 3) : 0;
  };
  expect_failure_keeps_old(io, "No space left on device");
}

TEST_F(AtomicFileTest, AnErrorOnlyAtCloseKeepsTheOldFile) {
  // NFS reports a full quota at close().
  detail::FileIo io;
  io.close = [](int fd) {
    ::close(fd);
    return errno = EDQUOT, -1;
  };
  expect_failure_keeps_old(io, "quota");
}

TEST_F(AtomicFileTest, AFailedFsyncKeepsTheOldFile) {
  detail::FileIo io;
  io.fsync = [](int) { return errno = EIO, -1; };
  expect_failure_keeps_old(io, "Input/output error");
}

TEST_F(AtomicFileTest, AMissingDirectoryIsAnErrorNamingThePath) {
  EXPECT_THROW(write_file_atomic(temp_.path() + "/no/such/run.json", "x"), std::runtime_error);
}

}  // namespace
}  // namespace tpurun
