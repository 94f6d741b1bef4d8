#pragma once
// The gang rule as a pure state machine: a run makes progress only while every
// worker does, so the first worker that fails (non-zero exit, or lost) ends
// the attempt for all of them. The watcher feeds it what it sees; it says
// what to do. No I/O, no clock of its own: unit-tested on its own.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "runs/watcher/liveness.hpp"
#include "tpurun/runs/record/run_record.hpp"
#include "tpurun/runs/record/run_state.hpp"
#include "tpurun/runs/watcher/restart_codes.hpp"

namespace tpurun {

// The gang rules a run was staged with (run.json's), as the monitor applies
// them; a default GangPolicy is GangRules' defaults.
struct GangPolicy {
  GangPolicy() : GangPolicy(GangRules{}) {}
  explicit GangPolicy(const GangRules& rules);

  bool stop_on_failure;  // --on-failure stop (else continue)
  int max_attempts;      // 1 + --restarts
  std::chrono::milliseconds lost_after;
  // A job with no pid record this long after its attempt began never started
  // (its launcher was cut off): the worker is lost.
  std::chrono::milliseconds start_timeout;
  // --restart-on-exit-codes: a failure restarts only when its exit code is one
  // of these (a lost worker counts as 255); unset: every failure may.
  std::optional<RestartCodes> restart_on;
  // --recreate: a TPU VM found preempted is created again and the run goes on,
  // at most max_preemptions times; such an attempt does not use up a restart.
  bool recreate;
  int max_preemptions;
};
// The run's workers' global indices, in order.
std::vector<int> worker_indices(const RunRecord& record);

// One look at one worker, for the current attempt.
struct WorkerSample {
  int worker = 0;
  std::optional<int> pid;        // its pid record
  std::optional<int> exit_code;  // its exit record
  Probe probe = Probe::none;     // a fresh probe result, or none
  std::string probe_error;       // why it was unreachable
  // When the exit record was written (its mtime), when known: a job that
  // ended before a stop keeps its own result, and a watcher that picks up a
  // run reports a failure at the time it happened.
  std::optional<std::chrono::system_clock::time_point> exited_at;
  // Its job never started (the launch failed there): why. The worker is lost.
  std::string never_started;
};

enum class GangAction {
  watch,        // nothing to do
  stop_others,  // the attempt failed: stop the run's jobs on every worker
  restart,      // every worker has ended and another attempt is allowed
  finished,     // the run is over; state().verdict says how
};

class GangMonitor {
 public:
  using Time = std::chrono::system_clock::time_point;
  GangMonitor(GangPolicy policy, std::vector<int> workers, int attempt = 1);

  // `stop_requested`: `tpurun kill` left its stop marker (at `stop_at`, when
  // known). The rule for the workers' states after a stop (docs/runs.md): a
  // job that ended before the stop keeps its result, the first failure stays
  // failed, every other job that was still running ends `stopped`, whatever
  // it exited with.
  GangAction observe(const std::vector<WorkerSample>& samples, Time now, bool stop_requested,
                     std::optional<Time> stop_at = std::nullopt);
  // A new attempt: every worker pending again; the last failure is kept until replaced.
  void begin_attempt(int attempt);
  const RunState& state() const { return state_; }
  // A kill after the failure has been carried out: the workers that are still
  // not answering stay as they are until they are lost.
  void others_stopped() { state_.stopped_others = true; }
  // The flight recorder's note on the failure ("stacks of w0-7 saved in ...").
  void stacks_taken(const std::string& note) {
    if (state_.first_failure) state_.first_failure->stacks = note;
  }
  // No further attempt after all (its --env values are gone): the failure stands.
  void give_up();
  // The TPU VM is gone (PREEMPTED, TERMINATED, deleted). True: recreating it
  // is allowed (--recreate, within --max-preemptions), and another attempt is
  // granted that uses up no restart (xpk's rule); the run is restarting. False:
  // the run ends as preempted. Either way `what` is recorded.
  bool preempted(Preemption what);
  // The granted attempt cannot happen after all (the TPU VM was not
  // recreated: `why`): the run ends as preempted.
  void recreate_failed(const std::string& why);
  // The new VM of a recreate was preempted too, before the run could go on
  // on it (issue 39, finding 11): a preemption of its own, of the same
  // attempt, which grants no second attempt. True: within --max-preemptions,
  // the recreate tries again. False: the run ends as preempted.
  bool preempted_while_recreating(Preemption what);
  // The run was stopped on purpose while no attempt of it ran (between
  // attempts, during a recreate, or an attempt that `tpurun down` ended):
  // `tpurun kill --run`, or `tpurun down` of its TPU VM. It ends as stopped,
  // and nothing is restarted; a run that succeeded stays so.
  void stopped_on_purpose(const std::string& why);
  // The latest preemption, to add what became of it (when the VM came back,
  // which attempt resumed, where the time went).
  Preemption* last_preemption() { return state_.preemptions.empty() ? nullptr : &state_.preemptions.back(); }
  // A watcher that picks up a run keeps its earlier preemptions, and the
  // attempts they granted.
  void resume(const std::vector<Preemption>& earlier);
  // The last failure may be restarted (--restart-on-exit-codes).
  bool retryable() const;
  // The attempt is stalled (every worker at 0% duty cycle, no new log line)
  // and --on-stall asks for action: it fails as a whole, the next observe()
  // says stop_others (whatever --on-failure says), and a restart follows only
  // when `may_restart` and --restarts allow.
  void stalled(Time now, const std::string& detail, bool may_restart);
  // Adds to what a worker's state says: "exited 0; 1 leftover process ...".
  void append_detail(int worker, const std::string& text);
  // The logs root is full: the jobs' output is lost and nothing more can be
  // recorded. The attempt fails as a whole, is stopped, and is not restarted.
  void out_of_space(Time now, const std::string& detail);
  // The same, seen only once the run ended: a run that succeeded failed
  // (a job's output on a full disk is not whole). True when it changed.
  bool out_of_space_at_end(Time now, const std::string& detail);

 private:
  struct Tracker {
    std::optional<Time> pending_since;
    int dead_probes = 0;
    std::optional<Time> unreachable_since;
  };
  void update(WorkerStatus& w, Tracker& t, const WorkerSample& s, Time now);
  void note_failure(const WorkerStatus& w, Time at, std::optional<Time> since);
  void gang_failed(Time now, const std::string& how, const std::string& detail, bool may_restart);
  bool all_ended() const;
  GangAction finish(bool stop_requested);
  void not_restarted(const std::string& why);

  GangPolicy policy_;
  RunState state_;
  std::vector<Tracker> trackers_;
  bool stopping_ = false;           // stop_others was returned this attempt
  std::optional<Time> stop_began_;  // when this attempt's stop began (gang stop or kill)
  bool failed_this_attempt_ = false;  // first_failure belongs to this attempt
  bool stalled_ = false;              // this attempt failed as a gang (stalled, out of space)
  bool no_restart_ = false;           // ... under --on-stall stop
};

// "killed by SIGTERM" for 143, "exited 3" for 3.
std::string exit_code_text(int code);

}  // namespace tpurun
