#pragma once
#include <string>
#include <vector>

#include "tpurun/tpu/scan.hpp"

namespace tpurun {

// A job: the processes of one process group that hold the TPU, shown by its
// leader (the group leader when it holds a device, else the oldest holder).
struct HolderJob {
  ScannedProcess leader;
  int others = 0;  // more holders in the same group
};
std::vector<HolderJob> holder_jobs(const std::vector<ScannedProcess>& holders);

// Every process keeping the TPU busy: device holders, then the lock's holder.
std::vector<ScannedProcess> tpu_users(const LockScan& scan);

// Workers whose TPU another user holds, one line each: "w1 10.0.0.3 (bob pid
// 42)", or "(its TPU lock)" when only the lock says so. What a delete of the
// VM (a recreate, `down`) refuses on.
std::vector<std::string> other_users_on_tpu(const std::vector<WorkerScanResult>& scans);

// 0 when every worker is free; 255 when any could not be scanned; else 1.
int tpu_exit_code(const std::vector<TpuState>& states);

}  // namespace tpurun
