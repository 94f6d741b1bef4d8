#pragma once
// The --env values of a run, kept on the dev VM only so that its watcher can
// relaunch the job: a 0600 file in a 0700 directory of the user's own cache,
// never on the shared mount, never in an argv; removed when the run ends.
#include <map>
#include <optional>
#include <string>

#include "tpurun/util/system.hpp"

namespace tpurun {

// Where a run's --env values are kept on this host for its watcher.
std::string kept_env_dir(const Environment& env);

// Throws std::runtime_error naming the path when it cannot be written safely.
void save_kept_env(const std::string& dir, const std::string& run_id, const std::map<std::string, std::string>& env);
std::optional<std::map<std::string, std::string>> load_kept_env(const std::string& dir, const std::string& run_id);
void forget_kept_env(const std::string& dir, const std::string& run_id);

}  // namespace tpurun
