#include "runs/watcher/restart_check.hpp"
#include "tpurun/runs/watcher/watcher.hpp"


#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <fmt/format.h>
#include <memory>
#include <thread>

#include "runs/record/log_dir_layout.hpp"
#include "runs/recreate/preemption_recovery.hpp"
#include "runs/watcher/gang.hpp"
#include "runs/watcher/stall_watch.hpp"
#include "tpurun/runs/launch.hpp"
#include "tpurun/runs/watcher/kept_env.hpp"
#include "tpurun/runs/watcher/liveness.hpp"
#include "tpurun/tpu/kill.hpp"
#include "tpurun/util/diagnostics.hpp"
#include "tpurun/util/file_watch/file_watch.hpp"

namespace tpurun {
namespace {

using Clock = std::chrono::system_clock;

long long now_unix() { return std::chrono::duration_cast<std::chrono::seconds>(Clock::now().time_since_epoch()).count(); }

// A compact fingerprint of what the follower shows, so state.json is rewritten
// on a change or for the heartbeat, not every poll.
std::string fingerprint(const RunState& s) {
  std::string f = fmt::format("{}|{}|{}|{}|{}|{}|", to_string(s.verdict), s.attempt, s.stopped_others, s.message,
                              s.stalled_since, s.idle_since);
  for (const WorkerStatus& w : s.workers) f += fmt::format("{}:{}:{}:{};", w.worker, to_string(w.state), w.pid.value_or(0), w.detail);
  return f;
}

class Watcher {
 public:
  Watcher(const WatcherSetup& setup, Transport& transport, ProcessRunner& processes, const CancelToken& cancel)
      : setup_(setup),
        transport_(transport),
        processes_(processes),
        cancel_(cancel),
        monitor_(policy(setup.record), indices(setup.record), resume_attempt(setup.record)),
        self_(this_process_as_watcher()),
        workers_(setup.record.workers),
        recovery_(setup, transport, processes, cancel, [this](const std::string& text) { say(text); },
                  [this] { save(false); }),
        stall_(setup.record, setup.pod.logs_root, transport, setup.fanout,
               [this](const std::string& text) { say(text); }) {
    if (auto earlier = read_run_state(setup.record.log_dir)) monitor_.resume(earlier->preemptions);
  }

  int run() {
    say(fmt::format("watching run {} (attempt {} of {}, on failure: {}, lost after {}s)", setup_.record.run_id,
                    monitor_.state().attempt, monitor_.state().max_attempts, setup_.record.on_failure,
                    setup_.record.lost_after_ms / 1000));
    auto prober = std::make_unique<LivenessProber>(transport_, workers_, setup_.fanout, setup_.probe_every);
    stall_.start(workers_);
    save(true);
    for (;;) {
      if (cancel_.cancelled() && !stop_requested(setup_.record.log_dir)) {
        say("the watcher was stopped by a signal; the jobs keep running (tpurun logs RUN -f watches again)");
        return 0;
      }
      watch_for_stall();
      const GangAction action = monitor_.observe(sample(*prober), Clock::now(), stop_requested(setup_.record.log_dir));
      switch (action) {
        case GangAction::watch:
          save(false);
          std::this_thread::sleep_for(setup_.poll);
          break;
        case GangAction::stop_others:
          stop_gang();
          break;
        case GangAction::restart:
          if (!restart(prober)) return signalled_ ? 0 : finish();
          break;
        case GangAction::finished:
          if (!preempted_at_end()) return finish();
          if (!relaunch(prober)) return signalled_ ? 0 : finish();
          break;
      }
    }
  }

 private:
  static GangPolicy policy(const RunRecord& r) {
    GangPolicy p;
    p.stop_on_failure = r.on_failure != "continue";
    p.max_attempts = 1 + std::max(0, r.restarts);
    p.lost_after = std::chrono::milliseconds(r.lost_after_ms);
    p.start_timeout = p.lost_after + std::chrono::seconds(60);
    if (!r.restart_on_exit_codes.empty()) p.restart_on = RestartCodes::parse(r.restart_on_exit_codes);
    p.recreate = r.recreate;
    p.max_preemptions = r.max_preemptions;
    return p;
  }
  static std::vector<int> indices(const RunRecord& r) {
    std::vector<int> out;
    for (const Worker& w : r.workers) out.push_back(w.index);
    return out;
  }
  static int resume_attempt(const RunRecord& r) {
    auto state = read_run_state(r.log_dir);
    return state ? std::max(1, state->attempt) : 1;
  }

  // One metrics round at a time (watcher/stall_watch): stop and restart fail the attempt.
  void watch_for_stall() {
    if (monitor_.state().verdict != RunVerdict::running) return;
    if (auto stalled = stall_.look()) monitor_.stalled(stalled->at, stalled->detail, stalled->may_restart);
  }

  void say(const std::string& text) {
    watcher_log().info(text);
    push_notes();
  }
  // The notes (stdout, watcher.log) are read by followers on other hosts
  // too. On NFS a write stays in this client's cache until close, fsync or
  // writeback (about 30 s), so each note is pushed to the server: they are few.
  static void push_notes() {
    static const bool network = [] {
      struct statfs st {};
      return ::fstatfs(STDOUT_FILENO, &st) == 0 && is_network_filesystem(static_cast<long>(st.f_type));
    }();
    if (network) ::fdatasync(STDOUT_FILENO);
  }

