#pragma once
// One stage at a time on a worker (docs/runs.md, "One stage at a time"). A
// job starts on a worker only under that worker's reservation: a flock(2) on
// worker::kReservationLock there, taken by worker/reserve.sh, which then scans the TPU under
// it and waits; the launch hands the lock to the job's wrapper, which keeps
// it while the job runs. Every worker is reserved before any job starts, the
// first in (host, port) order alone and then the rest, so that of two stages
// racing for the same workers exactly one gets past the first and the other
// is refused there, before it holds anything else. A stage that cannot
// reserve every worker launches nowhere: giving up (or dying, or a cut
// connection) closes the scripts' stdin, and they end with their locks.
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <vector>

#include "tpurun/runs/launch/launch.hpp"
#include "tpurun/tpu/scan.hpp"
#include "tpurun/transport/transport.hpp"
#include "tpurun/util/cancel.hpp"
#include "tpurun/util/result.hpp"
#include "tpurun/worker/tokens.hpp"

namespace tpurun {

using worker::kReservationLock;

struct ReserveSpec {
  std::string run_id;                      // named in the holder record ("-": not known yet)
  bool scan = true;                        // scan the TPU under the reservation (stage's preflight)
  std::vector<std::string> device_globs;   // for the scan
  bool required = true;                    // false (--skip-preflight): a held lock does not stop the launch
  int wait_s = 0;                          // how long a worker waits for a held lock
  int hold_s = 120;                        // a worker gives up after this long without a keepalive
  std::string lock_path = kReservationLock;
  int fanout = 64;
  std::chrono::milliseconds keepalive{30000};
};

// Who holds a worker's reservation, from its holder record.
struct ReservationHolder {
  int pid = 0;
  std::string run_id;  // "-": a stage that had not named its run
  std::string user;
  std::string since;   // ISO 8601
};
// "bob's run RUN (pid 42, since 2026-11-26T08:00:00Z)"
std::string holder_text(const ReservationHolder& holder);

// What the worker's script answered.
struct ReserveAnswer {
  enum class State { none, ok, busy, refused } state = State::none;
  bool ready = false;                     // it waits for the launch
  std::vector<ReservationHolder> holders;  // busy: the live holder records
  std::string why;                        // refused: why the lock cannot be used
  std::string scan_text;                  // the TPU scan's lines
};
std::string reserve_script(const ReserveSpec& spec);
bool reserve_answer_complete(const std::string& out);
ReserveAnswer parse_reserve_answer(const std::string& out);

enum class ReserveState {
  reserved,    // held, the script waits for the launch
  busy,        // someone else holds it (required)
  unreserved,  // someone else holds it, and the launch goes ahead anyway (not required)
  failed,      // the worker could not be asked, or the lock cannot be used
  not_tried,   // the first worker was not reserved, so nothing else was tried
};

struct WorkerReservation {
  Worker worker;
  ReserveState state = ReserveState::not_tried;
  std::vector<ReservationHolder> holders;  // busy, unreserved
  std::optional<WorkerScanResult> scan;    // the TPU as seen under the reservation
  std::string error;                        // failed
};

class Reservations {
 public:
  // Reserves every worker; see workers() for what each answered. Ctrl-C
  // while reserving gives everything up (workers() then says failed).
  Reservations(const std::vector<Worker>& workers, Transport& transport, ReserveSpec spec,
               const CancelToken& cancel);
  // Gives up what was not launched: nothing starts there.
  ~Reservations();
  Reservations(const Reservations&) = delete;
  Reservations& operator=(const Reservations&) = delete;

  const std::vector<WorkerReservation>& workers() const { return workers_; }
  // The transport the reservations were made through.
  Transport& transport() { return transport_; }
  // Every worker is reserved (or, when not required, at least answered).
  bool complete() const;
  // One line per holder of the workers that were busy: "w0-3: bob's run X (pid 42, since ...)".
  std::vector<std::string> busy_lines() const;

  // The commit: the launch script to every worker that answered, in
  // parallel; a worker's wrapper keeps its lock while the job runs. Not
  // interruptible: once one worker may have started, all are launched.
  LaunchResult launch(const LaunchSpec& spec);
  // Closes every script's stdin: nothing starts, the locks are let go.
  void give_up();
  // Runs `fn` on the reserved worker's connection (its reservation keeps
  // anyone else from starting there meanwhile). False when it has none.
  bool with_connection(size_t position, const std::function<void(Connection&)>& fn);
  // Runs shell commands (one line or more) on the reserved worker, in its
  // reservation's script (no new channel, no new process but the command's):
  // their output, or why there is none. False-y (an error) when the worker
  // has no script.
  Result<std::string, std::string> run_in_reservation(size_t position, const std::string& command_line);
  // The same, for long work: `keepalive()` tells the worker's script that the
  // stage is still there (call it at least every minute).
  bool with_connection_kept(size_t position,
                            const std::function<void(Connection&, const std::function<void()>& keepalive)>& fn);

 private:
  struct Slot;
  // `on_taken`, when set, is called as soon as the worker's lock is held
  // (before its TPU scan is done).
  void reserve_one(Slot& slot, std::unique_ptr<Connection> connection, const CancelToken& cancel,
                   const std::function<void()>& on_taken);
  void keep_alive();
  void stop_keepalive();

  ReserveSpec spec_;
  Transport& transport_;
  std::vector<WorkerReservation> workers_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::mutex keepalive_mutex_;
  std::condition_variable keepalive_wake_;
  bool keepalive_stop_ = false;
  std::thread keepalive_;
};

}  // namespace tpurun
