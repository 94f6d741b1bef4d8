#pragma once
// A run's log dir on the shared logs root: run.json, git.diff, and per worker
// workerN.log, workerN.pid ("<pid> <pgid>") and workerN.exit (exit code).
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/pod/slices.hpp"
#include "tpurun/pod/worker.hpp"
#include "tpurun/tpu/kill.hpp"
#include "tpurun/util/duration.hpp"  // format_utc_time

namespace tpurun {

// The gang rules of a run (docs/runs.md): stage's flags, run.json's "gang",
// what the run's watcher applies. Each default is written here and nowhere
// else: the flags' defaults, a run.json without the field and the watcher's
// policy all start from a GangRules{}.
struct GangRules {
  std::string on_failure = "stop";  // stop | continue
  int restarts = 0;
  long long lost_after_ms = 60 * 1000;  // a worker unreachable this long is lost
  long long grace_ms = kDefaultGraceMs;  // TERM → KILL when stopping the gang
  // --restart-on-exit-codes as RestartCodes::text() ("42,127-255"); "" when not given.
  std::string restart_on_exit_codes;
  bool recreate = false;  // --recreate: a preempted TPU VM is created again
  // --max-preemptions: a spot VM preempted three times in one run is rare; a
  // fourth time more likely means the zone has no capacity now.
  int max_preemptions = 3;
  // A stall: every worker at 0% duty cycle (libtpu's metrics) and no new log
  // line for this long. report (the default) only records it; stop and
  // restart hand it to the gang rules as a failure of the attempt.
  long long stall_after_ms = 30 * 60 * 1000;
  std::string on_stall = "report";  // report | stop | restart
};

struct RunRecord {
  std::string run_id;   // <YYYYmmdd_HHMMSS>_<rand6>_<pod>[_<tags>]
  std::string user;
  std::string pod;
  std::string project;  // the project directory's name
  std::vector<Worker> workers;           // global indices; slice and slice_worker on multi-slice runs
  std::vector<std::string> slices;      // multi-slice runs: the slices' pods, in slice order
  std::optional<MultiSlice> megascale;  // multi-slice runs: what every job is told
  std::vector<std::string> command;
  std::vector<std::string> env_names;  // the job's --env names; values are never recorded
  std::vector<std::string> tags;
  std::string staged_dir;
  std::string log_dir;
  // No shared mount: where the snapshot and the jobs' logs are on the
  // workers' own disks (the watcher mirrors the logs into log_dir). Empty on
  // a shared mount, where the workers see staged_dir and log_dir themselves.
  std::string worker_staged_dir;
  std::string worker_log_dir;
  std::string git_sha;
  std::string git_branch;
  bool git_dirty = false;
  std::string tree_hash;
  std::string created_at;  // ISO 8601, UTC
  GangRules gang;  // what the run's watcher applies (stage's flags)
};

// Where the workers see the run: worker_* when set, else the shared dirs.
inline const std::string& workers_log_dir(const RunRecord& r) {
  return r.worker_log_dir.empty() ? r.log_dir : r.worker_log_dir;
}
inline const std::string& workers_staged_dir(const RunRecord& r) {
  return r.worker_staged_dir.empty() ? r.staged_dir : r.worker_staged_dir;
}

// "lr=0.1" -> "lr0.1"; anything outside [A-Za-z0-9.-] becomes '-'.
std::string tag_slug(const std::string& tag);
std::string make_run_id(std::chrono::system_clock::time_point now, const std::string& rand6,
                        const std::string& pod, const std::vector<std::string>& tags);
// What is wrong with a record file, without nlohmann's "[json.exception...]"
// prefix: "not valid JSON (parse error at line 1, column 2: ...)".
std::string json_problem(const nlohmann::json::exception& e);

// A run id is a directory name (at most 255 bytes), so it is kept well short.
inline constexpr size_t kMaxRunIdLength = 200;
// Refuses (UsageError) a tag that is empty or has no letter or digit (".",
// ".."), and tags that would make the run id longer than kMaxRunIdLength.
void check_tags(const std::vector<std::string>& tags, const std::string& pod);

// <logs_root>/<user>/<project>/<run_id>, created exclusively (fails if it exists).
// Throws std::runtime_error with the path and the errno text.
std::string create_log_dir(const std::string& logs_root, const std::string& user,
                           const std::string& project, const std::string& run_id);
void write_run_record(const RunRecord& record, const std::string& git_diff);
RunRecord read_run_record(const std::string& log_dir);  // throws on a missing/corrupt run.json

// Every run dir of the user, newest first.
std::vector<std::string> list_run_dirs(const std::string& logs_root, const std::string& user);
// The one lookup of a run as a user names it: its id, a unique prefix of it,
// or "last" (or "latest") for the newest run. Throws with a did-you-mean hint
// when it names no run or more than one.
std::string find_run_dir(const std::string& logs_root, const std::string& user, const std::string& run);

enum class JobState { pending, running, exited, lost, unknown };
const char* to_string(JobState s);

struct WorkerJob {
  int worker = 0;
  JobState state = JobState::pending;  // from the files alone: pending, running or exited
  std::optional<int> pid;               // also the job's pgid: it leads its own session
  std::optional<int> exit_code;
  // When the exit record was written (its mtime): when the job ended, as the
  // shared mount's clock has it.
  std::optional<std::chrono::system_clock::time_point> exited_at;
  // Its job never started (stage wrote the exit record for it): why.
  std::string never_started;
};
// The exit record of a job that never started ("255" and why): the watcher
// counts the worker as lost, as it does a job whose start it never saw.
std::string never_started_record(const std::string& why);

// The job files of one attempt (1-based; see job_file in log_dir_layout.hpp),
// read with the log dir opened first, as read_worker_jobs does.
WorkerJob read_worker_job(const std::string& log_dir, int worker, int attempt = 1);
// The same for several workers, with the log dir opened (so revalidated on
// NFS: a file another host made since is found, not a cached "no such file")
// once for all of them.
std::vector<WorkerJob> read_worker_jobs(const std::string& log_dir, const std::vector<Worker>& workers, int attempt);

}  // namespace tpurun
