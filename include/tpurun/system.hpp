#pragma once
// Seams for the side effects of the local host: environment, local processes.
// Real implementations live in src/util/; tests substitute fakes.
#include <functional>
#include <optional>
#include <string>
#include <vector>

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
};

// Runs a local program to completion (gcloud, git). No shell is involved.
class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  virtual ProcessResult run(const std::vector<std::string>& argv,
                            const std::string& stdin_data = "",
                            const std::optional<std::string>& cwd = std::nullopt) = 0;
};

class SystemProcessRunner : public ProcessRunner {
 public:
  ProcessResult run(const std::vector<std::string>& argv, const std::string& stdin_data = "",
                    const std::optional<std::string>& cwd = std::nullopt) override;
};

// "~/x" -> "$HOME/x"; anything else unchanged.
std::string expand_home(const std::string& path, const Environment& env);

}  // namespace tpurun
