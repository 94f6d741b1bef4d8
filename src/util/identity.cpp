#include "tpurun/util/identity.hpp"

#include <pwd.h>
#include <unistd.h>

#include <filesystem>
#include <random>

namespace tpurun {

std::string local_user(const Environment& env) {
  if (auto user = env.get("USER"); user && !user->empty()) return *user;
  if (const passwd* pw = ::getpwuid(::getuid())) return pw->pw_name;
  return std::to_string(::getuid());
}

std::string cache_dir(const Environment& env) {
  if (auto xdg = env.get("XDG_CACHE_HOME"); xdg && !xdg->empty()) return *xdg + "/tpurun";
  return expand_home("~/.cache/tpurun", env);
}

// Only an absolute $XDG_STATE_HOME counts, as the XDG spec says.
std::string state_dir(const Environment& env) {
  auto xdg = env.get("XDG_STATE_HOME");
  if (xdg && !xdg->empty() && xdg->front() == '/') return *xdg + "/tpurun";
  return expand_home("~/.local/state/tpurun", env);
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

std::string random_suffix() {
  static const char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device device;
  std::uniform_int_distribution<int> pick(0, 35);
  std::string s;
  for (int i = 0; i < 6; ++i) s.push_back(kAlphabet[pick(device)]);
  return s;
}

std::string project_name(const std::string& directory) {
  std::filesystem::path p = std::filesystem::weakly_canonical(directory);
  std::string name = p.filename().string();
  return name.empty() ? "project" : name;
}

}  // namespace tpurun
