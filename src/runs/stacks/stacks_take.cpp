// Taking a run's stacks: worker/stacks.py on every worker at once, as the
// login user (the kernel then refuses it every other user's process too).
#include <fmt/format.h>

#include "runs/record/log_dir_layout.hpp"
#include "tpurun/fanout/fanout.hpp"
#include "tpurun/runs/stacks/stacks.hpp"
#include "tpurun/staging/push.hpp"
#include "tpurun/tpu/metrics.hpp"
#include "tpurun/transport/shell_quote.hpp"
#include "tpurun/worker/programs.hpp"
#include "tpurun/worker/tokens.hpp"

namespace tpurun {

namespace {

// The worker's chips' duty cycle, averaged; none where libtpu does not answer.
std::optional<double> mean_duty_cycle(const TpuMetricsOutcome& outcome) {
  const TpuFigures* figures = std::get_if<TpuFigures>(&outcome);
  double sum = 0;
  int n = 0;
  for (const ChipFigures& chip : figures ? figures->chips : std::vector<ChipFigures>{}) {
    if (chip.duty_cycle_pct) sum += *chip.duty_cycle_pct, ++n;
  }
  return n > 0 ? std::optional<double>(sum / n) : std::nullopt;
}

}  // namespace

bool WorkerStacks::has_stack() const {
  for (const StackProcess& p : processes) {
    if (p.no_stack.empty() && !p.threads.empty()) return true;
  }
  return false;
}

RemoteCommand stacks_command(const StacksRequest& request, const Worker& worker) {
  const bool holders = request.run_id.empty();
  std::vector<std::string> args = {
      holders ? "-" : shell_quote(request.run_id),
      holders ? "-" : remote_path_word(worker_log_path(request.workers_log_dir, worker.index)),
      std::to_string(request.timeout_ms), request.native ? "1" : "0"};
  if (holders) {
    for (const std::string& glob : request.device_globs) args.push_back(shell_quote(glob));
  }
  RemoteCommand command = python3_command(worker::kStacksPy, args);
  // Every process's dump, or py-spy's timeout and its retry, and the SSH round trip.
  command.timeout_ms = request.bound_ms > 0 ? request.bound_ms : request.timeout_ms * (request.native ? 4 : 2) + 20000;
  return command;
}

WorkerStacks parse_stacks_answer(const Worker& worker, const std::string& out, const std::string& err) {
  WorkerStacks stacks;
  stacks.worker = worker;
  const std::string head = std::string(worker::kStacksHeader) + "\n";
  const size_t at = out.find(head);
  if (at == std::string::npos) {
    const std::string why = err.empty() ? out : err;
    stacks.error = "the stacks program did not answer" + (why.empty() ? std::string() : ": " + why.substr(0, 300));
    return stacks;
  }
  try {
    const nlohmann::json doc = nlohmann::json::parse(out.substr(at + head.size()));
    nlohmann::json wrapped = {{"workers", nlohmann::json::array({doc})}};
    wrapped["workers"][0]["worker"] = worker.index;
    stacks = stacks_from_json(wrapped).at(0);
    stacks.worker = worker;
  } catch (const std::exception& e) {
    stacks.error = fmt::format("the stacks program's answer is not valid JSON ({})", e.what());
  }
  return stacks;
}

std::vector<WorkerStacks> take_stacks(const std::vector<Worker>& workers, Transport& transport,
                                      const StacksRequest& request, const CancelToken& cancel) {
  std::vector<WorkerStacks> out(workers.size());
  run_parallel(workers.size(), request.fanout, [&](size_t i) {
    auto failed = [&](const TransportError& e) {
      out[i].worker = workers[i];
      out[i].unreachable = e.kind != ErrorKind::interrupted && e.kind != ErrorKind::deadline;
      out[i].error = e.message;
    };
    auto connection = transport.connect(workers[i], cancel);
    if (!connection) return failed(connection.error());
    CaptureSink sink;
    auto ran = (*connection)->run(stacks_command(request, workers[i]), sink, cancel);
    if (!ran) return failed(ran.error());
    out[i] = parse_stacks_answer(workers[i], sink.out, sink.err);
    if (request.duty_cycle && out[i].error.empty()) {
      out[i].duty_cycle_pct = mean_duty_cycle(fetch_tpu_metrics(**connection, MetricsEndpoint{}, cancel));
    }
  });
  return out;
}

int stacks_exit_code(const std::vector<WorkerStacks>& stacks, bool cancelled) {
  if (cancelled) return 130;
  int code = 0;
  for (const WorkerStacks& s : stacks) {
    if (s.unreachable) return 255;
    if (!s.has_stack()) code = 1;
  }
  return code;
}

}  // namespace tpurun
