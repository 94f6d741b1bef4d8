#include "tpurun/collapse.hpp"

#include <algorithm>

namespace tpurun {
namespace {

constexpr std::size_t kGroupOverhead = 128;  // bookkeeping counted against max_held_bytes
constexpr std::size_t kRecentTexts = 256;    // emitted group texts remembered for late lines

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
  for (StreamState& state : streams_) state.last_id.assign(workers_.size(), -1);
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
  auto& ids = state.ids_by_text[text];
  const long long after = state.last_id[pos];
  auto it = std::upper_bound(ids.begin(), ids.end(), after,
                             [](long long value, unsigned long long id) { return value < static_cast<long long>(id); });
  if (it != ids.end()) {
    Group& group = state.open[*it - state.first_id];
    group.member[pos] = true;
    group.last_join = now;
    state.last_id[pos] = static_cast<long long>(*it);
  } else {
    const unsigned long long id = state.first_id + state.open.size();
    ids.push_back(id);
    state.last_id[pos] = static_cast<long long>(id);
    state.held_bytes += 2 * text.size() + kGroupOverhead;
    Group group{std::move(text), now, now, std::vector<bool>(workers_.size(), false)};
    group.member[pos] = true;
    state.open.push_back(std::move(group));
  }
  release(state, stream, now, false);
}

void LineCollapser::worker_ended(int worker, TimePoint now) {
  std::lock_guard lock(mutex_);
  const int pos = position(worker);
  if (pos >= 0) ended_[pos] = true;
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

bool LineCollapser::complete(const Group& group) const {
  for (std::size_t pos = 0; pos < workers_.size(); ++pos) {
    if (!ended_[pos] && !group.member[pos]) return false;
  }
  return true;
}

void LineCollapser::release(StreamState& state, Stream stream, TimePoint now, bool all) {
  while (!state.open.empty()) {
    Group& group = state.open.front();
    const TimePoint due = std::min(group.last_join + options_.window, group.opened + options_.max_hold);
    const bool ready = all || now >= due || state.held_bytes > options_.max_held_bytes || complete(group);
    if (!ready) return;
    emit_group(state, stream, group);
    auto ids = state.ids_by_text.find(group.text);
    ids->second.pop_front();  // groups leave in id order, so this one is the oldest with its text
    if (ids->second.empty()) state.ids_by_text.erase(ids);
    state.held_bytes -= 2 * group.text.size() + kGroupOverhead;
    state.open.pop_front();
    ++state.first_id;
  }
}

void LineCollapser::emit_group(StreamState& state, Stream stream, const Group& group) {
  CollapsedLine line{stream, {}, false, group.text};
  for (std::size_t pos = 0; pos < workers_.size(); ++pos) {
    if (group.member[pos]) line.workers.push_back(workers_[pos]);
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
  } else if (line.workers.size() >= 2) {  // a new occurrence of a shared line
    if (seen == state.recent.end()) {
      state.recent_order.push_back(group.text);
      if (state.recent_order.size() > kRecentTexts) {
        state.recent.erase(state.recent_order.front());
        state.recent_order.pop_front();
      }
    }
    state.recent[group.text] = group.member;
  }
  emit_(line);
}

}  // namespace tpurun