  void save(bool force) {
    RunState state = monitor_.state();
    state.message = message_;
    state.stalled_since = stall_.stalled_since();
    state.idle_since = stall_.idle_since();
    state.watcher = self_;
    const std::string now_print = fingerprint(state);
    const long long now = now_unix();
    if (!force && now_print == saved_ && now - self_.heartbeat < kHeartbeatSeconds) return;
    state.watcher.heartbeat = self_.heartbeat = now;
    state.updated_at = format_utc_time(Clock::now());
    try {
      write_run_state(setup_.record.log_dir, state);
      saved_ = now_print;
    } catch (const std::exception& e) {
      say(fmt::format("cannot record the run's state: {}", e.what()));
    }
  }

  std::vector<WorkerSample> sample(LivenessProber& prober) {
    const int attempt = monitor_.state().attempt;
    auto probes = prober.take();
    std::vector<WorkerSample> samples;
    std::map<int, ProbeJob> to_probe;
    const std::vector<WorkerJob> jobs = read_worker_jobs(setup_.record.log_dir, workers_, attempt);
    for (size_t i = 0; i < workers_.size(); ++i) {
      const Worker& w = workers_[i];
      const WorkerJob& job = jobs[i];
      WorkerSample s{w.index, job.pid, job.exit_code, Probe::none, ""};
      if (auto it = probes.find(w.index); it != probes.end() && !job.exit_code) {
        s.probe = it->second.probe;
        s.probe_error = it->second.error;
        // This host may still have "no such file" cached for the exit record
        // (NFS): the worker's word counts, so a finished job is never lost.
        if (it->second.exit_code) s.exit_code = it->second.exit_code;
      }
      if (auto it = launch_failures_.find(w.index); it != launch_failures_.end()) s.exit_code = it->second;
      if (job.pid && !s.exit_code) to_probe[w.index] = {*job.pid, job_file(setup_.record.log_dir, w.index, attempt, "exit")};
      samples.push_back(s);
    }
    prober.set_jobs(std::move(to_probe));
    return samples;
  }

  void stop_gang() {
    const auto& failure = monitor_.state().first_failure;
    const std::string what = failure->how == "stalled"
                                 ? "the run " + failure->detail
                                 : worker_name(workers_, failure->worker) + " " + failure->detail + " first";
    say(fmt::format("{}: stopping the run's jobs on every worker (TERM, KILL after {}s)", what,
                    setup_.record.grace_ms / 1000));
    message_ = "stopping the other workers";
    save(true);
    KillRequest request;
    request.device_globs = setup_.pod.device_globs;
    request.options.run_id = setup_.record.run_id;
    request.grace_ms = static_cast<int>(setup_.record.grace_ms);
    for (const WorkerKill& k : kill_on_workers(workers_, transport_, setup_.fanout, cancel_, request)) {
      const size_t n = k.gone_term.size() + k.gone_kill.size();
      if (!k.error.empty()) {
        say(fmt::format("{}: {}", k.worker.display(), k.error));
      } else if (n > 0) {
        say(fmt::format("{}: stopped {} process{}{}", k.worker.display(), n, n == 1 ? "" : "es",
                        k.gone_kill.empty() ? "" : fmt::format(" ({} needed SIGKILL)", k.gone_kill.size())));
      }
    }
    monitor_.others_stopped();
    message_.clear();
    save(true);
  }

