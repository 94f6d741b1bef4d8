#include "tpurun/system.hpp"

#include <cstdlib>

#include "tpurun/subprocess.hpp"

namespace tpurun {

std::optional<std::string> SystemEnvironment::get(const std::string& name) const {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::string expand_home(const std::string& path, const Environment& env) {
  if (path != "~" && path.rfind("~/", 0) != 0) return path;  // "~user/x" is left alone
  auto home = env.get("HOME");
  if (!home || home->empty()) return path;
  return *home + path.substr(1);
}

ProcessResult SystemProcessRunner::run(const std::vector<std::string>& argv,
                                       const std::string& stdin_data,
                                       const std::optional<std::string>& cwd) {
  CaptureSink capture;
  auto exit = run_subprocess(argv, stdin_data, cwd, capture, CancelToken());
  ProcessResult result;
  if (!exit) {
    result.exit_code = 127;
    result.err = "tpurun: " + exit.error() + "\n";
    return result;
  }
  result.exit_code = exit->code;
  result.out = std::move(capture.out);
  result.err = std::move(capture.err);
  return result;
}

}  // namespace tpurun
