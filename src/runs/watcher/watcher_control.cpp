// Starting a run's watcher, and its setup once started; stopping a run on purpose: its watcher is told
// first, so the run ends as "stopped" and is neither restarted nor reported
// as a failure.
#include "tpurun/runs/watcher/watcher_control.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <set>

#include "runs/record/log_dir_layout.hpp"
#include "runs/watcher/kept_env.hpp"
#include "tpurun/pod/config.hpp"
#include "tpurun/pod/describe_cache.hpp"
#include "tpurun/pod/down_intent.hpp"
#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/runs/record/run_state.hpp"
#include "tpurun/tpu/kill_audit.hpp"
#include "tpurun/util/daemon.hpp"
#include "tpurun/util/duration.hpp"
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

WatcherSetup watcher_setup(RunRecord record, Context& ctx, const std::function<void(const std::string&)>& say) {
  WatcherSetup setup;
  setup.record = std::move(record);
  try {
    setup.pod = load_pod(ctx.pod_request, ctx.env, ctx.processes);
  } catch (const TpuUnavailable& e) {
    // A watcher that starts again while the TPU VM is preempted or gone
    // still has work: the run's verdict, or (--recreate) the VM itself.
    say(e.what());
    PodRequest records_only = ctx.pod_request;
    records_only.need_workers = false;
    setup.pod = load_pod(records_only, ctx.env, ctx.processes);
  }
  setup.env_dir = kept_env_dir(ctx.env);
  if (setup.pod.gcloud) {
    setup.keep_new_vm = [spec = *setup.pod.gcloud, &ctx](const TpuNode& node) { keep_describe(spec, node, ctx.env); };
    // A down of the VM since the run was staged (its record's time, to the second).
    const auto staged = parse_utc_time(setup.record.created_at).value_or(std::chrono::system_clock::now());
    setup.down_asked = [path = down_intent_path(*setup.pod.gcloud, ctx.env), staged]() -> std::optional<std::string> {
      if (auto intent = down_intent_since(path, staged)) return down_intent_text(*intent);
      return std::nullopt;
    };
  }
  setup.audit_path = default_audit_path(ctx.env);
  if (auto env = load_kept_env(setup.env_dir, setup.record.run_id)) {
    setup.env = *env;
  } else {
    setup.env_missing = !setup.record.env_names.empty();
  }
  return setup;
}

// The stage holds the pipe open until its launch is answered: the watcher's
// own SSH handshakes, one per worker, would otherwise compete with the launch
// for the workers' sshd.
void wait_for_launch() {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;
    pollfd in{STDIN_FILENO, POLLIN, 0};
    const int ready = ::poll(&in, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return;
    char byte[64];
    const ssize_t n = ::read(STDIN_FILENO, byte, sizeof byte);
    if (n <= 0 && !(n < 0 && errno == EINTR)) return;  // EOF (or an error): the launch is over
  }
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
