// The kill sequence on one connection per worker: scan, plan, signal (TERM,
// grace, KILL: all waited for on the worker, in one round trip), scan again,
// clean up a lockfile nobody holds, and report the verdict that results.
#include <fmt/format.h>

#include <sstream>

#include "tpu/script_command.hpp"
#include "tpurun/fanout/fanout.hpp"
#include "tpurun/tpu/kill.hpp"
#include "tpurun/worker/programs.hpp"
#include "tpurun/worker/tokens.hpp"

namespace tpurun {

RemoteCommand build_kill_command(const KillPlan& plan, int grace_ms) {
  // --force is audited on the worker too (syslog, as root) before any signal.
  std::vector<std::string> args{std::to_string(std::max(0, grace_ms) / 10), plan.needs_root ? "1" : "0"};
  for (int g : plan.groups) args.push_back(fmt::format("g:{}", g));
  // The start time makes the pid name one process: a pid reused since the
  // scan has another one, and the worker refuses to signal it.
  for (const Victim& v : plan.victims) {
    args.push_back(
        fmt::format("{}:{}:{}:{}", v.process.pid, v.process.uid, v.process.pgid, v.process.start_time));
  }
  // Only --force signals with root; otherwise the kernel itself guarantees
  // that no other user's process can be hit.
  const auto privilege = plan.needs_root ? tpu::Privilege::root : tpu::Privilege::login_user;
  return {tpu::script_command_line(privilege, args), std::string(worker::kKillSh)};
}

namespace {

// Reads kill.sh's answer into the report. False when the script did not finish.
bool read_kill_output(const std::string& out, WorkerKill& report) {
  std::istringstream lines(out);
  std::string line;
  bool header = false;
  while (std::getline(lines, line)) {
    if (line == worker::kKillHeader) {
      header = true;
      continue;
    }
    if (!header) continue;
    if (line == "end") return true;
    std::istringstream fields(line);
    std::string kind, a, b;
    fields >> kind >> a >> b;
    int pid = 0;
    try {
      pid = std::stoi(a);
    } catch (const std::exception&) {
      continue;
    }
    if (kind == "gone") {
      auto& into = b == "before" ? report.gone_before : b == "term" ? report.gone_term : report.gone_kill;
      into.push_back(pid);
    } else if (kind == "alive") {
      report.survivors.push_back(pid);
    } else if (kind == "skipped") {
      if (b == "audit-failed") report.audit_failed = true;
      const std::string why = b == "owner-changed" ? "its owner changed"
                              : b == "pid-reused"  ? "the pid now belongs to another process (start time changed)"
                              : b == "audit-failed" ? "the worker's syslog refused its audit record"
                                                    : b;
      report.skipped.push_back(fmt::format("{}: {}", pid, why));
    }
  }
  return false;
}

Result<WorkerKill, TransportError> kill_worker(Connection& connection, const Worker& worker,
                                               const KillRequest& request, const CancelToken& cancel) {
  WorkerKill report;
  report.worker = worker;
  auto first = scan_connection(connection, worker, {request.device_globs, true}, cancel);
  if (!first) return unexpected(first.error());
  if (!first->scan) {
    report.state = first->state;
    report.error = first->error;
    return report;
  }
  const LockScan& before = *first->scan;
  report.before = before;
  report.plan = plan_kill(before, request.options);

  if (request.dry_run) {
    LockScan predicted = assume_killed(before, report.plan);
    report.cleanup = plan_cleanup(predicted);
    if (report.cleanup.remove_lockfile) predicted.lockfile = LockfileState{};
    if (report.cleanup.remove_tpu_logs) predicted.tpu_logs.reset();
    report.state = state_from_scan(predicted);
    return report;
  }

  LockScan current = before;
  if (!report.plan.ambiguous_runs.empty()) {
    report.error =
        fmt::format("--run {} matches several of your runs here: {}; give more of the id",
                    request.options.run_id.value_or(""), fmt::join(report.plan.ambiguous_runs, ", "));
    report.state = state_from_scan(before);
    return report;
  }
  if (!report.plan.empty()) {
    if (request.before_signal) {
      if (auto refused = request.before_signal(worker, before, report.plan)) {
        report.error = *refused;
        report.state = state_from_scan(before);
        return report;
      }
    }
    CaptureSink sink;
    auto exit = connection.run(build_kill_command(report.plan, request.grace_ms), sink, cancel);
    if (!exit) {
      report.error = "the connection broke while killing: " + exit.error().message;
      report.state = TpuState::unreachable;
      return report;
    }
    report.signalled = true;
    const bool finished = read_kill_output(sink.out, report);
    if (report.audit_failed) {
      report.signalled = false;
      report.error =
          "--force: `logger -t tpurun` could not write the audit record to the worker's syslog (is journald or "
          "syslog running? /dev/log); nothing was signalled";
    } else if (!finished) {
      std::string err = sink.err.substr(0, sink.err.find('\n'));
      report.error = report.plan.needs_root
                         ? "--force needs passwordless sudo on the worker (sudo -n failed" +
                               (err.empty() ? std::string(")") : ": " + err + ")")
                         : fmt::format("the kill did not finish (exit code {}){}", exit->code,
                                       err.empty() ? "" : ": " + err);
    }
    auto again = scan_connection(connection, worker, {request.device_globs, false}, cancel);
    if (!again) {
      report.error = "the connection broke after the kill: " + again.error().message;
      report.state = TpuState::unreachable;
      return report;
    }
    if (!again->scan) {
      report.error = again->error;
      report.state = again->state;
      return report;
    }
    current = std::move(*again->scan);
  }

  report.cleanup = plan_cleanup(current);
  auto cleaned = run_cleanup(connection, report.cleanup, request.device_globs, cancel);
  if (!cleaned) {
    report.error = "the connection broke while cleaning up: " + cleaned.error().message;
  } else {
    report.cleaned = std::move(*cleaned);
    if (!report.cleaned.error.empty() && report.error.empty()) report.error = report.cleaned.error;
    current = after_cleanup(current, report.cleaned);
  }
  report.state = state_from_scan(current);
  report.after = std::move(current);
  return report;
}

}  // namespace

std::vector<WorkerKill> kill_on_workers(const std::vector<Worker>& workers, Transport& transport, int fanout,
                                        const CancelToken& cancel, const KillRequest& request) {
  auto results = for_each_connection<WorkerKill>(workers, transport, fanout, cancel,
                                                 [&](Connection& connection, const Worker& worker) {
                                                   return kill_worker(connection, worker, request, cancel);
                                                 });
  std::vector<WorkerKill> reports;
  reports.reserve(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i]) {
      reports.push_back(std::move(*results[i]));
    } else {
      WorkerKill report;
      report.worker = workers[i];
      report.state = TpuState::unreachable;
      report.error = results[i].error().message;
      reports.push_back(std::move(report));
    }
  }
  return reports;
}

}  // namespace tpurun
