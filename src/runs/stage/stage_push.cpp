#include "runs/stage/stage_push.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>

#include "tpurun/fanout/fanout.hpp"
#include "tpurun/staging/push.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/util/text.hpp"

namespace tpurun {

// After a push, before anything starts: every worker still holds its
// reservation (one round trip in its reservation's shell). A worker whose
// reservation ended meanwhile (its watchdog saw no keepalive, its script was
// killed) would be left out of the launch while the others start: the gang
// would begin short. Nothing starts anywhere then.
static void confirm_reservations(Reservations& reservations, int fanout) {
  const auto& workers = reservations.workers();
  std::vector<std::string> lost(workers.size());
  run_parallel(workers.size(), fanout, [&](size_t i) {
    if (auto alive = reservations.run_in_reservation(i, ":"); !alive) lost[i] = alive.error();
  });
  std::vector<std::string> lines;
  for (size_t i = 0; i < workers.size(); ++i) {
    if (!lost[i].empty()) lines.push_back(fmt::format("  {}: {}", workers[i].worker.display(), lost[i]));
  }
  if (lines.empty()) return;
  throw std::runtime_error(fmt::format("{} lost its reservation while the snapshot was copied; nothing was started:\n{}",
                                       count_of(lines.size(), "worker"), fmt::join(lines, "\n")));
}

// A push with this much that this host did not have before (so no worker
// can have it from an earlier push of ours) goes over a direct connection of
// its own when the reservation's session is relayed by the keeper: the
// relay's extra copy of every byte cost a fresh 16-worker push of 40 MB
// 0.8 s of 6 (stop 48). Below it, the reservation's session is cheaper than
// a handshake.
constexpr std::uint64_t kBulkBytes = 8 << 20;

// The connection the push to worker i goes over: a direct one for a bulk
// push, else (or when that one cannot be had) the reservation's own.
static Connection& push_connection(Transport* bulk, const Worker& worker, Connection& reserved,
                                   std::unique_ptr<Connection>& direct, const CancelToken& cancel) {
  if (!bulk) return reserved;
  auto connected = bulk->connect(worker, cancel);
  if (!connected) {
    spdlog::debug("push to {}: no direct connection ({}); through the reservation's", worker.display(),
                  connected.error().message);
    return reserved;
  }
  spdlog::debug("push to {}: over a direct connection of its own (a bulk push: not through the keeper)",
                worker.display());
  direct = std::move(*connected);
  return *direct;
}

PushedRun push_to_workers(const StagePlan& plan, const StagedSnapshot& staged, const std::string& run_id,
                          Reservations& reservations, LinePrinter& printer, const CancelToken& cancel) {
  const PodConfig& pod = plan.target.pod;
  const PushTarget target{pod.worker_root + "/staging", pod.worker_root + "/logs", plan.user, plan.project, run_id};
  const auto& workers = reservations.workers();
  std::vector<Result<PushResult, std::string>> results(workers.size(), unexpected(std::string("not reserved")));
  const PushContent content(staged);
  const auto started = std::chrono::steady_clock::now();
  std::atomic<size_t> done{0};
  std::atomic<std::uint64_t> sent{0};
  std::mutex progress;
  const bool bulky = !staged.reused && staged.bytes - std::min(staged.bytes, staged.bytes_reused) >= kBulkBytes;
  Transport* bulk = bulky ? reservations.transport().bulk() : nullptr;
  run_parallel(workers.size(), plan.request.fanout, [&](size_t i) {
    // An unchanged tree's snapshot is most often there already: asked in the
    // reservation's shell, that is one round trip. Else (a new snapshot's name
    // is new everywhere, or that shell cannot say) the push.
    if (staged.reused) {
      if (auto asked = reservations.run_in_reservation(i, have_command(staged, target))) {
        if (auto had = parse_have_answer(*asked)) results[i] = std::move(*had);
      }
    }
    if (!results[i]) {
      reservations.with_connection_kept(i, [&](Connection& reserved, const std::function<void()>& keepalive) {
        std::unique_ptr<Connection> direct;
        Connection& over = push_connection(bulk, workers[i].worker, reserved, direct, cancel);
        results[i] = push_snapshot(over, content, target, cancel, keepalive);
      });
    }
    if (results[i]) {
      sent += results[i]->bytes_sent;
      const PushResult& r = *results[i];
      if (r.had) {
        spdlog::debug("push to {}: it has the snapshot", workers[i].worker.display());
      } else {
        spdlog::debug("push to {}: manifest answered in {} ms, {} files ({} B) sent in {} ms, built in {} ms",
                      workers[i].worker.display(), r.manifest_ms, r.objects_sent, r.bytes_sent, r.send_ms,
                      r.build_ms);
      }
    }
    ++done;
    std::lock_guard lock(progress);
    printer.progress(fmt::format("copying the snapshot to the workers: {}/{}, {} sent", done.load(), workers.size(),
                                 human_size(sent.load())));
  });
  printer.clear_progress();
  std::vector<std::string> failed;
  size_t had = 0;
  std::uint64_t objects = 0;
  for (size_t i = 0; i < workers.size(); ++i) {
    if (!results[i]) {
      failed.push_back(fmt::format("  {}: {}", workers[i].worker.display(), results[i].error()));
      continue;
    }
    had += results[i]->had ? 1 : 0;
    objects += results[i]->objects_sent;
  }
  if (cancel.cancelled()) throw Interrupted(interrupted_by() + " while copying the snapshot; nothing was started");
  if (!failed.empty()) {
    throw std::runtime_error(fmt::format("the snapshot did not reach {} (no shared mount: each worker keeps its own "
                                         "copy); nothing was started:\n{}",
                                         count_of(failed.size(), "worker"), fmt::join(failed, "\n")));
  }
  // Each round trip there restarts the worker's watchdog (a perl process):
  // asked only after a push long enough for a watchdog to matter.
  constexpr auto kConfirmAfter = std::chrono::seconds(30);
  if (had < workers.size() && std::chrono::steady_clock::now() - started > kConfirmAfter) {
    confirm_reservations(reservations, plan.request.fanout);
  }
  PushedRun pushed{results[0]->staged_dir, results[0]->log_dir};
  for (size_t i = 1; i < workers.size(); ++i) {
    if (results[i]->staged_dir != pushed.staged_dir || results[i]->log_dir != pushed.log_dir) {
      throw std::runtime_error(fmt::format(
          "{} keeps the run under {}, {} under {}: tpurun needs the same home on every worker (set \"local_root\" "
          "to an absolute path); nothing was started",
          workers[0].worker.display(), pushed.log_dir, workers[i].worker.display(), results[i]->log_dir));
    }
  }
  if (had == workers.size()) {
    printer.note(fmt::format("every worker had snapshot {} (no shared mount: nothing sent)", staged.name));
  } else {
    printer.note(fmt::format("snapshot {} → {} (no shared mount): sent {} ({}) they lacked{}", staged.name,
                             count_of(workers.size() - had, "worker"), count_of(objects, "file"),
                             human_size(sent.load()), had > 0 ? fmt::format("; {} had it already", had) : ""));
  }
  return pushed;
}

}  // namespace tpurun
