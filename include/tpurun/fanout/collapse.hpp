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
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
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

  void add(int worker, Stream stream, std::string text, TimePoint now);
  // The worker prints nothing more: no group waits for it any longer.
  void worker_ended(int worker, TimePoint now);
  // Emits the groups whose time is up.
  void tick(TimePoint now);
  // Emits everything held.
  void flush_all();

 private:
  using Id = unsigned long long;
  struct Group {
    std::string text;
    TimePoint opened;
    TimePoint last_join;
    std::vector<bool> member;  // per position in workers_
    std::size_t members = 0;
    std::size_t fronts = 0;                  // members whose queue starts with this group
    std::vector<Id> next;                    // members' next groups: they come after this one
  };
  struct StreamState {
    std::unordered_map<Id, Group> open;
    Id next_id = 0;
    std::unordered_map<std::string, std::set<Id>> ids_by_text;
    std::vector<std::deque<Id>> queue;  // per worker position: its held groups, in order
    std::set<Id> unblocked;             // groups at the front of every member's queue
    std::map<std::string, std::vector<bool>> recent;  // emitted group texts -> who printed them
    std::deque<std::string> recent_order;
    std::size_t held_bytes = 0;
  };

  int position(int worker) const;
  bool reaches(const StreamState& state, Id from, Id to) const;
  void append(StreamState& state, int pos, Id id);
  void release(StreamState& state, Stream stream, TimePoint now, bool all);
  bool ready(const Group& group, TimePoint now) const;
  void emit_group(StreamState& state, Stream stream, Id id);

  std::vector<int> workers_;        // indices, ascending
  std::vector<bool> ended_;         // per position
  std::size_t active_ = 0;          // workers not ended
  Emit emit_;
  CollapseOptions options_;
  StreamState streams_[2];
  std::mutex mutex_;
};

}  // namespace tpurun
