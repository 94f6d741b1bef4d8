#include "runs/watcher/gang.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/util/signal_name.hpp"

namespace tpurun {
namespace {

bool ended(WorkerState s) {
  return s == WorkerState::succeeded || s == WorkerState::failed || s == WorkerState::lost ||
         s == WorkerState::stopped;
}

}  // namespace

GangPolicy::GangPolicy(const GangRules& rules)
    : stop_on_failure(rules.on_failure != "continue"),
      max_attempts(1 + std::max(0, rules.restarts)),
      lost_after(rules.lost_after_ms),
      start_timeout(lost_after + std::chrono::seconds(60)),
      restart_on(rules.restart_on_exit_codes.empty() ? std::nullopt
                                                      : RestartCodes::parse(rules.restart_on_exit_codes)),
      recreate(rules.recreate),
      max_preemptions(rules.max_preemptions) {}

std::vector<int> worker_indices(const RunRecord& r) {
  std::vector<int> out;
  for (const Worker& w : r.workers) out.push_back(w.index);
  return out;
}

std::string exit_code_text(int code) {
  if (code > 128 && code < 128 + 65) return fmt::format("killed by SIG{}", signal_abbrev(code - 128));
  return fmt::format("exited {}", code);
}

GangMonitor::GangMonitor(GangPolicy policy, std::vector<int> workers, int attempt) : policy_(policy) {
  state_.max_attempts = policy.max_attempts;
  state_.on_failure = policy.stop_on_failure ? "stop" : "continue";
  for (int w : workers) state_.workers.push_back(WorkerStatus{w, WorkerState::pending, {}, {}, ""});
  begin_attempt(attempt);
}

void GangMonitor::begin_attempt(int attempt) {
  state_.attempt = attempt;
  state_.verdict = RunVerdict::running;
  state_.stopped_others = false;
  stopping_ = false;
  stop_began_.reset();
  failed_this_attempt_ = false;
  stalled_ = false;
  no_restart_ = false;
  for (WorkerStatus& w : state_.workers) w = WorkerStatus{w.worker, WorkerState::pending, {}, {}, ""};
  trackers_.assign(state_.workers.size(), Tracker{});
}

void GangMonitor::note_failure(const WorkerStatus& w, Time at, std::optional<Time> since) {
  if (failed_this_attempt_) return;
  failed_this_attempt_ = true;
  GangFailure f;
  f.worker = w.worker;
  f.at = format_utc_time(at);
  f.detail = w.detail;
  if (w.state == WorkerState::lost) {
    f.how = "lost";
    f.since = format_utc_time(since.value_or(at));
  } else if (w.exit_code && *w.exit_code > 128 && *w.exit_code < 128 + 65) {
    f.how = "signal";
    f.exit_code = *w.exit_code;
    f.signal = signal_abbrev(*w.exit_code - 128);
  } else {
    f.how = "exit";
    f.exit_code = w.exit_code.value_or(1);
  }
  state_.first_failure = f;
}

void GangMonitor::update(WorkerStatus& w, Tracker& t, const WorkerSample& s, Time now) {
  if (ended(w.state) && w.state != WorkerState::lost) return;
  if (!s.never_started.empty() && w.state != WorkerState::lost) {
    w.state = WorkerState::lost;
    w.detail = "its job never started: " + s.never_started;
    note_failure(w, s.exited_at.value_or(now), s.exited_at.value_or(now));
    return;
  }
  if (s.exit_code) {
    if (w.state == WorkerState::lost) return;  // too late: the gang already counted it lost
    w.exit_code = s.exit_code;
    // Ended after the stop began (or when, is not known): tpurun stopped it.
    const bool stopped = stop_began_ && (!s.exited_at || *s.exited_at >= *stop_began_) &&
                         !(failed_this_attempt_ && state_.first_failure->worker == w.worker);
    if (stopped) {
      w.state = WorkerState::stopped;
      w.detail = fmt::format("stopped by tpurun ({})", exit_code_text(*s.exit_code));
    } else if (*s.exit_code == 0) {
      w.state = WorkerState::succeeded;
      w.detail = "exited 0";
    } else {
      w.state = WorkerState::failed;
      w.detail = exit_code_text(*s.exit_code);
      note_failure(w, s.exited_at.value_or(now), std::nullopt);
    }
    return;
  }
  if (w.state == WorkerState::lost) return;
  if (s.pid) {
    w.pid = s.pid;
    if (w.state == WorkerState::pending) w.state = WorkerState::running;
  } else if (w.state == WorkerState::pending) {
    if (!t.pending_since) t.pending_since = now;
    if (now - *t.pending_since >= policy_.start_timeout) {
      w.state = WorkerState::lost;
      w.detail = "its job never started (no pid record)";
      note_failure(w, now, t.pending_since);
    }
    return;
  }
  switch (s.probe) {
    case Probe::none:
      return;
    case Probe::alive:
      t = Tracker{};
      w.state = WorkerState::running;
      w.detail.clear();
      return;
    case Probe::dead:
      t.unreachable_since.reset();
      // Twice in a row: the wrapper had time to write its exit record.
      if (++t.dead_probes >= 2) {
        w.state = WorkerState::lost;
        w.detail = "its job is gone without an exit record (killed with SIGKILL, OOM-killed, or the host rebooted)";
        note_failure(w, now, now);
      }
      return;
    case Probe::unreachable:
      t.dead_probes = 0;
      if (!t.unreachable_since) t.unreachable_since = now;
      w.detail = fmt::format("unreachable since {}{}", format_utc_time(*t.unreachable_since),
                             s.probe_error.empty() ? "" : ": " + s.probe_error);
      if (now - *t.unreachable_since >= policy_.lost_after) {
        w.state = WorkerState::lost;
        note_failure(w, now, t.unreachable_since);
      }
      return;
  }
}

bool GangMonitor::all_ended() const {
  for (const WorkerStatus& w : state_.workers) {
    if (!ended(w.state)) return false;
  }
  return true;
}

bool GangMonitor::retryable() const {
  if (!policy_.restart_on || !state_.first_failure) return true;
  const GangFailure& f = *state_.first_failure;
  if (f.how == "stalled") return true;  // --on-stall restart asked for it; no exit code to judge
  return policy_.restart_on->contains(f.how == "lost" ? 255 : f.exit_code);
}

GangAction GangMonitor::finish(bool stop_requested) {
  if (failed_this_attempt_ && !stop_requested && !no_restart_ && state_.attempt < state_.max_attempts &&
      retryable()) {
    state_.verdict = RunVerdict::restarting;
    for (WorkerStatus& w : state_.workers) {
      if (w.state != WorkerState::succeeded || policy_.stop_on_failure) w.state = WorkerState::restarting;
    }
    return GangAction::restart;
  }
  if (stop_requested) {
    state_.verdict = RunVerdict::stopped;
  } else if (failed_this_attempt_) {
    state_.verdict = state_.first_failure->how == "lost" ? RunVerdict::lost : RunVerdict::failed;
  } else {
    state_.verdict = RunVerdict::succeeded;
  }
  return GangAction::finished;
}

void GangMonitor::give_up() {
  if (is_final(state_.verdict)) return;
  state_.verdict = state_.first_failure && state_.first_failure->how == "lost" ? RunVerdict::lost : RunVerdict::failed;
  not_restarted("the run ended before its restart");
}

// A run that ends while its workers wait for a restart: their jobs were
// stopped for it, and no new one came (an ended run never says "restarting").
void GangMonitor::not_restarted(const std::string& why) {
  for (WorkerStatus& w : state_.workers) {
    if (w.state != WorkerState::restarting) continue;
    w.state = WorkerState::stopped;
    w.detail += (w.detail.empty() ? "" : "; ") + why;
  }
}

void GangMonitor::stalled(Time now, const std::string& detail, bool may_restart) {
  gang_failed(now, "stalled", detail, may_restart);
}

void GangMonitor::append_detail(int worker, const std::string& text) {
  for (WorkerStatus& w : state_.workers) {
    if (w.worker == worker) w.detail += (w.detail.empty() ? "" : "; ") + text;
  }
}

void GangMonitor::out_of_space(Time now, const std::string& detail) {
  gang_failed(now, "out_of_space", detail, false);
}

bool GangMonitor::out_of_space_at_end(Time now, const std::string& detail) {
  if (state_.verdict != RunVerdict::succeeded) return false;
  state_.verdict = RunVerdict::failed;
  GangFailure f;
  f.worker = -1;  // no one worker: the gang
  f.how = "out_of_space";
  f.at = format_utc_time(now);
  f.detail = detail;
  state_.first_failure = f;
  return true;
}

void GangMonitor::gang_failed(Time now, const std::string& how, const std::string& detail, bool may_restart) {
  if (failed_this_attempt_ || is_final(state_.verdict)) return;
  failed_this_attempt_ = stalled_ = true;
  no_restart_ = !may_restart;
  GangFailure f;
  f.worker = -1;  // no one worker: the gang
  f.how = how;
  f.at = format_utc_time(now);
  f.detail = detail;
  state_.first_failure = f;
}

bool GangMonitor::preempted(Preemption what) {
  // lost or failed: because of it
  if (is_final(state_.verdict) && state_.verdict != RunVerdict::lost && state_.verdict != RunVerdict::failed) {
    return false;
  }
  what.attempt = state_.attempt;
  state_.preemptions.push_back(std::move(what));
  if (!policy_.recreate || static_cast<int>(state_.preemptions.size()) > policy_.max_preemptions) {
    state_.verdict = RunVerdict::preempted;
    return false;
  }
  state_.max_attempts += 1;  // this attempt was the cloud's doing, not the job's
  state_.verdict = RunVerdict::restarting;
  for (WorkerStatus& w : state_.workers) w.state = WorkerState::restarting;
  return true;
}

void GangMonitor::recreate_failed(const std::string& why) {
  if (state_.verdict != RunVerdict::restarting || state_.preemptions.empty()) return;
  state_.max_attempts -= 1;
  state_.preemptions.back().action = "not recreated";
  state_.preemptions.back().why = why;
  state_.verdict = RunVerdict::preempted;
  not_restarted("not recreated: " + why);
}

bool GangMonitor::preempted_while_recreating(Preemption what) {
  if (state_.verdict != RunVerdict::restarting || state_.preemptions.empty()) return preempted(std::move(what));
  what.attempt = state_.attempt;
  state_.preemptions.push_back(std::move(what));
  if (static_cast<int>(state_.preemptions.size()) <= policy_.max_preemptions) return true;
  const std::string why = fmt::format("{} preemptions, and --max-preemptions {} allows {}", state_.preemptions.size(),
                                      policy_.max_preemptions, policy_.max_preemptions);
  recreate_failed(why);
  return false;
}

void GangMonitor::stopped_on_purpose(const std::string& why) {
  if (state_.verdict == RunVerdict::succeeded) return;
  state_.verdict = RunVerdict::stopped;
  not_restarted(why);
}

void GangMonitor::resume(const std::vector<Preemption>& earlier) {
  state_.preemptions = earlier;
  // One more attempt for each attempt that preemptions ended and a recreate
  // followed: a VM preempted again during its recreate grants no second one.
  std::set<int> granted;
  for (const Preemption& p : earlier) {
    if (p.recreated()) granted.insert(p.attempt);
  }
  state_.max_attempts += static_cast<int>(granted.size());
}

GangAction GangMonitor::observe(const std::vector<WorkerSample>& samples, Time now, bool stop_requested,
                                std::optional<Time> stop_at) {
  if (stop_requested && !stop_began_) stop_began_ = stop_at.value_or(now);
  for (const WorkerSample& s : samples) {
    for (size_t i = 0; i < state_.workers.size(); ++i) {
      if (state_.workers[i].worker == s.worker) update(state_.workers[i], trackers_[i], s, now);
    }
  }
  if (stop_requested) {
    // `tpurun kill --run` does the killing; the run ends here, as stopped.
    for (WorkerStatus& w : state_.workers) {
      if (!ended(w.state)) {
        w.state = WorkerState::stopped;
        w.detail = "stopped by tpurun kill";
      }
    }
    return finish(true);
  }
  if (failed_this_attempt_ && (policy_.stop_on_failure || stalled_) && !stopping_) {
    stopping_ = true;
    stop_began_ = now;
    return GangAction::stop_others;
  }
  if (all_ended()) return finish(false);
  return GangAction::watch;
}

}  // namespace tpurun
