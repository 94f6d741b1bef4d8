#include "runs/stage/preflight.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "tpurun/doctor/uids.hpp"
#include "tpurun/fanout/gather.hpp"
#include "tpurun/runs/watcher/watcher_control.hpp"
#include "tpurun/tpu/kill.hpp"
#include "tpurun/tpu/scan.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/util/identity.hpp"

namespace tpurun {
namespace {

std::string process_text(const ScannedProcess& p) {
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
    lines.push_back(process_text(*leader) + more);
  }
  if (scan.lock_holder) lines.push_back(process_text(*scan.lock_holder) + " holds the lock");
  return lines;
}

// Workers reserved by another stage or run, one line per holder. The
// caller's own runs get the command that ends them.
std::vector<std::string> reserved_lines(const Reservations& reservations, const std::string& user,
                                        size_t* own_lines) {
  std::map<std::string, std::vector<int>> own, others;
  for (const WorkerReservation& w : reservations.workers()) {
    if (w.state != ReserveState::busy) continue;
    if (w.holders.empty()) others["a process whose holder record is gone"].push_back(w.worker.index);
    for (const ReservationHolder& h : w.holders) {
      (h.user == user && h.run_id != "-" ? own[h.run_id] : others[holder_text(h)]).push_back(w.worker.index);
    }
  }
  std::vector<std::string> lines;
  *own_lines = own.size();
  for (const auto& [run, indices] : own) {
    lines.push_back(fmt::format("  {}: your run {} still runs there (its job does not hold the TPU, so "
                                "--kill-previous leaves it): stop it with `tpurun kill --run {}`",
                                compact_worker_set(indices), run, run));
  }
  for (const auto& [who, indices] : others) {
    lines.push_back(fmt::format("  {}: reserved by {}: it is launching or running there", compact_worker_set(indices),
                                who));
  }
  return lines;
}

// A stale /tmp/libtpu_lockfile is removed under kill's rule, on the
// reservation's own connection (the reservation keeps anyone from taking the
// TPU meanwhile).
void clean_stale(WorkerScanResult& r, size_t position, const PodConfig& pod, Reservations& reservations,
                 LinePrinter& printer, Context& ctx) {
  reservations.with_connection(position, [&](Connection& conn) {
    auto cleaned = clean_stale_lock(conn, *r.scan, pod.device_globs, ctx.cancel);
    if (!cleaned) {
      r.error = cleaned.error().message;
      return;
    }
    for (const std::string& path : cleaned->result.removed) {
      printer.note(fmt::format("{}: removed stale {} (no process held the TPU)", r.worker.display(), path));
    }
    r.state = cleaned->state;
    std::vector<std::string> why = cleaned->result.kept;  // sudo refused, someone took the TPU meanwhile
    if (!cleaned->result.error.empty()) why.push_back(cleaned->result.error);
    if (!why.empty()) r.error = fmt::format("{}", fmt::join(why, "; "));
  });
}

}  // namespace

size_t kill_previous(const PodConfig& pod, const std::vector<Worker>& workers, Transport& transport,
                     const PreflightOptions& options, LinePrinter& printer, Context& ctx) {
  KillRequest request;
  request.device_globs = pod.device_globs;
  request.options.tpu_holders_only = true;
  // The runs being stopped hear of it first, so they end as stopped rather
  // than failed (or restarted): once per run, whichever worker names it.
  std::mutex mutex;
  std::set<std::string> told;
  const Target target{pod, workers};
  const std::string user = local_user(ctx.env);
  request.before_signal = [&](const Worker&, const LockScan&, const KillPlan& plan) -> std::optional<std::string> {
    for (const Victim& v : plan.victims) {
      if (!v.process.run_id) continue;
      std::lock_guard lock(mutex);
      if (told.insert(*v.process.run_id).second) stop_watchers(target, *v.process.run_id, user, printer);
    }
    return std::nullopt;
  };
  size_t stopped = 0;
  for (const WorkerKill& k : kill_on_workers(workers, transport, options.fanout, ctx.cancel, request)) {
    size_t n = k.gone_before.size() + k.gone_term.size() + k.gone_kill.size();
    stopped += n;
    if (n > 0) printer.note(fmt::format("{}: --kill-previous stopped {} of your processes", k.worker.display(), n));
    if (!k.error.empty()) printer.note(fmt::format("{}: --kill-previous: {}", k.worker.display(), k.error));
  }
  return stopped;
}

void judge_preflight(const PodConfig& pod, Reservations& reservations, const PreflightOptions& options,
                     LinePrinter& printer, Context& ctx) {
  std::vector<WorkerScanResult> scanned;
  for (size_t i = 0; i < reservations.workers().size(); ++i) {
    const WorkerReservation& w = reservations.workers()[i];
    if (!w.scan) continue;
    WorkerScanResult r = *w.scan;
    if (r.state == TpuState::stale_lock && r.scan) clean_stale(r, i, pod, reservations, printer, ctx);
    scanned.push_back(std::move(r));
  }
  if (std::string wrong = uid_mismatch(local_user(ctx.env), options.local_uid, options.local_gid, scanned);
      !wrong.empty()) {
    throw UidMismatch(wrong);
  }

  size_t own_run_lines = 0;
  std::vector<std::string> refusals = reserved_lines(reservations, local_user(ctx.env), &own_run_lines);
  bool busy = !refusals.empty();
  std::vector<int> own;
  for (const WorkerReservation& w : reservations.workers()) {
    if (w.state == ReserveState::failed) {
      refusals.push_back(fmt::format("  {}: cannot check: {}", w.worker.display(), w.error));
    }
  }
  for (const WorkerScanResult& r : scanned) {
    const Worker& w = r.worker;
    switch (r.state) {
      case TpuState::free:
      case TpuState::no_device:  // the job finds out itself; tpurun is not the judge of what it needs
        break;
      case TpuState::busy_other:
        busy = true;
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
  const bool untried = std::any_of(reservations.workers().begin(), reservations.workers().end(),
                                   [](const WorkerReservation& w) { return w.state == ReserveState::not_tried; });
  if (untried && refusals.empty()) refusals.push_back("  (the first worker could not be reserved)");
  if (!refusals.empty()) {
    throw PreflightRefusal(fmt::format("not launching: the TPU is not free on every selected worker\n{}\n"
                                       "(nothing was started; `tpurun status` shows the details; --wait waits for "
                                       "them; --skip-preflight launches anyway)",
                                       fmt::join(refusals, "\n")),
                           busy, own.empty() && own_run_lines > 0 && refusals.size() == own_run_lines);
  }
}

}  // namespace tpurun
