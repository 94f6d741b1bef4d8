// LineCollapser. Every line of every worker passes through add(), so its
// state is laid out for that: a line is copied only when it opens a group;
// held groups are found by the hash of their text (a flat index, then a chain
// of the groups with that hash, oldest first); who is in a group is a few bit
// words; an emitted group's slot, and its memory, is reused.
//
// Whether a worker may join a group without reordering its own held lines is
// one bit: `reach`, the workers that are members of the group or of a group
// after it. A worker's held groups are a chain (its queue) ending in its
// last one, so joining would make the group come both before and after that
// last one exactly when the worker is already in the group's reach.
#include "tpurun/fanout/collapse.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <deque>
#include <queue>
#include <utility>

#include "fanout/collapse_index.hpp"

#define XXH_INLINE_ALL  // short texts: the inlined XXH3 is the fastest
#include <xxhash.h>

namespace tpurun {
namespace {

constexpr std::size_t kGroupOverhead = 128;  // bookkeeping counted against max_held_bytes
constexpr std::size_t kRecentTexts = 256;    // emitted group texts remembered for late lines
constexpr std::size_t kRecentTextMax = 4096;  // longer ones are not (bounds that memory to 1 MiB)

using Word = std::uint64_t;
using Slot = collapse_index::Slot;
constexpr Slot kNone = collapse_index::kNone;
using collapse_index::HashIndex;

bool has(const Word* bits, std::size_t pos) { return (bits[pos / 64] >> (pos % 64) & 1) != 0; }
void set(Word* bits, std::size_t pos) { bits[pos / 64] |= Word{1} << (pos % 64); }

}  // namespace

class LineCollapser::State {
 public:
  State(std::vector<int> workers, Emit emit, CollapseOptions options)
      : workers_(std::move(workers)), emit_(std::move(emit)), options_(options) {
    std::sort(workers_.begin(), workers_.end());
    words_ = (workers_.size() + 63) / 64;
    running_.assign(words_, 0);
    for (std::size_t pos = 0; pos < workers_.size(); ++pos) set(running_.data(), pos);
    active_ = workers_.size();
    for (Lane& s : lanes_) {
      s.queue.resize(workers_.size());
      s.words = words_;
    }
  }
  void add(int worker, Stream stream, std::string_view text, TimePoint now);
  void worker_ended(int worker, TimePoint now);
  void release_all(TimePoint now, bool all) {
    release(lanes_[0], Stream::out, now, all);
    release(lanes_[1], Stream::err, now, all);
  }

 private:
  using Id = unsigned long long;  // a group's age: groups are numbered as they open
  struct Group {
    std::string text;
    std::size_t hash = 0;
    Id id = 0;
    TimePoint opened;
    TimePoint last_join;
    std::size_t members = 0;
    std::size_t fronts = 0;      // members whose queue starts with this group
    Slot same = kNone;           // the next younger held group with the same hash
    bool unblocked = false;      // at the front of every member's queue
    std::vector<Slot> next;      // members' next groups: they come after this one
    std::vector<Slot> prev;      // members' previous groups: they come before it
  };
  struct Recent {
    std::string text;
    std::size_t hash = 0;
    std::vector<Word> who;
    Slot same = kNone;  // the next recent text with the same hash
  };
  struct Lane {  // one stream's state
    std::vector<Group> groups;  // by slot (no reference to one is kept across a new slot)
    std::vector<Word> bits;    // by slot: its members' words, then its reach's words
    std::vector<Slot> free;    // slots of emitted groups
    Id next_id = 0;
    HashIndex by_hash;
    std::vector<std::deque<Slot>> queue;  // per worker position: its held groups, in order
    // Groups at the front of every member's queue, oldest on top. An entry
    // whose group is no longer unblocked (or whose slot now holds another
    // group) is dropped when it comes up.
    std::priority_queue<std::pair<Id, Slot>, std::vector<std::pair<Id, Slot>>, std::greater<>> unblocked;
    std::vector<Recent> recent;           // emitted shared texts and who printed them: a ring
    std::size_t recent_count = 0;         // texts ever put in it
    HashIndex recent_by_hash;
    std::size_t held_bytes = 0;
    std::vector<Slot> stack;
    Word* member(Slot slot) { return bits.data() + slot * 2 * words; }
    Word* reach(Slot slot) { return member(slot) + words; }
    std::size_t words = 0;
  };

  int position(int worker) const {
    auto it = std::lower_bound(workers_.begin(), workers_.end(), worker);
    return it != workers_.end() && *it == worker ? static_cast<int>(it - workers_.begin()) : -1;
  }
  Slot open_group(Lane& s, std::string_view text, std::size_t hash, TimePoint now);
  void append(Lane& s, int pos, Slot slot);
  void spread_reach(Lane& s, Slot slot);
  void release(Lane& s, Stream stream, TimePoint now, bool all);
  bool ready(Lane& s, Slot slot, TimePoint now) const;
  void emit_group(Lane& s, Stream stream, Slot slot);
  void remember(Lane& s, Slot slot);

