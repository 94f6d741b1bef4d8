#include "runs/stage/preflight.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <map>

#include "tpurun/doctor/uids.hpp"
#include "tpurun/fanout/fanout.hpp"
#include "tpurun/fanout/gather.hpp"
#include "tpurun/pod/worker_select.hpp"
#include "tpurun/tpu/kill.hpp"
#include "tpurun/tpu/scan.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/util/identity.hpp"

namespace tpurun {
namespace {

std::string describe(const ScannedProcess& p) {
  std::string command = p.command.size() > 60 ? p.command.substr(0, 57) + "..." : p.command;
  return fmt::format("{} pid {} `{}` ({})", p.user.empty() ? "uid " + std::to_string(p.uid) : p.user, p.pid,
                     command, format_age(p.elapsed_s));
}

// Other users who block a worker, for the refusal message: one line per job
// (process group), naming its leader and counting the children that hold the TPU too.
std::vector<std::string> other_holders(const LockScan& scan) {
  std::map<int, std::vector<const ScannedProcess*>> by_group;
  for (const ScannedProcess& p : scan.holders) {
    if (p.uid != scan.caller_uid) by_group[p.pgid].push_back(&p);
  }
  std::vector<std::string> lines;
  for (const auto& [pgid, members] : by_group) {
    const ScannedProcess* leader = members.front();
    for (const ScannedProcess* p : members) {
      if (p->pid == pgid) leader = p;
    }
    std::string more = members.size() > 1 ? fmt::format(" (+{} in its group)", members.size() - 1) : "";
    lines.push_back(describe(*leader) + more);
  }
  if (scan.lock_holder) lines.push_back(describe(*scan.lock_holder) + " holds the lock");
  return lines;
}

void kill_previous(const PodConfig& pod, const std::vector<Worker>& workers, Transport& transport,
                   const PreflightOptions& options, LinePrinter& printer, Context& ctx) {
  KillRequest request;
  request.device_globs = pod.device_globs;
  auto kills = kill_on_workers(workers, transport, options.fanout, ctx.cancel, request);
  for (const WorkerKill& k : kills) {
    size_t n = k.gone_before.size() + k.gone_term.size() + k.gone_kill.size();
    if (n > 0) printer.note(fmt::format("{}: --kill-previous stopped {} of your processes", k.worker.display(), n));
    if (!k.error.empty()) printer.note(fmt::format("{}: --kill-previous: {}", k.worker.display(), k.error));
  }
}

}  // namespace

void run_preflight(const PodConfig& pod, const std::vector<Worker>& workers, Transport& transport,
                   const PreflightOptions& options, LinePrinter& printer, Context& ctx) {
  if (options.kill_previous) kill_previous(pod, workers, transport, options, printer, ctx);

  std::atomic<size_t> done{0};
  auto results = for_each_connection<WorkerScanResult>(
      workers, transport, options.fanout, ctx.cancel,
      [&](Connection& conn, const Worker& worker) -> Result<WorkerScanResult, TransportError> {
        ScanRequest request{pod.device_globs, false};
        auto scanned = scan_connection(conn, worker, request, ctx.cancel);
        if (scanned && scanned->state == TpuState::stale_lock && scanned->scan) {
          auto cleaned = clean_stale_lock(conn, *scanned->scan, pod.device_globs, ctx.cancel);
          if (cleaned) {
            for (const std::string& path : cleaned->result.removed) {
              printer.note(fmt::format("{}: removed stale {} (no process held the TPU)", worker.display(), path));
            }
            scanned->state = cleaned->state;
            // If the lock stayed, say why (sudo refused, someone took the TPU meanwhile).
            std::vector<std::string> why = cleaned->result.kept;
            if (!cleaned->result.error.empty()) why.push_back(cleaned->result.error);
            if (!why.empty()) scanned->error = fmt::format("{}", fmt::join(why, "; "));
          } else {
            scanned->error = cleaned.error().message;
          }
        }
        printer.progress(fmt::format("preflight: checked {}/{} workers", ++done, workers.size()));
        return scanned;
      });
  printer.clear_progress();
  if (ctx.cancel.cancelled()) throw Interrupted("interrupted during the preflight check; nothing was staged");

  std::vector<WorkerScanResult> scanned;
  for (const auto& r : results) {
    if (r) scanned.push_back(*r);
  }
  if (std::string wrong = uid_mismatch(local_user(ctx.env), options.local_uid, options.local_gid, scanned);
      !wrong.empty()) {
    throw UidMismatch(wrong);
  }

  std::vector<std::string> refusals;
  std::vector<int> own;
  for (size_t i = 0; i < results.size(); ++i) {
    const Worker& w = workers[i];
    if (!results[i]) {
      refusals.push_back(fmt::format("  {}: cannot check: {}", w.display(), results[i].error().message));
      continue;
    }
    const WorkerScanResult& r = *results[i];
    switch (r.state) {
      case TpuState::free:
        break;
      case TpuState::busy_other:
        for (const std::string& who : other_holders(*r.scan)) {
          refusals.push_back(fmt::format("  {}: TPU held by {}", w.display(), who));
        }
        break;
      case TpuState::busy_self:
        own.push_back(w.index);
        break;
      case TpuState::stale_lock:
        refusals.push_back(fmt::format("  {}: a stale /tmp/libtpu_lockfile could not be removed{}", w.display(),
                                       r.error.empty() ? "" : ": " + r.error));
        break;
      case TpuState::partial:
        printer.note(fmt::format("{}: could not see other users' processes (no passwordless sudo); "
                                 "launching anyway", w.display()));
        break;
      case TpuState::unreachable:
      case TpuState::error:
        refusals.push_back(fmt::format("  {}: cannot check: {}", w.display(), r.error));
        break;
    }
  }
  if (!own.empty()) {
    refusals.push_back(fmt::format("  {}: your own earlier job still holds the TPU — stop it with `tpurun kill "
                                   "--worker {}`, or stage with --kill-previous",
                                   compact_worker_set(own), fmt::join(own, ",")));
  }
  if (!refusals.empty()) {
    throw std::runtime_error(fmt::format("not launching: the TPU is not free on every selected worker\n{}\n"
                                 "(`tpurun status` shows the details; --skip-preflight launches anyway)",
                                 fmt::join(refusals, "\n")));
  }
}

}  // namespace tpurun
