#pragma once
// Collapsing live output: when several workers print the same line within a
// short window, it is emitted once with the set of workers that printed it.
//
// Rules (docs/output.md explains the trade-off):
// - A new line opens a group. A worker printing the same text joins the
//   oldest held group with that text, unless that group would then have to
//   come both before and after the worker's own earlier held lines.
// - A group is emitted once every worker still running has joined it, or
//   `window` after its last join, and never later than `max_hold` after it
//   opened; but only after each of its workers' earlier lines, so that one
//   worker's lines always come out in the order it printed them. Among the
//   groups free to go, the oldest goes first, and younger ones wait for it.
// - A worker that prints a line only after its group was emitted gets a late
//   line (`late`), unless it had printed that text itself in the group.
// - Held text is bounded by `max_held_bytes`; beyond it the oldest groups are
//   emitted early.
// - Each stream is collapsed on its own.
// Thread-safe. Time comes from the caller, so tests need no sleeps.
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tpurun/transport/transport.hpp"

namespace tpurun {

struct CollapseOptions {
  std::chrono::milliseconds window{500};
  std::chrono::milliseconds max_hold{2000};
  std::size_t max_held_bytes = 4u << 20;
};

struct CollapsedLine {
  Stream stream = Stream::out;
  std::vector<int> workers;  // worker indices, ascending
  bool late = false;         // these workers printed it after its group was emitted
  std::string text;
};

// "w0-3,5,7-9" ({4} -> "w4"): the label of a collapsed line.
std::string worker_range_label(const std::vector<int>& indices);

class LineCollapser {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Emit = std::function<void(const CollapsedLine&)>;

  // `workers`: the indices of every followed worker. `emit` is called under
  // the collapser's lock, in output order.
  LineCollapser(std::vector<int> workers, Emit emit, CollapseOptions options = {});
  ~LineCollapser();
  LineCollapser(const LineCollapser&) = delete;
  LineCollapser& operator=(const LineCollapser&) = delete;

  void add(int worker, Stream stream, std::string_view text, TimePoint now);
  // The worker prints nothing more: no group waits for it any longer.
  void worker_ended(int worker, TimePoint now);
  // Emits the groups whose time is up.
  void tick(TimePoint now);
  // Emits everything held.
  void flush_all();

 private:
  class State;  // collapse.cpp
  std::unique_ptr<State> state_;
  std::mutex mutex_;
};

}  // namespace tpurun
