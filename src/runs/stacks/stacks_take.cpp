// Taking a run's stacks: worker/stacks.py on every worker at once, as the
// login user (the kernel then refuses it every other user's process too).
#include <fmt/format.h>

#include "runs/record/log_dir_layout.hpp"
#include "tpurun/fanout/fanout.hpp"
#include "tpurun/runs/stacks/stacks.hpp"
#include "tpurun/staging/push.hpp"
#include "tpurun/transport/shell_quote.hpp"
#include "tpurun/worker/programs.hpp"
#include "tpurun/worker/tokens.hpp"

namespace tpurun {

bool WorkerStacks::has_stack() const {
  for (const StackProcess& p : processes) {
    if (p.no_stack.empty() && !p.threads.empty()) return true;
  }
  return false;
}

RemoteCommand stacks_command(const StacksRequest& request, const Worker& worker) {
  RemoteCommand command = python3_command(
      worker::kStacksPy, {shell_quote(request.run_id),
                          remote_path_word(worker_log_path(request.workers_log_dir, worker.index)),
                          std::to_string(request.timeout_ms), request.native ? "1" : "0"});
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
  FanoutPlan plan;
  plan.workers = workers;
  plan.fanout = request.fanout;
  plan.capture = true;
  plan.command_for = [&](const Worker& w) { return stacks_command(request, w); };
  std::vector<WorkerStacks> out;
  for (const WorkerOutcome& o : run_on_workers(plan, transport, {}, cancel)) {
    if (const TransportError* e = o.error()) {
      WorkerStacks s;
      s.worker = o.worker;
      s.unreachable = e->kind != ErrorKind::interrupted && e->kind != ErrorKind::deadline;
      s.error = e->message;
      out.push_back(std::move(s));
    } else {
      out.push_back(parse_stacks_answer(o.worker, o.out, o.err));
    }
  }
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
