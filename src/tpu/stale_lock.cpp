// Removing what a dead job left behind: /tmp/libtpu_lockfile (which blocks
// every user but its owner) and /tmp/tpu_logs (harmless noise for others).
#include <fmt/format.h>

#include <sstream>

#include "tpu/script_command.hpp"
#include "tpurun/tpu/kill.hpp"
#include "tpurun/worker/programs.hpp"
#include "tpurun/worker/tokens.hpp"

namespace tpurun {

Result<CleanupResult, TransportError> run_cleanup(Connection& connection, const CleanupPlan& plan,
                                                  const std::vector<std::string>& device_globs,
                                                  const CancelToken& cancel) {
  CleanupResult result;
  if (plan.empty()) return result;
  std::vector<std::string> args{plan.remove_lockfile ? std::to_string(plan.lock_inode) : "-",
                                plan.remove_tpu_logs ? "1" : "0"};
  args.insert(args.end(), device_globs.begin(), device_globs.end());
  const auto privilege = plan.needs_root ? tpu::Privilege::root : tpu::Privilege::login_user;
  RemoteCommand command{tpu::script_command_line(privilege, args), std::string(worker::kCleanSh)};
  CaptureSink sink;
  auto exit = connection.run(command, sink, cancel);
  if (!exit) return unexpected(exit.error());

  std::istringstream lines(sink.out);
  std::string line;
  bool header = false, end = false;
  while (std::getline(lines, line)) {
    if (line == worker::kCleanHeader) {
      header = true;
      continue;
    }
    if (!header) continue;
    if (line == "end") {
      end = true;
      break;
    }
    std::istringstream fields(line);
    std::string kind, what, reason;
    fields >> kind >> what >> reason;
    if (kind == "removed") {
      result.removed.push_back(what);
    } else if (kind == "failed") {
      result.kept.push_back(what + ": rm failed");
    } else if (kind == "kept") {
      result.kept.push_back(what + ": " + (reason == "replaced" ? "a new job created it again" : reason));
    } else if (kind == "busy") {
      result.kept.push_back(fmt::format("{}: process {} holds a TPU device now", kLibtpuLockfile, what));
    }
  }
  if (!end) {
    std::string err = sink.err.substr(0, sink.err.find('\n'));
    if (plan.needs_root && (err.find("sudo") != std::string::npos || !header)) {
      result.error = "removing another user's file needs passwordless sudo (sudo -n failed" +
                     (err.empty() ? std::string(")") : ": " + err + ")");
    } else {
      result.error = fmt::format("the cleanup did not finish (exit code {}){}", exit->code,
                                 err.empty() ? "" : ": " + err);
    }
  }
  return result;
}

Result<StaleLockCleanup, TransportError> clean_stale_lock(Connection& connection, const LockScan& scan,
                                                          const std::vector<std::string>& device_globs,
                                                          const CancelToken& cancel) {
  StaleLockCleanup cleanup;
  cleanup.state = state_from_scan(scan);
  const CleanupPlan plan = plan_cleanup(scan);
  if (plan.empty()) {
    if (!plan.blocked.empty())
      cleanup.result.kept.push_back(std::string(kLibtpuLockfile) + ": " + plan.blocked);
    return cleanup;
  }
  auto result = run_cleanup(connection, plan, device_globs, cancel);
  if (!result) return unexpected(result.error());
  cleanup.result = std::move(*result);
  cleanup.state = state_from_scan(after_cleanup(scan, cleanup.result));
  return cleanup;
}

}  // namespace tpurun
