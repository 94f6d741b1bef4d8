#include "tpurun/util/system.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "tpurun/util/subprocess.hpp"

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

namespace {

ProcessResult run_program(const std::vector<std::string>& argv, const std::string& stdin_data,
                          const std::optional<std::string>& cwd, const CancelToken& cancel) {
  CaptureSink capture;
  auto exit = run_subprocess(argv, stdin_data, cwd, capture, cancel);
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

}  // namespace

ProcessResult SystemProcessRunner::run(const std::vector<std::string>& argv, const std::string& stdin_data,
                                       const std::optional<std::string>& cwd) {
  return run_program(argv, stdin_data, cwd, CancelToken());
}

ProcessResult SystemProcessRunner::run_bounded(const std::vector<std::string>& argv, std::chrono::seconds limit,
                                               const CancelToken& cancel) {
  const CancelToken bounded = cancel.until(std::chrono::steady_clock::now() + limit);
  ProcessResult result = run_program(argv, "", std::nullopt, bounded);
  // A program that finished on its own, even as the limit or the cancel came,
  // keeps its result: only one we stopped is reported as stopped.
  if (result.exit_code == 0) return result;
  if (cancel.cancelled()) {
    result.exit_code = 130;
    result.err += "tpurun: interrupted\n";
  } else if (bounded.expired()) {
    result.exit_code = 124;
    result.timed_out = true;
    result.err += fmt::format("tpurun: gave up after {}s\n", limit.count());
  }
  return result;
}

}  // namespace tpurun
