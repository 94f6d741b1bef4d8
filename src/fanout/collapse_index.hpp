#pragma once
// LineCollapser's index of held groups by the hash of their text
// (collapse.cpp): open addressing in one array, so that finding a line's
// group costs one cache miss, not a hash node's few.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tpurun::collapse_index {

using Slot = std::uint32_t;  // where a held group is kept
constexpr Slot kNone = ~Slot{0};

// Text hash -> the first and last of the slots with that hash, which form a
// chain: `link(slot)` is the Slot& naming the next one.
class HashIndex {
 public:
  template <class Link>
  void push(std::size_t hash, Slot slot, Link link) {
    link(slot) = kNone;
    Entry* same = find(hash);
    if (same == nullptr) {
      same = &insert(hash);
      same->first = slot;
    } else {
      link(same->last) = slot;
    }
    same->last = slot;
  }
  template <class Link>
  void remove(std::size_t hash, Slot slot, Link link) {
    Entry* same = find(hash);
    Slot before = kNone;
    for (Slot at = same->first; at != slot; at = link(at)) before = at;
    (before == kNone ? same->first : link(before)) = link(slot);
    if (same->last == slot) same->last = before;
    if (same->first == kNone) erase(*same);
  }

  struct Entry {
    std::size_t hash = 0;
    Slot first = kNone;  // kNone: an empty entry
    Slot last = kNone;
  };
  Entry* find(std::size_t hash) {
    if (table_.empty()) return nullptr;
    for (std::size_t i = hash & mask_;; i = (i + 1) & mask_) {
      if (table_[i].first == kNone) return nullptr;
      if (table_[i].hash == hash) return &table_[i];
    }
  }
  Entry& insert(std::size_t hash) {  // not there yet
    if (2 * (count_ + 1) > table_.size()) grow();
    ++count_;
    std::size_t i = hash & mask_;
    while (table_[i].first != kNone) i = (i + 1) & mask_;
    table_[i].hash = hash;
    return table_[i];
  }
  void erase(Entry& entry) {  // backward-shift deletion keeps probing chains whole
    std::size_t hole = static_cast<std::size_t>(&entry - table_.data());
    for (std::size_t i = (hole + 1) & mask_; table_[i].first != kNone; i = (i + 1) & mask_) {
      const std::size_t home = table_[i].hash & mask_;
      if (((i - home) & mask_) >= ((i - hole) & mask_)) {
        table_[hole] = table_[i];
        hole = i;
      }
    }
    table_[hole] = Entry{};
    --count_;
  }

 private:
  void grow() {
    std::vector<Entry> old = std::move(table_);
    table_.assign(std::max<std::size_t>(64, old.size() * 2), Entry{});
    mask_ = table_.size() - 1;
    count_ = 0;
    for (const Entry& e : old) {
      if (e.first != kNone) insert(e.hash) = e;
    }
  }
  std::vector<Entry> table_;
  std::size_t mask_ = 0;
  std::size_t count_ = 0;
};

}  // namespace tpurun::collapse_index
