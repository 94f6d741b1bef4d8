#pragma once
// Hands out the parent directory of paths visited in sorted order, keeping the
// chain of open directories: each directory is opened once, one component at
// a time, never through a symlink. To `build` a tree, missing directories are
// made (0755) on the way (cursors of several threads may make the same ones);
// a tree being built, or one only linked from, has its directories opened
// O_PATH.
#include <string>
#include <string_view>
#include <vector>

#include "staging/fs_util.hpp"

namespace tpurun::staging {

class DirCursor {
 public:
  enum class Use { read, build, link_from };
  DirCursor(int root_fd, Use use) : root_fd_(root_fd), use_(use) {}
  DirCursor(const DirCursor&) = delete;
  DirCursor& operator=(const DirCursor&) = delete;

  // The fd of `path`'s directory, with the last component in *name; -1 and
  // errno on failure (ENOENT, ENOTDIR, ELOOP when a parent is not a real dir).
  int parent_of(std::string_view path, std::string_view* name);

 private:
  int open_at(int parent, const char* name) const;
  struct Level {
    std::string path;
    UniqueFd fd;
  };
  int root_fd_;
  Use use_;
  std::vector<Level> stack_;
};

}  // namespace tpurun::staging
