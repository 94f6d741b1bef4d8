// tpurun _watcher: the detached per-run watcher. One per run and host: a
// lock in the user's cache makes a second one exit at once.
#include "cli/watcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
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

namespace {

struct WatcherLock {
  int fd = -1;
  bool held_elsewhere = false;
  std::string error;
};

// flock on RUN.lock. The holder removes the file when it ends, so a lock
// taken on a file that was removed meanwhile (its inode is no longer the
// path's) is let go and taken again on the path's new file.
WatcherLock take_watcher_lock(const std::string& path) {
  for (int tries = 0; tries < 10; ++tries) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return {-1, false, std::strerror(errno)};
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      return {-1, true, ""};
    }
    struct stat held {}, now {};
    if (::fstat(fd, &held) == 0 && ::stat(path.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
        held.st_dev == now.st_dev) {
      return {fd, false, ""};
    }
    ::close(fd);  // the last watcher removed it between our open and our lock
  }
  return {-1, false, "the lock file keeps being replaced"};
}

// The stage that started this watcher holds its stdin (a pipe) open until its
// launch is answered: the watcher's own SSH handshakes, one per worker, would
// otherwise compete with the launch for the workers' sshd. At most 10 s; a
// watcher started by `logs -f` has /dev/null there and goes on at once.
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

}  // namespace

int run_watcher(const WatcherOptions& o, Context& ctx) {
  WatcherSetup setup;
  setup.record = read_run_record(o.log_dir);
  const std::string locks = cache_dir(ctx.env) + "/watchers";
  std::error_code ec;
  std::filesystem::create_directories(locks, ec);
  const std::string lock_path = locks + "/" + setup.record.run_id + ".lock";
  const WatcherLock lock = take_watcher_lock(lock_path);
  if (lock.fd < 0 && !lock.held_elsewhere) {
    // A run nobody watches keeps no gang rules: better two watchers than none.
    fmt::print("cannot open the watcher lock {}: {}; watching without it (make {} writable, or set "
               "XDG_CACHE_HOME)\n",
               lock_path, lock.error, cache_dir(ctx.env));
  } else if (lock.held_elsewhere) {
    fmt::print("another watcher of run {} is running on this host\n", setup.record.run_id);
    return 0;
  }
  // The lock file goes with the watcher (it was left behind, one per run, for good).
  struct Unlock {
    const WatcherLock& lock;
    const std::string& path;
    ~Unlock() {
      if (lock.fd >= 0) {
        ::unlink(path.c_str());  // while still holding it: see take_watcher_lock
        ::close(lock.fd);
      }
    }
  } unlock{lock, lock_path};
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
  wait_for_launch();
  return watch_run(setup, *transport, ctx.processes, ctx.cancel);
}

}  // namespace tpurun::cli
