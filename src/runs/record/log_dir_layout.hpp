#pragma once
// One map of a run's log dir (<logs_root>/<user>/<project>/<run id>): every
// file tpurun keeps there, who writes it, and where its path comes from.
// Nothing else spells these names.
//
//   run.json      the run record (stage; run_record.hpp)
//   git.diff      the uncommitted changes at stage time (stage)
//   state.json    the verdict and every worker's state (the watcher; run_state.hpp)
//   watcher.log   the watcher's notes: its stdout (supervisor.log in runs of an older tpurun)
//   stop          the stop marker (tpurun kill --run; the watcher ends the run as stopped)
//   workerN.log   the job's output (the launcher on worker N; launch.cpp)
//   workerN.pid   "<pid> <pgid>" of attempt 1; workerN.aK.pid of attempt K (the launcher)
//   workerN.exit  the exit code of attempt 1; workerN.aK.exit of attempt K (the launcher)
//   .tpurun-tmp/workerN.exit.pending  its bytes, taken while the job starts, so that the exit
//                 record fits on a logs disk the job filled (the wrapper)
//   .watcher-spare  room kept by the watcher for its last records on a full disk
//   tpu-vm/       0700: describe.json (the TPU VM as describe saw it at stage time) and
//                 metadata/KEY (its metadata) for stage --recreate
//   setup.sh      the pod's setup script, copied at stage time (stage --recreate)
//   setup.log     its output, every worker, every recreate (the watcher)
//   plugins/profile/SESSION/HOST.xplane.pb  profiles (tpurun profile; written by the
//                 job's profiler servers; profile_layout.hpp)
//   wN/           no shared mount: everything else worker N's job wrote in its log dir
//                 there (TensorBoard events, metrics, checkpoints' logs), copied by the
//                 log mirror: the same name on two workers is two files here
//   stacks/<time>-<reason>/  wN.txt and summary.json: the stacks the watcher's flight
//                 recorder took before it stopped the run (runs/stacks/stacks.hpp)
//   .tpurun-tmp/  the job wrapper's temp files (worker::kLogTmpDir); never mirrored;
//                 stacks/wN/ in it: tpurun stacks' bootstrap (py/sitecustomize.py) and
//                 its dumps (<pid>-<start>.txt, .names), on the worker
#include <string>

namespace tpurun {

inline constexpr const char* kRunJson = "run.json";
inline constexpr const char* kStateJson = "state.json";
inline constexpr const char* kStopMarker = "stop";

std::string run_json_path(const std::string& log_dir);
std::string git_diff_path(const std::string& log_dir);
std::string state_json_path(const std::string& log_dir);
std::string stop_marker_path(const std::string& log_dir);
std::string watcher_spare_path(const std::string& log_dir);

// watcher.log, or supervisor.log in a run an older tpurun watched.
std::string watcher_log_name(const std::string& log_dir);
std::string watcher_log_path(const std::string& log_dir);

std::string worker_log_name(int worker);
std::string worker_log_path(const std::string& log_dir, int worker);
// Per-attempt job files ("pid", "exit"): attempt 1 keeps the original names
// (workerN.pid, workerN.exit); later attempts add the attempt (workerN.a2.pid).
std::string job_file_name(int worker, int attempt, const char* ext);
std::string job_file(const std::string& log_dir, int worker, int attempt, const char* ext);

// No shared mount: where the log mirror puts worker N's file `rel` (a path
// under the run's log dir there) in the log dir here: the worker's own
// records (workerN.log, workerN.pid, workerN.exit, workerN.aK.*) and
// profiles (plugins/profile/, one file per host) as they are, anything else
// under wN/.
std::string mirrored_path(int worker, const std::string& rel);
// rel is one of worker N's own records at the top (workerN.*).
bool is_worker_record(int worker, const std::string& rel);

// What a recreate uses. tpu-vm/ is 0700: the metadata may hold secrets (a
// startup-script's tokens), and the log dir is readable by others.
std::string tpu_vm_dir(const std::string& log_dir);
std::string recorded_tpu_vm_path(const std::string& log_dir);  // tpu-vm/describe.json
std::string metadata_dir(const std::string& log_dir);          // tpu-vm/metadata/KEY
std::string recorded_setup_path(const std::string& log_dir);   // setup.sh
std::string setup_log_path(const std::string& log_dir);        // setup.log

}  // namespace tpurun
