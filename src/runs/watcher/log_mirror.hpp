#pragma once
// A pod with no shared mount: every worker's files of the run (its log, pid
// and exit records, anything the job writes under the log dir, such as
// TensorBoard event files) copied as they grow into the run's log dir on this
// host, so that everything that reads a log dir (follow, logs, runs, the gang
// rules) works as on a shared mount, and the logs outlive the VM.
//
// One SSH exec per worker runs worker/log_mirror.py there (python3)
// that sends what grew; a cut connection is opened again and goes on from
// what arrived (told on its stdin). A file rewritten there (renamed over,
// truncated, rewritten in place) is copied again from its start. The job's
// own files land under wN/ here, so two workers' files of one name stay two. Within a round, records are looked at before logs are read,
// so an exit record never arrives before the output that preceded it.
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tpurun/pod/worker.hpp"
#include "tpurun/runs/record/run_state.hpp"
#include "tpurun/transport/transport.hpp"

namespace tpurun {

class LogMirror {
 public:
  // `remote_dir` on each worker (absolute), into `local_dir` here.
  LogMirror(std::vector<Worker> workers, Transport& transport, std::string remote_dir, std::string local_dir);
  ~LogMirror();
  void start();
  // The run's workers are elsewhere now. A new VM (a recreated one:
  // `new_vm`) has a new disk: mirrored from there, a job's log goes on after
  // what arrived from the old VM. A VM that only has new addresses (stopped
  // and started) keeps its disk, and the mirror goes on where it was.
  void move_to(const std::vector<Worker>& now, bool new_vm);
  // One last round on every worker that answers, then stop. It waits as long
  // as bytes keep arriving (thousands of files take what they take), and
  // gives up on the workers that sent nothing for `idle_s`.
  void finish(int idle_s = 60);
  // After finish(): the workers whose last round did not arrive whole.
  std::vector<MissingLogs> missing() const;
  // A worker whose log dir's disk is (nearly) full, and its free bytes.
  std::optional<std::pair<Worker, std::uint64_t>> low_space() const;
  // Bytes received so far (tests, the bench).
  std::uint64_t bytes() const { return bytes_; }

 private:
  struct Worker_;
  void mirror(Worker_& w);

  std::vector<std::unique_ptr<Worker_>> workers_;
  Transport& transport_;
  std::string remote_dir_, local_dir_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> bytes_{0};
  int idle_s_ = 60;
};

// The frames the worker's loop sends ("A|W <len> <offset> <pathlen> <ino>
// <mtime>\n<path><data>", "SPACE <free>\n", "END\n"), applied to `local_dir`:
// worker `state.worker`'s own records as they are, the rest of its files
// under wN/ (mirrored_path). Consumes whole frames from `buffer`. False on a
// frame that is not one (or names a path outside the dir). No fsync: the
// worker still has the bytes, and thousands of small files would each wait
// for the disk.
struct MirroredFile {
  std::uint64_t offset = 0;  // how far it arrived, as the worker counts
  std::uint64_t ino = 0;     // the worker's file it is a copy of
  std::int64_t mtime = 0;    // its mtime (ns) when that was all of it; 0: unknown
};
struct MirrorState {
  int worker = 0;
  std::map<std::string, MirroredFile> files;  // by the worker's path
  // The worker's log (workerN.log) that started again there (a new VM's
  // disk) goes on after what came before: its bytes here are base + the
  // worker's offset.
  std::map<std::string, std::uint64_t> base;
  std::optional<std::uint64_t> low_space;  // the worker said its disk is full
  bool ended = false;
  // The worker is a new VM: nothing of what it has was sent.
  void new_host();
  // What the mirror program reads on its stdin: what arrived of each file.
  std::string have_list() const;
};
bool apply_mirror_frames(const std::string& local_dir, std::string& buffer, MirrorState& state,
                         std::uint64_t* bytes = nullptr);

}  // namespace tpurun
