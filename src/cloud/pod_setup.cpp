#include "tpurun/cloud/pod_setup.hpp"

#include <fmt/format.h>

#include <chrono>
#include <fstream>

#include "tpurun/fanout/fanout.hpp"
#include "tpurun/util/duration.hpp"

namespace tpurun {
namespace {

void keep_output(const PodSetup& setup, const std::vector<WorkerOutcome>& outcomes) {
  std::ofstream log(setup.log_path, std::ios::app);
  log << fmt::format("==== tpurun: {} at {} ====\n", setup.title, format_utc_time(std::chrono::system_clock::now()));
  for (const WorkerOutcome& o : outcomes) {
    for (const std::string* text : {&o.out, &o.err}) {
      size_t start = 0;
      while (start < text->size()) {
        size_t end = text->find('\n', start);
        if (end == std::string::npos) end = text->size();
        log << "[" << o.worker.display() << "] " << text->substr(start, end - start) << "\n";
        start = end + 1;
      }
    }
    const CommandExit* exit = o.exit();
    log << fmt::format("[{}] {}\n", o.worker.display(), exit ? fmt::format("exit {}", exit->code) : "failed: " + o.error()->message);
  }
}

std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of("\n ");
  if (end == std::string::npos) return "";
  size_t start = text.rfind('\n', end);
  std::string line = text.substr(start == std::string::npos ? 0 : start + 1, end + 1 - (start == std::string::npos ? 0 : start + 1));
  return line.size() > 200 ? line.substr(0, 197) + "..." : line;
}

}  // namespace

std::vector<WorkerOutcome> run_pod_setup(const PodSetup& setup, const std::vector<Worker>& workers,
                                         Transport& transport, const CancelToken& cancel) {
  FanoutPlan plan;
  plan.workers = workers;
  plan.command = RemoteCommand{"exec bash -s", setup.script, 0};
  plan.fanout = setup.fanout;
  plan.capture = true;
  auto outcomes = run_on_workers(plan, transport, std::vector<OutputSink*>(workers.size()), cancel);
  keep_output(setup, outcomes);
  return outcomes;
}

std::string setup_summary_line(const WorkerOutcome& o) {
  const std::string took = fmt::format("{:.1f}s", o.duration_s);
  if (o.ok()) return fmt::format("{}: ok in {}", o.worker.display(), took);
  if (const TransportError* e = o.error()) return fmt::format("{}: failed: {}", o.worker.display(), e->message);
  const std::string last = last_line(o.err.empty() ? o.out : o.err);
  return fmt::format("{}: exit {} in {}{}", o.worker.display(), o.exit()->code, took, last.empty() ? "" : ": " + last);
}

}  // namespace tpurun
