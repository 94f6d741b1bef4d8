#pragma once
// Seams for the side effects of the local host: environment, local processes.
// Real implementations live in src/util/; tests substitute fakes.
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/util/cancel.hpp"

namespace tpurun {

class Environment {
 public:
  virtual ~Environment() = default;
  virtual std::optional<std::string> get(const std::string& name) const = 0;
};

// Reads the real process environment.
class SystemEnvironment : public Environment {
 public:
  std::optional<std::string> get(const std::string& name) const override;
};

struct ProcessResult {
  int exit_code = -1;  // 127 when the program could not be started
  std::string out;
  std::string err;
  bool timed_out = false;  // run_bounded gave up on it (exit_code 124)
};

// Runs a local program to completion (gcloud, git). No shell is involved.
class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  virtual ProcessResult run(const std::vector<std::string>& argv,
                            const std::string& stdin_data = "",
                            const std::optional<std::string>& cwd = std::nullopt) = 0;
  // The same, for work nobody watches (the run's watcher): given up after
  // `limit` (timed_out, exit code 124) or when `cancel` fires (exit code 130),
  // the program's process group stopped. Fakes that never hang need not
  // override it.
  virtual ProcessResult run_bounded(const std::vector<std::string>& argv, std::chrono::seconds limit,
                                    const CancelToken& cancel) {
    (void)limit;
    (void)cancel;
    return run(argv);
  }
};

class SystemProcessRunner : public ProcessRunner {
 public:
  ProcessResult run(const std::vector<std::string>& argv, const std::string& stdin_data = "",
                    const std::optional<std::string>& cwd = std::nullopt) override;
  ProcessResult run_bounded(const std::vector<std::string>& argv, std::chrono::seconds limit,
                            const CancelToken& cancel) override;
};

// "~/x" -> "$HOME/x"; anything else unchanged.
std::string expand_home(const std::string& path, const Environment& env);

}  // namespace tpurun
