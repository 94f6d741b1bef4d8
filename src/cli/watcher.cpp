// tpurun _watcher: the detached per-run watcher. One per run and host: a
// lock in the user's cache makes a second one exit at once.
#include "cli/watcher.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fmt/format.h>

#include "tpurun/pod/describe_cache.hpp"
#include "tpurun/pod/tpu_node.hpp"
#include "tpurun/runs/follow/follow.hpp"
#include "tpurun/runs/watcher/kept_env.hpp"
#include "tpurun/runs/watcher/watcher.hpp"
#include "tpurun/tpu/kill_audit.hpp"
#include "tpurun/util/identity.hpp"

namespace tpurun::cli {

CLI::App* register_watcher(CLI::App& app, WatcherOptions& o) {
  CLI::App* cmd = app.add_subcommand("_watcher", "Watch one run (started by stage and logs -f)");
  cmd->group("");  // hidden from --help
  cmd->add_option("log_dir", o.log_dir, "The run's log dir")->required();
  return cmd;
}

int run_watcher(const WatcherOptions& o, Context& ctx) {
  WatcherSetup setup;
  setup.record = read_run_record(o.log_dir);
  const std::string locks = cache_dir(ctx.env) + "/watchers";
  std::error_code ec;
  std::filesystem::create_directories(locks, ec);
  const std::string lock_path = locks + "/" + setup.record.run_id + ".lock";
  const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (lock < 0) {
    // A run nobody watches keeps no gang rules: better two watchers than none.
    fmt::print("cannot open the watcher lock {}: {}; watching without it (make {} writable, or set "
               "XDG_CACHE_HOME)\n",
               lock_path, std::strerror(errno), cache_dir(ctx.env));
  } else if (::flock(lock, LOCK_EX | LOCK_NB) != 0) {
    fmt::print("another watcher of run {} is running on this host\n", setup.record.run_id);
    return 0;
  }
  try {
    setup.pod = load_pod(ctx.pod_request, ctx.env, ctx.processes);
  } catch (const TpuUnavailable& e) {
    // A watcher that starts again while the TPU VM is preempted or gone
    // still has work: the run's verdict, or (--recreate) the VM itself.
    fmt::print("{}\n", e.what());
    PodRequest records_only = ctx.pod_request;
    records_only.need_workers = false;
    setup.pod = load_pod(records_only, ctx.env, ctx.processes);
  }
  setup.env_dir = kept_env_dir(ctx.env);
  if (setup.pod.gcloud) {
    setup.keep_new_vm = [spec = *setup.pod.gcloud, &ctx](const TpuNode& node) { keep_describe(spec, node, ctx.env); };
  }
  setup.audit_path = default_audit_path(ctx.env);
  if (auto env = load_kept_env(setup.env_dir, setup.record.run_id)) {
    setup.env = *env;
  } else {
    setup.env_missing = !setup.record.env_names.empty();
  }
  auto transport = ctx.make_transport(setup.pod);
  return watch_run(setup, *transport, ctx.processes, ctx.cancel);
}

}  // namespace tpurun::cli
