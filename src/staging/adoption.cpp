#include "staging/adoption.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "staging/fs_util.hpp"

namespace tpurun::staging {
namespace {

constexpr std::string_view kVersion = "tpurun-adopt 1";

void put(std::string& out, std::string_view field) {
  out += field;
  out += '\0';
}

// The next NUL-terminated field, or nothing at the end / without a NUL.
std::optional<std::string_view> take(std::string_view& text) {
  const std::size_t nul = text.find('\0');
  if (nul == std::string_view::npos) return std::nullopt;
  std::string_view field = text.substr(0, nul);
  text.remove_prefix(nul + 1);
  return field;
}

bool plain_relative(std::string_view path) {
  if (path.empty() || path.front() == '/') return false;
  for (std::size_t start = 0; start <= path.size();) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

int write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

}  // namespace

std::string encode_pending_list(const PendingList& list) {
  std::string out;
  out.reserve(128 + list.files.size() * 80);
  put(out, kVersion);
  put(out, list.staging_root);
  put(out, list.user);
  put(out, list.snapshot);
  for (const PendingFile& file : list.files) {
    out += file.hash.hex();
    put(out, file.executable ? "x" : "-");
    put(out, file.path);
  }
  return out;
}

std::optional<PendingList> decode_pending_list(std::string_view text) {
  PendingList list;
  auto version = take(text);
  auto root = take(text);
  auto user = take(text);
  auto snapshot = take(text);
  if (!version || *version != kVersion || !root || !user || !snapshot) return std::nullopt;
  list.staging_root = *root;
  list.user = *user;
  list.snapshot = *snapshot;
  while (!text.empty()) {
    auto head = take(text);
    auto path = take(text);
    if (!head || !path || head->size() != 33 || ((*head)[32] != 'x' && (*head)[32] != '-')) return std::nullopt;
    auto hash = parse_content_hash(head->substr(0, 32));
    if (!hash || !plain_relative(*path)) return std::nullopt;
    list.files.push_back(PendingFile{std::string(*path), *hash, (*head)[32] == 'x'});
  }
  return list;
}

// Not fsync'd: a list lost in a crash (or cut short, which decode refuses)
// only leaves copies unshared.
std::string write_pending_list(const std::string& dir, const PendingList& list) {
  std::error_code ec;  // the cache dir itself may not exist yet (a first stage)
  std::filesystem::create_directories(std::filesystem::path(dir).parent_path(), ec);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return fmt::format("cannot create {}: {}", dir, errno_text(errno));
  UniqueFd dir_fd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir_fd) return fmt::format("cannot open {}: {}", dir, errno_text(errno));
  const std::string name = list.snapshot + ".list";
  const std::string temp = fmt::format(".{}.tmp-{}", name, ::getpid());
  ::unlinkat(dir_fd.get(), temp.c_str(), 0);
  UniqueFd fd(::openat(dir_fd.get(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return fmt::format("cannot create {}/{}: {}", dir, temp, errno_text(errno));
  int err = write_all(fd.get(), encode_pending_list(list));
  if (::close(fd.release()) != 0 && err == 0) err = errno;
  if (err == 0 && ::renameat(dir_fd.get(), temp.c_str(), dir_fd.get(), name.c_str()) != 0) err = errno;
  if (err == 0) return "";
  ::unlinkat(dir_fd.get(), temp.c_str(), 0);
  return fmt::format("cannot write {}/{}: {}", dir, name, errno_text(err));
}

}  // namespace tpurun::staging
