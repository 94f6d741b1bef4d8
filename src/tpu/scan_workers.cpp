// Running the scan on workers and turning each answer into a verdict.
#include <fmt/format.h>

#include "tpurun/fanout/fanout.hpp"
#include "tpurun/tpu/scan.hpp"

namespace tpurun {
namespace {

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > 200) line = line.substr(0, 200) + "...";
  return line;
}

}  // namespace

Result<WorkerScanResult, TransportError> scan_connection(Connection& connection, const Worker& worker,
                                                         const ScanRequest& request,
                                                         const CancelToken& cancel) {
  CaptureSink sink;
  auto exit = connection.run(build_scan_command(request), sink, cancel);
  if (!exit) return unexpected(exit.error());
  WorkerScanResult result{worker, TpuState::error, std::nullopt, ""};
  auto scan = parse_scan(sink.out);
  if (!scan) {
    result.error = exit->code != 0 ? fmt::format("the TPU scan exited with code {}{}", exit->code,
                                                 sink.err.empty() ? "" : ": " + first_line(sink.err))
                                   : scan.error();
    return result;
  }
  result.state = state_from_scan(*scan);
  result.scan = std::move(*scan);
  return result;
}

std::vector<WorkerScanResult> scan_workers(const std::vector<Worker>& workers, Transport& transport,
                                           int fanout, const CancelToken& cancel,
                                           const std::vector<std::string>& device_globs) {
  const ScanRequest request{device_globs, false};
  auto results = for_each_connection<WorkerScanResult>(
      workers, transport, fanout, cancel, [&](Connection& connection, const Worker& worker) {
        return scan_connection(connection, worker, request, cancel);
      });
  std::vector<WorkerScanResult> out;
  out.reserve(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i]) {
      out.push_back(std::move(*results[i]));
    } else {
      out.push_back({workers[i], TpuState::unreachable, std::nullopt, results[i].error().message});
    }
  }
  return out;
}

}  // namespace tpurun
