#pragma once
// The --env values of a run, kept on the dev VM only so that its supervisor can
// relaunch the job: a 0600 file in a 0700 directory of the user's own cache,
// never on the shared mount, never in an argv; removed when the run ends.
#include <map>
#include <optional>
#include <string>

namespace tpurun {

// Throws std::runtime_error naming the path when it cannot be written safely.
void save_run_env(const std::string& dir, const std::string& run_id, const std::map<std::string, std::string>& env);
std::optional<std::map<std::string, std::string>> load_run_env(const std::string& dir, const std::string& run_id);
void forget_run_env(const std::string& dir, const std::string& run_id);

}  // namespace tpurun
