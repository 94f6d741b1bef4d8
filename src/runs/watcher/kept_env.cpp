#include "runs/watcher/kept_env.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tpurun/util/atomic_file.hpp"
#include "tpurun/util/identity.hpp"

namespace tpurun {
namespace {

std::string env_path(const std::string& dir, const std::string& run_id) { return dir + "/" + run_id + ".env.json"; }

}  // namespace

std::string kept_env_dir(const Environment& env) { return cache_dir(env) + "/run-env"; }

void save_kept_env(const std::string& dir, const std::string& run_id, const std::map<std::string, std::string>& env) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  struct stat st{};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
    throw std::runtime_error(fmt::format("{} is not a directory of yours: cannot keep the run's --env values", dir));
  }
  ::chmod(dir.c_str(), 0700);
  const std::string path = env_path(dir, run_id);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error(fmt::format("cannot create {}: {}", path, std::strerror(errno)));
  const std::string text = nlohmann::json(env).dump();
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = ::fsync(fd) == 0 && ok;
  ok = ::close(fd) == 0 && ok;
  if (!ok) {
    ::unlink(path.c_str());
    throw std::runtime_error(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  }
}

std::optional<std::map<std::string, std::string>> load_kept_env(const std::string& dir, const std::string& run_id) {
  std::string text = read_small_file(env_path(dir, run_id));
  if (text.empty()) return std::nullopt;
  try {
    return nlohmann::json::parse(text).get<std::map<std::string, std::string>>();
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

void forget_kept_env(const std::string& dir, const std::string& run_id) { ::unlink(env_path(dir, run_id).c_str()); }

}  // namespace tpurun
