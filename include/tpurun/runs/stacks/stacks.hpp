#pragma once
// tpurun stacks (docs/stacks.md): every Python stack of a run's processes on
// every worker, taken at once by worker/stacks.py (stacks_take), workers with
// the same stacks grouped and the odd ones out named (stacks_group), as text
// and JSON (stacks_text), and the flight recorder's captures saved in the
// run's log dir and read back (stacks_saved). The watcher's flight recorder
// prints with the same functions as the command, so they live here, below
// ui/.
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tpurun/transport/transport.hpp"

namespace tpurun {

struct StackFrame {
  std::string function;
  std::string file;
  int line = 0;
};

struct StackThread {
  std::string name;
  std::vector<StackFrame> frames;  // innermost first, as faulthandler and py-spy print them
};

struct StackProcess {
  int pid = 0;
  int ppid = 0;
  std::string command;
  std::vector<StackThread> threads;
  std::string no_stack;  // why there is no stack ("no Python stack (not Python: sh)"); empty when taken
};

struct WorkerStacks {
  Worker worker;
  std::vector<StackProcess> processes;
  std::optional<std::string> last_line;  // the last line of the worker's log, and its age
  std::optional<double> last_line_age_s;
  std::optional<double> duty_cycle_pct;  // where libtpu's metrics answer
  std::string error;                     // the capture failed there (set with unreachable when not reached)
  bool unreachable = false;

  // Some process of the run there had a Python stack taken.
  bool has_stack() const;
};

struct StacksRequest {
  std::string run_id;  // empty: the user's own processes that hold the TPU (device_globs), of any run or none
  std::string workers_log_dir;  // the run's log dir as the workers see it
  long long timeout_ms = 2000;  // how long a process has to write its dump
  bool native = false;          // py-spy dump --native where it is on PATH
  int fanout = 64;
  long long bound_ms = 0;  // the whole command's bound on a worker; 0: from timeout_ms
  bool duty_cycle = true;  // ask libtpu's metrics too, as top does (the flight recorder does not wait for them)
  std::vector<std::string> device_globs;  // with no run_id: the TPU's device files
};

// stacks_take: worker/stacks.py on every worker at once, as the login user,
// then, on the same connection, libtpu's duty cycle where it answers.
RemoteCommand stacks_command(const StacksRequest& request, const Worker& worker);
// The program's answer on worker w; error set when it is not one.
WorkerStacks parse_stacks_answer(const Worker& worker, const std::string& out, const std::string& err);
std::vector<WorkerStacks> take_stacks(const std::vector<Worker>& workers, Transport& transport,
                                      const StacksRequest& request, const CancelToken& cancel);
// 130 when interrupted; 255 when a worker was not reached; 1 when a worker had
// no stack; else 0.
int stacks_exit_code(const std::vector<WorkerStacks>& stacks, bool cancelled);

// stacks_group: workers whose stacks are the same (functions and files, not
// lines or pids), largest group first, then by their first worker; workers
// that failed are in no group.
struct StacksGroup {
  std::vector<int> workers;  // indices into the vector of WorkerStacks, ascending
  std::string key;
};
std::vector<StacksGroup> group_stacks(const std::vector<WorkerStacks>& stacks);
// "w3 differs: MainThread in save_checkpoint → write_shard", one line per
// group after the first (the largest), naming its first thread unlike the
// largest group's.
std::vector<std::string> odd_ones_out(const std::vector<WorkerStacks>& stacks,
                                      const std::vector<StacksGroup>& groups);

// stacks_text: the report people read, and its JSON (docs/stacks.md).
std::string format_stacks_report(const std::string& run_id, const std::vector<WorkerStacks>& stacks);
std::string format_worker_stacks(const WorkerStacks& stacks);  // one worker's, whole (wN.txt)
nlohmann::json stacks_to_json(const std::string& run_id, const std::vector<WorkerStacks>& stacks);
std::vector<WorkerStacks> stacks_from_json(const nlohmann::json& doc);

// stacks_saved: the flight recorder's captures, in the run's log dir:
// stacks/<UTC time>-<reason>/wN.txt (each worker's stacks, whole) and
// summary.json (stacks_to_json's document, with "reason" and "taken_at").
struct SavedCapture {
  std::string dir;
  std::string reason;
  std::string taken_at;  // ISO 8601, UTC
  std::vector<WorkerStacks> stacks;
};
std::string stacks_root(const std::string& log_dir);
// Writes the capture; returns its dir. Throws std::runtime_error when it cannot.
std::string save_capture(const std::string& log_dir, const std::string& run_id, const std::string& reason,
                         std::chrono::system_clock::time_point now, const std::vector<WorkerStacks>& stacks);
// The run's captures, oldest first; one whose summary cannot be read is left out.
std::vector<SavedCapture> read_captures(const std::string& log_dir);
bool has_capture(const std::string& log_dir);

}  // namespace tpurun
