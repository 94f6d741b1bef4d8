#include "staging/content_hash.hpp"

// libxxhash >= 0.8.1 picks SSE2, AVX2 or AVX-512 at run time; an inlined copy
// is stuck with the SSE2 of a generic -O2 build (hashing is ~5% of a fresh
// stage). The portable build (scripts/package) and older libxxhash inline it:
// TPURUN_HAVE_XXHASH_DISPATCH comes from scripts/packaging/features.cmake.
#ifdef TPURUN_HAVE_XXHASH_DISPATCH
#include <xxhash.h>
#include <xxh_x86dispatch.h>
#else
#define XXH_INLINE_ALL
#include <xxhash.h>
#endif

namespace tpurun::staging {

std::string ContentHash::hex() const {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[i] = digits[(high >> (60 - 4 * i)) & 0xf];
    out[16 + i] = digits[(low >> (60 - 4 * i)) & 0xf];
  }
  return out;
}

std::optional<ContentHash> parse_content_hash(std::string_view hex) {
  if (hex.size() != 32) return std::nullopt;
  ContentHash hash;
  for (std::size_t i = 0; i < 32; ++i) {
    const char c = hex[i];
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return std::nullopt;
    std::uint64_t& word = i < 16 ? hash.high : hash.low;
    word = (word << 4) | static_cast<std::uint64_t>(digit);
  }
  return hash;
}

Hasher::Hasher() : state_(XXH3_createState()) { reset(); }
Hasher::~Hasher() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void Hasher::reset() { XXH3_128bits_reset(static_cast<XXH3_state_t*>(state_)); }

void Hasher::update(const void* data, std::size_t size) {
  XXH3_128bits_update(static_cast<XXH3_state_t*>(state_), data, size);
}

ContentHash Hasher::digest() const {
  XXH128_hash_t h = XXH3_128bits_digest(static_cast<XXH3_state_t*>(state_));
  return {h.high64, h.low64};
}

ContentHash hash_bytes(std::string_view data) {
  XXH128_hash_t h = XXH3_128bits(data.data(), data.size());
  return {h.high64, h.low64};
}

}  // namespace tpurun::staging
