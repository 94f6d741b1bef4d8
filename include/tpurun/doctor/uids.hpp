#pragma once
// The same user with other numbers on other VMs: how to tell, and the fixes.
#include <string>
#include <vector>

#include "tpurun/tpu/scan.hpp"

namespace tpurun {

// The two ways out, as commands: OS Login, or the same numbers everywhere.
std::string uid_fixes(const std::string& user, int uid, int gid);

// stage's refusal for workers where `user` has other numbers than `uid`/`gid`
// on this host ("" when every scan agrees); scans without a caller are skipped.
std::string uid_mismatch(const std::string& user, int uid, int gid, const std::vector<WorkerScanResult>& scans);

}  // namespace tpurun