  std::vector<int> workers_;  // indices, ascending
  std::size_t words_ = 0;     // bit words per set of workers
  std::vector<Word> running_;  // workers not ended
  std::size_t active_ = 0;
  Emit emit_;
  CollapseOptions options_;
  Lane lanes_[2];  // stdout, stderr
  CollapsedLine line_;  // reused for every emitted line
};

void LineCollapser::State::add(int worker, Stream stream, std::string_view text, TimePoint now) {
  const int pos = position(worker);
  if (pos < 0) {  // not a followed worker: nothing to collapse it with
    line_.stream = stream;
    line_.workers.assign(1, worker);
    line_.late = false;
    line_.text.assign(text);
    emit_(line_);
    return;
  }
  Lane& s = lanes_[stream == Stream::out ? 0 : 1];
  const std::size_t hash = XXH3_64bits(text.data(), text.size());
  if (HashIndex::Entry* same = s.by_hash.find(hash)) {
    for (Slot slot = same->first; slot != kNone; slot = s.groups[slot].same) {  // oldest first
      Group& group = s.groups[slot];
      // Joining makes the group come after this worker's held lines; it must not
      // also have to come before one of them.
      if (group.text != text || has(s.reach(slot), pos)) continue;
      group.last_join = now;
      append(s, pos, slot);
      release(s, stream, now, false);
      return;
    }
  }
  append(s, pos, open_group(s, text, hash, now));
  release(s, stream, now, false);
}

Slot LineCollapser::State::open_group(Lane& s, std::string_view text, std::size_t hash, TimePoint now) {
  Slot slot;
  if (!s.free.empty()) {
    slot = s.free.back();
    s.free.pop_back();
  } else {
    slot = static_cast<Slot>(s.groups.size());
    s.groups.emplace_back();
    s.bits.resize(s.bits.size() + 2 * words_);
  }
  Group& group = s.groups[slot];
  group.text.assign(text);
  group.hash = hash;
  group.id = s.next_id++;
  group.opened = group.last_join = now;
  group.members = group.fronts = 0;
  group.same = kNone;
  group.unblocked = false;
  group.next.clear();
  group.prev.clear();
  std::fill_n(s.member(slot), 2 * words_, 0);
  s.by_hash.push(hash, slot, [&](Slot at) -> Slot& { return s.groups[at].same; });
  s.held_bytes += 2 * text.size() + kGroupOverhead;
  return slot;
}

void LineCollapser::State::append(Lane& s, int pos, Slot slot) {
  Group& group = s.groups[slot];
  set(s.member(slot), pos);
  set(s.reach(slot), pos);
  ++group.members;
  std::deque<Slot>& mine = s.queue[pos];
  if (mine.empty()) {
    ++group.fronts;
  } else {  // an edge tail -> group; workers in step add the same one: once is enough
    const Slot tail = mine.back();
    std::vector<Slot>& next = s.groups[tail].next;
    if (next.empty() || next.back() != slot) next.push_back(slot);
    if (group.prev.empty() || group.prev.back() != tail) group.prev.push_back(tail);
  }
  mine.push_back(slot);
  spread_reach(s, slot);
  const bool unblocked = group.fronts == group.members;
  if (unblocked && !group.unblocked) s.unblocked.emplace(group.id, slot);
  group.unblocked = unblocked;
}

// The groups before `slot` reach whom it reaches. A bit is set at most once
// in each group (a group's successors are emitted only after it), so this
// costs at most one visit per group per worker, however long the queues.
void LineCollapser::State::spread_reach(Lane& s, Slot slot) {
  s.stack.assign(1, slot);
  while (!s.stack.empty()) {
    const Slot from = s.stack.back();
    s.stack.pop_back();
    for (Slot before : s.groups[from].prev) {
      const Word* add = s.reach(from);
      Word* to = s.reach(before);
      bool grew = false;
      for (std::size_t i = 0; i < words_; ++i) {
        grew = grew || (add[i] & ~to[i]) != 0;
        to[i] |= add[i];
      }
      if (grew) s.stack.push_back(before);
    }
  }
}

void LineCollapser::State::worker_ended(int worker, TimePoint now) {
  const int pos = position(worker);
  if (pos >= 0 && has(running_.data(), static_cast<std::size_t>(pos))) {
    running_[pos / 64] &= ~(Word{1} << (pos % 64));
    --active_;
  }
  release_all(now, false);
}

bool LineCollapser::State::ready(Lane& s, Slot slot, TimePoint now) const {
  const Group& group = s.groups[slot];
  if (now >= std::min(group.last_join + options_.window, group.opened + options_.max_hold)) return true;
  if (group.members < active_) return false;  // cheap: someone still running has not joined
  const Word* member = s.member(slot);
  for (std::size_t i = 0; i < words_; ++i) {
    if ((running_[i] & ~member[i]) != 0) return false;
  }
  return true;
}

void LineCollapser::State::release(Lane& s, Stream stream, TimePoint now, bool all) {
  // The oldest group free to go goes first, and a younger one waits for it
  // (at most until its window closes), so output keeps the order it came in.
  while (!s.unblocked.empty()) {
    const auto [id, oldest] = s.unblocked.top();
    const Group& group = s.groups[oldest];
    if (!group.unblocked || group.id != id) {  // blocked again since, or emitted
      s.unblocked.pop();
      continue;
    }
    const bool force = all || s.held_bytes > options_.max_held_bytes;
    if (!force && !ready(s, oldest, now)) return;
    s.unblocked.pop();
    emit_group(s, stream, oldest);
  }
}

void LineCollapser::State::emit_group(Lane& s, Stream stream, Slot slot) {
  Group& group = s.groups[slot];
  line_.stream = stream;
  line_.workers.clear();
  line_.late = false;
  const Word* member = s.member(slot);
  for (std::size_t i = 0; i < words_; ++i) {
    for (Word w = member[i]; w != 0; w &= w - 1) {
      const std::size_t pos = i * 64 + static_cast<std::size_t>(std::countr_zero(w));
      line_.workers.push_back(workers_[pos]);
      std::deque<Slot>& mine = s.queue[pos];
      mine.pop_front();  // this group was at the front of every member's queue
      if (mine.empty()) continue;
      Group& after = s.groups[mine.front()];
      if (++after.fronts == after.members && !after.unblocked) {
        after.unblocked = true;
        s.unblocked.emplace(after.id, mine.front());
      }
    }
  }
  remember(s, slot);
  group.unblocked = false;
  s.by_hash.remove(group.hash, slot, [&](Slot at) -> Slot& { return s.groups[at].same; });
  for (Slot after : group.next) {  // nothing comes before an emitted group
    std::vector<Slot>& prev = s.groups[after].prev;
    prev.erase(std::remove(prev.begin(), prev.end(), slot), prev.end());
  }
  s.held_bytes -= 2 * group.text.size() + kGroupOverhead;
  line_.text.swap(group.text);  // the slot's text is done with; its buffer is reused
  emit_(line_);
  s.free.push_back(slot);
}

// Late lines: which workers printed the recent shared texts (a ring of the
// last kRecentTexts, each entry and its memory reused).
void LineCollapser::State::remember(Lane& s, Slot slot) {
  const Group& group = s.groups[slot];
  const Word* member = s.member(slot);
  auto link = [&](Slot at) -> Slot& { return s.recent[at].same; };
  Recent* seen = nullptr;
  if (HashIndex::Entry* same = s.recent_by_hash.find(group.hash)) {
    for (Slot at = same->first; at != kNone && !seen; at = link(at)) {
      if (s.recent[at].text == group.text) seen = &s.recent[at];
    }
  }
  bool disjoint = seen != nullptr;
  for (std::size_t i = 0; disjoint && i < words_; ++i) disjoint = (member[i] & seen->who[i]) == 0;
  if (disjoint) {  // stragglers of a line already shown: fold them into it
    line_.late = true;
    for (std::size_t i = 0; i < words_; ++i) seen->who[i] |= member[i];
  } else if (line_.workers.size() >= 2 && group.text.size() <= kRecentTextMax) {  // a new shared line
    if (seen) {
      seen->who.assign(member, member + words_);
      return;
    }
    const Slot at = static_cast<Slot>(s.recent_count++ % kRecentTexts);
    if (at == s.recent.size()) {
      s.recent.emplace_back();
    } else {  // the oldest goes
      s.recent_by_hash.remove(s.recent[at].hash, at, link);
    }
    Recent& recent = s.recent[at];
    recent.text.assign(group.text);
    recent.hash = group.hash;
    recent.who.assign(member, member + words_);
    s.recent_by_hash.push(group.hash, at, link);
  }
}

std::string worker_range_label(const std::vector<int>& indices) {
  std::vector<int> sorted = indices;
  std::sort(sorted.begin(), sorted.end());
  std::string label = "w";
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (i > 0) label += ",";
    label += std::to_string(sorted[i]);
    if (j > i) label += "-" + std::to_string(sorted[j]);
    i = j + 1;
  }
  return label;
}

LineCollapser::LineCollapser(std::vector<int> workers, Emit emit, CollapseOptions options)
    : state_(std::make_unique<State>(std::move(workers), std::move(emit), options)) {}

LineCollapser::~LineCollapser() = default;

void LineCollapser::add(int worker, Stream stream, std::string_view text, TimePoint now) {
  std::lock_guard lock(mutex_);
  state_->add(worker, stream, text, now);
}

void LineCollapser::worker_ended(int worker, TimePoint now) {
  std::lock_guard lock(mutex_);
  state_->worker_ended(worker, now);
}

void LineCollapser::tick(TimePoint now) {
  std::lock_guard lock(mutex_);
  state_->release_all(now, false);
}

void LineCollapser::flush_all() {
  std::lock_guard lock(mutex_);
  state_->release_all({}, true);
}

}  // namespace tpurun
