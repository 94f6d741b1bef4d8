#include "tpurun/fanout/collapse.hpp"

#include <algorithm>
#include <unordered_set>

namespace tpurun {
namespace {

constexpr std::size_t kGroupOverhead = 128;  // bookkeeping counted against max_held_bytes
constexpr std::size_t kRecentTexts = 256;    // emitted group texts remembered for late lines
constexpr std::size_t kRecentTextMax = 4096;  // longer ones are not (bounds that memory to 1 MiB)
constexpr std::size_t kOrderSearch = 256;    // groups visited before a join is given up as tangled

}  // namespace

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
    : workers_(std::move(workers)), emit_(std::move(emit)), options_(options) {
  std::sort(workers_.begin(), workers_.end());
  ended_.assign(workers_.size(), false);
  active_ = workers_.size();
  for (StreamState& state : streams_) state.queue.resize(workers_.size());
}

int LineCollapser::position(int worker) const {
  auto it = std::lower_bound(workers_.begin(), workers_.end(), worker);
  return it != workers_.end() && *it == worker ? static_cast<int>(it - workers_.begin()) : -1;
}

void LineCollapser::add(int worker, Stream stream, std::string text, TimePoint now) {
  std::lock_guard lock(mutex_);
  const int pos = position(worker);
  if (pos < 0) {  // not a followed worker: nothing to collapse it with
    emit_(CollapsedLine{stream, {worker}, false, std::move(text)});
    return;
  }
  StreamState& state = streams_[stream == Stream::out ? 0 : 1];
  std::set<Id>& same_text = state.ids_by_text[text];
  const std::deque<Id>& mine = state.queue[pos];
  for (Id id : same_text) {
    Group& group = state.open.at(id);
    // Joining makes the group come after this worker's held lines; it must not
    // also have to come before one of them.
    if (group.member[pos] || (!mine.empty() && reaches(state, id, mine.back()))) continue;
    group.last_join = now;
    append(state, pos, id);
    release(state, stream, now, false);
    return;
  }
  const Id id = state.next_id++;
  same_text.insert(id);
  state.held_bytes += 2 * text.size() + kGroupOverhead;
  state.open.emplace(id, Group{std::move(text), now, now, std::vector<bool>(workers_.size(), false), 0, 0, {}});
  append(state, pos, id);
  release(state, stream, now, false);
}

bool LineCollapser::reaches(const StreamState& state, Id from, Id to) const {
  std::vector<Id> stack{from};
  std::unordered_set<Id> seen{from};
  while (!stack.empty()) {
    const Id id = stack.back();
    stack.pop_back();
    if (id == to) return true;
    for (Id next : state.open.at(id).next) {
      if (!seen.insert(next).second) continue;
      if (seen.size() > kOrderSearch) return true;  // too tangled to tell: do not join
      stack.push_back(next);
    }
  }
  return false;
}

void LineCollapser::append(StreamState& state, int pos, Id id) {
  Group& group = state.open.at(id);
  group.member[pos] = true;
  ++group.members;
  std::deque<Id>& mine = state.queue[pos];
  if (mine.empty()) {
    ++group.fronts;
  } else {
    state.open.at(mine.back()).next.push_back(id);
  }
  mine.push_back(id);
  if (group.fronts == group.members) {
    state.unblocked.insert(id);
  } else {
    state.unblocked.erase(id);
  }
}

void LineCollapser::worker_ended(int worker, TimePoint now) {
  std::lock_guard lock(mutex_);
  const int pos = position(worker);
  if (pos >= 0 && !ended_[pos]) {
    ended_[pos] = true;
    --active_;
  }
  release(streams_[0], Stream::out, now, false);
  release(streams_[1], Stream::err, now, false);
}

void LineCollapser::tick(TimePoint now) {
  std::lock_guard lock(mutex_);
  release(streams_[0], Stream::out, now, false);
  release(streams_[1], Stream::err, now, false);
}

void LineCollapser::flush_all() {
  std::lock_guard lock(mutex_);
  release(streams_[0], Stream::out, {}, true);
  release(streams_[1], Stream::err, {}, true);
}

bool LineCollapser::ready(const Group& group, TimePoint now) const {
  if (now >= std::min(group.last_join + options_.window, group.opened + options_.max_hold)) return true;
  if (group.members < active_) return false;  // cheap: someone still running has not joined
  for (std::size_t pos = 0; pos < workers_.size(); ++pos) {
    if (!ended_[pos] && !group.member[pos]) return false;
  }
  return true;
}

void LineCollapser::release(StreamState& state, Stream stream, TimePoint now, bool all) {
  // The oldest group free to go goes first, and a younger one waits for it
  // (at most until its window closes), so output keeps the order it came in.
  while (!state.unblocked.empty()) {
    const Id oldest = *state.unblocked.begin();
    const bool force = all || state.held_bytes > options_.max_held_bytes;
    if (!force && !ready(state.open.at(oldest), now)) return;
    emit_group(state, stream, oldest);
  }
}

void LineCollapser::emit_group(StreamState& state, Stream stream, Id id) {
  auto node = state.open.find(id);
  const Group& group = node->second;
  CollapsedLine line{stream, {}, false, group.text};
  for (std::size_t pos = 0; pos < workers_.size(); ++pos) {
    if (!group.member[pos]) continue;
    line.workers.push_back(workers_[pos]);
    std::deque<Id>& mine = state.queue[pos];
    mine.pop_front();  // this group was at the front of every member's queue
    if (mine.empty()) continue;
    Group& after = state.open.at(mine.front());
    if (++after.fronts == after.members) state.unblocked.insert(mine.front());
  }
  auto seen = state.recent.find(group.text);
  bool disjoint = seen != state.recent.end();
  for (std::size_t pos = 0; disjoint && pos < workers_.size(); ++pos) {
    disjoint = !(group.member[pos] && seen->second[pos]);
  }
  if (disjoint) {  // stragglers of a line already shown: fold them into it
    line.late = true;
    for (std::size_t pos = 0; pos < workers_.size(); ++pos) {
      if (group.member[pos]) seen->second[pos] = true;
    }
  } else if (line.workers.size() >= 2 && group.text.size() <= kRecentTextMax) {  // a new shared line
    if (seen == state.recent.end()) {
      state.recent_order.push_back(group.text);
      if (state.recent_order.size() > kRecentTexts) {
        state.recent.erase(state.recent_order.front());
        state.recent_order.pop_front();
      }
    }
    state.recent[group.text] = group.member;
  }
  state.unblocked.erase(id);
  auto same_text = state.ids_by_text.find(group.text);
  same_text->second.erase(id);
  if (same_text->second.empty()) state.ids_by_text.erase(same_text);
  state.held_bytes -= 2 * group.text.size() + kGroupOverhead;
  emit_(line);
  state.open.erase(node);
}

}  // namespace tpurun
