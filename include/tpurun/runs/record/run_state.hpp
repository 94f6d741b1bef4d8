#pragma once
// A run's lifecycle as its watcher records it in <log dir>/state.json.
// A run is a gang: it makes progress only while every worker does, so it has
// one verdict, plus a state per worker. See docs/runs.md.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace tpurun {

// running → succeeded | failed | lost | stopped | preempted, with restarting
// between attempts when --restarts allows another one; cancelled: the stage
// was interrupted before the launch, and nothing ever started. preempted: a relaunch
// was due but the TPU VM is PREEMPTED, TERMINATED or deleted, and never comes
// back by itself.
enum class RunVerdict { running, restarting, succeeded, failed, lost, stopped, preempted, cancelled };
const char* to_string(RunVerdict v);
std::optional<RunVerdict> parse_run_verdict(const std::string& text);
bool is_final(RunVerdict v);

enum class WorkerState { pending, running, succeeded, failed, lost, stopped, restarting };
const char* to_string(WorkerState s);
std::optional<WorkerState> parse_worker_state(const std::string& text);

struct WorkerStatus {
  int worker = 0;
  WorkerState state = WorkerState::pending;
  std::optional<int> pid;
  std::optional<int> exit_code;
  std::string detail;  // "exited 3", "killed by SIGKILL", "unreachable since 12:00:01Z", ...
};

// How the first failing worker of an attempt failed.
struct GangFailure {
  int worker = 0;
  std::string how;  // "exit", "signal" or "lost"
  int exit_code = 0;
  std::string signal;  // "KILL" when how == "signal"
  std::string since;   // lost: when it was first seen unreachable or gone (ISO 8601)
  std::string at;      // when tpurun noticed (ISO 8601)
  std::string detail;  // one line for the summary
  // The flight recorder's note (runs/watcher/flight_recorder): where the
  // stacks taken before the stop are, or why there are none.
  std::string stacks;
};

// The run's TPU VM was found PREEMPTED, TERMINATED or deleted (a gcloud pod),
// and what the watcher did about it (stage --recreate: created it again).
struct Preemption {
  std::string tpu;     // the TPU VM's name
  std::string state;   // PREEMPTED, TERMINATED or NOT_FOUND
  std::string detail;  // what gcloud said, one line
  std::string at;      // when the watcher saw it (ISO 8601)
  int attempt = 0;     // the attempt it ended
  std::string node_id;  // the gone VM's id ("" when it was deleted)
  std::string since;    // when the first of its workers was seen gone (ISO 8601)
  // "recreated", or "not recreated" (then `why` says why: no --recreate,
  // --max-preemptions, a safety rule, or what failed).
  std::string action;
  std::string why;
  std::string new_id;        // the new VM's id
  std::string resumed_at;    // when the next attempt was launched (ISO 8601)
  int resumed_attempt = 0;   // which attempt that was
  // Seconds: from `since` to the relaunch, and where they went.
  double down_s = 0;
  double api_s = 0;     // gcloud: delete, create, until READY
  double keys_s = 0;    // gcloud tpu-vm ssh: the user's key, the new host keys
  double setup_s = 0;   // the pod's setup script on every worker
  double launch_s = 0;  // until the relaunch (describe, the TPU free, launch)
  bool recreated() const { return action == "recreated"; }
};

// No shared mount: a worker whose files of the run did not all arrive here
// (its mirror could not make its last round), and where they still are.
struct MissingLogs {
  int worker = 0;
  std::string host;
  std::string path;  // the run's log dir on that worker
  std::string why;
};
// "w2 10.0.0.5: not every file was copied here (why); they are still in PATH there"
std::string missing_logs_text(const MissingLogs& m);

// Where the watcher lives: a detached `tpurun` process on the dev VM.
struct WatcherInfo {
  int pid = 0;
  std::string host;          // the dev VM's hostname
  long long started = 0;     // /proc/PID/stat start time, to tell a reused pid apart
  long long heartbeat = 0;   // unix seconds, refreshed while it watches
};

struct RunState {
  RunVerdict verdict = RunVerdict::running;
  int attempt = 1;        // 1-based; TPURUN_ATTEMPT of the current launch
  int max_attempts = 1;   // 1 + --restarts, + 1 per TPU VM recreated after a preemption
  std::string on_failure = "stop";
  std::vector<WorkerStatus> workers;
  std::optional<GangFailure> first_failure;  // of the last failed attempt
  bool stopped_others = false;               // tpurun stopped the other workers' jobs
  std::string message;                        // what the watcher is doing or waiting for
  std::vector<Preemption> preemptions;        // in order
  std::string stalled_since;  // ISO 8601 while the run is stalled (every worker at 0% and no new log line)
  std::string idle_since;     // ISO 8601 while every worker's chips are at 0% duty cycle (the board's idle time)
  std::vector<MissingLogs> logs_missing;  // no shared mount: what the run's end could not copy here
  WatcherInfo watcher;
  std::string updated_at;
};

// nullopt: none or unreadable; `problem`, when given, says why a state.json
// that is there could not be read.
std::optional<RunState> read_run_state(const std::string& log_dir, std::string* problem = nullptr);
void write_run_state(const std::string& log_dir, const RunState& state);

// This process as a watcher: its pid, this host's name and its start time
// (read the same way watcher_alive() checks it).
WatcherInfo this_process_as_watcher();

// The watcher's heartbeat is at most this old while it watches.
constexpr long long kHeartbeatSeconds = 5;
// True when the state has a watcher whose heartbeat is recent (and, on this
// host, whose process still exists).
bool watcher_alive(const RunState& state, long long now_unix);


// The stop marker that `tpurun kill --run` leaves so that the watcher
// neither restarts nor reports the kill as a failure.
bool stop_requested(const std::string& log_dir);
// When the stop marker was left (its mtime), or nullopt when there is none.
std::optional<std::chrono::system_clock::time_point> stop_requested_at(const std::string& log_dir);


}  // namespace tpurun