  // Waits `d` unless the run is stopped meanwhile. False when it was.
  bool pause(std::chrono::milliseconds d) {
    const auto until = std::chrono::steady_clock::now() + d;
    while (std::chrono::steady_clock::now() < until) {
      if (cancel_.cancelled() || stop_requested(setup_.record.log_dir)) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return true;
  }

  bool restart(std::unique_ptr<LivenessProber>& prober) {
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
  bool relaunch(std::unique_ptr<LivenessProber>& prober) {
    const RunState& state = monitor_.state();
    std::string last;
    RestartCheck check;
    for (;;) {
      check = check_restart(setup_.record, setup_.pod, transport_, processes_, setup_.fanout, cancel_);
      if (!check.gone.empty()) {
        if (recovery_.recover(monitor_, check, workers_)) continue;
        return preempted();
      }
      if (check.ready()) break;
      if (check.waiting_for != last) say(check.waiting_for);
      last = check.waiting_for;
      message_ = check.waiting_for;
      save(false);
      if (!pause(std::chrono::seconds(3))) return stopped_during_restart();
    }
    move_to(check.workers, prober);
    const int next = state.attempt + 1;
    LaunchSpec spec{setup_.record.run_id, setup_.record.log_dir, setup_.record.staged_dir, setup_.record.command,
                    setup_.env, static_cast<int>(setup_.pod.workers.size()), next, state.max_attempts, std::nullopt};
    if (spec.num_workers == 0) spec.num_workers = static_cast<int>(setup_.record.workers.size());
    spec.slices = setup_.record.megascale;
    if (spec.slices && !workers_.empty()) spec.slices->coordinator = workers_.front().host;  // slice 0's worker 0
    monitor_.begin_attempt(next);
    stall_.clear();
    launch_failures_.clear();
    prober->set_jobs({});
    prober->take();
    message_.clear();
    LaunchResult launched = launch_on_workers(spec, workers_, transport_, setup_.fanout, cancel_);
    for (const WorkerOutcome& o : launched.outcomes) {
      if (launched.pids.count(o.worker.index)) continue;
      say(fmt::format("{}: {}", o.worker.display(), o.error() ? o.error()->message : "did not start"));
      launch_failures_[o.worker.index] = 255;
    }
    say(fmt::format("attempt {} launched on {} of {} workers", next, launched.pids.size(), workers_.size()));
    recovery_.resumed(monitor_, next);
    save(true);
    return true;
  }

  // An attempt failed with no restart left (or none allowed for its exit
  // code): was the TPU VM preempted? With --recreate that is worth an attempt
  // of its own. True when it was recreated and the run goes on.
  bool preempted_at_end() {
    const RunVerdict verdict = monitor_.state().verdict;
    const bool lost = verdict == RunVerdict::lost;
    if (!setup_.record.recreate || signalled_ || (!lost && verdict != RunVerdict::failed)) return false;
    vm_checked_ = true;
    RestartCheck check = check_tpu_vms(setup_.record, setup_.pod, processes_);
    if (check.gone.empty()) return false;
    if (!lost) say(fmt::format("attempt {} failed, and {}", monitor_.state().attempt, check.gone));
    if (recovery_.recover(monitor_, check, workers_)) return true;
    preempted();
    return false;
  }

  // The workers' current addresses (a gcloud pod's TPU VM may have new ones
  // after a stop and start): from now on the run is watched and relaunched there.
  void move_to(const std::vector<Worker>& now, std::unique_ptr<LivenessProber>& prober) {
    bool moved = false;
    for (size_t i = 0; i < now.size() && i < workers_.size(); ++i) {
      // A recreated TPU VM has a new id, so new host key aliases, maybe on the old addresses.
      if (now[i].host_key_alias != workers_[i].host_key_alias) moved = true;
      if (now[i].host == workers_[i].host) continue;
      say(fmt::format("{}: the TPU VM's worker is at {} now (was {})", now[i].name(), now[i].host, workers_[i].host));
      moved = true;
    }
    if (!moved) return;
    workers_ = now;
    prober = std::make_unique<LivenessProber>(transport_, workers_, setup_.fanout, setup_.probe_every);
    stall_.start(workers_);
  }

  // The TPU VM is gone and was not recreated: the run ends here, whatever
  // attempts are left (or the watcher was signalled meanwhile).
  bool preempted() {
    if (recovery_.signalled()) {
      signalled_ = true;
    } else {
      message_ = recovery_.message();
    }
    return false;
  }

  bool stopped_during_restart() {
    if (stop_requested(setup_.record.log_dir)) {
      monitor_.observe({}, Clock::now(), true);
    } else {
      say("the watcher was stopped by a signal while restarting; tpurun logs RUN -f watches again");
      signalled_ = true;
    }
    return false;
  }

  int finish() {
    // A lost gang on a gcloud pod: was the TPU VM preempted? Then say so.
    // (With --recreate, preempted_at_end() has asked already: nothing is created here.)
    if (monitor_.state().verdict == RunVerdict::lost && !signalled_ && !vm_checked_ && !setup_.record.recreate) {
      if (RestartCheck check = check_tpu_vms(setup_.record, setup_.pod, processes_); !check.gone.empty()) {
        recovery_.recover(monitor_, check, workers_);
        preempted();
      }
    }
    monitor_.give_up();
    stall_.clear();
    const RunState& s = monitor_.state();
    if (s.verdict != RunVerdict::preempted) message_.clear();
    save(true);
    if (!setup_.env_dir.empty()) forget_kept_env(setup_.env_dir, setup_.record.run_id);
    say(fmt::format("run {} {} (attempt {} of {})", setup_.record.run_id, to_string(s.verdict), s.attempt,
                    s.max_attempts));
    return 0;
  }

  const WatcherSetup& setup_;
  Transport& transport_;
  ProcessRunner& processes_;
  const CancelToken& cancel_;
  GangMonitor monitor_;
  WatcherInfo self_;
  std::string message_;
  std::string saved_;
  std::map<int, int> launch_failures_;  // worker -> synthetic exit code for the attempt
  bool signalled_ = false;
  std::vector<Worker> workers_;  // where the run's jobs are: the record's, moved when the TPU VM's addresses change
  PreemptionRecovery recovery_;
  bool vm_checked_ = false;  // the TPU VM was described after the last attempt ended
  StallWatch stall_;  // --stall-after, --on-stall, the board's idle mark
};

}  // namespace

int watch_run(const WatcherSetup& setup, Transport& transport, ProcessRunner& processes,
                  const CancelToken& cancel) {
  return Watcher(setup, transport, processes, cancel).run();
}

}  // namespace tpurun
