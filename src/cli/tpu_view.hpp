#pragma once
// How status and kill show TPU holders: one-line descriptions people can act
// on ("bob 4242 2h13m python3 train.py"), the JSON forms and the exit code.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tpurun/tpu_scan.hpp"

namespace tpurun::cli {

// At most `width` characters (UTF-8 code points), "..." marking a cut.
std::string truncate_text(std::string_view text, size_t width);

// For summaries: absolute paths shortened to their last part, so that
// "python3 /home/bob/proj/train.py --x" reads "python3 train.py --x".
std::string short_command(std::string_view command);

// A job: the processes of one process group that hold the TPU, shown by its
// leader (the group leader when it holds a device, else the oldest holder).
struct HolderJob {
  ScannedProcess leader;
  int others = 0;  // more holders in the same group
};
std::vector<HolderJob> holder_jobs(const std::vector<ScannedProcess>& holders);

// Every process keeping the TPU busy: device holders, then the lock's holder.
std::vector<ScannedProcess> tpu_users(const LockScan& scan);

// "bob  4242  2h13m  python3 train.py --forever  (+2 in its group)"
std::string describe_job(const HolderJob& job, size_t command_width);

// "free" in green, "busy-other" in red, ... when color is on.
std::string paint_state(TpuState state, bool color, size_t pad = 0);

nlohmann::json process_to_json(const ScannedProcess& p);
// The per-worker record of `tpurun status --json`.
nlohmann::json scan_result_to_json(const WorkerScanResult& result);

// 0 when every worker is free; 255 when any could not be scanned; else 1.
int tpu_exit_code(const std::vector<TpuState>& states);

}  // namespace tpurun::cli
