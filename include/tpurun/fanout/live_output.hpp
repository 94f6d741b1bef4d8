#pragma once
// Live output of many workers, as `exec`, `stage` and `logs -f` print it:
// one WorkerSink per worker, whose lines are collapsed across workers
// (collapse.hpp) or, raw, printed as they come; `\r` progress and a status
// line at the bottom of a terminal.
//
//   LiveOutput live(printer, workers, {.collapse = !raw});
//   live.sink(w.index).write(Stream::out, chunk);   // from any thread, one per worker
//   live.set_state(w.index, WorkerRunState::exited); // when the worker's job ends
//   live.sink(w.index).flush();                      // and its output with it
//   live.tick();   // every ~100 ms (or a LiveOutputTicker does it)
//   live.finish(); // at the end: prints everything still held
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tpurun/fanout/collapse.hpp"
#include "tpurun/fanout/fanout.hpp"
#include "tpurun/fanout/follow_status.hpp"
#include "tpurun/fanout/printer.hpp"

namespace tpurun {

struct LiveOutputOptions {
  // Collapse identical lines; only when more than one worker is followed.
  bool collapse = true;
  CollapseOptions collapse_options;
  // The bottom line on a terminal: the status counts (more than one worker)
  // and the latest `\r` progress state.
  bool status_line = true;
  QuietRule quiet_rule;
  std::function<std::chrono::steady_clock::time_point()> clock = std::chrono::steady_clock::now;
};

class LiveOutput {
 public:
  LiveOutput(LinePrinter& printer, std::vector<Worker> workers, LiveOutputOptions options = {});
  ~LiveOutput();
  LiveOutput(const LiveOutput&) = delete;
  LiveOutput& operator=(const LiveOutput&) = delete;

  bool collapsing() const { return collapser_ != nullptr; }
  // The sink of a followed worker (throws std::out_of_range for another).
  // Each sink is used by one thread at a time; different sinks by any.
  // Its flush() also tells the collapser that the worker prints no more.
  WorkerSink& sink(int worker_index);
  // For the status line: running until told otherwise.
  void set_state(int worker_index, WorkerRunState state);
  // Prints held lines whose window has passed; redraws the bottom line.
  void tick();
  // Flushes every sink, prints everything still held, clears the bottom line.
  void finish();

  // The bottom line as tick() would draw it ("" when there is nothing to say).
  std::string bottom_line();

  // A pass over output that was already written (a follower reading what
  // the logs gained): until end_pass(), lines are stamped with the time
  // begin_pass() was called, however long reading them takes, so that how
  // fast tpurun reads never splits a collapsed line nor makes a worker late.
  // `continues`: the last pass left output unread (the reader is behind);
  // this one keeps its time, so that held lines still wait for their peers'
  // copies in what is unread. The next tick() counts time only up to the
  // last pass's start, for the same reason: what was written since is not
  // read yet. Called by the thread that writes to the sinks.
  void begin_pass(bool continues = false);
  void end_pass();

 private:
  class CollapsingSink;
  class RawSink;
  struct Activity {
    WorkerRunState state = WorkerRunState::running;
    std::chrono::steady_clock::time_point last_output;
    std::string progress[2];  // per stream: the latest `\r` state of an unfinished line, cut short
  };
  size_t slot(int worker_index) const;
  std::chrono::steady_clock::time_point now() const;  // the pass's time, or the clock's
  // Output arrived; `progress`, if given, is the stream's new `\r` state.
  void saw_output(size_t slot, Stream stream, std::optional<std::string> progress);
  void saw_progress(size_t slot, Stream stream, std::string progress);
  void emit(const CollapsedLine& line);

  LinePrinter& printer_;
  std::vector<Worker> workers_;
  std::vector<std::string> displays_;  // per slot: display()
  std::unordered_map<int, size_t> slots_;  // worker index -> position in workers_
  LiveOutputOptions options_;
  std::unique_ptr<LineCollapser> collapser_;
  std::vector<std::unique_ptr<WorkerSink>> sinks_;
  std::mutex mutex_;  // guards activity_
  std::vector<Activity> activity_;
  static constexpr long long kNoPass = std::numeric_limits<long long>::min();
  std::atomic<long long> pass_time_{kNoPass};  // the pass's time since the clock's epoch
  long long last_pass_ = kNoPass;              // the last pass's
  std::atomic<long long> tick_as_of_{kNoPass};  // a pass ended since the last tick: its time
  std::vector<int> label_workers_;  // the last label printed, and its workers
  bool label_late_ = false;
  std::string label_;
};

// Calls live.tick() every `every` on its own thread until destroyed.
class LiveOutputTicker {
 public:
  explicit LiveOutputTicker(LiveOutput& live, std::chrono::milliseconds every = std::chrono::milliseconds(100));
  ~LiveOutputTicker();

 private:
  LiveOutput& live_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

// `exec`: plan.command run on every worker (run_on_workers), its output
// printed live as it comes, identical lines collapsed unless !collapse. With
// plan.capture it is kept in the outcomes instead, and a progress line counts
// the workers done.
std::vector<WorkerOutcome> run_with_live_output(const FanoutPlan& plan, Transport& transport, LinePrinter& printer,
                                                bool collapse, const CancelToken& cancel);

}  // namespace tpurun
