// The scan that status, kill and stage's preflight share: worker/scan.sh
// (docs/protocols.md), run as root where passwordless sudo allows.
#include "tpu/script_command.hpp"
#include "tpurun/tpu/scan.hpp"
#include "tpurun/worker/programs.hpp"

namespace tpurun {

RemoteCommand build_scan_command(const ScanRequest& request) {
  std::vector<std::string> args{request.process_table ? "kill" : "status"};
  args.insert(args.end(), request.device_globs.begin(), request.device_globs.end());
  return {tpu::script_command_line(tpu::Privilege::prefer_root, args), std::string(worker::kScanSh)};
}

}  // namespace tpurun
