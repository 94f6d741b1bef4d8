#include "tpurun/runs/stage/job_env.hpp"

#include <fmt/format.h>

#include <cctype>
#include <fstream>

#include "tpurun/pod/worker_select.hpp"

namespace tpurun {
namespace {

// "" when `name` may be set for a job, else why not.
std::string bad_name(const std::string& name) {
  if (name.empty()) return "the variable name is empty";
  if (std::isdigit(static_cast<unsigned char>(name[0])))
    return fmt::format("'{}' is not a valid variable name (it starts with a digit)", name);
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      return fmt::format("'{}' is not a valid variable name (letters, digits and _ only)", name);
  }
  if (name.rfind("TPURUN_", 0) == 0) {
    return fmt::format("{} is tpurun's own variable: the job gets TPURUN_RUN_ID, TPURUN_LOG_DIR, TPURUN_WORKER and "
                       "TPURUN_NUM_WORKERS from tpurun, and kill --run finds a job by its TPURUN_RUN_ID; "
                       "pick another name",
                       name);
  }
  return "";
}

// KEY=VALUE into env; `where` names the flag or file:line for errors.
void add_pair(const std::string& pair, const std::string& where, std::map<std::string, std::string>& env) {
  const size_t eq = pair.find('=');
  if (eq == std::string::npos) throw UsageError(fmt::format("{}: expected KEY=VALUE", where));
  const std::string key = pair.substr(0, eq);
  if (auto why = bad_name(key); !why.empty()) throw UsageError(fmt::format("{}: {}", where, why));
  env[key] = pair.substr(eq + 1);
}

void read_env_file(const std::string& path, std::map<std::string, std::string>& env) {
  std::ifstream in(path);
  if (!in) throw UsageError(fmt::format("--env-file {}: cannot read it", path));
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    add_pair(line.substr(start), fmt::format("--env-file {}:{}", path, number), env);
  }
  if (in.bad()) throw UsageError(fmt::format("--env-file {}: read error", path));
}

}  // namespace

std::map<std::string, std::string> resolve_job_env(const JobEnvOptions& options, const Environment& env) {
  std::map<std::string, std::string> out;
  for (const std::string& file : options.files) read_env_file(file, out);
  for (const std::string& name : options.from) {
    if (auto why = bad_name(name); !why.empty()) throw UsageError(fmt::format("--env-from {}: {}", name, why));
    auto value = env.get(name);
    if (!value) throw UsageError(fmt::format("--env-from {}: {} is not set here; export it first", name, name));
    out[name] = *value;
  }
  // The value is never echoed: it may be a secret.
  for (const std::string& pair : options.pairs) {
    add_pair(pair, fmt::format("--env {}", pair.substr(0, pair.find('='))), out);
  }
  return out;
}

std::vector<std::string> env_names(const std::map<std::string, std::string>& env) {
  std::vector<std::string> names;
  for (const auto& [name, value] : env) names.push_back(name);
  return names;
}

}  // namespace tpurun
