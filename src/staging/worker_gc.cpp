#include "tpurun/staging/worker_gc.hpp"

#include <sstream>

#include "tpurun/fanout/fanout.hpp"
#include "tpurun/staging/push.hpp"
#include "tpurun/transport/shell_quote.hpp"
#include "tpurun/worker/programs.hpp"

namespace tpurun {

WorkerGcReport collect_garbage_on(Connection& connection, const std::string& staging_root,
                                  const std::string& logs_root, const GcRequest& request, const CancelToken& cancel) {
  std::vector<std::string> args = {request.user, std::to_string(request.older_than.count()),
                                   request.dry_run ? "1" : "0",
                                   std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                                      request.now.time_since_epoch()).count())};
  for (const auto& [name, runs] : request.in_use) args.push_back(name);
  // worker/worker_gc.py (docs/protocols.md).
  RemoteCommand command = python3_command(
      worker::kWorkerGcPy, {remote_path_word(staging_root), remote_path_word(logs_root), shell_join(args)});
  // The runs whose log dirs may go, after the program on its stdin: never in
  // argv (thousands of runs would pass the kernel's limit).
  for (const std::string& run : request.worker_runs_done) command.stdin_data += run + "\n";
  command.timeout_ms = 600000;
  CaptureSink sink;
  WorkerGcReport report;
  auto ran = connection.run(command, sink, cancel);
  if (!ran) {
    report.error = ran.error().message;
    return report;
  }
  bool counted = false;
  std::istringstream lines(sink.out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.starts_with("removed ")) report.snapshots_removed.push_back(line.substr(8));
    if (line.starts_with("error ")) report.error = line.substr(6);
    unsigned long long n = 0, bytes = 0;
    if (char run[4096]; std::sscanf(line.c_str(), "run %4095s %llu", run, &bytes) == 2) {
      report.runs_removed.emplace_back(run);
      report.run_bytes_freed += bytes;
      continue;
    }
    if (std::sscanf(line.c_str(), "objects %llu %llu", &n, &bytes) == 2) {
      report.objects_removed = n;
      report.bytes_freed = bytes;
      counted = true;
    }
  }
  if (!counted && report.error.empty()) {
    report.error = "gc did not finish there" + (sink.err.empty() ? std::string() : ": " + sink.err.substr(0, 300));
  }
  return report;
}

std::vector<std::pair<Worker, WorkerGcReport>> collect_garbage_on_workers(const std::vector<Worker>& workers,
                                                                          Transport& transport,
                                                                          const std::string& staging_root,
                                                                          const std::string& logs_root,
                                                                          const GcRequest& request,
                                                                          const CancelToken& cancel) {
  std::vector<std::pair<Worker, WorkerGcReport>> out(workers.size());
  run_parallel(workers.size(), 64, [&](size_t i) {
    out[i].first = workers[i];
    auto connection = transport.connect(workers[i], cancel);
    if (!connection) {
      out[i].second.error = connection.error().message;
      return;
    }
    out[i].second = collect_garbage_on(**connection, staging_root, logs_root, request, cancel);
  });
  return out;
}

}  // namespace tpurun
