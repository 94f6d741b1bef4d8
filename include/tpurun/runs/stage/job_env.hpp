#pragma once
// The job's environment from stage's --env, --env-file and --env-from. The
// values go to the workers (on stdin, never in an argv) and nowhere else:
// run.json records the names only. TPURUN_* names belong to tpurun (kill
// --run finds a job by its TPURUN_RUN_ID) and are refused.
#include <map>
#include <string>
#include <vector>

#include "tpurun/util/system.hpp"

namespace tpurun {

struct JobEnvOptions {
  std::vector<std::string> pairs;  // --env KEY=VALUE
  std::vector<std::string> files;  // --env-file FILE: KEY=VALUE lines, # comments, blank lines
  std::vector<std::string> from;   // --env-from NAME: the local variable's value
};

// Files first, then --env-from, then --env: a later source overrides an
// earlier one. Throws UsageError naming the flag (and file:line) at fault.
std::map<std::string, std::string> resolve_job_env(const JobEnvOptions& options, const Environment& env);

// The names alone, for run.json and the dry run.
std::vector<std::string> env_names(const std::map<std::string, std::string>& env);

}  // namespace tpurun
