#pragma once
// The tail of a run's worker logs, read from the dev VM: the logs on the
// shared logs root, read where they grew. No SSH here: a stalled worker can
// never hold up the others' output (liveness is the watcher's job).
#include <string>
#include <vector>

#include "tpurun/fanout/live_output.hpp"
#include "tpurun/runs/record/run_record.hpp"

namespace tpurun {

// Tails the workers' logs into a LiveOutput (collapsed or raw).
class LogTail {
 public:
  static constexpr size_t kPassBytes = 8u << 20;
  // `pass_bytes`: about how much one drain(positions) reads (kPassBytes).
  LogTail(std::string log_dir, std::vector<Worker> workers, LiveOutput& live, size_t pass_bytes = kPassBytes);
  ~LogTail();
  LogTail(const LogTail&) = delete;
  LogTail& operator=(const LogTail&) = delete;
  // Prints whatever was appended to the logs since the last call, all of it,
  // in one pass (LiveOutput::begin_pass: its lines share the pass's time),
  // 64 KiB of each log per round, round robin, so that long logs from many
  // workers still line up for collapsing. Files stay open between calls, so
  // following costs reads, not opens.
  void drain();
  // The same for some workers only: positions in the worker list given to
  // the constructor (a FileWatch said their logs changed), and at most
  // 256 KiB of each and about pass_bytes in all, so that a follower of a job
  // that prints fast still gets back to its loop (Ctrl-C, state.json, held
  // lines), and no log is read far ahead of the others. True when anything
  // was read; behind() then names the logs it did not finish.
  bool drain(const std::vector<int>& positions);
  // Positions whose logs had more to read when the last drain(positions)
  // stopped: read them again without waiting for a change. The next pass
  // then keeps this one's time (LiveOutput::begin_pass).
  const std::vector<int>& behind() const { return behind_; }
  // Each worker's log file name in the log dir, in the order given.
  std::vector<std::string> file_names() const;
  // The worker's job has ended: the rest of its log is read, its last line
  // printed, and collapsed lines stop waiting for it.
  void ended(int worker_index, bool ok);
  // Prints last lines that had no newline, and everything still held.
  void finish();

 private:
  struct Tail {
    Worker worker;
    std::string path;
    int fd = -1;
    long long offset = 0;
    bool ended = false;
  };
  // Up to 64 KiB; 0 when nothing was read.
  size_t drain_once(Tail& tail);
  void drain_all();
  bool restarted(Tail& tail);  // truncated or replaced: read again from the start
  // Opens the log again (the same file): on NFS an open file's size is the
  // client's cached one, and an open() is close-to-open's check with the
  // server, so a last read sees what the worker wrote before its exit record.
  void reopen(Tail& tail);
  std::string log_dir_;
  std::vector<Tail> tails_;
  std::vector<int> behind_;
  LiveOutput& live_;
  size_t pass_bytes_;
};

// The last `n` lines of a file (at most its last 64 KiB).
std::vector<std::string> last_lines(const std::string& path, size_t n);

}  // namespace tpurun
