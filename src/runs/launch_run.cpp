#include "tpurun/fanout.hpp"
#include "tpurun/launch.hpp"

namespace tpurun {

LaunchResult launch_on_workers(const LaunchSpec& spec, const std::vector<Worker>& workers, Transport& transport,
                               int fanout, const CancelToken& cancel) {
  FanoutPlan plan;
  plan.workers = workers;
  plan.fanout = fanout;
  plan.capture = true;
  plan.command_for = [&spec](const Worker& w) { return launch_command(spec, w); };
  LaunchResult result;
  result.outcomes = run_on_workers(plan, transport, {}, cancel);
  for (WorkerOutcome& launch : result.outcomes) {
    auto pid = launch.ok() ? parse_launched_pid(launch.out) : std::nullopt;
    if (pid) {
      result.pids[launch.worker.index] = *pid;
    } else if (launch.exit()) {  // the launcher ran but failed: its stderr says why
      std::string why = launch.err.empty() ? "the launcher failed" : launch.err;
      while (!why.empty() && why.back() == '\n') why.pop_back();
      launch.result = TransportError{ErrorKind::channel, "launch failed: " + why};
    }
  }
  return result;
}

}  // namespace tpurun
