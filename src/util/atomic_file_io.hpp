#pragma once
// The system calls write_file_atomic makes, as a seam: unit tests make write,
// fsync or close fail (ENOSPC, EDQUOT, a short write) without a full disk.
#include <sys/types.h>
#include <unistd.h>

#include <functional>
#include <string>

namespace tpurun::detail {

struct FileIo {
  std::function<ssize_t(int, const void*, size_t)> write = ::write;
  std::function<int(int)> fsync = ::fsync;
  std::function<int(int)> close = ::close;
};

void write_file_atomic(const std::string& path, const std::string& text, const FileIo& io);

}  // namespace tpurun::detail
