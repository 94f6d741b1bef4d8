// Starting a run's watcher; stopping a run on purpose: its watcher is told
// first, so the run ends as "stopped" and is neither restarted nor reported
// as a failure.
#include "tpurun/runs/watcher/watcher_control.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <set>

#include "runs/record/log_dir_layout.hpp"
#include "tpurun/pod/config.hpp"
#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/runs/record/run_state.hpp"
#include "tpurun/util/daemon.hpp"
#include "tpurun/util/safe_dir.hpp"

namespace tpurun {
namespace {

// The run's watcher must neither restart the run nor report the kill as a
// failure: it gets a stop marker in the log dir first, and a SIGTERM when it
// runs on this host.
void stop_watcher(const std::string& dir, LinePrinter& printer) {
  auto state = read_run_state(dir);
  if (!state || is_final(state->verdict)) return;
  int fd = ::open(stop_marker_path(dir).c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) ::close(fd);
  if (watcher_alive(*state, std::time(nullptr)) && ::kill(state->watcher.pid, SIGTERM) == 0) {
    printer.note(fmt::format("stopped the watcher of run {} (pid {}); it records the run as stopped",
                             std::filesystem::path(dir).filename().string(), state->watcher.pid));
  }
}

// Every worker of `run` is among `killed` (same host and port): a run started
// under another name for the same hosts, such as --pod A,B for a "slices" pod.
bool covers(const std::vector<Worker>& killed, const std::vector<Worker>& run) {
  std::set<std::pair<std::string, int>> hosts;
  for (const Worker& w : killed) hosts.emplace(w.host, w.port);
  return !run.empty() && std::all_of(run.begin(), run.end(), [&](const Worker& w) {
    return hosts.count({w.host, w.port}) > 0;
  });
}

}  // namespace

int start_watcher(const RunRecord& run, Context& ctx, int launching_fd) {
  std::vector<std::string> args;
  if (auto config = find_config_file(ctx.pod_request.config_path, ctx.env)) {
    args.push_back("--config");
    args.push_back(std::filesystem::absolute(*config).string());
  }
  // -v: the watcher's diagnostics go to watcher.log, which the follower
  // shows; never -vv's libssh log, which would fill the shared mount.
  if (ctx.verbosity > 0) args.push_back("-v");
  args.insert(args.end(), {"--pod", run.pod, "_watcher", run.log_dir});
  auto pid = spawn_detached_self(args, watcher_log_path(run.log_dir), launching_fd);
  if (!pid) throw std::runtime_error("cannot start the run's watcher: " + pid.error());
  return *pid;
}

// kill --run RUN: that run's watcher. A kill of all your jobs on the whole
// pod: the watchers of all your active runs on it.
void stop_watchers(const Target& target, const std::string& run, const std::string& user, LinePrinter& printer) {
  if (target.pod.logs_root.empty()) return;
  if (!run.empty()) {
    try {
      stop_watcher(find_run_dir(target.pod.logs_root, user, run), printer);
    } catch (const UnsafeDirError& e) {
      printer.note(std::string("the run's watcher was not told (its log dir is unsafe): ") + e.what());
    } catch (const std::exception&) {
      // not one of this user's recorded runs: kill by TPURUN_RUN_ID alone
    }
    return;
  }
  if (target.workers.size() != target.pod.workers.size()) return;  // part of a gang: its watcher decides
  std::vector<std::string> dirs;
  try {
    dirs = list_run_dirs(target.pod.logs_root, user);
  } catch (const UnsafeDirError& e) {
    printer.note(std::string("run watchers were not told (your logs dir is unsafe): ") + e.what());
  }
  for (const std::string& dir : dirs) {
    auto state = read_run_state(dir);
    if (!state || is_final(state->verdict)) continue;
    try {
      const RunRecord record = read_run_record(dir);
      if (record.pod == target.pod.name || covers(target.workers, record.workers)) stop_watcher(dir, printer);
    } catch (const std::exception&) {
    }
  }
}

}  // namespace tpurun
