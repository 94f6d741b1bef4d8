// A run's profiles under its log dir (profile_layout.hpp).
#include "tpurun/runs/record/profile_layout.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <system_error>

#include "tpurun/transport/shell_quote.hpp"
#include "tpurun/util/atomic_file.hpp"

namespace tpurun {

std::string profile_root(const std::string& log_dir) { return log_dir + "/plugins/profile"; }

std::string new_session_id(std::chrono::system_clock::time_point now, const std::string& root) {
  // UTC, through std::tm: Debian 11's fmt 7 cannot format a time_point of
  // seconds (and fmt 9 would use local time).
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  std::tm utc{};
  ::gmtime_r(&secs, &utc);
  const std::string base = fmt::format("{:%Y_%m_%d_%H_%M_%S}", utc);
  std::string id = base;
  std::error_code ec;
  for (int n = 2; std::filesystem::exists(root + "/" + id, ec); ++n) id = fmt::format("{}_{}", base, n);
  return id;
}

std::vector<std::string> profile_sessions(const std::string& log_dir) {
  std::vector<std::string> sessions;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(profile_root(log_dir), ec)) {
    if (entry.is_directory(ec)) sessions.push_back(entry.path().filename().string());
  }
  std::sort(sessions.begin(), sessions.end());
  return sessions;
}

TraceFetch fetch_trace_into(const RunRecord& run) {
  return [run](const Worker&, Connection& connection, const std::string& path) -> TraceCopy {
    if (!path.starts_with(run.worker_log_dir + "/")) return {std::nullopt, "not under the run's dir on the worker"};
    const std::string here = run.log_dir + path.substr(run.worker_log_dir.size());
    CaptureSink sink;
    auto got = connection.run(RemoteCommand{"cat -- " + shell_quote(path), "", 60000}, sink, CancelToken());
    if (!got || got->code != 0) {
      return {std::nullopt, "written on the worker, but not copied here: " +
                                (got ? sink.err : got.error().message)};
    }
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(here).parent_path(), ec);
    write_file_atomic(here, sink.out);
    return {static_cast<uint64_t>(sink.out.size()), ""};
  };
}

}  // namespace tpurun
