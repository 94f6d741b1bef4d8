#pragma once
// XXH3-128 content hashes, as used for object names and the tree hash.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tpurun::staging {

struct ContentHash {
  std::uint64_t high = 0;
  std::uint64_t low = 0;

  bool operator==(const ContentHash&) const = default;
  std::string hex() const;  // 32 lowercase hex digits, high word first
};

// Incremental XXH3-128 (a thin wrapper so callers need not see xxhash.h).
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  void reset();
  void update(const void* data, std::size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  ContentHash digest() const;

 private:
  void* state_;
};

ContentHash hash_bytes(std::string_view data);

// The inverse of hex(): 32 lowercase hex digits, or nothing.
std::optional<ContentHash> parse_content_hash(std::string_view hex);

}  // namespace tpurun::staging
