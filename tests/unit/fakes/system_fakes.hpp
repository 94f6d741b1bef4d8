#pragma once
// Test doubles for the seams in tpurun/system.hpp.
#include <map>
#include <string>
#include <vector>

#include "tpurun/util/system.hpp"

namespace tpurun::testing {

class FakeEnvironment : public Environment {
 public:
  FakeEnvironment() = default;
  explicit FakeEnvironment(std::map<std::string, std::string> vars) : vars_(std::move(vars)) {}
  std::optional<std::string> get(const std::string& name) const override {
    auto it = vars_.find(name);
    if (it == vars_.end()) return std::nullopt;
    return it->second;
  }
  void set(const std::string& name, const std::string& value) { vars_[name] = value; }
  void unset(const std::string& name) { vars_.erase(name); }

 private:
  std::map<std::string, std::string> vars_;
};

// Records every command it was asked to run and answers with `next`.
class FakeProcessRunner : public ProcessRunner {
 public:
  struct Call {
    std::vector<std::string> argv;
    std::string stdin_data;
    std::optional<std::string> cwd;
  };

  ProcessResult run(const std::vector<std::string>& argv, const std::string& stdin_data,
                    const std::optional<std::string>& cwd) override {
    calls.push_back({argv, stdin_data, cwd});
    return next;
  }

  std::vector<Call> calls;
  ProcessResult next{0, "", ""};
};

}  // namespace tpurun::testing
