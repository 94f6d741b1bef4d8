#include "tpurun/runs/watcher/watcher.hpp"


#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <memory>
#include <thread>

#include "runs/record/log_dir_layout.hpp"
#include "runs/recreate/preemption_recovery.hpp"
#include "runs/watcher/flight_recorder.hpp"
#include "runs/watcher/gang.hpp"
#include "runs/watcher/kept_env.hpp"
#include "runs/watcher/liveness.hpp"
#include "runs/watcher/restart_check.hpp"
#include "runs/watcher/stall_watch.hpp"
#include "runs/watcher/watcher_impl.hpp"
#include "tpurun/runs/launch/launch.hpp"
#include "tpurun/tpu/kill.hpp"
#include "tpurun/util/diagnostics.hpp"
#include "tpurun/util/duration.hpp"
#include "tpurun/util/file_watch/file_watch.hpp"
#include "tpurun/util/text.hpp"

namespace tpurun {
namespace {

using Clock = std::chrono::system_clock;

// Less free than this on the logs root, and the run is out of space.
constexpr std::uint64_t kLowSpace = 1 << 20;

long long now_unix() { return std::chrono::duration_cast<std::chrono::seconds>(Clock::now().time_since_epoch()).count(); }

// A compact fingerprint of what the follower shows, so state.json is rewritten
// on a change or for the heartbeat, not every poll.
std::string fingerprint(const RunState& s) {
  std::string f = fmt::format("{}|{}|{}|{}|{}|{}|", to_string(s.verdict), s.attempt, s.stopped_others, s.message,
                              s.stalled_since, s.idle_since);
  for (const WorkerStatus& w : s.workers) f += fmt::format("{}:{}:{}:{};", w.worker, to_string(w.state), w.pid.value_or(0), w.detail);
  return f;
}

// Runs that an older tpurun recorded kept no HostKeyAlias: a gcloud pod's
// workers get theirs from the pod as described now (same index, same
// address), so that their host keys are checked where gcloud records them.
std::vector<Worker> with_aliases(std::vector<Worker> recorded, const std::vector<Worker>& pod) {
  for (Worker& w : recorded) {
    for (const Worker& p : pod) {
      if (w.host_key_alias.empty() && p.index == w.index && p.host == w.host) w.host_key_alias = p.host_key_alias;
    }
  }
  return recorded;
}

}  // namespace

Watcher::Watcher(const WatcherSetup& setup, Transport& transport, ProcessRunner& processes, const CancelToken& cancel)
    : setup_(setup),
      transport_(transport),
      processes_(processes),
      cancel_(cancel),
      monitor_(GangPolicy(setup.record.gang), worker_indices(setup.record), resume_attempt(setup.record)),
      self_(this_process_as_watcher()),
      workers_(with_aliases(setup.record.workers, setup.pod.workers)),
      recovery_(setup, transport, processes, cancel, [this](const std::string& text) { say(text); },
                [this] { save(false); }),
      stall_(setup.record, setup.pod.logs_root, transport, setup.fanout,
             [this](const std::string& text) { say(text); }) {
  if (auto earlier = read_run_state(setup.record.log_dir)) monitor_.resume(earlier->preemptions);
  if (!setup.record.worker_log_dir.empty()) {
    mirror_ = std::make_unique<LogMirror>(workers_, transport, setup.record.worker_log_dir, setup.record.log_dir);
  }
}

int Watcher::run() {
  say(fmt::format("watching run {} (attempt {} of {}, on failure: {}, lost after {}s)", setup_.record.run_id,
                  monitor_.state().attempt, monitor_.state().max_attempts, setup_.record.gang.on_failure,
                  setup_.record.gang.lost_after_ms / 1000));
  auto prober = std::make_unique<LivenessProber>(transport_, workers_, setup_.fanout, setup_.probe_every);
  stall_.start(workers_);
  if (mirror_) mirror_->start();
  make_spare();
  save(true);
  for (;;) {
    if (cancel_.cancelled() && !stop_requested(setup_.record.log_dir)) {
      release_spare();
      say("the watcher was stopped by a signal; the jobs keep running (tpurun logs RUN -f watches again)");
      return 0;
    }
    if (run_dir_gone()) {
      // Removed (rm -rf of the run, or of ~/.tpurun): there is nowhere to
      // record anything, and no one to tell. The jobs are not touched.
      release_spare();
      return 0;
    }
    watch_for_stall();
    watch_space();
    const auto stop_at = stop_requested_at(setup_.record.log_dir);
    const GangAction action = monitor_.observe(sample(*prober), Clock::now(), stop_at.has_value(), stop_at);
    switch (action) {
      case GangAction::watch:
        save(false);
        std::this_thread::sleep_for(setup_.poll);
        break;
      case GangAction::stop_others:
        stop_gang();
        break;
      case GangAction::restart:
        if (down_stops_run() || !restart(prober)) return signalled_ ? 0 : finish();
        break;
      case GangAction::finished:
        if (down_stops_run() || !preempted_at_end()) return finish();
        if (!relaunch(prober)) return signalled_ ? 0 : finish();
        break;
    }
  }
}

int Watcher::resume_attempt(const RunRecord& r) {
  auto state = read_run_state(r.log_dir);
  return state ? std::max(1, state->attempt) : 1;
}

// One metrics round at a time (watcher/stall_watch): stop and restart fail the attempt.
void Watcher::watch_for_stall() {
  if (monitor_.state().verdict != RunVerdict::running) return;
  if (auto stalled = stall_.look()) monitor_.stalled(stalled->at, stalled->detail, stalled->may_restart);
}

void Watcher::say(const std::string& text) {
  watcher_log().info(text);
  push_notes();
}

// The notes (stdout, watcher.log) are read by followers on other hosts
// too. On NFS a write stays in this client's cache until close, fsync or
// writeback (about 30 s), so each note is pushed to the server: they are few.
void Watcher::push_notes() {
  static const bool network = [] {
    struct statfs st {};
    return ::fstatfs(STDOUT_FILENO, &st) == 0 && is_network_filesystem(static_cast<long>(st.f_type));
  }();
  if (network) ::fdatasync(STDOUT_FILENO);
}

void Watcher::save(bool force) {
  RunState state = monitor_.state();
  state.message = message_;
  state.stalled_since = stall_.stalled_since();
  state.idle_since = stall_.idle_since();
  state.watcher = self_;
  state.logs_missing = logs_missing_;
  const std::string now_print = fingerprint(state);
  const long long now = now_unix();
  if (!force && now_print == saved_ && now - self_.heartbeat < kHeartbeatSeconds) return;
  state.watcher.heartbeat = self_.heartbeat = now;
  state.updated_at = format_utc_time(Clock::now());
  for (int tries = 0; tries < 2; ++tries) {
    try {
      write_run_state(setup_.record.log_dir, state);
      saved_ = now_print;
      return;
    } catch (const std::exception& e) {
      // A full disk: the spare's room is for this, once no job can take it
      // first (out of space, the jobs are stopped before the spare goes).
      const bool jobs_may_write = out_of_space_ && !monitor_.state().stopped_others &&
                                  monitor_.state().verdict == RunVerdict::running;
      if (jobs_may_write) return;  // said once already, by watch_space
      if (tries == 0 && ::access(watcher_spare_path(setup_.record.log_dir).c_str(), F_OK) == 0) {
        release_spare();
        continue;
      }
      say(fmt::format("cannot record the run's state: {}", e.what()));
    }
  }
}

std::vector<WorkerSample> Watcher::sample(LivenessProber& prober) {
  const int attempt = monitor_.state().attempt;
  auto probes = prober.take();
  std::vector<WorkerSample> samples;
  std::map<int, ProbeJob> to_probe;
  const std::vector<WorkerJob> jobs = read_worker_jobs(setup_.record.log_dir, workers_, attempt);
  for (size_t i = 0; i < workers_.size(); ++i) {
    const Worker& w = workers_[i];
    const WorkerJob& job = jobs[i];
    WorkerSample s{w.index, job.pid, job.exit_code, Probe::none, "", job.exited_at, job.never_started};
    if (auto it = probes.find(w.index); it != probes.end() && !job.exit_code) {
      s.probe = it->second.probe;
      s.probe_error = it->second.error;
      // This host may still have "no such file" cached for the exit record
      // (NFS): the worker's word counts, so a finished job is never lost.
      if (it->second.exit_code) s.exit_code = it->second.exit_code;
    }
    if (auto it = launch_failures_.find(w.index); it != launch_failures_.end()) s.never_started = it->second;
    if (job.pid && !s.exit_code) {
      to_probe[w.index] = {*job.pid, job_file(workers_log_dir(setup_.record), w.index, attempt, "exit")};
    }
    samples.push_back(s);
  }
  prober.set_jobs(std::move(to_probe));
  return samples;
}

void Watcher::stop_gang() {
  const auto& failure = monitor_.state().first_failure;
  const std::string what = failure->how == "stalled"        ? "the run " + failure->detail
                           : failure->how == "out_of_space" ? failure->detail.substr(0, failure->detail.find(':'))
                                                            : worker_name(workers_, failure->worker) + " " +
                                                                  failure->detail + " first";
  say(fmt::format("{}: stopping the run's jobs on every worker (TERM, KILL after {}s)", what,
                  setup_.record.gang.grace_ms / 1000));
  // The flight recorder: the evidence of where the jobs were, before they go.
  const bool lost = failure->how == "lost";
  const std::string reason = failure->how == "stalled" ? "stalled" : lost ? "lost" : "failed";
  if (failure->how != "out_of_space") {
    message_ = "taking the stacks of the run's jobs";
    save(true);
    const std::string recorded = record_flight(setup_.record, workers_, lost ? failure->worker : -1, reason,
                                               transport_, setup_.fanout, cancel_);
    say(recorded);
    monitor_.stacks_taken(recorded);
  }
  message_ = "stopping the other workers";
  save(true);
  KillRequest request;
  request.device_globs = setup_.pod.device_globs;
  request.options.run_id = setup_.record.run_id;
  request.grace_ms = static_cast<int>(setup_.record.gang.grace_ms);
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

int Watcher::finish() {
  // A lost gang on a gcloud pod: was the TPU VM preempted? Then say so.
  // (With --recreate, preempted_at_end() has asked already: nothing is created here.)
  if (monitor_.state().verdict == RunVerdict::lost && !signalled_ && !vm_checked_ && !setup_.record.gang.recreate) {
    if (RestartCheck check = check_tpu_vms(setup_.record, setup_.pod, processes_); !check.gone.empty()) {
      recovery_.recover(monitor_, check, workers_);
      preempted();
    }
  }
  if (mirror_) {
    mirror_->finish();  // the last of every worker's output, before the verdict is written
    logs_missing_ = mirror_->missing();
    for (const MissingLogs& m : logs_missing_) say(missing_logs_text(m));
    // A job that filled its disk and ended before a round saw it: its
    // output is not whole there, so the run did not succeed.
    if (auto why = worker_out_of_space(); why && !out_of_space_ && monitor_.out_of_space_at_end(Clock::now(), *why)) {
      say(*why);
    }
  }
  monitor_.give_up();
  stall_.clear();
  const RunState& s = monitor_.state();
  if (s.verdict == RunVerdict::succeeded || (s.verdict == RunVerdict::failed && !s.stopped_others)) stop_leftovers();
  if (s.verdict != RunVerdict::preempted && !stopped_on_purpose_) message_.clear();
  release_spare();
  save(true);
  if (!setup_.env_dir.empty()) forget_kept_env(setup_.env_dir, setup_.record.run_id);
  say(fmt::format("run {} {} (attempt {} of {})", setup_.record.run_id, to_string(s.verdict), s.attempt,
                  s.max_attempts));
  return 0;
}

void Watcher::watch_space() {
  if (out_of_space_ || monitor_.state().verdict != RunVerdict::running) return;
  if (auto why = worker_out_of_space()) {
    out_of_space_ = true;
    say(*why);
    monitor_.out_of_space(Clock::now(), *why);
    return;
  }
  struct statvfs st {};
  if (::statvfs(setup_.record.log_dir.c_str(), &st) != 0) return;
  const std::uint64_t free = static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
  if (free >= kLowSpace) return;
  out_of_space_ = true;  // the spare stays until the jobs are stopped (save)
  const std::string& root = setup_.pod.logs_root.empty() ? setup_.record.log_dir : setup_.pod.logs_root;
  const std::string why = fmt::format(
      "out of space on the logs root {} ({} free): the jobs' output is being lost; free space there (`tpurun gc`, or "
      "remove old runs' logs under {}), then stage again",
      root, human_size(free), root);
  say(why);
  monitor_.out_of_space(Clock::now(), why);
}

std::optional<std::string> Watcher::worker_out_of_space() const {
  auto low = mirror_ ? mirror_->low_space() : std::nullopt;
  if (!low) return std::nullopt;
  return fmt::format(
      "out of space on {}'s log dir {} ({} free): the job's output there is being lost; free space on that "
      "worker (`tpurun gc`, or remove old runs' logs under ~/.tpurun/logs there), then stage again",
      low->first.display(), setup_.record.worker_log_dir, human_size(low->second));
}

void Watcher::make_spare() {
  const std::string path = watcher_spare_path(setup_.record.log_dir);
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return;
  static const std::string zeros(64 * 1024, '\0');
  bool ok = true;
  for (int i = 0; i < 4 && ok; ++i) ok = std::fwrite(zeros.data(), 1, zeros.size(), f) == zeros.size();
  if (std::fclose(f) != 0 || !ok) ::unlink(path.c_str());  // no room even now: nothing is kept
}

// Only a run dir that is not there (ENOENT) is gone; a mount that does not
// answer for a moment is not.
bool Watcher::run_dir_gone() const {
  struct stat st {};
  return ::stat(setup_.record.log_dir.c_str(), &st) != 0 && errno == ENOENT;
}

void Watcher::release_spare() { ::unlink(watcher_spare_path(setup_.record.log_dir).c_str()); }

void Watcher::stop_leftovers() {
  KillRequest request;
  request.device_globs = setup_.pod.device_globs;
  request.options.run_id = setup_.record.run_id;
  request.options.tpu_holders_only = true;
  request.grace_ms = static_cast<int>(setup_.record.gang.grace_ms);
  std::vector<Worker> ended;  // lost workers cannot be asked
  for (const Worker& w : workers_) {
    for (const WorkerStatus& s : monitor_.state().workers) {
      if (s.worker == w.index && s.state != WorkerState::lost) ended.push_back(w);
    }
  }
  for (const WorkerKill& k : kill_on_workers(ended, transport_, setup_.fanout, cancel_, request)) {
    const size_t n = k.gone_term.size() + k.gone_kill.size();
    if (n == 0) continue;
    std::vector<std::string> who;
    for (const Victim& v : k.plan.victims) who.push_back(fmt::format("pid {} {}", v.process.pid, short_command(v.process.command)));
    say(fmt::format("{}: {} of the run's processes still held the TPU after its job ended ({}): stopped {}",
                    k.worker.display(), n, fmt::join(who, ", "), n == 1 ? "it" : "them"));
    monitor_.append_detail(k.worker.index, fmt::format("{} leftover process{} held the TPU, stopped", n,
                                                      n == 1 ? "" : "es"));
  }
}

int watch_run(const WatcherSetup& setup, Transport& transport, ProcessRunner& processes, const CancelToken& cancel) {
  return Watcher(setup, transport, processes, cancel).run();
}

}  // namespace tpurun
