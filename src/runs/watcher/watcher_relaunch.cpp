// The watcher's next attempt: a restart after a failure (with backoff), a
// relaunch once the TPU VM is READY (recreated if it was preempted and
// --recreate allows) and every worker is free and reserved, and the move to
// the workers' new addresses.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "runs/launch/relaunch.hpp"
#include "runs/watcher/restart_check.hpp"
#include "runs/watcher/snapshot_again.hpp"
#include "runs/watcher/watcher_impl.hpp"
#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/runs/record/run_state.hpp"
#include "tpurun/util/text.hpp"

namespace tpurun {
namespace {

using Clock = std::chrono::system_clock;

}  // namespace

// Waits `d` unless the run is stopped meanwhile. False when it was.
bool Watcher::pause(std::chrono::milliseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
    if (cancel_.cancelled() || stop_requested(setup_.record.log_dir) || setup_.down_asked()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return true;
}

bool Watcher::restart(std::unique_ptr<LivenessProber>& prober) {
  const RunState& state = monitor_.state();
  const int next = state.attempt + 1;
  auto backoff = setup_.first_backoff * (1 << std::min(state.attempt - 1, 5));
  backoff = std::min<std::chrono::milliseconds>(backoff, std::chrono::seconds(60));
  const std::string why = state.first_failure->how == "stalled"
                              ? state.first_failure->detail
                              : worker_name(workers_, state.first_failure->worker) + " " + state.first_failure->detail;
  say(fmt::format("attempt {} failed ({}); restarting as attempt {} of {} in {}s", state.attempt, why, next,
                  state.max_attempts, backoff.count() / 1000.0));
  message_ = fmt::format("restarting: attempt {} of {}", next, state.max_attempts);
  save(true);
  if (!pause(backoff)) return stopped_during_restart();
  if (setup_.env_missing) {
    say("cannot restart: this run's --env values were not kept on this host; start a new run");
    return false;
  }
  return relaunch(prober);
}

// The next attempt, once the TPU VM is READY (recreated if it was
// preempted and --recreate allows it) and every worker is free.
bool Watcher::relaunch(std::unique_ptr<LivenessProber>& prober) {
  const RunState& state = monitor_.state();
  std::string last;
  for (;;) {
    RestartCheck check = check_restart(setup_.record, setup_.pod, transport_, processes_, setup_.fanout, cancel_);
    if (!check.gone.empty()) {
      if (recovery_.recover(monitor_, check, workers_)) {
        snapshot_unsure_ = true;
        continue;
      }
      return preempted();
    }
    std::string waiting = check.waiting_for;
    if (check.ready()) move_to(check.workers, prober);
    if (check.ready() && snapshot_unsure_) {
      waiting = push_snapshot_again_to_workers();
      if (snapshot_unreadable_) return false;
    }
    if (check.ready() && !snapshot_unsure_) {
      const int next = state.attempt + 1;
      // Every worker is reserved first, or the attempt is not launched at
      // all: another stage that took a worker meanwhile is waited for.
      LaunchResult launched = relaunch_on_workers(attempt_spec(next), workers_, transport_, setup_.fanout, cancel_);
      if (launched.not_reserved.empty()) {
        began(next, launched, prober);
        return true;
      }
      waiting = fmt::format("waiting for the workers to be free: {}", fmt::join(launched.not_reserved, "; "));
    }
    if (waiting != last) say(waiting);
    last = waiting;
    message_ = waiting;
    save(false);
    if (!pause(std::chrono::seconds(3))) return stopped_during_restart();
  }
}

LaunchSpec Watcher::attempt_spec(int attempt) const {
  LaunchSpec spec{setup_.record.run_id, workers_log_dir(setup_.record), workers_staged_dir(setup_.record),
                  setup_.record.command,
                  setup_.env, static_cast<int>(setup_.pod.workers.size()), attempt,
                  monitor_.state().max_attempts, std::nullopt};
  if (spec.num_workers == 0) spec.num_workers = static_cast<int>(setup_.record.workers.size());
  spec.slices = setup_.record.megascale;
  if (spec.slices && !workers_.empty()) spec.slices->coordinator = workers_.front().host;  // slice 0's worker 0
  return spec;
}

// The attempt was launched: from now on its job files are watched.
void Watcher::began(int next, const LaunchResult& launched, std::unique_ptr<LivenessProber>& prober) {
  monitor_.begin_attempt(next);
  stall_.clear();
  launch_failures_.clear();
  prober->set_jobs({});
  prober->take();
  message_.clear();
  for (const WorkerOutcome& o : launched.outcomes) {
    if (launched.pids.count(o.worker.index)) continue;
    const std::string why = o.error() ? o.error()->message : "the job did not start";
    say(fmt::format("{}: {}", o.worker.display(), why));
    launch_failures_[o.worker.index] = why;
  }
  say(fmt::format("attempt {} launched on {} of {} worker{}", next, launched.pids.size(), workers_.size(),
                  workers_.size() == 1 ? "" : "s"));
  recovery_.resumed(monitor_, next);
  save(true);
}

// An attempt failed with no restart left (or none allowed for its exit
// code): was the TPU VM preempted? With --recreate that is worth an attempt
// of its own. True when it was recreated and the run goes on.
bool Watcher::preempted_at_end() {
  const RunVerdict verdict = monitor_.state().verdict;
  const bool lost = verdict == RunVerdict::lost;
  if (!setup_.record.gang.recreate || signalled_ || (!lost && verdict != RunVerdict::failed)) return false;
  vm_checked_ = true;
  RestartCheck check = check_tpu_vms(setup_.record, setup_.pod, processes_);
  if (check.gone.empty()) return false;
  if (!lost) say(fmt::format("attempt {} failed, and {}", monitor_.state().attempt, check.gone));
  if (recovery_.recover(monitor_, check, workers_)) {
    snapshot_unsure_ = true;
    return true;
  }
  preempted();
  return false;
}

// No shared mount: the workers of a new TPU VM (or a VM that moved) must hold
// the run's snapshot whole before the attempt starts there. "" once they do
// (snapshot_unsure_ is cleared), else what the relaunch waits for (a worker
// that could not take it). A snapshot that cannot be read here ends the run
// (snapshot_unreadable_): no wait would bring it back.
std::string Watcher::push_snapshot_again_to_workers() {
  if (setup_.record.worker_staged_dir.empty()) {  // a shared mount: the workers see it
    snapshot_unsure_ = false;
    return "";
  }
  SnapshotAgain again = push_snapshot_again(setup_.record, setup_.pod, workers_, transport_, setup_.fanout, cancel_);
  if (!again.error.empty()) {
    say(fmt::format("cannot relaunch: the run's snapshot cannot be copied to the workers again ({}); start a new "
                    "run",
                    again.error));
    snapshot_unreadable_ = true;
    return again.error;
  }
  if (!again.failed.empty()) {
    return fmt::format("waiting for the snapshot to reach every worker:\n  {}", fmt::join(again.failed, "\n  "));
  }
  const std::string name = std::filesystem::path(setup_.record.staged_dir).filename().string();
  say(again.sent_to == 0 ? fmt::format("every worker holds snapshot {} (no shared mount)", name)
                         : fmt::format("snapshot {} → {} (no shared mount): sent {} they lacked", name,
                                       count_of(again.sent_to, "worker"), human_size(again.bytes)));
  snapshot_unsure_ = false;
  return "";
}

// The workers' current addresses (a gcloud pod's TPU VM may have new ones
// after a stop and start): from now on the run is watched and relaunched there.
void Watcher::move_to(const std::vector<Worker>& now, std::unique_ptr<LivenessProber>& prober) {
  bool moved = false, new_vm = false;
  for (size_t i = 0; i < now.size() && i < workers_.size(); ++i) {
    // A recreated TPU VM has a new id, so new host key aliases, maybe on the old addresses.
    if (now[i].host_key_alias != workers_[i].host_key_alias) moved = new_vm = true;
    if (now[i].host == workers_[i].host) continue;
    say(fmt::format("{}: the TPU VM's worker is at {} now (was {})", now[i].name(), now[i].host, workers_[i].host));
    moved = true;
  }
  if (!moved) return;
  workers_ = now;
  // The run's record says where its workers are now: profile, stacks and
  // kill --run reach them there, not at a recreated VM's old addresses or
  // host keys (issue 39, finding 15).
  RunRecord record = setup_.record;
  for (size_t i = 0; i < now.size() && i < record.workers.size(); ++i) {
    record.workers[i].host = now[i].host;
    record.workers[i].port = now[i].port;
    record.workers[i].host_key_alias = now[i].host_key_alias;
  }
  try {
    write_run_record(record, "");
  } catch (const std::exception& e) {
    say(fmt::format("could not record the workers' new addresses in run.json: {}", e.what()));
  }
  snapshot_unsure_ = true;  // a new VM's disk, perhaps: asked, it costs a round trip
  // A VM stopped and started keeps its disk (and its logs there): only a new
  // one starts the mirror's files again.
  if (mirror_) mirror_->move_to(workers_, new_vm);
  prober = std::make_unique<LivenessProber>(transport_, workers_, setup_.fanout, setup_.probe_every);
  stall_.start(workers_);
}

// The TPU VM is gone and was not recreated: the run ends here, whatever
// attempts are left (or the watcher was signalled meanwhile).
bool Watcher::preempted() {
  if (recovery_.signalled()) {
    signalled_ = true;
  } else {
    message_ = recovery_.message();
    stopped_on_purpose_ = monitor_.state().verdict == RunVerdict::stopped;
  }
  return false;
}

// An attempt that ended without success, or the wait for the next one:
// after a `tpurun down` of the pod's TPU VM (its workers lost with it, a
// restart or a recreate to come), the run ends as stopped (issue 39, finding 9).
bool Watcher::down_stops_run() {
  const RunVerdict verdict = monitor_.state().verdict;
  if (verdict == RunVerdict::succeeded || verdict == RunVerdict::stopped) return false;
  auto down = setup_.down_asked();
  if (!down) return false;
  say(fmt::format("{}: the run is stopped, and its TPU VM is not made again", *down));
  monitor_.stopped_on_purpose(*down);
  message_ = *down;
  stopped_on_purpose_ = true;
  return true;
}

bool Watcher::stopped_during_restart() {
  if (stop_requested(setup_.record.log_dir)) {
    monitor_.observe({}, Clock::now(), true);
  } else if (down_stops_run()) {
  } else {
    say("the watcher was stopped by a signal while restarting; tpurun logs RUN -f watches again");
    signalled_ = true;
  }
  return false;
}

}  // namespace tpurun
