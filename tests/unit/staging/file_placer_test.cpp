// FilePlacer: a file that changes between its listing and its read is staged
// as read, at most the listed size, and said to have changed (issue 37,
// finding 10: a growing file reached workers as different bytes under one
// object name, and the dev VM's copy grew past the stage's size limit).
#include <fcntl.h>
#include <sys/stat.h>

#include <fstream>

#include "staging/content_hash.hpp"
#include "staging/file_placer.hpp"
#include "staging/object_store.hpp"
#include "staging_fixture.hpp"
#include "tpurun/util/safe_dir.hpp"

namespace tpurun::testing_staging {
namespace {

class FilePlacerTest : public StagingTest {
 protected:
  // Lists project/<path> now: its stamp as the stage's listing takes it.
  staging::SourceFile listed(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::stat((project_ + "/" + path).c_str(), &st), 0);
    staging::SourceFile f;
    f.path = path;
    f.stamp.size = static_cast<std::uint64_t>(st.st_size);
    f.stamp.mtime_ns = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    f.stamp.ctime_ns = st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
    f.stamp.inode = st.st_ino;
    f.stamp.mode = st.st_mode;
    return f;
  }

  // Places f into a fresh tree; returns what was placed and the tree's copy.
  std::pair<staging::Placed, std::string> place(const staging::SourceFile& f) {
    auto user = open_own_dir(SafeDir{UniqueFd(::open(staging_.c_str(), O_RDONLY | O_DIRECTORY)), staging_},
                             "alice", Create::if_missing, 0700);
    EXPECT_TRUE(bool(user));
    auto store = staging::ObjectStore::open(*user);
    EXPECT_TRUE(bool(store));
    fs::create_directories(staging_ + "/tree");
    UniqueFd source(::open(project_.c_str(), O_RDONLY | O_DIRECTORY));
    UniqueFd tree(::open((staging_ + "/tree").c_str(), O_RDONLY | O_DIRECTORY));
    staging::FilePlacer placer(source.get(), tree.get(), *store);
    auto placed = placer.place(f, std::nullopt);
    EXPECT_TRUE(bool(placed));
    std::ifstream in(staging_ + "/tree/" + f.path, std::ios::binary);
    return {placed ? *placed : staging::Placed{}, std::string(std::istreambuf_iterator<char>(in), {})};
  }
};

TEST_F(FilePlacerTest, AFileAsListedIsPlacedWhole) {
  write("a.txt", "hello\n");
  auto [placed, copy] = place(listed("a.txt"));
  EXPECT_EQ(copy, "hello\n");
  EXPECT_EQ(placed.bytes, 6u);
  EXPECT_FALSE(placed.changed);
  EXPECT_EQ(placed.hash, staging::hash_bytes("hello\n"));
}

TEST_F(FilePlacerTest, AFileThatGrewSinceItsListingIsPlacedAtItsListedSize) {
  write("log.txt", "line 1\n");
  const staging::SourceFile f = listed("log.txt");
  std::ofstream(project_ + "/log.txt", std::ios::app) << std::string(3 << 20, 'x');  // 3 MiB more
  auto [placed, copy] = place(f);
  EXPECT_EQ(copy, "line 1\n");
  EXPECT_EQ(placed.bytes, 7u);
  EXPECT_TRUE(placed.changed);
  EXPECT_EQ(placed.hash, staging::hash_bytes("line 1\n"));  // the hash is of the bytes placed
}

TEST_F(FilePlacerTest, AFileThatShrankSinceItsListingIsPlacedAsRead) {
  write("data.bin", std::string(5000, 'a'));
  const staging::SourceFile f = listed("data.bin");
  std::ofstream(project_ + "/data.bin", std::ios::binary | std::ios::trunc) << "short";
  auto [placed, copy] = place(f);
  EXPECT_EQ(copy, "short");
  EXPECT_EQ(placed.bytes, 5u);
  EXPECT_TRUE(placed.changed);
  EXPECT_EQ(placed.hash, staging::hash_bytes("short"));
}

TEST_F(FilePlacerTest, AFileRewrittenAtItsSizeIsSaidToHaveChanged) {
  write("a.py", "print(1)\n");
  const staging::SourceFile f = listed("a.py");
  std::ofstream(project_ + "/a.py", std::ios::binary | std::ios::trunc) << "print(2)\n";  // mtime now, not an hour ago
  auto [placed, copy] = place(f);
  EXPECT_EQ(copy, "print(2)\n");
  EXPECT_TRUE(placed.changed);
  EXPECT_EQ(placed.hash, staging::hash_bytes("print(2)\n"));
}

}  // namespace
}  // namespace tpurun::testing_staging
