#pragma once
// A pod with no shared mount: every worker's files of the run (its log, pid
// and exit records, anything the job writes under the log dir, such as
// TensorBoard event files) copied as they grow into the run's log dir on this
// host, so that everything that reads a log dir (follow, logs, runs, the gang
// rules) works as on a shared mount, and the logs outlive the VM.
//
// One SSH exec per worker runs worker/log_mirror.py there (python3)
// that sends what grew; a cut connection is opened again and goes on from
// what arrived. Within a round, records are looked at before logs are read,
// so an exit record never arrives before the output that preceded it.
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tpurun/pod/worker.hpp"
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
  // One last round on every worker that answers (within `wait_s`), then stop.
  void finish(int wait_s = 10);
  // Bytes received so far (tests, the bench).
  std::uint64_t bytes() const { return bytes_; }

 private:
  struct Worker_;
  void mirror(Worker_& w);
  bool apply(Worker_& w, std::string& buffer);

  std::vector<std::unique_ptr<Worker_>> workers_;
  Transport& transport_;
  std::string remote_dir_, local_dir_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> bytes_{0};
};

// The frames the worker's loop sends ("A|W <len> <offset> <pathlen>\n<path><data>",
// "END\n"), applied to `local_dir`; `offsets` keeps how far each file
// arrived. Consumes whole frames from `buffer`. False on a frame that is not
// one (or names a path outside the dir).
struct MirrorState {
  std::map<std::string, std::uint64_t> offsets;  // how far each file arrived, as the worker counts
  // A job's log (*.log) that started again there (a new VM's disk) goes on
  // after what came before: its bytes here are base + the worker's offset.
  std::map<std::string, std::uint64_t> base;
  bool ended = false;
  // The worker is a new VM: nothing of what it has was sent.
  void new_host();
};
bool apply_mirror_frames(const std::string& local_dir, std::string& buffer, MirrorState& state,
                         std::uint64_t* bytes = nullptr);

}  // namespace tpurun
